"""SCOS on graphs without entity types (issue 10): types from Freebase-style relation names
or from TransE entity embeddings, each signal of Eq. (3) checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lokg.kg.graph import EntityAttributes, KnowledgeGraph
from lokg.scos import compress
from lokg.scos.entity_types import (
    domain_types,
    entity_types,
    kmeans_types,
    relation_domain,
    resolve_entity_types,
)
from lokg.scos.merge import pair_signals

LN2 = math.log(2.0)
POB, BIRTH, LIVES, GENDER = (
    "people.person.place_of_birth",
    "people.person.birthplace",
    "people.person.lives_in",
    "people.person.gender",
)
# The tiny graph of test_scos.py with Freebase-style names and *no* entity types:
# place_of_birth and birthplace are synonyms (2 persons -> 2 cities each); lives_in always
# points at c1 (H = 0, the specialised relation); gender links persons to values.
TRIPLES = [
    ("p1", POB, "c1"),
    ("p2", POB, "c2"),
    ("p3", BIRTH, "c1"),
    ("p4", BIRTH, "c2"),
    ("p5", LIVES, "c1"),
    ("p6", LIVES, "c1"),
    ("p1", LIVES, "c1"),
    ("p1", GENDER, "male"),
    ("p2", GENDER, "female"),
]
VECTORS = {POB: [1.0, 0.0], BIRTH: [2.0, 0.0], LIVES: [1.0, 0.0], GENDER: [0.0, 1.0]}


def _kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(TRIPLES, name="untyped")


def _emb(kg: KnowledgeGraph) -> np.ndarray:
    return np.array([VECTORS[label] for label in kg.relations.labels])


def test_relation_domain():
    assert relation_domain("people.person.nationality") == "people.person"
    assert relation_domain("__people__person__nationality") == "people.person"  # PathQuestion
    assert relation_domain("nationality") is None
    assert relation_domain("r012") is None
    assert relation_domain("a.b") is None


def test_domain_types_by_hand():
    kg = _kg()
    t = dict(zip(kg.entities.labels, domain_types(kg).tolist(), strict=True))
    # every p* has outgoing people.person.* triples -> type "people.person"; cities and
    # values are only pointed at by people.person.* -> type "range of people.person"
    assert len({t[p] for p in ("p1", "p2", "p3", "p4", "p5", "p6")}) == 1
    assert t["c1"] == t["c2"] == t["male"] == t["female"] != t["p1"]
    plain = KnowledgeGraph.from_labeled_triples([("a", "knows", "b")])
    assert domain_types(plain) is None


def test_domain_vote_takes_the_majority_domain():
    kg = KnowledgeGraph.from_labeled_triples(
        [
            ("x", "people.person.gender", "male"),
            ("x", "people.person.nationality", "fr"),
            ("x", "common.topic.notable_types", "t"),
            ("y", "common.topic.notable_types", "t"),
            ("fr", "location.country.capital", "paris"),
        ]
    )
    t = dict(zip(kg.entities.labels, domain_types(kg).tolist(), strict=True))
    assert t["x"] != t["y"]  # people.person (2 votes) vs common.topic
    assert t["fr"] not in (t["x"], t["y"], t["male"])  # its own outgoing domain wins
    assert t["male"] != t["paris"]  # range of people.person vs range of location.country


def test_untyped_synonyms_merge_through_all_three_signals():
    kg = _kg()
    result = compress(kg, _emb(kg))  # entity_types=auto -> domain
    assert resolve_entity_types(kg) == "domain"
    assert len(result.report) == 1
    m = result.report[0]
    assert (m.left, m.right) == ([BIRTH], [POB])
    # NMI: both relations put all mass on (people.person, range of people.person) -> 1
    # Jaccard: {p3, p4, c1, c2} vs {p1, p2, c1, c2} -> 2 / 6; cos([2, 0], [1, 0]) = 1
    # sim = 0.4 * 1 + 0.3 / 3 + 0.3 * 1 = 0.8 >= theta = 0.75 (both H = ln 2, delta = 0)
    assert (m.nmi, m.jaccard, m.cosine) == pytest.approx((1.0, 1 / 3, 1.0))
    assert (m.similarity, m.threshold) == pytest.approx((0.8, 0.75))
    assert (m.entropy_left, m.entropy_right) == pytest.approx((LN2, LN2))
    assert result.clusters()[BIRTH] == [BIRTH, POB]


def test_specialised_general_pair_is_blocked_by_eq5_untyped():
    kg = _kg()
    types = domain_types(kg)
    s = pair_signals(kg, kg.relations[POB], kg.relations[LIVES], _emb(kg), types)
    # NMI 1, Jaccard {p1, p2, c1, c2} vs {p5, p6, p1, c1} = 2 / 6, cos 1: sim 0.8 ...
    assert (s.nmi, s.jaccard, s.cosine, s.similarity) == pytest.approx((1.0, 1 / 3, 1.0, 0.8))
    # ... but H(lives_in) = 0 and H(place_of_birth) = ln 2: delta = 1, theta = 0.75 * 1.15
    assert (s.entropy_left, s.entropy_right) == pytest.approx((LN2, 0.0))
    assert s.threshold == pytest.approx(0.8625)
    assert LIVES not in compress(kg, _emb(kg)).clusters()[BIRTH]


def test_gender_shares_types_but_not_entities_or_direction():
    kg = _kg()
    s = pair_signals(kg, kg.relations[POB], kg.relations[GENDER], _emb(kg), domain_types(kg))
    # coarse types: (person, range of people.person) for both -> NMI 1; Jaccard
    # {p1, p2, c1, c2} vs {p1, p2, male, female} = 2 / 6; cos 0 -> sim 0.5 < 0.75
    assert (s.nmi, s.jaccard, s.cosine) == pytest.approx((1.0, 1 / 3, 0.0))
    assert s.similarity == pytest.approx(0.5)


def test_pair_signals_match_the_merge_report():
    kg = _kg()
    m = compress(kg, _emb(kg)).report[0]
    s = pair_signals(kg, kg.relations[BIRTH], kg.relations[POB], _emb(kg), domain_types(kg))
    assert (s.nmi, s.jaccard, s.cosine, s.similarity, s.threshold) == pytest.approx(
        (m.nmi, m.jaccard, m.cosine, m.similarity, m.threshold)
    )


def test_kmeans_types_separate_two_blobs():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 0.05, (20, 4)) + 1, rng.normal(0, 0.05, (30, 4)) - 1])
    t = kmeans_types(x, 2)
    assert len(set(t[:20].tolist())) == 1 and len(set(t[20:].tolist())) == 1
    assert t[0] != t[20]
    assert len(set(kmeans_types(x, 100).tolist())) <= 50  # k capped at the number of rows


def test_transe_types_merge_plain_named_synonyms():
    # plain names (no domain): types come from k-means on the TransE entity embeddings
    kg = KnowledgeGraph.from_labeled_triples(
        [(h, r.split(".")[-1], t) for h, r, t in TRIPLES], name="plain"
    )
    assert resolve_entity_types(kg, has_embeddings=True) == "transe"
    assert resolve_entity_types(kg, has_embeddings=False) == "signature"
    person = [kg.entities[p] for p in ("p1", "p2", "p3", "p4", "p5", "p6")]
    ent = np.zeros((kg.num_entities, 2))
    ent[:, 1] = 1.0
    ent[person] = [1.0, 0.0]  # persons in one cluster, everything else in the other
    emb = np.array([VECTORS[f"people.person.{label}"] for label in kg.relations.labels])
    result = compress(kg, emb, entity_embeddings=ent, num_entity_types=2)
    assert [(m.left, m.right) for m in result.report] == [(["birthplace"], ["place_of_birth"])]
    assert result.report[0].nmi == pytest.approx(1.0)
    with pytest.raises(ValueError, match="entity_types=transe needs TransE entity embeddings"):
        compress(kg, emb, entity_types="transe")


def test_given_types_win_over_names():
    kg = _kg()
    types = ["value" if e in ("male", "female") else "thing" for e in kg.entities.labels]
    typed = KnowledgeGraph(
        kg.entities, kg.relations, kg.triples_np, EntityAttributes(types=types), name="typed"
    )
    assert resolve_entity_types(typed) == "attributes"
    assert resolve_entity_types(typed, type_relation="x") == "attributes"
    t = entity_types(typed)
    assert t[kg.entities["p1"]] == t[kg.entities["c1"]] != t[kg.entities["male"]]
    assert entity_types(kg, "none").tolist() == [0] * kg.num_entities
    with pytest.raises(ValueError, match="entity_types=domain but no relation of graph 'p'"):
        entity_types(KnowledgeGraph.from_labeled_triples([("a", "r", "b")], name="p"), "domain")
    with pytest.raises(ValueError, match=r"scos.entity_types='bogus' is not one of \['auto'"):
        compress(kg, _emb(kg), entity_types="bogus")
