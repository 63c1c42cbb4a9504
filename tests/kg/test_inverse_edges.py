"""Added inverse edges (data.source.inverse): auto's detection by hand, the augmented graph's
layout (the KG as given is its prefix), stating a walked inverse edge as the KG's own fact."""

import numpy as np
import pytest

from lokg.errors import InputError
from lokg.kg import KnowledgeGraph
from lokg.kg.inverse_edges import (
    add_inverse_edges,
    check_inverse_mode,
    extend_relation_embeddings,
    mirrored_share,
    relations_to_invert,
)

# A KG with inverses of its own: `children`/`parents` mirror each other on 2 of 2 and 2 of 3
# pairs, `spouse` is symmetric on both of its pairs; `born_in` (person -> city) and the
# self-loop relation `same_as` have none.
#   children: a->c, b->c            parents: c->a, c->b, d->a   (d->a is not reversed)
#   spouse:   a->b, b->a            born_in: a->x, c->x, d->y   same_as: a->a
OWN = [
    ("a", "children", "c"),
    ("b", "children", "c"),
    ("c", "parents", "a"),
    ("c", "parents", "b"),
    ("d", "parents", "a"),
    ("a", "spouse", "b"),
    ("b", "spouse", "a"),
    ("a", "born_in", "x"),
    ("c", "born_in", "x"),
    ("d", "born_in", "y"),
    ("a", "same_as", "a"),
]

# A one-directional KG: every edge leaves a movie.
MOVIES = [
    ("the_matrix", "directed_by", "lana_wachowski"),
    ("the_matrix", "starring", "keanu_reeves"),
    ("john_wick", "starring", "keanu_reeves"),
    ("john_wick", "genre", "action"),
    ("the_matrix", "genre", "action"),
]


@pytest.fixture
def family() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(OWN, name="family")


@pytest.fixture
def movies() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(MOVIES, name="movies")


def _share(kg, label):
    return float(mirrored_share(kg)[kg.relations[label]])


def test_mirrored_share_by_hand(family):
    assert _share(family, "children") == 1.0  # (c, a), (c, b) are parents pairs
    assert _share(family, "parents") == pytest.approx(2 / 3)  # (a, d) is no pair of any relation
    assert _share(family, "spouse") == 1.0  # symmetric: its own inverse
    assert _share(family, "born_in") == 0.0
    assert _share(family, "same_as") == 1.0  # only a self-loop: nothing to reverse


def test_auto_adds_inverses_only_where_the_kg_has_none_of_its_own(family, movies):
    label = family.relations.label
    assert [label(r) for r in relations_to_invert(family, "auto")] == ["born_in"]
    # one relation's pairs mostly reversed is not enough: the share is per relation
    assert _share(family, "parents") >= 0.5
    assert [label(r) for r in relations_to_invert(family, "always")] == [
        "born_in",
        "children",
        "parents",
        "spouse",
    ]  # same_as holds a self-loop only
    assert len(relations_to_invert(family, "never")) == 0
    # nothing in a one-directional KG is reversed: auto adds an inverse for every relation
    assert list(relations_to_invert(movies, "auto")) == list(range(movies.num_relations))
    assert list(relations_to_invert(movies, "auto")) == list(relations_to_invert(movies, "always"))


def test_the_threshold_is_one_half(family):
    # parents: 2 of 3 pairs reversed; a stricter threshold sends it to the added ones
    rels = relations_to_invert(family, "auto", threshold=0.7)
    assert family.relations["parents"] in rels and family.relations["children"] not in rels


def test_augmented_graph_keeps_every_id_and_appends_the_reversed_triples(movies):
    aug = add_inverse_edges(movies, relations_to_invert(movies, "always"))
    R, T = movies.num_relations, movies.num_triples
    assert aug.relations.labels[:R] == movies.relations.labels
    assert aug.relations.labels[R:] == [f"{r} (inverse)" for r in movies.relations.labels]
    assert aug.entities == movies.entities and aug.num_triples == 2 * T
    assert np.array_equal(aug.triples_np[:T], movies.triples_np)
    assert list(aug.inverse_of) == [-1] * R + list(range(R))
    assert sorted(aug.labeled(i) for i in range(T, 2 * T)) == sorted(
        (t, f"{r} (inverse)", h) for h, r, t in MOVIES
    )
    # the KG as given is the prefix, with the same fingerprint as the plain graph
    own = aug.own_part()
    assert own.fingerprint() == movies.fingerprint() and aug.fingerprint() != movies.fingerprint()
    assert own is aug.own_part() and movies.own_part() is movies
    assert aug.num_own_relations == R and aug.num_own_triples == T
    # a person now has out-edges; in the plain graph it had none
    keanu = movies.entities["keanu_reeves"]
    assert len(movies.out_triples(keanu)) == 0 and len(aug.out_triples(keanu)) == 2
    partner = aug.inverse_partner
    starring = movies.relations["starring"]
    assert aug.relations.label(int(partner[starring])) == "starring (inverse)"
    assert partner[partner[starring]] == starring


def test_self_loops_and_duplicates_give_no_extra_edge(family):
    dup = KnowledgeGraph(
        family.entities,
        family.relations,
        np.concatenate([family.triples_np, family.triples_np[:1]]),
        name="dup",
    )
    aug = add_inverse_edges(dup, relations_to_invert(dup, "always"))
    # 10 distinct triples with h != t (same_as's self-loop and the repeated line give none)
    assert aug.num_triples - dup.num_triples == 10
    assert "same_as (inverse)" not in aug.relations


def test_never_and_no_relation_return_the_graph_itself(movies):
    assert add_inverse_edges(movies, relations_to_invert(movies, "never")) is movies


def test_stated_replaces_an_added_edge_by_the_fact_it_reverses(movies):
    aug = add_inverse_edges(movies, relations_to_invert(movies, "auto"))
    added = next(
        i
        for i in range(aug.num_triples)
        if aug.labeled(i)[:2] == ("keanu_reeves", "starring (inverse)")
    )
    src = aug.labeled(aug.stated([added])[0])
    assert src[1] == "starring" and src[2] == "keanu_reeves"
    # a fact reached both ways is listed once, at its first place; own triples are unchanged
    forward = aug.stated([added])[0]
    assert aug.labeled(0)[1] == "directed_by"  # not the starring fact
    assert aug.stated([added, forward, 0]) == [forward, 0]
    assert aug.stated([0, 1]) == [0, 1]


def test_embeddings_of_added_relations_read_transe_backwards(movies):
    aug = add_inverse_edges(movies, [movies.relations["genre"]])
    emb = np.arange(movies.num_relations * 2, dtype=np.float32).reshape(-1, 2)
    ext = extend_relation_embeddings(emb, aug)
    assert ext.shape == (movies.num_relations + 1, 2)
    assert np.array_equal(ext[-1], -emb[movies.relations["genre"]])
    with pytest.raises(ValueError, match="own relations"):
        extend_relation_embeddings(ext, aug)


def test_save_load_keeps_the_added_edges(movies, tmp_path):
    aug = add_inverse_edges(movies, relations_to_invert(movies, "auto"))
    back = KnowledgeGraph.load(aug.save(tmp_path / "kg"), mmap=True)
    assert back.fingerprint() == aug.fingerprint()
    assert np.array_equal(back.inverse_of, aug.inverse_of)
    assert back.own_part().fingerprint() == movies.fingerprint()


def test_errors_name_the_key_or_the_rule(movies):
    with pytest.raises(InputError, match=r"data.source.inverse='both'; expected one of"):
        check_inverse_mode("both")
    aug = add_inverse_edges(movies, [0])
    with pytest.raises(ValueError, match="already holds added inverse edges"):
        relations_to_invert(aug, "auto")
    with pytest.raises(ValueError, match="before adding inverse edges"):
        aug.with_relations(np.arange(aug.num_relations), aug.relations)
    clash = KnowledgeGraph.from_labeled_triples([*MOVIES, ("x", "genre (inverse)", "y")])
    with pytest.raises(InputError, match="already has a relation 'genre \\(inverse\\)'"):
        add_inverse_edges(clash, [clash.relations["genre"]])
    with pytest.raises(ValueError, match="must come first"):
        KnowledgeGraph(movies.entities, movies.relations, movies.triples_np, inverse_of=[0, -1, -1])
