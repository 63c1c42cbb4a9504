"""Candidates are entities, not spellings (issue 30): answers whose labels differ only in case,
underscores or whitespace are one candidate, the KG's own spelling of the best-ranked one kept,
scores combined by max, merges counted in the result and in the record."""

from __future__ import annotations

import numpy as np

from lokg.kg.graph import KnowledgeGraph
from lokg.normalize import spelling_key
from lokg.retrieval import RankedAnswer, RetrievalResult, merge_spellings
from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.path_cache import PathCache
from lokg.taimr.retriever import TAIMRRetriever
from lokg.taimr.topology import uniform_log_attention
from lokg.typing import Question


def test_spelling_key_folds_case_underscores_and_whitespace_only():
    same = ["Keanu Reeves", "keanu_reeves", "keanu  reeves", " KEANU_Reeves\t", "Ｋｅａｎｕ Reeves"]
    assert {spelling_key(s) for s in same} == {"keanu reeves"}
    # articles and punctuation are part of a name: these stay apart
    assert spelling_key("The Who") != spelling_key("Who")
    assert spelling_key("AC/DC") != spelling_key("AC DC")
    assert spelling_key("o'neil") != spelling_key("oneil")


def _a(entity: int, label: str, score: float) -> RankedAnswer:
    return RankedAnswer(entity, label, score)


def test_merge_keeps_the_best_ranked_spelling_with_the_max_score_and_counts():
    answers = [
        _a(3, "keanu_reeves", 2.0),
        _a(7, "The Who", 1.5),
        _a(1, "Keanu Reeves", 1.0),
        _a(9, "Who", 0.7),
        _a(5, "keanu  reeves", 0.5),
    ]
    merged, n = merge_spellings(answers)
    assert n == 2
    assert [(a.entity, a.label, a.score) for a in merged] == [
        (3, "keanu_reeves", 2.0),  # best-ranked member kept, at its rank
        (7, "The Who", 1.5),
        (9, "Who", 0.7),
    ]
    # an unsorted list: the first member keeps its place and takes the group's maximum
    merged, n = merge_spellings([_a(1, "Keanu Reeves", 0.2), _a(3, "keanu_reeves", 0.9)])
    assert n == 1 and [(a.entity, a.score) for a in merged] == [(1, 0.9)]
    assert merge_spellings([]) == ([], 0)


# Two nodes for one actor, spelled two ways (a KG merged from two sources).
KG = KnowledgeGraph.from_labeled_triples(
    [
        ("the_matrix", "starring", "Keanu Reeves"),
        ("john_wick", "starring", "keanu_reeves"),
        ("speed", "starring", "keanu_reeves"),
        ("the_matrix", "sequel", "john_wick"),
        ("the_matrix", "sequel", "speed"),
    ]
)


def test_a_retriever_returns_one_candidate_per_spelling(embedder):
    cache = PathCache(KG, uniform_log_attention(KG), node_information_gain(KG))
    retriever = TAIMRRetriever(KG, embedder, cache, relation_linking="off", k_top_unit="answers")
    q = Question(id="q", text="who stars in the matrix ?", answers=("Keanu Reeves",),
                 topic_entities=("the_matrix",))  # fmt: skip
    result = retriever.retrieve(q)
    labels = [a.label for a in result.answers]
    keys = [spelling_key(x) for x in labels]
    assert len(keys) == len(set(keys))
    assert sum(k == "keanu reeves" for k in keys) == 1
    assert result.merged_answers == 1
    kept = next(a for a in result.answers if spelling_key(a.label) == "keanu reeves")
    # the kept spelling is one of the KG's own, with its own entity and path
    assert KG.entities.label(kept.entity) == kept.label and kept.path.answer == kept.entity
    # the answers are sorted by S_final, so the kept member is the better-scored one: its
    # score is its own path's, and the other spelling's entity is gone
    assert kept.score == kept.path.s_final
    other = ({"Keanu Reeves", "keanu_reeves"} - {kept.label}).pop()
    assert KG.entities[other] not in {a.entity for a in result.answers}
    # the count survives a result rebuilt from another (the learned walk's fallback)
    import dataclasses

    again = dataclasses.replace(result, extra={"fallback": "semantic"})
    assert again.merged_answers == 1 and again.answers == result.answers


def test_the_record_carries_the_count(embedder):
    from lokg.eval.records import question_record
    from lokg.ittc.encoder import EncodedContext
    from lokg.pipeline import PipelineOutput

    q = Question(id="q", text="x", answers=("a",), topic_entities=("the_matrix",))
    result = RetrievalResult(
        KG,
        answers=[_a(KG.entities["Keanu Reeves"], "Keanu Reeves", 1.0),
                 _a(KG.entities["keanu_reeves"], "keanu_reeves", 0.5)],
    )  # fmt: skip
    assert [a.label for a in result.answers] == ["Keanu Reeves"] and result.merged_answers == 1
    none = np.zeros((0, 3), dtype=np.int64)
    ctx = EncodedContext("", 0, 64, 0, none, (), none, "empty", "sro")
    out = PipelineOutput(q, [], "", "extractive", [], ctx, result, 64)
    assert question_record(out).extra["merged_candidates"] == 1
