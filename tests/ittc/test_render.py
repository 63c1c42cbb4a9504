"""Compact / balanced / verbose renderings (Sec. 2.4) and the naive template."""

import pytest

from lokg.ittc.render import GRANULARITIES, TripleRenderer, relation_segments
from lokg.kg.graph import EntityAttributes, KnowledgeGraph


def _t(kg, h, r, t):
    return (kg.entities[h], kg.relations[r], kg.entities[t])


def test_relation_segments():
    assert relation_segments("__film__cinematographer__film") == ["film", "cinematographer", "film"]
    assert relation_segments("people.person.place_of_birth") == [
        "people",
        "person",
        "place of birth",
    ]
    assert relation_segments("/people/person/gender") == ["people", "person", "gender"]
    assert relation_segments("place_of_birth") == ["place of birth"]


def test_three_granularities_without_attributes(fb_kg):
    r = TripleRenderer()
    t = _t(fb_kg, "Kenneth_Peach", "__film__cinematographer__film", "Dirty_Work")
    # Dirty_Work's derived type: short name of its only incoming relation (film)
    assert r.line(fb_kg, t, "rso", "compact") == "film | Kenneth Peach | Dirty Work\n"
    assert r.line(fb_kg, t, "rso", "balanced") == (
        "cinematographer film | Kenneth Peach | Dirty Work (film)\n"
    )
    assert r.line(fb_kg, t, "rso", "verbose") == (
        "film cinematographer film | Kenneth Peach (id: Kenneth_Peach) | "
        "Dirty Work (film; id: Dirty_Work)\n"
    )
    assert r.naive_line(fb_kg, t) == "Kenneth Peach | film cinematographer film | Dirty Work\n"


def test_derived_type_is_most_frequent_incoming_relation(fb_kg):
    types = TripleRenderer().derived_types(fb_kg)
    # United_States: nationality x2, country x1, containedby x1
    assert types[fb_kg.entities["United_States"]] == "nationality"
    # China: containedby x1, nationality x1 -> tie, smaller relation id (containedby) wins
    assert types[fb_kg.entities["China"]] == "containedby"
    assert types[fb_kg.entities["Kenneth_Peach"]] is None  # no incoming edge


def test_renderings_with_attributes_and_order():
    base = KnowledgeGraph.from_labeled_triples([("m1", "born_in", "m2")])
    attributes = EntityAttributes(
        names=["Ada Lovelace", "London"],
        aliases=[["Ada King", "Countess of Lovelace", "A. A. L.", "Ada"], []],
        types=["person", "city"],
        descriptions=["English mathematician.\nShe wrote the first program.", None],
        extra={"birth_year": ["1815", None]},
    )
    kg = KnowledgeGraph(base.entities, base.relations, base.triples_np, attributes)
    r = TripleRenderer(max_aliases=2)
    t = (0, 0, 1)
    assert r.line(kg, t, "sro", "compact") == "Ada Lovelace | born in | London\n"
    assert r.line(kg, t, "osr", "balanced") == (
        "London (city) | Ada Lovelace (person; English mathematician.) | born in\n"
    )
    assert r.line(kg, t, "sro", "verbose") == (
        "Ada Lovelace (person; aka Ada King, Countess of Lovelace; English mathematician. She "
        "wrote the first program.; birth year: 1815; id: m1) | born in | London (city; id: m2)\n"
    )


@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_each_rendering_is_one_deterministic_line(fb_kg, granularity):
    r = TripleRenderer()
    for t in fb_kg.triples_np:
        line = r.line(fb_kg, t, "rso", granularity)
        assert line.endswith("\n") and line.count("\n") == 1
        assert line == TripleRenderer().line(fb_kg, t, "rso", granularity)


def test_bad_options(fb_kg):
    with pytest.raises(ValueError, match="separator must be a non-empty one-line string"):
        TripleRenderer(separator="\n")
    with pytest.raises(ValueError, match=r"granularity 'tiny' is not one of \['compact'"):
        TripleRenderer().entity_text(fb_kg, 0, "tiny")
    with pytest.raises(ValueError, match=r"granularity 'tiny' is not one of \['compact'"):
        TripleRenderer().relation_text(fb_kg, 0, "tiny")
