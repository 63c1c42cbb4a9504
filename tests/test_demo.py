"""``make demo`` (lokg.demo): its commands, how it finds each evaluation's summary, and the
closing table it prints (checked against summaries written by the evaluation's own writer)."""

from __future__ import annotations

from pathlib import Path

from lokg.demo import demo_steps, demo_table, summary_of
from lokg.eval.tables import RunSummary, write_run_summary


def test_the_demo_trains_then_evaluates_paper_ours_and_ours_with_the_llm_on_a_sample():
    steps = demo_steps("llm=local llm.client.n_threads=1", limit=40)
    scripts = [s.argv[0] for s in steps]
    assert scripts == ["train.py"] * 5 + ["evaluate.py"] * 3
    assert [s.argv[1] for s in steps[:5]] == [
        "experiment=stats", "experiment=train_transe", "experiment=train_transe",
        "experiment=train_gat", "experiment=train_walk",
    ]  # fmt: skip
    # ours trains with the default (guarded) SCOS; the paper's SCOS artifact and the GAT on
    # its graph are what experiment=paper reads
    assert "scos=default" not in steps[1].argv and "scos=default" in steps[2].argv
    assert "scos=default" in steps[3].argv and "scos=default" not in steps[4].argv
    paper, ours, llm = steps[5:]
    assert "experiment=paper" in paper.argv and "llm=extractive" in paper.argv
    assert ours.argv == ("evaluate.py", "llm=extractive")
    assert llm.argv == (
        "evaluate.py", "llm=local", "llm.client.n_threads=1", "limit=40", "allow_failures=true",
    )  # fmt: skip
    assert [s.row for s in steps if s.row] == [
        "LOKG (paper), retriever only", "LOKG (ours), retriever only", "LOKG (ours) + local LLM",
    ]  # fmt: skip


def test_summary_of_reads_the_results_line_and_the_limit():
    out = "configuration ...\n  hits@1 1.0\nresults: /r/logs/evaluate/results/pq2h/abc\n"
    _, ours, llm = demo_steps(limit=40)[5:]
    assert summary_of(ours, out) == Path("/r/logs/evaluate/results/pq2h/abc/summary.json")
    assert summary_of(llm, out) == Path("/r/logs/evaluate/results/pq2h/abc/summary-limit40.json")
    assert summary_of(ours, "no results line") is None


def _summary(tmp_path: Path, name: str, llm: str, limit: int | None, **metrics) -> Path:
    summary = RunSummary(
        dataset="pq2h",
        method="LOKG",
        ablation="full",
        llm=llm,
        seed=0,
        metrics=metrics,
        budget=2048,
        limit=limit,
    )
    return write_run_summary(tmp_path / name, summary)


def test_closing_table_has_one_row_per_configuration(tmp_path):
    paper = _summary(tmp_path, "a", "extractive", None, **{
        "hits@1": 0.0156, "hit": 1.0, "coverage": 1.0, "evidence_tok/q": 61.34, "tok/q": 0.0,
        "calls/q": 0.0, "n": 192.0,
    })  # fmt: skip
    llm = _summary(tmp_path, "b", "local SmolLM2", 40, **{
        "hits@1": 0.425, "hit": 0.5, "coverage": 1.0, "evidence_tok/q": 117.0, "tok/q": 301.5,
        "calls/q": 1.0, "n": 40.0,
    })  # fmt: skip
    table = demo_table([("paper", paper), ("ours", None), ("ours + LLM", llm)]).splitlines()
    assert table[0] == (
        "| configuration | reader | B | Hits@1 | Hit | coverage | evidence tok/q | tok/q | "
        "calls/q | n |"
    )
    assert table[2] == (
        "| paper | extractive | 2048 | 0.016 | 1.000 | 1.000 | 61.3 | 0.0 | 0.000 | 192 |"
    )
    assert table[3] == "| ours | not run | — | — | — | — | — | — | — | — |"
    assert table[4] == (
        "| ours + LLM | local SmolLM2, first 40 of test | 2048 | 0.425 | 0.500 | 1.000 | 117.0 | "
        "301.5 | 1.000 | 40 |"
    )
