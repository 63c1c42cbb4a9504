"""Resumable JSONL results: skip answered ids, supersede failed ones, never duplicate an
answer, drop a torn last line."""

from __future__ import annotations

import json
import logging

import pytest

from lokg.eval import QuestionResult, ResultsWriter, read_results


def rec(qid: str, pred=("Paris",), **kw) -> QuestionResult:
    return QuestionResult(
        id=qid, question=f"q {qid}?", gold=["Paris"], predictions=list(pred), **kw
    )


def test_roundtrip_and_resume_keeps_records(tmp_path):
    path = tmp_path / "run" / "results.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("a", prompt_tokens=10, completion_tokens=2, context="(france, capital, paris)"))
        w.write(rec("b", pred=()))
    with ResultsWriter(path) as w:
        assert w.done_ids == {"a", "b"} and "a" in w
        assert w.records["a"].tokens == 12
        w.write(rec("c"))
    found = read_results(path)
    assert list(found.records) == ["a", "b", "c"] and found.torn_line is None
    assert found.records["a"] == rec(
        "a", prompt_tokens=10, completion_tokens=2, context="(france, capital, paris)"
    )


def test_writing_an_answered_id_again_is_refused_even_after_restart(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("a"))
        with pytest.raises(ValueError, match="'a' is already answered"):
            w.write(rec("a"))
        with pytest.raises(ValueError, match="'a' is already answered"):
            w.write(rec("a", pred=(), status="failed", error="HTTP 500"))
    with ResultsWriter(path) as w, pytest.raises(ValueError, match="already answered"):
        w.write(rec("a"))
    assert path.read_text().count("\n") == 1


def test_a_failed_record_is_superseded_by_a_later_one(tmp_path):
    path = tmp_path / "r.jsonl"
    failed = rec("a", pred=(), status="failed", error="HTTP 503")
    with ResultsWriter(path) as w:
        w.write(failed)
        w.write(rec("b"))
        assert w.done_ids == {"b"} and w.failed_ids == {"a"} and "a" in w
    with ResultsWriter(path) as w:  # a rerun: fails again, then answers it
        assert w.failed_ids == {"a"}
        w.write(rec("a", pred=(), status="failed", error="HTTP 500"))
        w.write(rec("a"))
        assert w.records["a"] == rec("a") and w.done_ids == {"a", "b"} and not w.failed_ids
    lines = path.read_text().splitlines()
    assert len(lines) == 4  # append-only: every attempt stays in the file
    found = read_results(path)
    assert list(found.records) == ["a", "b"] and found.superseded == 2
    assert found.records["a"] == rec("a") and found.answered_ids == {"a", "b"}
    assert not found.failed_ids


def test_last_record_wins_and_the_view_is_ordered_by_first_appearance(tmp_path):
    path = tmp_path / "r.jsonl"
    lines = [
        rec("x", pred=(), status="failed", error="e1"),
        rec("y"),
        rec("x", pred=(), status="failed", error="e2"),
    ]
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in lines))
    found = read_results(path)
    assert list(found.records) == ["x", "y"] and found.records["x"].error == "e2"
    assert found.failed_ids == {"x"} and found.answered_ids == {"y"}


def test_torn_last_line_is_reported_dropped_and_truncated(tmp_path, caplog):
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("a"))
    good = path.read_bytes()
    line_b = json.dumps(rec("b").to_json()).encode()
    path.write_bytes(good + line_b[: len(line_b) // 2])  # killed mid-write
    found = read_results(path)
    assert list(found.records) == ["a"] and found.torn_line is not None
    with caplog.at_level(logging.WARNING), ResultsWriter(path) as w:
        assert w.dropped_torn_line is not None and w.done_ids == {"a"}
        assert "torn last line" in caplog.text
        w.write(rec("b"))
    assert (
        path.read_bytes()
        == good
        + json.dumps(rec("b").to_json(), ensure_ascii=False, sort_keys=True).encode()
        + b"\n"
    )
    assert list(read_results(path).records) == ["a", "b"]


def test_corrupt_middle_line_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps(rec("a").to_json()) + "\n{not json\n" + json.dumps(rec("c").to_json()) + "\n"
    )
    with pytest.raises(ValueError, match=r"r\.jsonl:2: not a valid result record"):
        read_results(path)


def test_fingerprint_mismatch_refuses_to_resume(tmp_path):
    path = tmp_path / "r.jsonl"
    ResultsWriter(path, fingerprint="cfg-1").close()
    ResultsWriter(path, fingerprint="cfg-1").close()
    with pytest.raises(ValueError, match="written under configuration 'cfg-1', not 'cfg-2'"):
        ResultsWriter(path, fingerprint="cfg-2")


def test_record_validation():
    with pytest.raises(ValueError, match="status must be one of"):
        rec("a", status="maybe")
    with pytest.raises(ValueError, match="non-empty str"):
        rec("")
    with pytest.raises(ValueError, match="unknown keys"):
        QuestionResult.from_json({**rec("a").to_json(), "bogus": 1})


def test_failed_record_scores_zero_but_counts():
    s = rec("a", pred=(), status="failed", error="HTTP 500").score()
    assert s.failed and s.hits1 == 0.0 and s.f1 == 0.0
