"""scos.merge_inverse (beyond the paper, off by default): inverse pairs merged with a
direction flag, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from lokg.kg.graph import KnowledgeGraph
from lokg.scos import SCOSResult, compress
from lokg.scos.inverse import find_inverse_pairs
from lokg.train_stages import merged_relation_embeddings

# birthplace_of mirrors two of born_in's three (person, city) pairs; spouse is symmetric
TRIPLES = [
    ("p1", "born_in", "c1"),
    ("p2", "born_in", "c2"),
    ("p3", "born_in", "c1"),
    ("c1", "birthplace_of", "p1"),
    ("c2", "birthplace_of", "p2"),
    ("p1", "spouse", "p2"),
    ("p2", "spouse", "p1"),
]
VECTORS = {"birthplace_of": [-1.0, 0.0], "born_in": [1.0, 0.0], "spouse": [0.0, 1.0]}


def _kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(TRIPLES, name="inv")


def _emb(kg):
    return np.array([VECTORS[label] for label in kg.relations.labels])


def test_mirrored_jaccard_by_hand():
    kg = _kg()
    partner, direction, records, refused = find_inverse_pairs(kg, theta=0.6)
    # |P(born_in) ∩ flip(P(birthplace_of))| = 2, union 3 + 2 - 2 = 3 -> 2/3 >= 0.6
    assert len(records) == 1
    r = records[0]
    assert (r.kept, r.flipped) == ("born_in", "birthplace_of")  # the larger keeps its direction
    assert r.mirrored_jaccard == pytest.approx(2 / 3)
    b, n, s = (kg.relations[x] for x in ("birthplace_of", "born_in", "spouse"))
    assert partner[b] == n and direction[b] == -1
    assert (partner[n], direction[n], partner[s], direction[s]) == (n, 1, s, 1)
    assert refused == []
    assert find_inverse_pairs(kg, theta=0.75)[2] == []  # 2/3 < 0.75


def test_inverse_merge_keeps_every_triple_meaning():
    kg = _kg()
    off = compress(kg, _emb(kg), entity_types="none", theta_base=0.6)
    assert off.inverse_report == [] and off.num_compressed == 3  # off by default
    res = compress(kg, _emb(kg), entity_types="none", theta_base=0.6, merge_inverse=True)
    assert res.report == []  # no synonym merge: cos(born_in, birthplace_of) = -1
    assert res.relations.labels == ["born_in", "spouse"]
    assert res.mapping.tolist() == [0, 0, 1]  # birthplace_of, born_in, spouse
    assert res.directions.tolist() == [-1, 1, 1]
    # (c1, birthplace_of, p1) becomes (p1, born_in, c1): a duplicate, kept once
    assert sorted(res.kg.labeled(i) for i in range(res.kg.num_triples)) == [
        ("p1", "born_in", "c1"),
        ("p1", "spouse", "p2"),
        ("p2", "born_in", "c2"),
        ("p2", "spouse", "p1"),
        ("p3", "born_in", "c1"),
    ]
    assert "birthplace_of stored as the inverse of born_in" in res.format_report()
    # the flipped member's TransE vector counts as -e_r in the cluster's mean
    merged = merged_relation_embeddings(_emb(kg), res.mapping, res.directions)
    np.testing.assert_allclose(merged, [[1.0, 0.0], [0.0, 1.0]])


def test_direction_survives_save_load_and_applies_to_subgraphs(tmp_path):
    kg = _kg()
    res = compress(kg, _emb(kg), entity_types="none", theta_base=0.6, merge_inverse=True)
    loaded = SCOSResult.load(res.save(tmp_path / "scos"))
    assert loaded.directions.tolist() == [-1, 1, 1]
    assert loaded.inverse_report == res.inverse_report
    sub = KnowledgeGraph.from_labeled_triples([("c2", "birthplace_of", "p2")])
    sub = KnowledgeGraph(sub.entities, kg.relations, [[0, kg.relations["birthplace_of"], 1]])
    applied = loaded.apply(sub)
    assert applied.labeled(0) == ("p2", "born_in", "c2")
