"""The naive BFS reference retriever on a hand-written graph."""

import pytest

from lokg.baselines.bfs import BFSRetriever, build_bfs
from lokg.kg import KnowledgeGraph
from lokg.typing import Question

#   t --r--> a --r--> c --r--> e         t --s--> b        (x --r--> t is an in-edge of t)
TRIPLES = [("t", "r", "a"), ("t", "s", "b"), ("a", "r", "c"), ("c", "r", "e"), ("x", "r", "t")]


def _q(text: str, *topics: str) -> Question:
    """A question with the given text and topic entities (gold answers are not read)."""
    return Question(id="q", text=text, answers=("?",), topic_entities=topics)


def labeled(kg, ids):
    return [kg.labeled(i) for i in ids]


def test_breadth_first_order_and_depth():
    kg = KnowledgeGraph.from_labeled_triples(TRIPLES)
    res = BFSRetriever(kg, max_hops=3, direction="out").retrieve(_q("q?", "t"))
    assert labeled(kg, res.triple_ids) == [
        ("t", "r", "a"), ("t", "s", "b"), ("a", "r", "c"), ("c", "r", "e")
    ]  # fmt: skip
    assert res.answers == ()
    two = BFSRetriever(kg, max_hops=2, direction="out").retrieve(_q("q?", "t"))
    assert ("c", "r", "e") not in labeled(kg, two.triple_ids)


def test_both_directions_take_in_edges_too_each_triple_once():
    kg = KnowledgeGraph.from_labeled_triples(TRIPLES)
    one = BFSRetriever(kg, max_hops=1).retrieve(_q("q?", "a"))  # a's out-edge, then its in-edge
    assert labeled(kg, one.triple_ids) == [("a", "r", "c"), ("t", "r", "a")]
    two = BFSRetriever(kg, max_hops=2).retrieve(_q("q?", "a"))
    ids = two.triple_ids
    assert len(ids) == len(set(ids)) == 5  # hop 2 reaches e, b (via t) and x (into t)


def test_cap_unknown_topic_and_bad_options():
    kg = KnowledgeGraph.from_labeled_triples(TRIPLES)
    assert len(build_bfs(kg, max_triples=2).retrieve(_q("q", "t")).triple_ids) == 2
    with pytest.raises(
        ValueError, match=r"retriever.direction='up'; expected one of \('both', 'out'\)"
    ):
        BFSRetriever(kg, direction="up")
    assert BFSRetriever(kg).retrieve(_q("q", "nowhere")).triple_ids == ()
    with pytest.raises(ValueError, match="retriever.max_hops must be >= 1"):
        BFSRetriever(kg, max_hops=0)
