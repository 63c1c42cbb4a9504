"""Tiny hand-written graphs for the ITTC tests."""

import pytest

from lokg.kg.graph import KnowledgeGraph

#: Four triples whose entropies are computed by hand in test_order.py / test_value.py.
HAND_TRIPLES = [
    ("ann", "born_in", "x_town"),
    ("bob", "born_in", "x_town"),
    ("cat", "born_in", "y_city"),
    ("ann", "likes", "bob"),
]

#: Freebase-style relation paths (PathQuestion-Large flavour) for the rendering tests.
FREEBASE_TRIPLES = [
    ("Kenneth_Peach", "__film__cinematographer__film", "Dirty_Work"),
    ("Kenneth_Peach", "__people__person__place_of_birth", "Los_Angeles"),
    ("Ann_Lee", "__people__person__place_of_birth", "Los_Angeles"),
    ("Bo_Wu", "__people__person__place_of_birth", "Hefei"),
    ("Dirty_Work", "__film__film__country", "United_States"),
    ("Los_Angeles", "__location__location__containedby", "United_States"),
    ("Hefei", "__location__location__containedby", "China"),
    ("Bo_Wu", "__people__person__nationality", "China"),
    ("Ann_Lee", "__people__person__nationality", "United_States"),
    ("Ann_Lee", "__people__person__spouse", "Bo_Wu"),
    ("Bo_Wu", "__people__person__spouse", "Ann_Lee"),
    ("Kenneth_Peach", "__people__person__nationality", "United_States"),
]


@pytest.fixture
def hand_kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(HAND_TRIPLES, name="hand")


@pytest.fixture
def fb_kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(FREEBASE_TRIPLES, name="fb")
