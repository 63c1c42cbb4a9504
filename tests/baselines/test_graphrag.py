"""GraphRAG: Leiden on planted communities, the entity graph's node limit, reports written once
and cached on disk with their cost charged once per run (scripted OpenAI-protocol double)."""

from __future__ import annotations

import importlib.util

import pytest

from lokg.kg.graph import KnowledgeGraph
from lokg.llm import ChatClient
from lokg.typing import Question

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("leidenalg") is None or importlib.util.find_spec("igraph") is None,
    reason="needs the 'baselines' extra (leidenalg, igraph)",
)


def test_leiden_recovers_two_planted_communities():
    from lokg.baselines.graphrag import leiden_communities

    # two 5-cliques (0-4 and 5-9) joined by one bridge edge 4-5
    clique = lambda lo: [(a, b) for a in range(lo, lo + 5) for b in range(a + 1, lo + 5)]  # noqa: E731
    edges = clique(0) + clique(5) + [(4, 5)]
    assert leiden_communities(10, edges, max_cluster_size=10) == [[0, 1, 2, 3, 4],
                                                                  [5, 6, 7, 8, 9]]  # fmt: skip
    # parallel edges add weight, self-loops are ignored: the same answer
    assert leiden_communities(10, edges + edges[:3] + [(2, 2)]) == [[0, 1, 2, 3, 4],
                                                                    [5, 6, 7, 8, 9]]  # fmt: skip


def test_a_large_community_is_split_again_and_isolated_nodes_stand_alone():
    from lokg.baselines.graphrag import leiden_communities

    clique = lambda lo: [(a, b) for a in range(lo, lo + 4) for b in range(a + 1, lo + 4)]  # noqa: E731
    edges = clique(0) + clique(4) + [(3, 4)]  # one 8-node community at a coarse level
    parts = leiden_communities(9, edges, max_cluster_size=4)
    assert [0, 1, 2, 3] in parts and [4, 5, 6, 7] in parts and [8] in parts
    assert all(len(p) <= 4 for p in parts)


def test_neighbourhood_respects_the_node_limit():
    from lokg.baselines.graphrag import neighbourhood_graph

    kg = KnowledgeGraph.from_labeled_triples([("hub", "r", f"n{i}") for i in range(10)])
    g = neighbourhood_graph(kg, [kg.entities["hub"]], 3, node_limit=4)
    assert len(g.nodes) == 4 and g.nodes[0] == kg.entities["hub"]
    assert len(g.triple_ids) == 3  # only the triples with both ends kept


def two_families() -> KnowledgeGraph:
    a = [(f"a{i}", "knows", f"a{j}") for i in range(4) for j in range(i + 1, 4)]
    b = [(f"b{i}", "knows", f"b{j}") for i in range(4) for j in range(i + 1, 4)]
    return KnowledgeGraph.from_labeled_triples([*a, *b, ("a3", "married", "b0")])


def test_reports_are_written_once_cached_on_disk_and_charged_once(tmp_path, openai_double,
                                                                  bag_encoder):  # fmt: skip
    from lokg.baselines.graphrag import GraphRAGRetriever

    openai_double.route = lambda payload: ("ok", "Report: the a family know each other.")
    chat = ChatClient(model="double-model", base_url=openai_double.base_url, max_attempts=1)
    kg = two_families()
    q = Question("q1", "who does a0 know ?", ("a1",), ("a0",))
    ret = GraphRAGRetriever(kg, bag_encoder, chat, max_cluster_size=10, top_communities=2,
                            cache_dir=tmp_path)  # fmt: skip
    out = ret.retrieve(q)
    # the 8-node entity graph splits into the two families: two reports, one call each
    assert out.extra["communities"] == 2 and len(out.passages) == 2
    assert out.extra["index"] == {"calls": 2, "prompt_tokens": 22, "completion_tokens": 6,
                                  "reports_written": 2, "reports_from_cache": 0}  # fmt: skip
    assert out.accounting["calls"] == 2 and out.accounting["prompt_tokens"] == 22
    # a report is written from <= 30 of the community's triples, as facts
    assert "(a0, knows, a1)" in openai_double.requests[0]["messages"][0]["content"]
    # same run, same communities: no call, nothing charged again
    again = ret.retrieve(q)
    assert again.accounting == {} and len(openai_double.requests) == 2
    # a new run reads the reports from disk and charges their recorded cost once
    fresh = GraphRAGRetriever(kg, bag_encoder, chat, max_cluster_size=10, top_communities=2,
                              cache_dir=tmp_path)  # fmt: skip
    assert len(list((tmp_path / "graphrag").rglob("*.json"))) == 2
    third = fresh.retrieve(q)
    assert len(openai_double.requests) == 2  # no new call
    assert third.extra["index"]["reports_from_cache"] == 2
    assert third.accounting["calls"] == 2 and third.accounting["cached_calls"] == 2
