"""Questions without gold answers (issue 40 s2) in the metrics and where they are shown: the
answer metrics are ``None`` (null in JSON), rendered "n/a (no gold answers)"; the evidence,
token and call metrics still count every question; a mixed set is scored over its answered
questions only (``gold_n``)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from lokg.eval import QuestionResult, aggregate, score_question
from lokg.eval.metrics import ANSWER_METRICS, METRIC_KEYS, NO_GOLD, not_applicable
from lokg.eval.records import question_record
from lokg.eval.tables import RunSummary, read_run_summary, write_run_summary
from lokg.evaluate import format_metrics
from lokg.ittc.encoder import NaiveEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.pipeline import PipelineOutput
from lokg.retrieval import RetrievalResult, resolve_topics
from lokg.show import _scores_cell
from lokg.typing import Question


def test_a_question_without_gold_has_no_answer_scores_and_keeps_its_accounting():
    s = score_question(["paris"], [], context="france | capital | paris", tokens=30, calls=1,
                       t_after=7, t_naive=10, retrieval_latency_s=0.5)  # fmt: skip
    assert not s.has_gold
    assert (s.hits1, s.hit, s.precision, s.recall, s.f1) == (None,) * 5
    assert (s.covered, s.answer_recall, s.covered_all_constraints) == (None, None, None)
    assert (s.tokens, s.calls, s.t_after, s.t_naive, s.empty_context) == (30, 1, 7, 10, False)
    with pytest.raises(ValueError, match="no non-empty gold answer"):
        score_question(["x"], ["", " "])  # labels given, none usable: still an error


def test_a_set_without_gold_reports_answer_metrics_as_none_and_the_rest_by_hand():
    scores = [
        score_question(["a"], [], context="x | r | a", tokens=0, t_after=6, t_naive=12),
        score_question([], [], context="", tokens=0, t_after=0, t_naive=0),
    ]
    m = aggregate(scores)
    assert list(m) == list(METRIC_KEYS)
    assert {k: m[k] for k in ANSWER_METRICS} == dict.fromkeys(ANSWER_METRICS)
    assert (m["n"], m["gold_n"], m["empty_contexts"]) == (2.0, 0.0, 1.0)
    assert m["evidence_tok/q"] == pytest.approx(3.0)  # (6 + 0) / 2
    assert m["tcr"] == pytest.approx(0.5)  # only the question with T_naive > 0: 6 / 12
    assert m["failed"] == 0.0 and m["tok/q"] == 0.0
    others = [v for k, v in m.items() if k not in ANSWER_METRICS]
    assert all(isinstance(v, float) for v in others)  # numbers stay numbers
    assert not_applicable(m) == dict.fromkeys(ANSWER_METRICS, NO_GOLD)


def test_a_mixed_set_is_scored_over_its_answered_questions():
    m = aggregate([
        score_question(["paris"], ["Paris"], tokens=100),  # right
        score_question(["lyon"], ["Paris"], tokens=100),  # wrong
        score_question(["nice"], [], tokens=100),  # no gold: left out of H@1, in tok/q
    ])  # fmt: skip
    assert (m["n"], m["gold_n"]) == (3.0, 2.0)
    assert m["hits@1"] == pytest.approx(1 / 2) and m["f1"] == pytest.approx(1 / 2)
    assert m["tok/q"] == pytest.approx(100.0)
    assert m["h@1k"] == pytest.approx(0.5 * 1000 / 100)
    assert not_applicable(m) == {}


def test_a_record_without_gold_scores_failed_or_not_and_judges_no_support():
    kg = KnowledgeGraph.from_labeled_triples([("paris", "capital_of", "france")])
    topics, unknown = resolve_topics(kg, ["france"])
    retrieval = RetrievalResult(kg, [0], topics=topics, unknown_topics=unknown)
    context = NaiveEncoder().encode(kg, [0], budget=64)
    question = Question("q", "capital of france?", (), ("france",))
    out = PipelineOutput(question=question, answers=["paris"], output="paris", reader="test",
                         prompt=[], context=context, retrieval=retrieval, budget=64)  # fmt: skip
    record = question_record(out)
    assert record.gold == [] and record.covered_all_constraints is None
    assert record.predictions == ["paris"] and "paris" in record.context
    back = QuestionResult.from_json(json.loads(json.dumps(record.to_json())))
    assert not back.score().has_gold
    failed = QuestionResult(id="f", question="?", gold=[], status="failed", error="HTTP 500")
    m = aggregate([back.score(), failed.score()])
    assert m["failed"] == pytest.approx(0.5) and m["hits@1"] is None


def test_the_console_table_says_n_a_and_counts_the_answered_questions():
    m = aggregate([score_question(["a"], [], context="x | r | a", t_after=6, t_naive=6)])
    table = format_metrics(m)
    assert f"  {'hits@1':<24s} {NO_GOLD}" in table.splitlines()
    assert f"  {'coverage':<24s} {NO_GOLD}" in table.splitlines()
    assert f"  {'tcr':<24s} 1.0000" in table.splitlines()
    assert f"  {'gold_n':<24s} 0" in table.splitlines()
    answered = format_metrics(aggregate([score_question(["paris"], ["paris"])]))
    assert "gold_n" not in answered and NO_GOLD not in answered  # every question answered


def test_summary_json_holds_null_and_says_why(tmp_path):
    m = aggregate([score_question(["a"], [], context="x | r | a", t_after=6, t_naive=6)])
    summary = RunSummary(dataset="custom", method="LOKG (ours)", ablation="full",
                         llm="extractive", seed=0, metrics=m)  # fmt: skip
    path = write_run_summary(tmp_path, summary)
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert data["metrics"]["hits@1"] is None and data["metrics"]["gold_n"] == 0
    assert data["metrics"]["tcr"] == 1.0
    assert data["metric_notes"] == dict.fromkeys(ANSWER_METRICS, NO_GOLD)
    back = read_run_summary(path)  # tables read an unscored metric as undefined (a dash)
    assert math.isnan(back.metrics["hits@1"]) and back.metrics["n"] == 1.0
    answered = aggregate([score_question(["paris"], ["paris"])])
    plain = write_run_summary(tmp_path / "b", dataclasses.replace(summary, metrics=answered))
    assert "metric_notes" not in json.loads(plain.read_text())


def test_the_evidence_page_says_n_a_without_gold():
    assert _scores_cell({}, False) == NO_GOLD
    assert _scores_cell({"hits@1": 1.0, "f1": 0.5}, True).endswith(" · f1 0.50")
