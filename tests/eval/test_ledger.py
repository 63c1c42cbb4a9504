"""The test ledger: one line per test report, a second report of one configuration refused
unless a reason is given (and then recorded)."""

import json

import pytest

from lokg.errors import InputError
from lokg.eval.ledger import LedgerEntry, TestLedger


def entry(config_hash="abc", **kw) -> LedgerEntry:
    return LedgerEntry(
        bench="bench_retrieval", configuration="learned", dataset="pq2h",
        config_hash=config_hash, numbers={"hits@1": 0.99, "n": 192}, **kw,
    )  # fmt: skip


def test_a_report_is_one_line_with_date_commit_hash_and_numbers(tmp_path):
    ledger = TestLedger(tmp_path / "bench" / "test_ledger.jsonl")
    assert ledger.lines() == []
    ledger.check("abc", "learned on pq2h")  # nothing yet: allowed
    assert ledger.append(entry()) == 1
    assert ledger.append(entry("def")) == 2
    (n, first), _ = ledger.lines()
    assert n == 1 and first["config_hash"] == "abc" and first["numbers"]["n"] == 192
    assert first["date"].endswith("+00:00") and first["commit"]
    assert "rerun_reason" not in first


def test_a_second_report_of_one_configuration_is_refused_naming_the_line(tmp_path):
    ledger = TestLedger(tmp_path / "test_ledger.jsonl")
    ledger.append(entry(date="2026-12-02T01:00:00+00:00", commit="1234567"))
    with pytest.raises(InputError) as err:
        ledger.check("abc", "learned on pq2h")
    msg = str(err.value)
    assert msg.startswith("learned on pq2h: its test split was already reported (")
    assert "test_ledger.jsonl:1, 2026-12-02T01:00:00+00:00, commit 1234567)" in msg
    assert '--rerun-test "<reason>"' in msg and "\n" not in msg
    with pytest.raises(InputError):
        ledger.check("abc", "learned on pq2h", rerun_reason="  ")  # a blank reason is none
    ledger.check("def", "paper on pq2h")  # another configuration is free
    ledger.check("abc", "learned on pq2h", rerun_reason="split fixed (issue 26)")
    ledger.append(entry(rerun_reason="split fixed (issue 26)"))
    assert ledger.lines()[-1][1]["rerun_reason"] == "split fixed (issue 26)"


def test_a_corrupt_ledger_line_is_named(tmp_path):
    path = tmp_path / "test_ledger.jsonl"
    path.write_text(json.dumps({"config_hash": "a"}) + "\n\n[1, 2]\n")
    with pytest.raises(InputError, match=r"test_ledger.jsonl:3: expected a ledger entry"):
        TestLedger(path).lines()
    path.write_text("{not json\n")
    with pytest.raises(InputError, match=r"test_ledger.jsonl:1: invalid JSON"):
        TestLedger(path).lines()


def test_a_configurations_earlier_hash_finds_its_lines(tmp_path):
    """A configuration recorded under the hash it had before a neutral key left it
    (:class:`LedgerKey`'s ``earlier``) is the same configuration: found and refused."""
    from lokg.eval.ledger import LedgerKey

    ledger = TestLedger(tmp_path / "test_ledger.jsonl")
    ledger.append(entry("old"))
    ledger.append(entry("other"))
    key = LedgerKey("new", earlier=("old",))
    assert [n for n, _ in ledger.find(key)] == [1]
    assert ledger.find(LedgerKey("new")) == [] and [n for n, _ in ledger.find("other")] == [2]
    with pytest.raises(InputError, match=r"test_ledger.jsonl:1"):
        ledger.check(key, "learned on pq2h")
