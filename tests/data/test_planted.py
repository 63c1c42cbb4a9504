"""plant_synonyms (issue 10's planted-redundancy benchmark) and the triple batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lokg.data.loaders import triple_batches
from lokg.data.synthetic import plant_synonyms, synonym_label
from lokg.kg.graph import KnowledgeGraph


def _kg() -> KnowledgeGraph:
    rng = np.random.default_rng(0)
    counts = [100, 40, 25, 19, 5]  # relations 0-2 have >= 20 triples
    rows = [
        (int(rng.integers(50)), r, int(rng.integers(50)))
        for r, n in enumerate(counts)
        for _ in range(n)
    ]
    return KnowledgeGraph.from_ids(np.unique(np.array(rows), axis=0), 50, 5, name="g")


def test_plant_synonyms_moves_a_share_of_each_chosen_relation():
    kg = _kg()
    pk = plant_synonyms(kg, num_synonyms=2, min_triples=20, seed=3)
    R0 = kg.num_relations
    assert pk.kg.num_relations == R0 + 2
    assert pk.synonym_pairs[:, 1].tolist() == [R0, R0 + 1]
    assert set(pk.synonym_pairs[:, 0].tolist()) <= {0, 1, 2}  # only relations with >= 20
    assert pk.synonym_pair_set() == {tuple(p) for p in pk.synonym_pairs.tolist()}
    # same triples, only relation ids of moved triples change, and only base -> its synonym
    old, new = kg.triples_np, pk.kg.triples_np
    assert np.array_equal(old[:, [0, 2]], new[:, [0, 2]])
    moved = old[:, 1] != new[:, 1]
    base_of = {syn: base for base, syn in pk.synonym_pairs.tolist()}
    assert all(base_of[n] == o for o, n in zip(old[moved, 1], new[moved, 1], strict=True))
    for (base, syn), share in zip(pk.synonym_pairs.tolist(), pk.shares.tolist(), strict=True):
        assert 0.3 <= share <= 0.7
        assert pk.kg.relations.label(syn) == f"{kg.relations.label(base)}_alias"
        n_syn = int((new[:, 1] == syn).sum())
        assert 0 < n_syn < int((old[:, 1] == base).sum())
    assert pk.kg.entities == kg.entities


def test_protected_triples_keep_their_relation_and_the_draw_is_unchanged():
    kg = _kg()
    protect = np.zeros(kg.num_triples, dtype=bool)
    protect[::2] = True
    free = plant_synonyms(kg, num_synonyms=2, min_triples=20, seed=3)
    kept = plant_synonyms(kg, num_synonyms=2, min_triples=20, seed=3, protect=protect)
    old, a, b = kg.triples_np[:, 1], free.kg.triples_np[:, 1], kept.kg.triples_np[:, 1]
    assert np.array_equal(b[protect], old[protect])
    assert np.array_equal(b[~protect], a[~protect])  # same relations and shares drawn
    assert (b != old).any()
    with pytest.raises(ValueError, match=r"protect must be a \[\d+\] mask"):
        plant_synonyms(kg, num_synonyms=2, min_triples=20, protect=protect[:3])


def test_plant_synonyms_refuses_too_few_relations():
    with pytest.raises(ValueError, match="has 3 relations with >= 20 triples, fewer than"):
        plant_synonyms(_kg(), num_synonyms=4, min_triples=20)


def test_synonym_label_keeps_the_domain_and_is_fresh():
    assert synonym_label("people.person.nationality", set()) == "people.person.nationality_alias"
    taken = {"r_alias"}
    assert synonym_label("r", taken) == "r_alias2"


def test_opaque_synonym_names_keep_only_the_domain():
    label = "people.person.nationality"
    assert synonym_label(label, set(), "opaque", index=7) == "people.person.property_7"
    taken = {"people.person.property_7"}
    assert synonym_label(label, taken, "opaque", index=7) == "people.person.property_7_2"
    assert synonym_label("r", set(), "opaque", index=0) == "property_0"
    pq = "__people__person__nationality"  # PathQuestion's spelling keeps its domain too
    assert synonym_label(pq, set(), "opaque", index=3) == "__people__person__property_3"
    assert synonym_label("__gender", set(), "opaque", index=3) == "property_3"
    with pytest.raises(ValueError, match="synonym naming 'random'; expected one of alias, opaque"):
        synonym_label(label, set(), "random")
    pk = plant_synonyms(_kg(), num_synonyms=2, min_triples=20, seed=3, naming="opaque")
    R0 = _kg().num_relations
    assert [pk.kg.relations.label(r) for r in (R0, R0 + 1)] == ["property_0", "property_1"]


def test_triple_batches_cover_every_triple_once_per_epoch():
    triples = torch.arange(30).reshape(10, 3)
    batches = list(triple_batches(triples, 4, shuffle=True, seed=0))
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(torch.cat(batches)[:, 0].tolist()) == list(range(0, 30, 3))
    again = list(triple_batches(triples, 4, shuffle=True, seed=0))
    assert all(torch.equal(a, b) for a, b in zip(batches, again, strict=True))
    ordered = torch.cat(list(triple_batches(triples, 3, shuffle=False)))
    assert torch.equal(ordered, triples)
