"""Paraphrases that avoid the KB's relation-label words (lokg/data/paraphrase.py, issue 26 §7):
the label rule by hand, every template on a tiny lexicon checkable by hand, and the bundled
lexicon on the four PathQuestion sets."""

from __future__ import annotations

from collections import Counter

import pytest

from lokg.data import PathQuestionSource
from lokg.data.paraphrase import (
    DEFAULT_LEXICON,
    TEMPLATES,
    label_words,
    lexicon_violations,
    load_lexicon,
    paraphrase_questions,
    paraphrase_with_report,
    reused_label_words,
)
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.typing import Question

VARIANTS = ("PQ-2H", "PQ-3H", "PQL-2H", "PQL-3H")

#: one phrasing per form, so each template's text is fixed (only the template is drawn)
TINY = """\
relations:
  parents:
    ref: "that elder"
    ask: ["Who raised {x}?"]
    noun: ["the mother or father of [the child] {x}"]
    clause: ["{x} had a mother or father"]
  spouse:
    ref: "that partner"
    ask: ["Who did {x} marry?"]
    noun: ["the partner of {x}"]
    clause: ["[the person] {x} married someone"]
  place_of_birth:
    ref: "that town"
    ask: ["Where was {x} born?"]
    noun: ["the home town of {x}"]
    clause: ["{x} was born somewhere"]
"""

#: alice_smith -parents-> bob -spouse-> carol -place_of_birth-> paris
PATH = (
    ("alice_smith", "parents", "bob"),
    ("bob", "spouse", "carol"),
    ("carol", "place_of_birth", "paris"),
)
#: every template's text for PATH with TINY, written by hand
BY_HAND = {
    "nested": "Where was the partner of the mother or father of the child alice smith born?",
    "clause_first": "alice smith had a mother or father; where was the partner of that elder born?",
    "consider": "Consider the partner of the mother or father of the child alice smith: "
    "where was that partner born?",
    "clause_chain": "alice smith had a mother or father, and that elder married someone; "
    "where was that partner born?",
    "name": "Name the home town of the partner of the mother or father of the child alice smith.",
}


@pytest.fixture
def family() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(
        [*PATH, ("alice_smith", "gender", "female"), ("bob", "spouse", "dora")]
    )


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY, encoding="utf-8")
    return load_lexicon(path)


def q(qid: str, path=PATH, answers=("paris",)) -> Question:
    topic = path[0][0] if path else "alice_smith"
    return Question(qid, "what is the place of birth of ... ?", answers, (topic,), path)


@pytest.fixture(scope="module")
def pathquestion():
    return {v: PathQuestionSource(v).load() for v in VARIANTS}


@pytest.fixture(scope="module")
def lexicon():
    return load_lexicon()


# ------------------------------------------------------------------ the rule
def test_label_words_are_all_segments_stemmed_without_stopwords():
    assert label_words("__people__person__place_of_birth") == {"people", "person", "place", "birth"}
    assert label_words("cause_of_death") == {"cause", "death"}
    assert label_words("parents") == {"parent"}
    # "how", "to", "here" are stopwords
    assert label_words("__travel__travel_destination__how_to_get_here") == {
        "travel",
        "destination",
        "get",
    }


def test_reused_label_words_by_hand():
    # a prefix clashes either way; plural s dropped; stopwords ignored
    assert reused_label_words("What is the nation of X?", ["nationality"]) == {"nation"}
    assert reused_label_words("Who is a child of X?", ["children"]) == {"child"}
    assert reused_label_words("Who are the parents of X?", ["parents"]) == {"parent"}
    assert reused_label_words("Where was X born?", ["place_of_birth"]) == set()
    assert reused_label_words("Which country is X a citizen of?", ["nationality"]) == set()
    # checked against every relation of the path
    assert reused_label_words("Where was the spouse of X born?", ["spouse", "place_of_birth"]) == {
        "spouse"
    }
    # entity names are exempt, as whole words only
    text = "Who performed Recording Session?"
    relation = ["__music__recording__artist"]
    assert reused_label_words(text, relation) == {"recording"}
    assert reused_label_words(text, relation, names=["Recording Session"]) == set()
    assert reused_label_words(text, relation, names=["Record"]) == {"recording"}


def test_bundled_lexicon_no_phrasing_reuses_its_label(lexicon):
    assert lexicon_violations(lexicon) == []
    for relation, entry in lexicon.relations.items():
        assert len(entry.ask) >= 2 and len(entry.noun) >= 2 and entry.clause, relation
        assert entry.nouns(nested=True) and entry.asks(nested=True), relation
        forbidden = label_words(relation)
        for text in entry.texts():
            words = reused_label_words(text.replace("{x}", " "), [relation])
            assert not words, f"{relation}: {text!r} reuses {words} of {sorted(forbidden)}"


def test_lexicon_reusing_a_label_word_is_refused(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(TINY.replace("Who did {x} marry?", "Who is the spouse of {x}?"))
    with pytest.raises(InputError, match=r"spouse: 'Who is the spouse of \{x\}\?' reuses") as err:
        load_lexicon(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('ask: ["Who raised {x}?"]', 'ask: ["Who raised them?"]', r"expected \{x\} exactly once"),
        ('    ref: "that elder"\n', "", r"expected the keys ask, clause, noun, ref"),
        ('noun: ["the partner of {x}"]', 'noun: ["{x}\'s partner"]', r"noun phrasing ending"),
        ("[the person] {x}", "[the {x}] person", r"without \{x\} or nested"),
    ],
)
def test_malformed_lexicon_is_one_line_naming_the_file(tmp_path, old, new, message):
    path = tmp_path / "bad.yaml"
    path.write_text(TINY.replace(old, new))
    with pytest.raises(InputError, match=message) as err:
        load_lexicon(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


# ------------------------------------------------------------------ composing, by hand
def test_every_template_by_hand(family, tiny):
    questions = [q(f"q{i}") for i in range(60)]
    out, report = paraphrase_with_report(questions, family, tiny, seed=0)
    # 3 hops with distinct refs: all five templates fit, and 60 draws meet each of them
    assert set(report.templates) == set(TEMPLATES) == set(BY_HAND)
    assert sum(report.templates.values()) == report.kept == 60
    assert {p.text for p in out} == set(BY_HAND.values())


def test_clause_chain_needs_distinct_refs(family, tiny, tmp_path):
    path = tmp_path / "same_refs.yaml"
    path.write_text(TINY.replace('"that elder"', '"that partner"'))
    lex = load_lexicon(path)
    _, report = paraphrase_with_report([q(f"q{i}") for i in range(60)], family, lex)
    assert "clause_chain" not in report.templates and len(report.templates) == 4


def test_hand_checked_pathquestion_examples(lexicon):
    # PQ-2H line 1 and PQL-3H line 3, seed 0 (read and checked by hand: same chain, same end)
    pq = Question(
        "pq2h-00001",
        "which nationality is frederica_of_mecklenburg-strelitz 's couple ?",
        ("united_kingdom",),
        ("frederica_of_mecklenburg-strelitz",),
        (
            ("frederica_of_mecklenburg-strelitz", "spouse", "ernest_augustus_i_of_hanover"),
            ("ernest_augustus_i_of_hanover", "nationality", "united_kingdom"),
        ),
    )
    pql = Question(
        "pql3h-00003",
        "what is the subject_of of gender of Let_Me_In 's artist ?",
        ("Web_development",),
        ("Let_Me_In",),
        (
            ("Let_Me_In", "__music__album__artist", "Michael_Giacchino"),
            ("Michael_Giacchino", "__people__person__gender", "Male"),
            ("Male", "__common__topic__subject_of", "Web_development"),
        ),
    )
    for question, expected in [
        (
            pq,
            "frederica of mecklenburg-strelitz married someone; "
            "which country is that individual a citizen of?",
        ),
        (
            pql,
            "Consider the sex of the performer behind the LP Let Me In: what discusses that one?",
        ),
    ]:
        kg = KnowledgeGraph.from_labeled_triples(question.gold_path)
        (para,) = paraphrase_questions([question], kg, lexicon, seed=0)
        assert para.text == expected


# ------------------------------------------------------------------ the contract
def test_ids_answers_topics_and_gold_path_kept(family, tiny):
    qs = [q("a"), q("b", answers=("paris", "lyon"))]
    out = paraphrase_questions(qs, family, tiny)
    assert [p.id for p in out] == ["a-para", "b-para"]
    for old, new in zip(qs, out, strict=True):
        assert (new.answers, new.topic_entities, new.gold_path) == (
            old.answers,
            old.topic_entities,
            old.gold_path,
        )
        assert "alice smith" in new.text and "alice_smith" not in new.text


def test_names_readable_or_as_labelled(family, tiny):
    readable = paraphrase_questions([q("a")], family, tiny, names="readable")[0]
    label = paraphrase_questions([q("a")], family, tiny, names="label")[0]
    # same draw, only the topic's spelling differs
    assert label.text == readable.text.replace("alice smith", "alice_smith")
    assert "alice_smith" in label.text
    with pytest.raises(
        InputError, match=r"names='pretty'; expected one of \('readable', 'label'\)"
    ):
        paraphrase_questions([q("a")], family, tiny, names="pretty")


def test_deterministic_and_independent_of_order(family, tiny):
    qs = [q(f"q{i}") for i in range(30)]
    first = paraphrase_questions(qs, family, tiny, seed=0)
    assert paraphrase_questions(qs, family, tiny, seed=0) == first
    backwards = paraphrase_questions(qs[::-1], family, tiny, seed=0)
    assert {p.id: p.text for p in backwards} == {p.id: p.text for p in first}
    other = paraphrase_questions(qs, family, tiny, seed=1)
    assert [p.text for p in other] != [p.text for p in first]


def test_missing_relation_is_one_line_naming_relation_and_file(family, tiny):
    gendered = q("g", path=(("alice_smith", "gender", "female"),), answers=("female",))
    with pytest.raises(InputError, match=r"relation 'gender' \(question g\)") as err:
        paraphrase_questions([q("a"), gendered], family, tiny)
    assert tiny.path in str(err.value) and "\n" not in str(err.value)
    out, report = paraphrase_with_report([q("a"), gendered], family, tiny, skip_uncovered=True)
    assert [p.id for p in out] == ["a-para"]
    assert (report.kept, report.skipped, report.uncovered) == (1, 1, Counter(gender=1))
    assert "1 kept, 1 skipped (uncovered: gender 1)" in str(report)


@pytest.mark.parametrize(
    ("path", "message"),
    [((), "has no gold path"), ((PATH[0], PATH[2]), "gold path breaks at 'bob' -> 'carol'")],
)
def test_unusable_gold_path_is_an_input_error(family, tiny, path, message):
    with pytest.raises(InputError, match=message):
        paraphrase_questions([q("x", path=path)], family, tiny)


# ------------------------------------------------------------------ the four PathQuestion sets
def test_lexicon_covers_every_gold_path_relation(pathquestion, lexicon):
    assert DEFAULT_LEXICON.is_file() and lexicon.path == str(DEFAULT_LEXICON)
    for variant, raw in pathquestion.items():
        assert lexicon.uncovered(raw.questions) == Counter(), variant
    pq = {
        r for v in ("PQ-2H", "PQ-3H") for q in pathquestion[v].questions for _, r, _ in q.gold_path
    }
    assert len(pq) == 13


def test_pathquestion_paraphrases_keep_the_rule(pathquestion, lexicon):
    total, texts = 0, set()
    for variant, raw in pathquestion.items():
        out, report = paraphrase_with_report(raw.questions, raw.kg, lexicon, seed=0)
        assert report.skipped == 0 and len(out) == len(raw.questions), variant
        for old, new in zip(raw.questions, out, strict=True):
            relations = [r for _, r, _ in old.gold_path]
            topic = raw.kg.entity_name(raw.kg.entities[old.gold_path[0][0]])
            assert new.id == f"{old.id}-para" and new.gold_path == old.gold_path
            assert new.answers == old.answers and new.text != old.text
            assert topic in new.text, new.text
            assert not reused_label_words(new.text, relations, names=[topic]), new.text
        total += len(out)
        texts.update(p.text for p in out)
    assert total >= 200 and len(texts) >= 200
