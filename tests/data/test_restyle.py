"""The second question style (lokg/data/restyle.py) on a family graph checkable by hand."""

from __future__ import annotations

import random

import pytest

from lokg.data.restyle import (
    PARAPHRASE_TEMPLATES,
    REVERSE_TEMPLATES,
    Unrestylable,
    paraphrase,
    relation_words,
    restyle,
    reverse,
    reverse_answers,
)
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.typing import Question

from ..fixtures import toy_kg


@pytest.fixture
def family() -> KnowledgeGraph:
    #   alice -spouse-> bob -nationality-> france      erin -spouse-> frank -nationality-> france
    #   alice -children-> carol -nationality-> spain   bob, dave -children-> carol
    #   gina -children-> hank -nationality-> france
    return toy_kg.extended_family()


def q(qid, path, answers=None, topic=None, text="what is the X of Y 's Z ?") -> Question:
    topic = topic if topic is not None else (path[0][0],) if path else ()
    answers = answers if answers is not None else (path[-1][2],)
    return Question(qid, text, tuple(answers), tuple(topic), tuple(path))


KIDS = q("kids", [("alice", "children", "carol"), ("carol", "nationality", "spain")])
SPOUSE = q("spouse", [("alice", "spouse", "bob"), ("bob", "nationality", "france")])


def test_reverse_answers_by_hand(family):
    ent, rel = family.entities, family.relations
    kids = [rel["children"], rel["nationality"]]
    # x -children-> carol -nationality-> spain: alice, bob, dave (three parents of carol)
    got = reverse_answers(family, kids, ent["spain"])
    assert got == {ent["alice"], ent["bob"], ent["dave"]}
    # x -children-> * -nationality-> france: only gina (hank); spouses do not count
    assert reverse_answers(family, kids, ent["france"]) == {ent["gina"]}
    # one hop: x -nationality-> france is bob, frank, hank
    one = reverse_answers(family, [rel["nationality"]], ent["france"])
    assert one == {ent["bob"], ent["frank"], ent["hank"]}
    # the direction counts: nobody reaches alice through children
    assert reverse_answers(family, [rel["children"]], ent["alice"]) == set()


def test_reverse_question_topic_answers_and_reversed_path(family):
    out, report = restyle([KIDS, SPOUSE], family, "reverse")
    kids, spouse = out
    assert (report.kept, report.num_skipped) == (2, 0)
    assert kids.id == "kids-reverse" and kids.topic_entities == ("spain",)
    # the original topic first, then the other entities reaching spain, sorted
    assert kids.answers == ("alice", "bob", "dave")
    # reversed order, each triple still (head, relation, tail) as in the graph
    assert kids.gold_path == (("carol", "nationality", "spain"), ("alice", "children", "carol"))
    assert spouse.topic_entities == ("france",) and spouse.answers == ("alice", "erin")
    assert "france" in spouse.text and "spouse" in spouse.text and "nationality" in spouse.text


def test_too_many_reverse_answers_are_skipped_and_counted(family):
    out, report = restyle([KIDS, SPOUSE], family, "reverse", max_answers=2)
    assert [x.id for x in out] == ["spouse-reverse"]  # kids has 3 answers
    assert report.kept == 1 and report.skipped["too_many_answers"] == 1
    out, report = restyle([KIDS, SPOUSE], family, "reverse", max_answers=1)
    assert out == [] and report.skipped["too_many_answers"] == 2
    assert str(report) == "reverse: 0 kept, 2 skipped (too_many_answers 2)"


def test_unusable_paths_are_skipped_by_reason(family):
    questions = [
        q("none", [], answers=("x",), topic=("alice",)),
        q("broken", [("alice", "spouse", "bob"), ("carol", "nationality", "spain")]),
        q("absent", [("alice", "nationality", "spain")]),  # labels known, triple not in graph
        q("unknown", [("zoe", "spouse", "bob")]),  # entity the graph lacks
        KIDS,
    ]
    out, report = restyle(questions, family, "reverse")
    assert [x.id for x in out] == ["kids-reverse"]
    assert report.skipped == {
        "no_gold_path": 1, "broken_path": 1, "not_in_kg": 2, "too_many_answers": 0,
    }  # fmt: skip
    out, report = restyle(questions, family, "paraphrase")  # needs a path, not the graph
    assert [x.id for x in out] == ["absent-paraphrase", "unknown-paraphrase", "kids-paraphrase"]
    assert report.skipped["no_gold_path"] == 1 and report.skipped["broken_path"] == 1


def test_paraphrase_keeps_topic_answers_and_path(family):
    original = q("k", KIDS.gold_path, answers=("spain", "españa"), topic=("alice",))
    (para,), report = restyle([original], family, "paraphrase")
    assert report.kept == 1 and para.id == "k-paraphrase"
    assert para.answers == original.answers
    assert para.topic_entities == original.topic_entities
    assert para.gold_path == original.gold_path
    assert para.text != original.text and para.text in {
        t("alice", ["children", "nationality"]) for t in PARAPHRASE_TEMPLATES
    }


@pytest.mark.parametrize("hops", [1, 2, 3])
@pytest.mark.parametrize("kind", ["paraphrase", "reverse"])
def test_every_template_names_the_topic_and_each_relation_without_pathquestion_forms(kind, hops):
    words = ["children", "spouse", "nationality"][:hops]
    templates = PARAPHRASE_TEMPLATES if kind == "paraphrase" else REVERSE_TEMPLATES
    texts = {t("alice", words) for t in templates}
    assert len(texts) == len(templates)
    for text in texts:
        assert "alice" in text and all(w in text for w in words)
        assert "'s" not in text.replace("entity's", "")  # no possessive chain over relations
        assert not text.lower().startswith("what is")


def test_templates_by_hand():
    which_has, whose = REVERSE_TEMPLATES[0], REVERSE_TEMPLATES[1]
    assert which_has("spain", ["children", "nationality"]) == (
        "Which entity's children has nationality spain?"
    )
    assert which_has("spain", ["spouse", "children", "nationality"]) == (
        "Which entity's spouse has a children whose nationality is spain?"
    )
    assert whose("spain", ["children", "nationality"]) == "Whose children nationality is spain?"
    assert PARAPHRASE_TEMPLATES[0]("alice", ["children", "nationality"]) == (
        "Name the nationality of the children of alice."
    )
    assert PARAPHRASE_TEMPLATES[1]("alice", ["children", "nationality"]) == (
        "alice -> children -> nationality: which entity?"
    )


def test_paraphrase_and_reverse_use_the_given_template(family):
    assert paraphrase(KIDS, template=2).text == (
        "Tell me which entity is the nationality for the children of alice."
    )
    assert (
        reverse(KIDS, family, template=4).text
        == "spain <- nationality <- children <- which entity?"
    )
    with pytest.raises(Unrestylable) as why:
        reverse(KIDS, family, template=0, max_answers=2)
    assert why.value.reason == "too_many_answers"


def test_report_names_each_question_template(family):
    out, report = restyle([KIDS, SPOUSE], family, "paraphrase", seed=3)
    assert set(report.templates) == {x.id for x in out}
    for x in out:
        source = KIDS if x.id.startswith("kids") else SPOUSE
        assert x == paraphrase(source, report.templates[x.id])


def test_deterministic_per_question_under_a_seed(family):
    many = [q(f"q{i}", KIDS.gold_path) for i in range(30)]
    for style in ("paraphrase", "reverse"):
        a, _ = restyle(many, family, style, seed=7)
        b, _ = restyle(list(reversed(many)), family, style, seed=7)
        assert a == list(reversed(b))  # the same per question, whatever the order
        assert len({x.text for x in a}) > 1  # the template is drawn per question
        c, _ = restyle(many, family, style, seed=8)
        assert [x.text for x in a] != [x.text for x in c]


@pytest.mark.parametrize(
    ("label", "segments", "words"),
    [
        ("parents", 1, "parents"),
        ("place_of_birth", 1, "place of birth"),
        ("__common__topic__notable_types", 1, "notable types"),
        ("people.person.place_of_birth", 1, "place of birth"),
        ("people.person.place_of_birth", 2, "person place of birth"),
        ("people.person.place_of_birth", None, "people person place of birth"),
        ("/people/person/nationality", 1, "nationality"),
    ],
)
def test_relation_words(label, segments, words):
    assert relation_words(label, segments) == words


def test_options_are_validated(family):
    with pytest.raises(InputError, match="paraphrase"):
        restyle([KIDS], family, "backwards")
    with pytest.raises(InputError, match="max_answers"):
        restyle([KIDS], family, "reverse", max_answers=0)
    with pytest.raises(ValueError, match="segments"):
        relation_words("a.b", 0)


def test_rng_is_not_global(family):
    random.seed(1)
    a, _ = restyle([KIDS], family, "paraphrase")
    random.seed(2)
    b, _ = restyle([KIDS], family, "paraphrase")
    assert a == b


@pytest.mark.slow
def test_evaluate_answers_restyled_questions_under_their_own_run_key(tmp_path):
    """``lokg.evaluate.run(cfg, questions)`` (the bench's runner) on PQ-2H with the oracle:
    the restyled questions are answered, recorded apart from the split's, and the oracle's
    gold-path evidence gives the same scores in either phrasing."""
    import hydra

    from lokg.config import compose_config
    from lokg.evaluate import run as evaluate

    cfg = compose_config(
        "evaluate", ["baseline=oracle", "llm=extractive", "split=val", "limit=6"], tmp_path
    )
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("test")
    styled, report = restyle(dm.questions["val"][:6], dm.kg, "paraphrase")
    assert report.kept == 6
    plain, out = evaluate(cfg), evaluate(cfg, styled)
    assert [r.id for r in out["records"]] == [x.id for x in styled]
    assert out["run_dir"] != plain["run_dir"]
    assert out["metrics"]["hits@1"] == plain["metrics"]["hits@1"]
    assert out["metrics"]["coverage"] == plain["metrics"]["coverage"]
    again, _ = restyle(dm.questions["val"][:6], dm.kg, "paraphrase", seed=1)
    assert evaluate(cfg, again)["run_dir"] != out["run_dir"]  # other texts, other key
