"""Compact / balanced / verbose renderings (Sec. 2.4) and the naive template."""

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lokg.ittc import ITTCEncoder, NaiveEncoder
from lokg.ittc.render import GRANULARITIES, TripleRenderer, one_line, relation_segments
from lokg.kg.graph import EntityAttributes, KnowledgeGraph
from lokg.tokens import count_tokens


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


# ----------------------------------------------------------------------------- one fact, one line
LINE_BREAKS = [
    "\n",
    "\r",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x85",
    "\u2028",
    "\u2029",
]
ORDERS = ("sro", "rso", "osr")


def _weird_kg(label: str, name: str | None = None) -> KnowledgeGraph:
    base = KnowledgeGraph.from_labeled_triples([(label, label + "_r", "plain")])
    names = (
        None if name is None else [name if lab == label else None for lab in base.entities.labels]
    )
    attributes = None if names is None else EntityAttributes(names=names)
    return KnowledgeGraph(base.entities, base.relations, base.triples_np, attributes)


def _all_lines(renderer: TripleRenderer, kg: KnowledgeGraph) -> list[str]:
    out = [renderer.naive_line(kg, t) for t in kg.triples_np]
    for g in GRANULARITIES:
        for order in ORDERS:
            out += renderer.lines(kg, kg.triples_np, order, g)
    return out


def assert_one_fact_one_line(line: str, separator: str) -> None:
    assert line.endswith("\n")
    assert line.splitlines() == [line[:-1]]  # no line break of any kind inside
    assert not any(unicodedata.category(c) == "Cc" for c in line[:-1].replace(separator, ""))
    assert len(line[:-1].split(separator)) == 3


@pytest.mark.parametrize("brk", LINE_BREAKS)
def test_a_line_break_in_a_label_is_escaped_in_every_rendering(brk):
    kg = _weird_kg(f"New{brk}York")
    r = TripleRenderer()
    for line in _all_lines(r, kg):
        assert_one_fact_one_line(line, r.separator)
    # the raw label of the verbose id keeps its line break visibly; the name collapses it
    verbose = r.line(kg, (kg.entities[f"New{brk}York"], 0, kg.entities["plain"]), "sro", "verbose")
    escaped = brk.encode("unicode_escape").decode()
    assert f"id: New{escaped}York" in verbose


def test_escapes_are_readable_and_ordinary_labels_unchanged():
    assert one_line("a\nb\rc\td\x1be\u2028f\x00") == "a\\nb\\rc\\td\\x1be\\u2028f\\x00"
    assert one_line("AC | DC and AC|DC") == "AC \\| DC and AC\\|DC"
    assert one_line("a -> b", " -> ") == "a \\-> b"
    assert one_line("Ünïcödé (film) 1999: the end.") == "Ünïcödé (film) 1999: the end."


def test_separator_in_a_label_is_escaped():
    kg = _weird_kg("AC | DC", name="AC | DC")
    r = TripleRenderer()
    t = (kg.entities["AC | DC"], 0, kg.entities["plain"])
    assert r.line(kg, t, "sro", "compact") == "AC \\| DC | AC \\| DC r | plain\n"
    for line in _all_lines(r, kg):
        assert_one_fact_one_line(line, " | ")


def test_name_description_and_alias_with_line_breaks():
    base = KnowledgeGraph.from_labeled_triples([("m1", "born_in", "m2")])
    attributes = EntityAttributes(
        names=["Ada\u2028Lovelace", "Lon\x00don"],
        aliases=[["A.\nK.", "x\u2029y"], []],
        types=["per\rson", None],
        descriptions=["Line one.\r\nLine two.", "a | b"],
        extra={"note": ["x\x1b[31mred", None]},
    )
    kg = KnowledgeGraph(base.entities, base.relations, base.triples_np, attributes)
    r = TripleRenderer()
    assert r.line(kg, (0, 0, 1), "sro", "verbose") == (
        "Ada Lovelace (per son; aka A. K., x y; Line one. Line two.; note: x\\x1b[31mred; id: m1)"
        " | born in | Lon\\x00don (a \\| b; id: m2)\n"
    )
    for line in _all_lines(r, kg):
        assert_one_fact_one_line(line, " | ")


@pytest.mark.parametrize("separator", ["\n", "", "|", ", ", " \x00 ", "  ", " \u2028 "])
def test_separators_that_could_not_be_escaped_are_refused(separator):
    with pytest.raises(ValueError, match="separator must be a non-empty one-line string"):
        TripleRenderer(separator=separator)


_LABEL_TEXT = st.lists(
    st.one_of(
        st.characters(),  # any code point but surrogates
        st.sampled_from([*LINE_BREAKS, "\t", "\x00", "\x1b", "|", " | ", "_", ".", "/", "__"]),
    ),
    max_size=10,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    head=_LABEL_TEXT,
    relation=_LABEL_TEXT,
    tail=_LABEL_TEXT,
    name=st.none() | _LABEL_TEXT,
    description=st.none() | _LABEL_TEXT,
    alias=_LABEL_TEXT,
    separator=st.sampled_from([" | ", " ; ", " -> ", " || ", "\t"]),
)
def test_property_every_rendered_triple_is_exactly_one_line(
    head, relation, tail, name, description, alias, separator
):
    base = KnowledgeGraph.from_labeled_triples([(head, relation, tail), (tail, relation, head)])
    n = base.num_entities
    attributes = EntityAttributes(
        names=[name] * n,
        aliases=[[alias]] * n,
        types=[description] * n,
        descriptions=[description] * n,
        extra={alias or "k": [name] * n},
    )
    plain = KnowledgeGraph(base.entities, base.relations, base.triples_np)
    rich = KnowledgeGraph(base.entities, base.relations, base.triples_np, attributes)
    r = TripleRenderer(separator=separator)
    for kg in (plain, rich):
        for line in _all_lines(r, kg):
            assert_one_fact_one_line(line, separator)


def test_encoder_counts_the_escaped_lines_it_sends():
    kg = KnowledgeGraph.from_labeled_triples(
        [("New\nYork", "in", "U|S"), ("U|S", "capital\u2028city", "Wash\rington"), ("a", "b", "c")]
    )
    enc = ITTCEncoder(activation_ratio=0.0)
    ctx = enc.encode(kg, range(kg.num_triples), budget=40)
    assert ctx.num_tokens == count_tokens(ctx.text) <= 40
    assert len(ctx.text.splitlines()) == len(ctx.triples)
    naive = NaiveEncoder().encode(kg, range(kg.num_triples), budget=4096)
    assert naive.text.splitlines() == [
        "New York | in | U\\|S",  # names and relations are prose: whitespace runs collapse
        "U\\|S | capital city | Wash ington",
        "a | b | c",
    ]
