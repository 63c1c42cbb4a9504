"""mu(v) of Eq. (12) checked by hand on a six-triple graph."""

from __future__ import annotations

import math

import numpy as np

from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.info_gain import node_information_gain


def test_mu_matches_hand_computation():
    kg = KnowledgeGraph.from_labeled_triples(
        [
            ("alice", "spouse", "bob"),
            ("alice", "children", "carol"),
            ("bob", "children", "carol"),
            ("dave", "parents", "carol"),
            ("carol", "nationality", "france"),
            ("bob", "nationality", "france"),
        ]
    )
    mu = node_information_gain(kg)
    R = 4  # children, nationality, parents, spouse
    ent = kg.entities
    # carol: 3 in-edges over 2 distinct relations (children x2, parents)
    assert math.isclose(mu[ent["carol"]], (1 + math.log(4)) * 2 / R)
    # france: 2 in-edges, 1 relation
    assert math.isclose(mu[ent["france"]], (1 + math.log(3)) * 1 / R)
    # bob: 1 in-edge (spouse)
    assert math.isclose(mu[ent["bob"]], (1 + math.log(2)) / R)
    # alice and dave: no in-edge -> div = 0 -> mu = 0
    assert mu[ent["alice"]] == 0.0 and mu[ent["dave"]] == 0.0
    assert mu.shape == (kg.num_entities,) and mu.dtype == np.float64


def test_parallel_edges_raise_degree_not_diversity():
    kg = KnowledgeGraph.from_labeled_triples([("a", "r", "b"), ("c", "r", "b"), ("a", "s", "c")])
    mu = node_information_gain(kg)
    assert math.isclose(mu[kg.entities["b"]], (1 + math.log(3)) * 1 / 2)
