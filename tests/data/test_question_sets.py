"""Generated question sets beyond chains (issue 28 §1, lokg/data/question_sets.py), checked by
hand on a small family-and-profession graph."""

import pytest

from lokg.data.question_sets import (
    Phrasebook,
    chain_phrases,
    generate,
    mine_phrasings,
)
from lokg.data.splits import split_leaks, split_questions
from lokg.errors import InputError
from lokg.typing import Question

# ann and bob have children cal and dee; ann also has eve with another partner, bob has fay.
# cal, dee, eve are writers; fay and gus are singers; cal is also a singer.
KG = [
    ("ann", "children", "cal"),
    ("ann", "children", "dee"),
    ("ann", "children", "eve"),
    ("bob", "children", "cal"),
    ("bob", "children", "dee"),
    ("bob", "children", "fay"),
    ("cal", "profession", "writer"),
    ("cal", "profession", "singer"),
    ("dee", "profession", "writer"),
    ("eve", "profession", "writer"),
    ("fay", "profession", "singer"),
    ("gus", "profession", "singer"),
    ("hal", "profession", "writer"),
    ("ivy", "profession", "writer"),
    ("jon", "profession", "singer"),
    ("kim", "profession", "singer"),
]
BOOK = Phrasebook(
    phrases={"children": ("son", "daughter"), "profession": ("job",)},
    counts={"children": (3, 2), "profession": (4,)},
    parsed=9,
    lines=9,
)


def q(text, topic, path):
    return Question(id=text, text=text, answers=(path[-1][2],), topic_entities=(topic,),
                    gold_path=tuple(path))  # fmt: skip


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        ("which nationality is X 's couple ?", ["couple", "nationality"]),
        ("what is the nation of X 's couple ?", ["couple", "nation"]),
        ("the parent of X 's son ?", ["son", "parent"]),
        ("what is the parent of son of X ?", ["son", "parent"]),
        ("what is the X 's film 's notable_types ?", ["film", "notable_types"]),
        ("who is the father of the wife of X ?", ["wife", "father"]),
        ("X ?", None),  # no relation phrase
        ("what did X do ?", None),  # not possessives and "of" phrases
        ("the son of X and X ?", None),  # the topic twice
    ],
)
def test_chain_phrases_reads_possessives_and_of_phrases_innermost_first(text, phrases):
    assert chain_phrases(text, "x") == phrases


def test_mine_phrasings_counts_phrases_per_relation_in_the_kgs_direction():
    kg = [("a", "spouse", "b"), ("b", "nationality", "uk"), ("c", "spouse", "d"),
          ("d", "nationality", "fr")]  # fmt: skip
    ab = [("a", "spouse", "b"), ("b", "nationality", "uk")]
    qs = [
        q("which nationality is a 's couple ?", "a", ab),
        q("the nation of c 's couple ?", "c", [("c", "spouse", "d"), ("d", "nationality", "fr")]),
        q("the nation of a 's wife ?", "a", ab),
        # a hop against the KG's direction: its phrase would name the other end, not read
        q("the husband of b ?", "b", [("b", "spouse", "a")]),
    ]  # fmt: skip
    book = mine_phrasings(qs, kg, min_count=2)
    assert (book.parsed, book.lines) == (3, 4)
    assert book.phrases == {"spouse": ("couple",), "nationality": ("nation",)}
    assert book.counts == {"spouse": (2,), "nationality": (2,)}
    assert mine_phrasings(qs, kg, min_count=1).phrases["spouse"] == ("couple", "wife")


def test_conjunction_answers_are_the_join_strictly_smaller_than_either_anchor():
    qs = generate("conjunction", KG, BOOK, size=100, seed=0, prefix="c", wordings=1)
    by_topics = {(q.topic_entities, tuple(r for _, r, _ in q.gold_path)): q for q in qs}
    # children(ann) = {cal, dee, eve}, children(bob) = {cal, dee, fay}: the join {cal, dee}
    ab = by_topics[(("ann", "bob"), ("children", "children"))]
    assert ab.answers == ("cal", "dee")
    assert ab.gold_path == (("ann", "children", "cal"), ("bob", "children", "cal"))
    # a profession join: cal's {singer, writer} and dee's {writer} -> {writer} is not smaller
    # than dee's set, so no such question; every kept join is smaller than both sides
    for x in qs:
        (a, ra, _), (b, rb, _) = x.gold_path
        sa = {t for h, r, t in KG if (h, r) == (a, ra)}
        sb = {t for h, r, t in KG if (h, r) == (b, rb)}
        assert set(x.answers) == sa & sb
        assert 0 < len(x.answers) < min(len(sa), len(sb))
    assert len(qs) == 1  # ann + bob is the only pair with a strictly smaller join here


def test_constraint_filters_a_chain_by_an_attribute_many_entities_share():
    qs = generate("constraint", KG, BOOK, size=100, seed=0, prefix="k", wordings=1)
    got = {(q.topic_entities, q.answers) for q in qs}
    # ann's children {cal, dee, eve}: writers {cal, dee, eve} (not smaller), singers {cal}
    assert (("ann", "singer"), ("cal",)) in got
    assert (("bob", "writer"), ("cal", "dee")) in got  # bob's {cal, dee, fay}
    assert (("bob", "singer"), ("cal", "fay")) in got
    assert not any(topics == ("ann", "writer") for topics, _ in got)
    for x in qs:
        assert x.gold_path[-1][1:] == ("profession", x.topic_entities[1])


def test_many_answers_bounds_and_wordings_are_one_split_group():
    many_kg = [("p", "children", f"k{i}") for i in range(6)] + [("z", "children", "k0")]
    qs = generate("many", many_kg, BOOK, size=10, seed=0, prefix="m", wordings=2)
    assert {x.answers for x in qs} == {tuple(f"k{i}" for i in range(6))}  # z has 1: too few
    assert len(qs) == 2 and qs[0].text != qs[1].text  # two wordings of one pattern
    assert [x.id for x in qs] == ["m-0", "m-1"]


def test_generation_is_seeded_and_worded_with_the_phrasebook_never_the_label():
    a = generate("constraint", KG, BOOK, size=3, seed=1, prefix="k")
    b = generate("constraint", KG, BOOK, size=3, seed=1, prefix="k")
    assert [(x.text, x.answers) for x in a] == [(x.text, x.answers) for x in b]
    for x in a:
        assert "children" not in x.text and "profession" not in x.text
        assert ("son" in x.text or "daughter" in x.text) and "job" in x.text


def test_the_package_split_keeps_anchors_with_a_relation_pattern_in_one_split():
    wide = KG + [(f"p{i}", "children", f"c{i}{j}") for i in range(30) for j in range(3)]
    wide += [(f"p{i + 1}", "children", f"c{i}0") for i in range(29)]
    qs = generate("conjunction", wide, BOOK, size=500, seed=0, prefix="c", wordings=2)
    assert len(qs) > 40
    splits = split_questions(qs, seed=0)
    assert split_leaks(splits) == []
    for split in splits.values():  # both wordings of a pattern sit in one split
        for x in split:
            twins = [y for y in qs if y.gold_path == x.gold_path]
            assert all(y in split for y in twins)


def test_bad_settings_are_one_line_errors():
    with pytest.raises(InputError, match="kind 'chain'"):
        generate("chain", KG, BOOK, size=1, seed=0, prefix="x")
    with pytest.raises(InputError, match="size=0"):
        generate("many", KG, BOOK, size=0, seed=0, prefix="x")


def test_generated_source_on_a_bundled_kb_names_kinds_in_ids_and_keys_its_settings():
    from lokg.data import GeneratedSource

    src = GeneratedSource("PQL-3H", kinds=["conjunction", "many"], size=5, seed=0)
    raw = src.load()
    kinds = {q.id.rsplit("-", 1)[0] for q in raw.questions}
    assert kinds == {"beyond_pql3h-conjunction", "beyond_pql3h-many"}
    assert "wordings of" in raw.reports[1] and "conjunction 10, many 10" in raw.reports[2]
    assert src.paper_setting is False
    assert GeneratedSource("PQL-3H", kinds=["many"], size=5, seed=1).fingerprint() != (
        GeneratedSource("PQL-3H", kinds=["many"], size=5, seed=0).fingerprint()
    )
    with pytest.raises(InputError, match=r"data.source.kinds=\['chains'\]"):
        GeneratedSource("PQL-3H", kinds=["chains"])
    with pytest.raises(InputError, match="data.source.size=0"):
        GeneratedSource("PQL-3H", size=0)
