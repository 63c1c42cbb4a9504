"""SCOS (Section 2.3) against hand computations on tiny graphs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lokg.kg.graph import EntityAttributes, KnowledgeGraph
from lokg.scos import SCOSConfig, SCOSResult, compress, information_density
from lokg.scos.entity_types import entity_types, signature_types
from lokg.scos.merge import greedy_merge
from lokg.scos.similarity import (
    adaptive_threshold,
    fused_similarity,
    jaccard,
    pair_keys_entropy,
    type_nmi_similarity,
    type_pair_distribution,
)

LN2 = math.log(2.0)

# Four relations.  born_in and birthplace are synonyms (person -> city, two cities each);
# lives_in looks the same to embeddings and types but always points at c1 (H = 0), so the
# entropy difference of Eq. (5) raises its threshold; gender links persons to values.
TRIPLES = [
    ("p1", "born_in", "c1"),
    ("p2", "born_in", "c2"),
    ("p3", "birthplace", "c1"),
    ("p4", "birthplace", "c2"),
    ("p5", "lives_in", "c1"),
    ("p6", "lives_in", "c1"),
    ("p1", "lives_in", "c1"),
    ("p1", "gender", "male"),
    ("p2", "gender", "female"),
]
TYPES = {"c1": "city", "c2": "city", "male": "value", "female": "value"}


def _typed_kg() -> KnowledgeGraph:
    kg = KnowledgeGraph.from_labeled_triples(TRIPLES, name="tiny")
    types = [TYPES.get(label, "person") for label in kg.entities.labels]
    return KnowledgeGraph(
        kg.entities, kg.relations, kg.triples_np, EntityAttributes(types=types), name="tiny"
    )


def _embeddings(kg: KnowledgeGraph) -> np.ndarray:
    vectors = {
        "born_in": [1.0, 0.0],
        "birthplace": [2.0, 0.0],  # cosine 1 with born_in (scale does not matter)
        "lives_in": [1.0, 0.0],
        "gender": [0.0, 1.0],
    }
    return np.array([vectors[label] for label in kg.relations.labels])


def test_relation_vocabulary_order():
    kg = _typed_kg()
    assert kg.relations.labels == ["birthplace", "born_in", "gender", "lives_in"]


def test_tail_entropy_eq4_by_hand():
    kg = _typed_kg()
    E = kg.num_entities
    expected = {"born_in": LN2, "birthplace": LN2, "lives_in": 0.0, "gender": LN2}
    for label, h in expected.items():
        r = kg.relations[label]
        sel = kg.triples_np[kg.triples_np[:, 1] == r]
        keys = sel[:, 0] * E + sel[:, 2]
        assert pair_keys_entropy(keys, E) == pytest.approx(h)
        assert kg.relation_tail_entropy[r] == pytest.approx(h)
    # a cluster of born_in + lives_in: (p1, c1) is in both and counts once, so the distinct
    # (s, o) pairs have tails c1 x3, c2 x1 -> -(3/4 ln 3/4 + 1/4 ln 1/4)
    sel = kg.triples_np[np.isin(kg.triples_np[:, 1], [1, 3])]
    keys = np.unique(sel[:, 0] * E + sel[:, 2])
    assert pair_keys_entropy(keys, E) == pytest.approx(
        -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    )


def test_nmi_term_by_hand():
    # p puts 1/2 on (person, city) and 1/2 on (person, value); q puts 1 on (person, city).
    p = (np.array([0, 1]), np.array([0.5, 0.5]))
    q = (np.array([0]), np.array([1.0]))
    # 1 - JSD / ln 2 with m = (3/4, 1/4)
    kl_pm = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    kl_qm = math.log(1 / 0.75)
    expected = 1 - 0.5 * (kl_pm + kl_qm) / LN2
    assert expected == pytest.approx(0.688722, abs=1e-6)
    assert type_nmi_similarity(p, q) == pytest.approx(expected)
    assert type_nmi_similarity(q, p) == pytest.approx(expected)
    assert type_nmi_similarity(p, p) == pytest.approx(1.0)
    assert type_nmi_similarity(q, (np.array([1]), np.array([1.0]))) == 0.0


def test_similarity_and_threshold_by_hand():
    kg = _typed_kg()
    E, types = kg.num_entities, entity_types(kg)
    dist = {}
    ents = {}
    for label in kg.relations.labels:
        sel = kg.triples_np[kg.triples_np[:, 1] == kg.relations[label]]
        dist[label] = type_pair_distribution(sel[:, 0] * E + sel[:, 2], E, types, 3)
        ents[label] = set(sel[:, 0]) | set(sel[:, 2])

    def inter(a, b):
        return len(ents[a] & ents[b])

    # born_in vs birthplace: NMI 1 (all person -> city); Jaccard {c1, c2} / 6 = 1/3; cos 1
    assert type_nmi_similarity(dist["born_in"], dist["birthplace"]) == pytest.approx(1.0)
    jac = jaccard(np.array(inter("born_in", "birthplace")), 4, 4)
    assert jac == pytest.approx(1 / 3)
    assert fused_similarity(1.0, jac, 1.0, (0.4, 0.3, 0.3)) == pytest.approx(0.8)
    assert adaptive_threshold(LN2, LN2, 0.75, 0.15) == pytest.approx(0.75)
    # lives_in vs born_in: NMI 1, Jaccard {p1, c1} / 6 = 1/3, cos 1 -> sim 0.8 >= 0.75 ...
    jac = jaccard(np.array(inter("lives_in", "born_in")), 4, 4)
    assert jac == pytest.approx(1 / 3)
    # ... but delta = |0 - ln 2| / ln 2 = 1, theta = 0.75 * 1.15 = 0.8625 > 0.8
    assert adaptive_threshold(0.0, LN2, 0.75, 0.15) == pytest.approx(0.8625)
    assert adaptive_threshold(0.0, 0.0, 0.75, 0.15) == pytest.approx(0.75)
    assert adaptive_threshold(1.0, 100.0, 0.9, 1.0) == pytest.approx(1.0)  # capped at 1


def test_exactly_the_synonym_pair_merges():
    kg = _typed_kg()
    result = compress(kg, _embeddings(kg))
    assert len(result.report) == 1
    merge = result.report[0]
    assert (merge.left, merge.right) == (["birthplace"], ["born_in"])
    assert merge.similarity == pytest.approx(0.8)
    assert merge.threshold == pytest.approx(0.75)
    assert (merge.nmi, merge.jaccard, merge.cosine) == pytest.approx((1.0, 1 / 3, 1.0))
    # phi: birthplace, born_in -> "birthplace" (ties on triple count: smallest id names it)
    assert result.relations.labels == ["birthplace", "gender", "lives_in"]
    assert result.mapping.tolist() == [0, 0, 1, 2]
    assert result.clusters() == {
        "birthplace": ["birthplace", "born_in"],
        "gender": ["gender"],
        "lives_in": ["lives_in"],
    }
    # same entity ids, relations relabelled
    assert result.kg.entities == kg.entities
    assert result.kg.num_triples == kg.num_triples
    assert sorted(result.kg.labeled(i) for i in range(result.kg.num_triples)) == sorted(
        (h, "birthplace" if r == "born_in" else r, t) for h, r, t in TRIPLES
    )
    # Eq. (6): loss (1 - 0.8) * min(ln 2, ln 2); L_info = loss / (3 ln 2); rho = (1 - L) / (3/4)
    assert merge.loss == pytest.approx(0.2 * LN2)
    assert result.info_loss == pytest.approx(0.2 / 3)
    assert result.rho_hat == pytest.approx((1 - 0.2 / 3) / 0.75)
    assert "sim 0.8000 >= theta 0.7500" in result.format_report()


def test_after_merging_the_cluster_is_rescored():
    # After the merge, cluster {birthplace, born_in} vs lives_in has Jaccard 2/8 and
    # H(cluster) = ln 2: sim = 0.4 + 0.075 + 0.3 = 0.775 < 0.8625, still no merge.  With a
    # fixed threshold (epsilon = 0) lives_in joins in a second round.
    kg = _typed_kg()
    result = compress(kg, _embeddings(kg), epsilon=0.0)
    assert len(result.report) == 2
    second = result.report[1]
    assert second.left == ["birthplace", "born_in"]
    assert second.right == ["lives_in"]
    assert second.jaccard == pytest.approx(2 / 8)
    assert second.similarity == pytest.approx(0.775)
    assert second.entropy_left == pytest.approx(LN2)
    assert result.relations.labels == ["lives_in", "gender"]  # named by the largest member


def test_off_is_the_identity():
    kg = _typed_kg()
    result = compress(kg, None, mode="off")
    assert result.mapping.tolist() == [0, 1, 2, 3]
    assert result.kg is kg
    assert result.report == []
    assert (result.info_loss, result.rho_hat) == (0.0, 1.0)


def test_no_merge_boundary_case_of_eq6():
    assert information_density([], 5.0, 10, 10) == (0.0, 1.0)


def test_bad_inputs_are_refused():
    kg = _typed_kg()
    with pytest.raises(
        ValueError, match=r"scos.mode='sometimes' is not one of \['greedy', 'off'\]"
    ):
        compress(kg, _embeddings(kg), mode="sometimes")
    with pytest.raises(ValueError, match=r"unknown scos keys \['theta'\]"):
        SCOSConfig.from_mapping({"theta": 0.5})
    with pytest.raises(ValueError, match="needs TransE relation embeddings"):
        compress(kg, None)
    with pytest.raises(ValueError, match=r"shape \[4, d\] for graph 'tiny', got \[3, 2\]"):
        compress(kg, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="entity_types=attributes but graph 'kg' has no"):
        compress(
            KnowledgeGraph.from_labeled_triples(TRIPLES), _embeddings(kg), entity_types="attributes"
        )


def test_save_and_load_round_trip(tmp_path):
    kg = _typed_kg()
    result = compress(kg, _embeddings(kg))
    out = result.save(tmp_path / "scos")
    assert (out / "report.txt").read_text().startswith("SCOS (greedy): |R0| = 4 -> |R*| = 3")
    loaded = SCOSResult.load(out)
    assert loaded.mapping.tolist() == result.mapping.tolist()
    assert loaded.relations == result.relations
    assert loaded.kg.fingerprint() == result.kg.fingerprint()
    assert loaded.report == result.report
    assert loaded.info_loss == result.info_loss
    assert loaded.config == result.config
    result.save(out)  # overwrite in place
    assert SCOSResult.load(out).rho_hat == result.rho_hat
    with pytest.raises(FileNotFoundError, match="no saved SCOS result"):
        SCOSResult.load(tmp_path / "missing")


def test_signature_types_by_hand():
    kg = KnowledgeGraph.from_labeled_triples(
        [
            ("ann", "gender", "female"),
            ("ann", "spouse", "bob"),
            ("bob", "gender", "male"),
            ("bob", "spouse", "ann"),
            ("cid", "gender", "male"),
        ],
        extra_entities=["lonely"],
    )
    t = dict(zip(kg.entities.labels, signature_types(kg).tolist(), strict=True))
    # ann, bob: {gender, spouse} as head; cid: {gender}; female, male: tail of {gender};
    # lonely: no triple
    assert t["ann"] == t["bob"]
    assert t["female"] == t["male"]
    assert len({t["ann"], t["cid"], t["male"], t["lonely"]}) == 4


def test_type_relation_source():
    kg = KnowledgeGraph.from_labeled_triples(
        [
            ("ann", "type", "Person"),
            ("bob", "type", "Person"),
            ("ann", "knows", "bob"),
            ("paris", "type", "City"),
            ("ann", "lives", "paris"),
        ]
    )
    t = dict(zip(kg.entities.labels, entity_types(kg, "relation", "type").tolist(), strict=True))
    assert t["ann"] == t["bob"] != t["paris"]
    with pytest.raises(ValueError, match="type_relation='isa' is not a relation of graph"):
        entity_types(kg, "relation", "isa")


def _reference_merge(kg, emb, types, weights, theta_base, epsilon):
    """O(|R|^3) textbook greedy loop, recomputing every pair from scratch each round."""
    E = kg.num_entities
    clusters = {r: [r] for r in range(kg.num_relations)}
    embs = {r: emb[r].astype(float) for r in clusters}
    T = int(types.max()) + 1
    trip = kg.unique_triples()

    def stats(members):
        sel = trip[np.isin(trip[:, 1], members)]
        keys = np.unique(sel[:, 0] * E + sel[:, 2])
        ents = set(sel[:, 0]) | set(sel[:, 2])
        return keys, ents

    sims = []
    while True:
        best = None
        ids = sorted(clusters)
        for a_i, a in enumerate(ids):
            for b in ids[a_i + 1 :]:
                ka, ea = stats(clusters[a])
                kb, eb = stats(clusters[b])
                nmi = type_nmi_similarity(
                    type_pair_distribution(ka, E, types, T), type_pair_distribution(kb, E, types, T)
                )
                un = len(ea | eb)
                jac = len(ea & eb) / un if un else 0.0
                na, nb = np.linalg.norm(embs[a]), np.linalg.norm(embs[b])
                cos = float(embs[a] @ embs[b] / (na * nb)) if na > 0 and nb > 0 else 0.0
                sim = weights[0] * nmi + weights[1] * jac + weights[2] * cos
                th = float(
                    adaptive_threshold(
                        pair_keys_entropy(ka, E), pair_keys_entropy(kb, E), theta_base, epsilon
                    )
                )
                if sim >= th - 1e-12 and (best is None or sim > best[0] + 1e-12):
                    best = (sim, a, b)
        if best is None:
            break
        sims.append(best[0])
        _, a, b = best
        clusters[a] = sorted(clusters[a] + clusters.pop(b))
        embs[a] = 0.5 * (embs[a] + embs.pop(b))
    labels = np.empty(kg.num_relations, dtype=np.int64)
    for root, members in clusters.items():
        labels[members] = root
    return labels, sims


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    num_rel=st.integers(2, 7),
    num_ent=st.integers(3, 9),
    num_triples=st.integers(1, 30),
)
def test_heap_merging_equals_the_reference_loop(seed, num_rel, num_ent, num_triples):
    rng = np.random.default_rng(seed)
    triples = np.stack(
        [
            rng.integers(0, num_ent, num_triples),
            rng.integers(0, num_rel, num_triples),
            rng.integers(0, num_ent, num_triples),
        ],
        1,
    )
    kg = KnowledgeGraph.from_ids(triples, num_ent, num_rel)
    types = rng.integers(0, 2, num_ent)
    # a few embedding directions plus noise, so that merges happen at theta_base 0.5
    emb = rng.normal(size=(3, 4))[rng.integers(0, 3, num_rel)] + 0.2 * rng.normal(size=(num_rel, 4))
    got = greedy_merge(kg, emb, types, weights=(0.4, 0.3, 0.3), theta_base=0.5, epsilon=0.15)
    labels, sims = _reference_merge(kg, emb, types, (0.4, 0.3, 0.3), 0.5, 0.15)
    assert got.labels.tolist() == labels.tolist()
    assert [m.similarity for m in got.merges] == pytest.approx(sims)
