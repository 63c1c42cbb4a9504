"""TAIMR search and ranking: Eq. (16)-(18) by hand, path cache cold/warm, the off switch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.linking import RelationLinker
from lokg.taimr.path_cache import PathCache
from lokg.taimr.retriever import SemanticRetriever, TAIMRRetriever
from lokg.taimr.topology import uniform_log_attention
from lokg.typing import Question


def _q(text: str, *topics: str) -> Question:
    """A question with the given text and topic entities (gold answers are not read)."""
    return Question(id="q", text=text, answers=("?",), topic_entities=topics)


def _mu(kg, name):
    return node_information_gain(kg)[kg.entities[name]]


def _retriever(kg, embedder, **kwargs):
    cache = PathCache(kg, uniform_log_attention(kg), node_information_gain(kg))
    return TAIMRRetriever(kg, embedder, cache, relation_linking="off", **kwargs)


def test_uniform_attention_is_one_over_out_degree(family):
    # alice, bob have 2 out-edges; carol 1.
    la = uniform_log_attention(family)
    heads = [family.entities.label(h) for h in family.triples_np[:, 0]]
    expected = [math.log(1 / {"alice": 2, "bob": 2, "carol": 1}[h]) for h in heads]
    assert np.allclose(la, expected)


def test_s_topo_is_eq16(family, embedder):
    paths = _retriever(family, embedder).search(family.entities["alice"], None)
    by_ents = {tuple(family.entities.label(e) for e in p.entities): p for p in paths}
    log_half = math.log(0.5)
    # alice -> bob -> france: log a(alice->bob) + log a(bob->france) + log mu(bob) + log mu(france)
    p = by_ents[("alice", "bob", "france")]
    expected = 2 * log_half + math.log(_mu(family, "bob")) + math.log(_mu(family, "france"))
    assert math.isclose(p.s_topo, expected)
    # alice -> carol -> spain: carol has one out-edge, log 1 = 0
    p = by_ents[("alice", "carol", "spain")]
    expected = log_half + math.log(_mu(family, "carol")) + math.log(_mu(family, "spain"))
    assert math.isclose(p.s_topo, expected)
    # lengths 1..L, all 6 paths of this graph (the beam never prunes here)
    assert sorted(len(p.triple_ids) for p in paths) == [1, 1, 2, 2, 2, 3]


def test_without_mu_only_attention_counts(family, embedder):
    kg = family
    cache = PathCache(kg, uniform_log_attention(kg), node_information_gain(kg), lambda_topo=0.0)
    r = TAIMRRetriever(kg, embedder, cache, relation_linking="off")
    for p in r.search(kg.entities["alice"], None):
        heads = [kg.entities.label(e) for e in p.entities[:-1]]
        expected = sum(math.log(1 / {"alice": 2, "bob": 2, "carol": 1}[h]) for h in heads)
        assert math.isclose(p.s_topo, expected)


def test_best_path_per_answer_and_s_final_eq18(family, embedder):
    r = _retriever(family, embedder, lambda_q=2.0, k_top_unit="answers")
    res = r.retrieve(_q("what is the nation of alice 's husband ?", "alice"))
    by_label = {a.label: a for a in res.answers}
    # carol is reached by alice->carol and alice->bob->carol; the better S_topo is kept
    mu_c = math.log(_mu(family, "carol"))
    direct = math.log(0.5) + mu_c
    via_bob = 2 * math.log(0.5) + math.log(_mu(family, "bob")) + mu_c
    assert math.isclose(by_label["carol"].path.s_topo, max(direct, via_bob))
    # S_sem: the question has the nationality axis only; "france" is the france axis -> 0,
    # "bob" has no keyword (last axis) -> 0 as well; cos is 0 for every answer here.
    for a in res.answers:
        assert math.isclose(a.score, a.path.s_topo + 2.0 * a.path.s_sem)
    # answers are sorted by S_final, paths are the answers' supporting paths
    scores = [a.score for a in res.answers]
    assert scores == sorted(scores, reverse=True)
    assert [p.answer for p in res.paths] == [a.entity for a in res.answers][: r.k_top]
    assert set(res.triple_ids) == {t for p in res.paths for t in p.triple_ids}


def test_k_top_paths_is_the_papers_top_paths_by_s_final(family, embedder):
    # the paper "returns the top 20 paths": every kept path ranked by its S_final, so two
    # paths to one answer may both be returned (alice->carol and alice->bob->carol)
    q = _q("what is the nation of alice 's husband ?", "alice")
    by_answers = _retriever(family, embedder, k_top_unit="answers").retrieve(q)
    every = _retriever(family, embedder, k_top=6).retrieve(q)
    assert len(every.paths) == 6  # all 6 paths of this graph
    carol = family.entities["carol"]
    assert sum(p.answer == carol for p in every.paths) == 2
    finals = [p.s_final for p in every.paths]
    assert finals == sorted(finals, reverse=True)
    for p in every.paths:  # Eq. (18) per path: S_topo + lambda_q * S_sem(q, its answer)
        assert math.isclose(p.s_final, p.s_topo + p.s_sem)
    top3 = _retriever(family, embedder, k_top=3).retrieve(q)
    assert [p.s_final for p in top3.paths] == finals[:3]
    # the answers' ranking does not depend on the unit
    assert [a.entity for a in every.answers] == [a.entity for a in by_answers.answers]
    with pytest.raises(ValueError, match="k_top_unit must be one of"):
        _retriever(family, embedder, k_top_unit="triples")


def test_no_beam_width_keeps_every_path(family, embedder):
    alice = family.entities["alice"]
    assert len(_retriever(family, embedder, beam_width=None).search(alice, None)) == 6
    # a beam of 1 keeps one path per hop (alice -> carol -> spain, where the walk ends)
    narrow = _retriever(family, embedder, beam_width=1).search(alice, None)
    assert [len(p.triple_ids) for p in narrow] == [1, 2]


def test_semantic_bonus_reorders_answers(family, embedder):
    r = _retriever(family, embedder, lambda_q=100.0)
    res = r.retrieve(_q("is it spain ?", "alice"))
    assert res.top_answer == "spain"  # cos = 1 dominates


def test_relation_linking_finds_the_chain(family, embedder):
    # without mu: S_path(alice->bob) = log 1/2 + [log P_0(spouse) - log 3] ~ -1.79, while
    # S_path(alice->bob->france) = 2 log 1/2 + [~0] ~ -1.39 (both mentions matched).
    mu = node_information_gain(family)
    cache = PathCache(family, uniform_log_attention(family), mu, lambda_topo=0.0)
    r = TAIMRRetriever(
        family, embedder, cache, linker=RelationLinker(family, embedder), rels_per_hop=1
    )
    res = r.retrieve(_q("which nationality is alice 's couple ?", "alice"))
    assert res.top_answer == "france"
    assert [family.relations.label(x) for x in res.answers[0].path.relations] == [
        "spouse",
        "nationality",
    ]
    # rels_per_hop=1 expands only the linked keys: (alice, spouse) then (bob, nationality)
    assert set(cache.entries) == {
        (family.entities["alice"], family.relations["spouse"]),
        (family.entities["bob"], family.relations["nationality"]),
    }


def test_path_cache_cold_then_warm_and_persisted(family, embedder, tmp_path):
    kg = family
    make = lambda: PathCache(kg, uniform_log_attention(kg), node_information_gain(kg))  # noqa: E731
    cache = make()
    r = TAIMRRetriever(kg, embedder, cache, relation_linking="off")
    cold = r.retrieve(_q("spain", "alice"))
    assert cache.misses > 0  # cold: entries computed on demand
    misses = cache.misses
    warm = r.retrieve(_q("spain", "alice"))
    assert cache.misses == misses  # warm: nothing recomputed
    assert warm == cold
    cache.save(tmp_path / "paths.npz")
    fresh = make()
    assert fresh.load(tmp_path / "paths.npz") == len(cache)
    r2 = TAIMRRetriever(kg, embedder, fresh, relation_linking="off")
    assert r2.retrieve(_q("spain", "alice")) == cold and fresh.misses == 0
    # entries: out-triples of (head, relation), best increment first, from triples only
    tids, _, scores = fresh.get(kg.entities["alice"], kg.relations["children"])
    assert kg.labeled(int(tids[0])) == ("alice", "children", "carol")
    assert math.isclose(scores[0], math.log(0.5) + math.log(_mu(kg, "carol")))
    other = PathCache(kg, uniform_log_attention(kg), node_information_gain(kg), lambda_topo=0.5)
    with pytest.raises(ValueError, match="fingerprint"):
        other.load(tmp_path / "paths.npz")


def test_semantic_retriever_ranks_triples_by_cosine(family, embedder):
    r = SemanticRetriever(family, embedder, k_top=2)
    res = r.retrieve(_q("spain ?", "alice"))
    assert family.labeled(res.triple_ids[0]) == ("carol", "nationality", "spain")
    assert len(res.triple_ids) == 2
    assert res.top_answer == "spain"
    assert "alice" not in [a.label for a in res.answers]


def test_unknown_topic_and_bad_options(family, embedder):
    assert _retriever(family, embedder).retrieve(_q("x", "nobody")).answers == ()
    cache = PathCache(family, uniform_log_attention(family), node_information_gain(family))
    with pytest.raises(ValueError, match=r"relation_linking must be one of \('chain', 'off'\)"):
        TAIMRRetriever(family, embedder, cache, relation_linking="bag")
    with pytest.raises(ValueError, match="needs a RelationLinker"):
        TAIMRRetriever(family, embedder, cache)
    with pytest.raises(ValueError, match="edge_log_alpha must have shape"):
        PathCache(family, np.zeros(2), node_information_gain(family))
