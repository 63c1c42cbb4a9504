"""GraphRAG: Leiden on planted communities, the entity graph's node limit, reports written once
and cached on disk with their cost charged once per run (scripted OpenAI-protocol double), and
local search's mixed context (relationship filter, tables, report share) checked by hand."""

from __future__ import annotations

import importlib.util

import pytest

from lokg.kg.graph import KnowledgeGraph
from lokg.llm import ChatClient
from lokg.tokens import count_tokens
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
                                                                  bag_embedder):  # fmt: skip
    from lokg.baselines.graphrag import GraphRAGRetriever

    openai_double.route = lambda payload: ("ok", "Report: the a family know each other.")
    chat = ChatClient(model="double-model", base_url=openai_double.base_url, max_attempts=1)
    kg = two_families()
    q = Question("q1", "who does a0 know ?", ("a1",), ("a0",))
    ret = GraphRAGRetriever(kg, bag_embedder, chat, max_cluster_size=10, top_communities=2,
                            cache_dir=tmp_path, context="reports")  # fmt: skip
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
    fresh = GraphRAGRetriever(kg, bag_embedder, chat, max_cluster_size=10, top_communities=2,
                              cache_dir=tmp_path, context="reports")  # fmt: skip
    assert len(list((tmp_path / "graphrag").rglob("*.json"))) == 2
    third = fresh.retrieve(q)
    assert len(openai_double.requests) == 2  # no new call
    assert third.extra["index"]["reports_from_cache"] == 2
    assert third.accounting["calls"] == 2 and third.accounting["cached_calls"] == 2


def star() -> KnowledgeGraph:
    """a, b mapped; x joined to both, y to a only, z to neither (degrees a 4, b 3, x 2, y 2)."""
    return KnowledgeGraph.from_labeled_triples([
        ("a", "r1", "b"), ("a", "r2", "x"), ("b", "r3", "x"), ("a", "r4", "y"), ("y", "r5", "z"),
        ("b", "r6", "a"),
    ])  # fmt: skip


def test_relationship_filter_in_network_first_then_links_then_combined_degree():
    from lokg.baselines.graphrag import degrees, filter_relationships

    kg = star()
    a, b = kg.entities["a"], kg.entities["b"]
    deg = degrees(kg, range(6))
    assert [deg[kg.entities[n]] for n in "abxyz"] == [4, 3, 2, 2, 1]
    # in-network a-b (t0, t5: rank 7 each, kept in order); out-network a-x (links 2, rank 6),
    # b-x (links 2, rank 5), a-y (links 1, rank 6); y-z touches no mapped entity
    assert filter_relationships(kg, range(6), [a, b], 10, deg) == [0, 5, 1, 2, 3]
    # at most top_k * |mapped| out-network relationships: 1 * 2
    assert filter_relationships(kg, range(6), [a, b], 1, deg) == [0, 5, 1, 2]
    # a alone: b is now an outside end (links 1 like x and y): rank order a-b, b-a, a-x, a-y
    assert filter_relationships(kg, range(6), [a], 10, deg) == [0, 5, 1, 3]


def test_local_tables_add_mapped_entities_while_the_tables_fit():
    from lokg.baselines.graphrag import degrees, local_tables
    from lokg.tokens import get_tokenizer

    kg, tok = star(), get_tokenizer()
    a, b = kg.entities["a"], kg.entities["b"]
    deg = degrees(kg, range(6))

    def tables(max_tokens):
        return local_tables(kg, range(6), [a, b], degree=deg, max_tokens=max_tokens,
                            top_k_relationships=10, tokenizer=tok)  # fmt: skip

    entities = "-----Entities-----\nid|entity|number of relationships\n0|a|4\n1|b|3"
    both = ("-----Relationships-----\nid|source|target|description\n"
            "0|a|b|r1\n1|b|a|r6\n2|a|x|r2\n3|b|x|r3\n4|a|y|r4")  # fmt: skip
    full = tables(1000)
    assert full.text == entities + "\n\n" + both
    assert (full.entities, full.covered, full.triple_ids) == ((a, b), 2, (0, 5, 1, 2, 3))
    # one token short: the relationship table stops at a's relationships
    short = tables(tok.count(full.text) - 1)
    assert short.covered == 1 and short.triple_ids == (0, 5, 1, 3)
    assert short.text == entities + ("\n\n-----Relationships-----\nid|source|target|description"
                                     "\n0|a|b|r1\n1|b|a|r6\n2|a|x|r2\n3|a|y|r4")  # fmt: skip
    # room for the entity table's first row only: no relationship table
    one = tables(tok.count(entities.rsplit("\n", 1)[0]))
    assert one.text == entities.rsplit("\n", 1)[0] and one.triple_ids == () and one.covered == 0
    assert tables(3).text == ""


def family_reports(payload):
    content = payload["messages"][0]["content"]
    return ("ok", "The a family." if "(a0, knows, a1)" in content else "The b family.")


def test_mixed_context_reports_of_mapped_entities_then_tables_under_the_budget(
    tmp_path, openai_double, bag_embedder
):
    from lokg.baselines.graphrag import GraphRAGRetriever

    openai_double.route = family_reports
    chat = ChatClient(model="double-model", base_url=openai_double.base_url, max_attempts=1)
    kg = two_families()
    q = Question("q1", "who does a0 know , and b2 ?", ("a1",), ("a0",))
    ret = GraphRAGRetriever(kg, bag_embedder, chat, top_k_entities=1, community_prop=0.5,
                            context_tokens=400, cache_dir=tmp_path)  # fmt: skip
    out = ret.retrieve(q)
    # mapped: the topic a0, then b2 (the one other name sharing a word with the question);
    # each family has one mapped entity: the larger-first order breaks the tie (a's first)
    assert out.extra["mapped_entities"] == 2 and out.extra["reports_in_context"] == 2
    # the entity graph holds the triples within 3 hops of a0: b2's only one is b0-b2, so b2 has
    # degree 1; no a0-b2 triple, so four out-network relationships by combined degree:
    # a0-a3 3 + 4, a0-a1 3 + 3, a0-a2 3 + 3, b0-b2 4 + 1
    (text,) = out.passages
    assert text == (
        "-----Reports-----\nid|content\n0|The a family.\n1|The b family.\n\n"
        "-----Entities-----\nid|entity|number of relationships\n0|a0|3\n1|b2|1\n\n"
        "-----Relationships-----\nid|source|target|description\n"
        "0|a0|a3|knows\n1|a0|a1|knows\n2|a0|a2|knows\n3|b0|b2|knows"
    )
    assert count_tokens(text) <= 400 and out.accounting["calls"] == 2
    # a report share too small for the first report: it is consulted (and charged) but left
    # out, and no further report is read
    small = GraphRAGRetriever(kg, bag_embedder, chat, top_k_entities=1, community_prop=0.02,
                              context_tokens=400, cache_dir=tmp_path)  # fmt: skip
    out = small.retrieve(q)
    assert out.extra["reports_in_context"] == 0 and out.extra["index"]["reports_from_cache"] == 1
    assert out.passages[0].startswith("-----Entities-----") and out.accounting["calls"] == 1


def test_graphrag_settings_are_checked():
    from lokg.baselines.graphrag import GraphRAGRetriever

    kg = two_families()
    with pytest.raises(ValueError, match="retriever.context must be one of"):
        GraphRAGRetriever(kg, None, None, context="global")
    with pytest.raises(ValueError, match="sum to <= 1"):
        GraphRAGRetriever(kg, None, None, community_prop=0.6, text_unit_prop=0.5)
