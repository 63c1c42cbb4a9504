"""coverage_all_constraints on the records of packed contexts (issue 28 §2): the context must
carry each answer's support from every anchor; an answer whose second constraint is missing
from the context is not covered, even when its name is there (``coverage`` counts it)."""

from __future__ import annotations

import math
from typing import NamedTuple

import pytest

from lokg.eval import QuestionResult, aggregate
from lokg.eval.records import question_record
from lokg.ittc.encoder import NaiveEncoder
from lokg.ittc.passages import encode_passages
from lokg.kg.graph import KnowledgeGraph
from lokg.pipeline import PipelineOutput
from lokg.retrieval import RetrievalResult, resolve_topics
from lokg.typing import LabeledTriple, Question

#:   dora -spouse-> ann -directed-> film1 <-starred_in- bob;  film1 -language-> french
#:                  ann -directed-> film2 <-starred_in- carl; film2 -language-> german
FILMS: list[LabeledTriple] = [
    ("ann", "directed", "film1"),
    ("ann", "directed", "film2"),
    ("bob", "starred_in", "film1"),
    ("carl", "starred_in", "film2"),
    ("film1", "language", "french"),
    ("film2", "language", "german"),
    ("dora", "spouse", "ann"),
]
BUDGET = 512


@pytest.fixture(scope="module")
def films() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(FILMS, name="films")


def packed_record(kg, packed, answers, topics, max_hops=3) -> QuestionResult:
    """The record of a question whose context packs exactly ``packed`` (all fit under B)."""
    ids = [FILMS.index(t) for t in packed]
    found, unknown = resolve_topics(kg, topics)
    retrieval = RetrievalResult(kg, ids, topics=found, unknown_topics=unknown)
    context = NaiveEncoder().encode(kg, ids, budget=BUDGET)
    assert len(context.triples) == len(packed)  # nothing dropped: the test packs it all
    question = Question("q", "?", tuple(answers), tuple(topics))
    return question_record(output(question, context, retrieval), max_hops)


def output(question, context, retrieval) -> PipelineOutput:
    """What the pipeline returns for a question answered by nothing (the record's view)."""
    return PipelineOutput(
        question=question,
        answers=[],
        output="",
        reader="test",
        prompt=[],
        context=context,
        retrieval=retrieval,
        budget=BUDGET,
    )


class Covered(NamedTuple):
    coverage: bool | None
    all_constraints: bool | None


def covered(record: QuestionResult) -> Covered:
    s = record.score()
    return Covered(coverage=s.covered, all_constraints=s.covered_all_constraints)


def test_conjunction_with_both_arms_packed_is_covered(films):
    # which films directed by ann star bob? {x : ann -directed-> x, bob -starred_in-> x}
    both = [("ann", "directed", "film1"), ("bob", "starred_in", "film1")]
    rec = packed_record(films, both, ["film1"], ["ann", "bob"])
    assert covered(rec) == Covered(coverage=True, all_constraints=True)


def test_conjunction_missing_one_arm_is_covered_by_name_only(films):
    # ann's arm names film1, bob's arm is missing: coverage 1, all constraints 0
    ann_only = [("ann", "directed", "film1"), ("ann", "directed", "film2")]
    rec = packed_record(films, ann_only, ["film1"], ["ann", "bob"])
    assert covered(rec) == Covered(coverage=True, all_constraints=False)


def test_constraint_needs_the_filter_triple_read_either_way(films):
    # which film directed by ann is in french? the chain ann -> x, the filter x -language-> french
    chain_and_filter = [("ann", "directed", "film1"), ("film1", "language", "french")]
    rec = packed_record(films, chain_and_filter, ["film1"], ["ann", "french"])
    assert covered(rec) == Covered(coverage=True, all_constraints=True)
    other_filter = [("ann", "directed", "film1"), ("film2", "language", "german")]
    rec = packed_record(films, other_filter, ["film1"], ["ann", "french"])
    assert covered(rec) == Covered(coverage=True, all_constraints=False)


def test_chain_answer_named_only_in_an_unrelated_triple_is_not_covered(films):
    # which film did carl star in? film2 is named, but by ann's triple: no path from carl
    rec = packed_record(films, [("ann", "directed", "film2")], ["film2"], ["carl"])
    assert covered(rec) == Covered(coverage=True, all_constraints=False)
    rec = packed_record(films, [("carl", "starred_in", "film2")], ["film2"], ["carl"])
    assert covered(rec) == Covered(coverage=True, all_constraints=True)


def test_paths_count_up_to_the_retrievers_l(films):
    # which films did dora's spouse direct? dora -spouse-> ann -directed-> film1: 2 hops
    two_hops = [("dora", "spouse", "ann"), ("ann", "directed", "film1")]
    rec = packed_record(films, two_hops, ["film1"], ["dora"], max_hops=2)
    assert covered(rec) == Covered(coverage=True, all_constraints=True)
    rec = packed_record(films, two_hops, ["film1"], ["dora"], max_hops=1)
    assert covered(rec) == Covered(coverage=True, all_constraints=False)
    assert rec.extra["coverage_max_hops"] == 1


def test_unknown_topic_is_ignored(films):
    arm = [("ann", "directed", "film1")]
    rec = packed_record(films, arm, ["Film1"], ["ann", "zed"])  # gold matched normalised
    assert rec.extra["unknown_topics"] == ["zed"]
    assert covered(rec) == Covered(coverage=True, all_constraints=True)


def test_empty_context_is_measured_and_not_covered(films):
    rec = packed_record(films, [], ["film1"], ["ann", "bob"])
    assert rec.context == "" and covered(rec) == Covered(coverage=False, all_constraints=False)


def test_text_evidence_leaves_it_unmeasured(films):
    found, _ = resolve_topics(films, ["ann"])
    retrieval = RetrievalResult(films, passages=("ann directed film1.",), topics=found)
    context = encode_passages(NaiveEncoder().tokenizer, retrieval.passages, BUDGET)
    rec = question_record(output(Question("q", "?", ("film1",), ("ann",)), context, retrieval))
    assert covered(rec) == Covered(coverage=True, all_constraints=None)


def test_records_written_before_it_load_and_are_left_out(films, caplog):
    both = [("ann", "directed", "film1"), ("bob", "starred_in", "film1")]
    covered_rec = packed_record(films, both, ["film1"], ["ann", "bob"])
    one_arm = packed_record(films, both[:1], ["film1"], ["ann", "bob"])
    assert QuestionResult.from_json(covered_rec.to_json()) == covered_rec
    old_json = {k: v for k, v in covered_rec.to_json().items() if k != "covered_all_constraints"}
    old_json["extra"] = {k: v for k, v in old_json["extra"].items() if k != "coverage_max_hops"}
    old = QuestionResult.from_json({**old_json, "id": "old"})  # as a record written before
    assert old.covered_all_constraints is None and old.score().covered is True
    m = aggregate(r.score() for r in (old, covered_rec, one_arm))
    assert m["coverage"] == 1.0  # 3 of 3
    assert m["coverage_all_constraints"] == 0.5  # 1 of the 2 measured: the old one left out
    assert math.isnan(aggregate([old.score()])["coverage_all_constraints"])
    from lokg.evaluate import warn_unjudged_supports

    assert warn_unjudged_supports([old, covered_rec, one_arm]) == 1
    assert "1 of 3 records predate coverage_all_constraints" in caplog.text
