"""The synthetic typed power-law KG with planted synonyms (issue 2 generator)."""

from __future__ import annotations

import numpy as np
import pytest

from lokg.data.synthetic import make_synthetic_kg


@pytest.fixture(scope="module")
def small():
    return make_synthetic_kg(
        num_entities=2000, num_triples=20000, num_relations=40, num_synonyms=8, num_types=5, seed=3
    )


def test_sizes_and_distinct_triples(small):
    kg = small.kg
    assert (kg.num_entities, kg.num_relations, kg.num_triples) == (2000, 40, 20000)
    assert len(kg.unique_triples()) == kg.num_triples
    assert small.synonym_pairs.shape == (8, 2)
    assert kg.attributes is not None and len(kg.attributes.types) == 2000


def test_planted_synonym_shares_domain_and_range_with_its_base(small):
    kg, types = small.kg, small.entity_types
    t = kg.triples_np
    for base, syn in small.synonym_pairs:
        b, s = t[t[:, 1] == base], t[t[:, 1] == syn]
        assert len(b) > 0 and len(s) > 0
        # each base relation has one domain and one range type; its synonym the same ones
        assert set(types[b[:, 0]]) == set(types[s[:, 0]]) and len(set(types[b[:, 0]])) == 1
        assert set(types[b[:, 2]]) == set(types[s[:, 2]]) and len(set(types[b[:, 2]])) == 1
    assert len(small.synonym_pair_set()) == 8


def test_degrees_are_heavy_tailed(small):
    deg = small.kg.in_degree + small.kg.out_degree
    # the busiest 1 % of entities hold far more than 1 % of the edge endpoints
    top = np.sort(deg)[::-1][: len(deg) // 100]
    assert top.sum() / deg.sum() > 0.1


def test_same_seed_same_graph_other_seed_other_graph():
    a = make_synthetic_kg(
        num_entities=500, num_triples=3000, num_relations=10, num_synonyms=2, num_types=3, seed=0
    )
    b = make_synthetic_kg(
        num_entities=500, num_triples=3000, num_relations=10, num_synonyms=2, num_types=3, seed=0
    )
    c = make_synthetic_kg(
        num_entities=500, num_triples=3000, num_relations=10, num_synonyms=2, num_types=3, seed=1
    )
    assert a.kg.fingerprint() == b.kg.fingerprint() != c.kg.fingerprint()
    assert np.array_equal(a.synonym_pairs, b.synonym_pairs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_synonyms": 6, "num_relations": 10}, "num_synonyms must be in"),
        ({"num_types": 0}, "num_types must be > 0"),
        ({"num_types": 20, "num_entities": 10}, r"num_types \(20\) exceeds num_entities"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_synthetic_kg(**{"num_triples": 100, **kwargs})


@pytest.mark.slow
def test_a_million_triples_over_100k_entities():
    s = make_synthetic_kg(
        num_entities=100_000, num_triples=1_000_000, num_relations=200, num_synonyms=20
    )
    assert s.kg.num_triples == 1_000_000
    assert s.kg.num_entities == 100_000
