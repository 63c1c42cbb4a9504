"""KnowledgeGraph: vocabularies, CSR adjacency and the paper's statistics by hand."""

import math

import numpy as np
import pytest
import torch

from lokg.kg import KnowledgeGraph, Vocabulary

# A tiny graph where every number below can be checked with pencil and paper.
#   born_in: a->x, b->x, c->y            tails x (2 subjects), y (1)
#   likes:   a->b, a->c, b->c, c->a      tails b (1), c (2), a (1)
TRIPLES = [
    ("a", "born_in", "x"),
    ("b", "born_in", "x"),
    ("c", "born_in", "y"),
    ("a", "likes", "b"),
    ("a", "likes", "c"),
    ("b", "likes", "c"),
    ("c", "likes", "a"),
]


@pytest.fixture
def kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(TRIPLES, name="tiny")


def test_vocabularies_are_sorted_and_triples_ordered_head_relation_tail(kg):
    assert kg.entities.labels == ["a", "b", "c", "x", "y"]
    assert kg.relations.labels == ["born_in", "likes"]
    assert kg.triples.dtype == torch.int64 and tuple(kg.triples.shape) == (7, 3)
    assert [kg.labeled(i) for i in range(kg.num_triples)] == TRIPLES


def test_vocabulary_rejects_duplicates_and_names_unknown_labels():
    with pytest.raises(ValueError, match="'a' appears twice"):
        Vocabulary(["a", "b", "a"])
    with pytest.raises(KeyError, match="unknown label 'z'"):
        Vocabulary(["a"])["z"]


def test_tail_entropy_eq4_by_hand(kg):
    # born_in: p(x)=2/3, p(y)=1/3 ; likes: p(b)=1/4, p(c)=2/4, p(a)=1/4
    h_born = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    h_likes = -(2 * 0.25 * math.log(0.25) + 0.5 * math.log(0.5))
    np.testing.assert_allclose(kg.relation_tail_entropy, [h_born, h_likes])


def test_tail_entropy_counts_duplicate_triples_once():
    dup = KnowledgeGraph.from_labeled_triples([*TRIPLES, ("a", "born_in", "x")])
    ref = KnowledgeGraph.from_labeled_triples(TRIPLES)
    np.testing.assert_allclose(dup.relation_tail_entropy, ref.relation_tail_entropy)
    assert dup.num_triples == 8 and len(dup.unique_triples()) == 7


def test_degrees_and_incoming_relation_diversity(kg):
    e = kg.entities
    # in-edges: a<-c(likes); b<-a(likes); c<-a,b(likes); x<-a,b(born_in); y<-c(born_in)
    assert kg.in_degree[[e["a"], e["b"], e["c"], e["x"], e["y"]]].tolist() == [1, 1, 2, 2, 1]
    assert kg.out_degree[[e["a"], e["b"], e["c"], e["x"], e["y"]]].tolist() == [3, 2, 2, 0, 0]
    assert kg.in_relation_count.tolist() == [1, 1, 1, 1, 1]
    np.testing.assert_allclose(kg.in_relation_diversity, [0.5] * 5)  # 1 of |R| = 2


def test_direction_and_parallel_edges_are_kept():
    g = KnowledgeGraph.from_labeled_triples([("a", "r1", "b"), ("a", "r2", "b")])
    assert g.num_triples == 2
    assert g.out_triples(g.entities["a"]).tolist() == [0, 1]
    assert g.in_triples(g.entities["a"]).tolist() == []
    assert g.edge_index.tolist() == [[0, 0], [1, 1]] and g.edge_type.tolist() == [0, 1]


def test_csr_lists_exactly_each_entitys_edges(kg):
    for ent in range(kg.num_entities):
        outs = sorted(i for i, t in enumerate(kg.triples_np) if t[0] == ent)
        ins = sorted(i for i, t in enumerate(kg.triples_np) if t[2] == ent)
        assert sorted(kg.out_triples(ent).tolist()) == outs
        assert sorted(kg.in_triples(ent).tolist()) == ins


def test_save_load_roundtrip_with_mmap(kg, tmp_path):
    kg.save(tmp_path / "g")
    loaded = KnowledgeGraph.load(tmp_path / "g", mmap=True)
    assert isinstance(loaded.triples_np, np.memmap)
    assert loaded.entities == kg.entities and loaded.relations == kg.relations
    assert loaded.fingerprint() == kg.fingerprint()
    np.testing.assert_array_equal(loaded.out_ptr, kg.out_ptr)
    np.testing.assert_allclose(loaded.relation_tail_entropy, kg.relation_tail_entropy)
    kg.save(tmp_path / "g")  # overwriting replaces atomically, no leftovers
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]


def test_load_names_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved KnowledgeGraph"):
        KnowledgeGraph.load(tmp_path)


def test_out_of_range_ids_are_rejected():
    with pytest.raises(ValueError, match="out of range"):
        KnowledgeGraph.from_ids(np.array([[0, 0, 5]]), num_entities=3, num_relations=1)
    with pytest.raises(ValueError, match=r"shape \[T, 3\]"):
        KnowledgeGraph.from_ids(np.zeros((2, 2), dtype=np.int64), 3, 1)


def test_with_relations_merges_through_phi_and_deduplicates():
    g = KnowledgeGraph.from_labeled_triples([("a", "r1", "b"), ("a", "r2", "b"), ("b", "r3", "a")])
    merged = g.with_relations(np.array([0, 0, 1]), Vocabulary(["r1|r2", "r3"]))
    assert merged.entities == g.entities
    assert [merged.labeled(i) for i in range(merged.num_triples)] == [
        ("a", "r1|r2", "b"),
        ("b", "r3", "a"),
    ]
    with pytest.raises(ValueError, match="mapping must have shape"):
        g.with_relations(np.array([0, 1]), Vocabulary(["x", "y"]))


def test_entity_name_falls_back_to_label_with_spaces():
    g = KnowledgeGraph.from_labeled_triples([("ludwig_ii_of_bavaria", "parents", "max")])
    assert g.entity_name(g.entities["ludwig_ii_of_bavaria"]) == "ludwig ii of bavaria"


def test_steps_by_relation_groups_each_nodes_steps_by_hand():
    """a's steps listed out-edges then in-edges: 0 (a r1 b), 1 (a r0 c), 2 (a r1 a) out;
    3 (b r1 a), 4 (a r1 a), 5 (c r0 a) in. Grouped by step relation (r, or r + R walked
    backwards), one relation's steps in listing order."""
    kg = KnowledgeGraph.from_labeled_triples(
        [("a", "r1", "b"), ("a", "r0", "c"), ("b", "r1", "a"), ("a", "r1", "a"), ("c", "r0", "a")]
    )
    a, b, c = (kg.entities[x] for x in "abc")
    r0, r1, big_r = kg.relations["r0"], kg.relations["r1"], kg.num_relations
    ix = kg.steps_by_relation(both_directions=True)
    s, e = ix.ptr[a], ix.ptr[a + 1]
    groups = slice(ix.group_ptr[a], ix.group_ptr[a + 1])
    rels = [r0, r1, r0 + big_r, r1 + big_r]
    assert sorted(rels) == rels and ix.group_relation[groups].tolist() == rels
    bounds = ix.group_start[ix.group_ptr[a] : ix.group_ptr[a + 1] + 1]
    assert np.diff(bounds).tolist() == [1, 2, 1, 2]
    assert ix.order[s:e].tolist() == [1, 0, 2, 5, 3, 4]
    assert ix.far[s:e].tolist() == [c, b, a, c, b, a]
    assert ix.inverse[s:e].tolist() == [False, False, False, True, True, True]
    assert kg.triples_np[ix.triple[s:e], 1].tolist() == [r0, r1, r1, r0, r1, r1]
    assert ix.relation[s:e].tolist() == [r0, r1, r1, r0 + big_r, r1 + big_r, r1 + big_r]
    assert (ix.ptr[1:] - ix.ptr[:-1]).tolist() == (kg.out_degree + kg.in_degree).tolist()
    fwd = kg.steps_by_relation(both_directions=False)  # out-edges only
    assert fwd.order[fwd.ptr[a] : fwd.ptr[a + 1]].tolist() == [1, 0, 2]
    assert fwd.group_relation[fwd.group_ptr[c] : fwd.group_ptr[c + 1]].tolist() == [r0]
    assert kg.steps_by_relation(True) is ix  # built once


# Labels as words: the exact strings hashed into caches and prompts (one function serves the
# KAPING/ToG/GraphRAG lines, the semantic retriever and entity names).
WORDY = [
    ("m.0abc", "__people__person__place_of_birth", "Paris_(city)_"),
    ("_alice_", "film.film.directed_by", "bob"),
    ("c_d", "plain", "e"),
]


def test_label_as_words_is_underscores_to_spaces_stripped():
    from lokg.kg import label_as_words

    for label in ("__people__person__place_of_birth", "film.film.directed_by", "_a_", "", "x"):
        assert label_as_words(label) == label.replace("_", " ").strip()
    assert label_as_words("__people__person__place_of_birth") == "people  person  place of birth"


def test_relation_text_and_the_lines_built_on_it_are_unchanged():
    from lokg.baselines.kaping import kaping_line
    from lokg.baselines.tog import tog_line
    from lokg.taimr.retriever import SemanticRetriever

    kg = KnowledgeGraph.from_labeled_triples(WORDY, name="wordy")
    for r in range(kg.num_relations):
        assert kg.relation_text(r) == kg.relations.label(r).replace("_", " ").strip()
    t = int(np.flatnonzero(kg.triples_np[:, 1] == kg.relations.index[WORDY[0][1]])[0])
    triple = kg.triples_np[t]
    assert kaping_line(kg, triple) == "(m.0abc, people  person  place of birth, Paris (city))"
    assert tog_line(kg, triple) == "m.0abc, people  person  place of birth, Paris (city)"
    semantic = SemanticRetriever(kg, embedder=None)
    assert semantic.verbalise(t) == "m.0abc people  person  place of birth Paris (city)"
    assert kg.entity_name(kg.entities.index["_alice_"]) == "alice"


def _tail_entropy_by_rows(kg: KnowledgeGraph) -> np.ndarray:
    """Eq. (4) as the graph computed it before issue 41: distinct rows, then (r, o) pairs."""
    uniq = kg.unique_triples()
    ro, n_ro = np.unique(uniq[:, 1] * kg.num_entities + uniq[:, 2], return_counts=True)
    rel = ro // kg.num_entities
    n_r = np.bincount(rel, weights=n_ro, minlength=kg.num_relations)
    p = n_ro / n_r[rel]
    return np.bincount(rel, weights=-p * np.log(p), minlength=kg.num_relations)


@pytest.mark.parametrize("seed", [0, 1])
def test_tail_entropy_by_one_key_equals_the_rows_computation_exactly(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    tri = np.stack([rng.integers(0, 30, 400), rng.integers(0, 7, 400), rng.integers(0, 30, 400)], 1)
    tri = np.concatenate([tri, tri[:50]])  # duplicates count once
    kg = KnowledgeGraph.from_ids(tri, 32, 8)  # relation 7 has no triple: H = 0
    want = _tail_entropy_by_rows(kg)
    assert np.array_equal(kg.relation_tail_entropy, want) and want[7] == 0.0
    pairs = np.unique(tri[:, 2] * 8 + tri[:, 1])  # the in-relation count's earlier form
    assert np.array_equal(kg.in_relation_count, np.bincount(pairs // 8, minlength=32))
    # the rows' fallback, taken where the key would not fit in int64, agrees too
    big = KnowledgeGraph.from_ids(tri, 32, 8)
    monkeypatch.setattr(KnowledgeGraph, "num_entities", property(lambda self: 2**31))
    ro, n = big._distinct_subjects()
    monkeypatch.undo()
    ro_key, n_key = kg._distinct_subjects()
    assert np.array_equal(n, n_key) and np.array_equal(ro // 2**31, ro_key // 32)
    assert np.array_equal(ro % 2**31, ro_key % 32)
    empty = KnowledgeGraph.from_ids(np.zeros((0, 3), np.int64), 3, 2)
    assert empty.relation_tail_entropy.tolist() == [0.0, 0.0]


def test_fingerprint_hashes_the_triples_bytes_as_before(kg):
    """Hashing the array's buffer (no bytes copy at 10^8 triples) keeps every cache key."""
    import hashlib

    h = hashlib.sha256()
    h.update("\n".join(kg.entities.labels).encode())
    h.update(b"\0")
    h.update("\n".join(kg.relations.labels).encode())
    h.update(b"\0")
    h.update(np.ascontiguousarray(kg.triples_np).tobytes())
    assert kg.fingerprint() == h.hexdigest()[:16]
