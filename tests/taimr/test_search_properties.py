"""Properties of the beam search on random small graphs (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.path_cache import PathCache
from lokg.taimr.retriever import TAIMRRetriever
from lokg.taimr.topology import uniform_log_attention

from .conftest import KeywordEncoder

triples_st = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(0, 5)), min_size=1, max_size=14
)


def _all_paths(kg: KnowledgeGraph, topic: int, max_hops: int) -> list[tuple[int, ...]]:
    """Every walk of 1..max_hops triples from topic, by brute force."""
    out, frontier = [], [()]
    for _ in range(max_hops):
        nxt = []
        for walk in frontier:
            v = topic if not walk else int(kg.triples_np[walk[-1], 2])
            nxt.extend((*walk, int(t)) for t in kg.out_triples(v))
        out.extend(nxt)
        frontier = nxt
    return out


@settings(max_examples=40, deadline=None)
@given(triples=triples_st, lambda_topo=st.sampled_from([0.0, 1.0]), max_hops=st.integers(1, 3))
def test_wide_beam_is_exhaustive_and_scores_follow_eq16(triples, lambda_topo, max_hops):
    kg = KnowledgeGraph.from_ids(np.array(triples), 6, 3)
    mu = node_information_gain(kg)
    log_alpha = uniform_log_attention(kg)
    cache = PathCache(kg, log_alpha, mu, lambda_topo)
    r = TAIMRRetriever(
        kg, KeywordEncoder(), cache, max_hops=max_hops, beam_width=10_000, relation_linking="off"
    )
    topic = int(kg.triples_np[0, 0])
    paths = r.search(topic, None)
    assert sorted(p.triple_ids for p in paths) == sorted(_all_paths(kg, topic, max_hops))
    for p in paths:
        expected = sum(log_alpha[t] for t in p.triple_ids) + lambda_topo * sum(
            math.log(mu[v]) for v in p.entities[1:]
        )
        assert math.isclose(p.s_topo, expected, rel_tol=1e-9, abs_tol=1e-9)
        assert p.entities[0] == topic
        for i, tid in enumerate(p.triple_ids):
            assert (kg.triples_np[tid, 0], kg.triples_np[tid, 2]) == p.entities[i : i + 2]


@settings(max_examples=40, deadline=None)
@given(triples=triples_st, beam_width=st.integers(1, 4))
def test_narrow_beam_keeps_the_best_paths_per_depth(triples, beam_width):
    kg = KnowledgeGraph.from_ids(np.array(triples), 6, 3)
    cache = PathCache(kg, uniform_log_attention(kg), node_information_gain(kg))
    r = TAIMRRetriever(
        kg, KeywordEncoder(), cache, max_hops=1, beam_width=beam_width, relation_linking="off"
    )
    topic = int(kg.triples_np[0, 0])
    got = sorted((p.s_topo for p in r.search(topic, None)), reverse=True)
    every = sorted((cache.edge_score[t] for t in kg.out_triples(topic)), reverse=True)
    assert np.allclose(got, every[:beam_width])
