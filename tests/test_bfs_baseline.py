"""The naive BFS reference retriever on a hand-written graph."""

import pytest

from lokg.baselines.bfs import BFSRetriever, build_bfs
from lokg.kg import KnowledgeGraph

#   t --r--> a --r--> c --r--> e         t --s--> b        (x --r--> t is an in-edge of t)
TRIPLES = [("t", "r", "a"), ("t", "s", "b"), ("a", "r", "c"), ("c", "r", "e"), ("x", "r", "t")]


def labeled(kg, ids):
    return [kg.labeled(i) for i in ids]


def test_breadth_first_order_and_depth():
    kg = KnowledgeGraph.from_labeled_triples(TRIPLES)
    res = BFSRetriever(kg, max_hops=3).retrieve("q?", ["t"])
    assert labeled(kg, res.triple_ids) == [
        ("t", "r", "a"), ("t", "s", "b"), ("a", "r", "c"), ("c", "r", "e")
    ]  # fmt: skip
    assert res.answers == []
    two = BFSRetriever(kg, max_hops=2).retrieve("q?", ["t"])
    assert ("c", "r", "e") not in labeled(kg, two.triple_ids)


def test_cap_unknown_topic_and_bad_options():
    kg = KnowledgeGraph.from_labeled_triples(TRIPLES)
    assert len(build_bfs(kg, max_triples=2, encoder=None).retrieve("q", ["t"]).triple_ids) == 2
    assert BFSRetriever(kg).retrieve("q", ["nowhere"]).triple_ids == []
    with pytest.raises(ValueError, match="retriever.max_hops must be >= 1"):
        BFSRetriever(kg, max_hops=0)
