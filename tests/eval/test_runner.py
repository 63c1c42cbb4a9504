"""The resumable run loop, including a run killed with SIGKILL and restarted."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from lokg.errors import QuestionFailed
from lokg.eval import QuestionResult, ResultsWriter, read_results, run_questions
from lokg.llm import LLMCallFailed, LLMFatalError
from lokg.typing import Question

QS = [
    Question(id=f"q{i}", text=f"question {i}?", answers=(f"a{i}",), topic_entities=())
    for i in range(6)
]


def answer_ok(q: Question) -> QuestionResult:
    return QuestionResult(
        id=q.id, question=q.text, gold=list(q.answers), predictions=[f"a{q.id[1:]}"], calls=1
    )


def test_failed_question_is_recorded_and_the_run_goes_on(tmp_path):
    def answer(q):
        if q.id == "q2":
            raise LLMCallFailed("HTTP 500: InternalServerError", attempts=5)
        return answer_ok(q)

    with ResultsWriter(tmp_path / "r.jsonl") as w:
        stats = run_questions(QS, answer, w, progress=False, reader_label="llm:x")
    assert (stats.skipped, stats.answered, stats.failed) == (0, 6, 1)
    bad = read_results(tmp_path / "r.jsonl").records["q2"]
    assert bad.status == "failed" and bad.attempts == 5 and "HTTP 500" in bad.error
    assert bad.reader == "llm:x" and bad.predictions == [] and bad.gold == ["a2"]


class BudgetBroken(QuestionFailed):
    """Stands in for a pipeline-side QuestionFailed subclass."""


def test_any_question_failed_is_recorded_not_only_llm_ones(tmp_path):
    def answer(q):
        if q.id == "q1":
            raise BudgetBroken("evidence has 27 tokens > budget 26")
        return answer_ok(q)

    with ResultsWriter(tmp_path / "r.jsonl") as w:
        stats = run_questions(QS, answer, w, progress=False)
    assert stats.failed == 1
    bad = read_results(tmp_path / "r.jsonl").records["q1"]
    assert bad.status == "failed" and bad.error == "evidence has 27 tokens > budget 26"
    assert bad.attempts == 0


@pytest.mark.parametrize("concurrency", [1, 3])
def test_rerun_asks_failed_questions_again_and_never_an_answered_one(tmp_path, caplog, concurrency):
    asked: list[str] = []
    broken = {"q1", "q4"}

    def flaky(q):
        asked.append(q.id)
        if q.id in broken:
            raise LLMCallFailed("HTTP 503: InternalServerError", attempts=2)
        return answer_ok(q)

    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        first = run_questions(QS, flaky, w, progress=False, concurrency=concurrency)
    assert (first.answered, first.failed, first.retried) == (6, 2, 0)
    asked.clear()
    broken.clear()  # the server is healthy again
    with caplog.at_level(logging.INFO, "lokg.eval.runner"), ResultsWriter(path) as w:
        second = run_questions(QS, flaky, w, progress=False, concurrency=concurrency)
    assert "resuming: 4 answered, 2 failed earlier and retried now" in caplog.text
    assert sorted(asked) == ["q1", "q4"]  # only the failed ones, each once
    assert (second.skipped, second.answered, second.failed, second.retried) == (4, 2, 0, 2)
    final = read_results(path)
    assert sorted(final.records) == [q.id for q in QS] and not final.failed_ids
    assert final.superseded == 2


def test_a_rejected_prompt_is_not_sent_again_but_a_transient_failure_is(tmp_path, caplog):
    asked: list[str] = []

    def first(q):
        asked.append(q.id)
        if q.id == "q1":  # the server rejected this prompt: it would again
            raise LLMCallFailed("HTTP 400 (prompt too long, not retried)", 1, retryable=False)
        if q.id == "q2":  # a transient fault
            raise LLMCallFailed("HTTP 503 after 2 attempts", 2)
        return answer_ok(q)

    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        run_questions(QS, first, w, progress=False)
    assert read_results(path).records["q1"].extra == {"retryable": False}
    asked.clear()
    with caplog.at_level(logging.INFO, "lokg.eval.runner"), ResultsWriter(path) as w:
        again = run_questions(QS, answer_ok_recording(asked), w, progress=False)
    assert asked == ["q2"]  # only the transient failure is asked again
    assert "1 failed earlier and retried now, 1 failed for good (kept)" in caplog.text
    assert again.retried == 1 and read_results(path).failed_ids == {"q1"}


def answer_ok_recording(asked: list[str]):
    def answer(q):
        asked.append(q.id)
        return answer_ok(q)

    return answer


def test_retry_failed_false_keeps_the_failures(tmp_path, caplog):
    def fail_q0(q):
        if q.id == "q0":
            raise LLMCallFailed("HTTP 500", attempts=1)
        return answer_ok(q)

    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        run_questions(QS, fail_q0, w, progress=False)
    asked: list[str] = []
    with caplog.at_level(logging.INFO, "lokg.eval.runner"), ResultsWriter(path) as w:
        stats = run_questions(
            QS, lambda q: asked.append(q.id) or answer_ok(q), w, progress=False, retry_failed=False
        )
    assert asked == [] and (stats.skipped, stats.answered) == (6, 0)
    assert "1 failed earlier and kept (retry_failed=false)" in caplog.text
    assert read_results(path).failed_ids == {"q0"}


def test_fatal_error_with_threads_starts_no_more_questions_and_keeps_those_in_flight(tmp_path):
    qs = [
        Question(id=f"q{i}", text=f"question {i}?", answers=(f"a{i}",), topic_entities=())
        for i in range(20)
    ]
    started: list[str] = []
    lock = threading.Lock()
    q1_started = threading.Event()

    def answer(q):
        with lock:
            started.append(q.id)
        if q.id == "q1":
            q1_started.set()
            time.sleep(0.2)  # in flight when q0 stops the run
            return answer_ok(q)
        if q.id == "q0":
            q1_started.wait(5)
            raise LLMFatalError("llm=x: HTTP 401 (bad key)")
        time.sleep(5)  # never reached: q0 and q1 occupy both threads, then the run stops
        return answer_ok(q)

    with ResultsWriter(tmp_path / "r.jsonl") as w, pytest.raises(LLMFatalError):
        run_questions(qs, answer, w, progress=False, concurrency=2)
    assert sorted(started) == ["q0", "q1"]  # no question started after the fatal error
    assert list(read_results(tmp_path / "r.jsonl").records) == ["q1"]  # in flight: recorded


def test_other_errors_stop_the_run_and_keep_what_was_written(tmp_path):
    def answer(q):
        if q.id == "q3":
            raise KeyError("bug")
        return answer_ok(q)

    with ResultsWriter(tmp_path / "r.jsonl") as w, pytest.raises(KeyError):
        run_questions(QS, answer, w, progress=False)
    assert list(read_results(tmp_path / "r.jsonl").records) == ["q0", "q1", "q2"]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_resume_skips_finished_ids(tmp_path, concurrency):
    asked: list[str] = []

    def answer(q):
        asked.append(q.id)
        return answer_ok(q)

    with ResultsWriter(tmp_path / "r.jsonl") as w:
        run_questions(QS[:4], answer, w, progress=False, concurrency=concurrency)
    with ResultsWriter(tmp_path / "r.jsonl") as w:
        stats = run_questions(QS, answer, w, progress=False, concurrency=concurrency)
    assert (stats.skipped, stats.answered) == (4, 2)
    assert sorted(asked) == sorted(q.id for q in QS)  # each question asked exactly once
    assert sorted(read_results(tmp_path / "r.jsonl").records) == sorted(q.id for q in QS)


def test_duplicate_question_ids_are_rejected(tmp_path):
    with (
        ResultsWriter(tmp_path / "r.jsonl") as w,
        pytest.raises(ValueError, match="'q0' appears more than once"),
    ):
        run_questions([QS[0], QS[0]], answer_ok, w, progress=False)


def test_mismatched_record_id_is_rejected(tmp_path):
    with ResultsWriter(tmp_path / "r.jsonl") as w, pytest.raises(ValueError, match="not 'q0'"):
        run_questions([QS[0]], lambda q: answer_ok(QS[1]), w, progress=False)


SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from lokg.eval import QuestionResult, ResultsWriter, run_questions
    from lokg.typing import Question

    out, asked_log, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    qs = [Question(id=f"q{i:03d}", text=f"question {i}?", answers=(f"a{i}",), topic_entities=())
          for i in range(n)]

    def answer(q):
        with open(asked_log, "a") as fh:
            fh.write(q.id + "\\n"); fh.flush(); os.fsync(fh.fileno())
        time.sleep(0.03)
        return QuestionResult(id=q.id, question=q.text, gold=list(q.answers),
                              predictions=[f"a{int(q.id[1:])}"], output="x" * 2000, calls=1)

    with ResultsWriter(out, fingerprint="same-config") as w:
        run_questions(qs, answer, w, concurrency=2, progress=False)
    """
)


@pytest.mark.slow
def test_killed_run_resumes_without_loss_duplicates_or_reasking(tmp_path):
    n = 60
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    out, log1, log2 = tmp_path / "results.jsonl", tmp_path / "asked1.log", tmp_path / "asked2.log"
    proc = subprocess.Popen([sys.executable, str(script), str(out), str(log1), str(n)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and out.read_bytes().count(b"\n") >= 10:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    first = read_results(out).records
    assert 10 <= len(first) < n, "the run must be killed part-way"
    subprocess.run(
        [sys.executable, str(script), str(out), str(log2), str(n)], check=True, timeout=120
    )
    final = read_results(out)
    assert final.torn_line is None
    assert sorted(final.records) == [f"q{i:03d}" for i in range(n)]  # nothing lost
    lines = [ln for ln in out.read_text().splitlines() if ln]
    assert len(lines) == n  # nothing duplicated
    reasked = set(log2.read_text().split()) & set(first)
    assert not reasked  # finished questions were not asked again
