"""The hashed split: deterministic, order-independent; no question text and no (topic,
relation chain) in two splits; a held-out-template split."""

import hashlib
import json

import pytest

from lokg.data.splits import (
    normalise_text,
    question_groups,
    split_questions,
    template_seen_share,
)
from lokg.errors import InputError
from lokg.typing import Question


def make(n_paths=200, paraphrases=3):
    qs = []
    for p in range(n_paths):
        path = ((f"e{p}", "r", f"a{p}"),)
        for k in range(paraphrases):
            qs.append(
                Question(f"q{p}-{k}", f"question {k} about e{p}", (f"a{p}",), (f"e{p}",), path)
            )
    return qs


def ids(split):
    return {s: [q.id for q in qs] for s, qs in split.items()}


def test_same_seed_same_split_regardless_of_input_order():
    qs = make()
    a = split_questions(qs, seed=3)
    b = split_questions(list(reversed(qs)), seed=3)
    assert {s: sorted(v) for s, v in ids(a).items()} == {s: sorted(v) for s, v in ids(b).items()}


def test_split_follows_the_documented_sha256_rule():
    # groups ranked by sha256(f"{seed}:{smallest key}"); the smallest key of a one-line group
    # is its topic-and-chain key ("chain:..." < "text:..."); 20 groups -> 16 / 2 / 2
    qs = make(n_paths=20, paraphrases=1)
    rank = sorted(
        qs,
        key=lambda q: hashlib.sha256(
            f"0:chain:{json.dumps([list(q.topic_entities), ['r']])}".encode()
        ).hexdigest(),
    )
    split = split_questions(qs, seed=0)
    assert sorted(q.id for q in split["val"]) == sorted(q.id for q in rank[16:18])
    assert sorted(q.id for q in split["test"]) == sorted(q.id for q in rank[18:])
    # and it is pinned: artifacts and results keyed by these ids must never move
    assert sorted(q.id for q in split["test"]) == ["q17-0", "q5-0"]


def test_ratios_are_respected_and_nothing_is_lost():
    qs = make()
    split = split_questions(qs, (0.8, 0.1, 0.1), seed=0)
    sizes = {s: len(v) for s, v in split.items()}
    assert sum(sizes.values()) == len(qs)
    assert abs(sizes["train"] - 480) <= 3 and abs(sizes["test"] - 60) <= 3


def test_paraphrases_of_one_path_stay_together():
    split = split_questions(make(), seed=1)
    where = {q.id: s for s, qs in split.items() for q in qs}
    for p in range(200):
        assert len({where[f"q{p}-{k}"] for k in range(3)}) == 1


def test_normalised_text_ignores_case_punctuation_and_underscores():
    assert normalise_text("Who is  X_Y 's wife ?") == "who is x y s wife"
    assert normalise_text("WHO is x y's WIFE") == "who is x y s wife"


def test_one_text_with_several_paths_is_one_group():
    # PQL writes one line per answer / intermediate entity: same text and chain, other entities
    a = Question(
        "a", "what is the r2 of e 's r1 ?", ("x",), ("e",), (("e", "r1", "m1"), ("m1", "r2", "x"))
    )
    b = Question(
        "b", "What is the r2 of e's r1?", ("x",), ("e",), (("e", "r1", "m2"), ("m2", "r2", "x"))
    )
    # another wording of the same topic and chain
    c = Question("c", "e 's r1 's r2 ?", ("x",), ("e",), (("e", "r1", "m3"), ("m3", "r2", "x")))
    # same text as d only: joined through it
    d = Question("d", "e 's r1 's r2 ?", ("y",), ("f",), (("f", "r1", "m4"), ("m4", "r2", "y")))
    other = Question("o", "who is f 's r1 ?", ("z",), ("f",), (("f", "r1", "z"),))
    groups = question_groups([a, b, c, d, other])
    assert sorted(map(sorted, groups.values())) == [[0, 1, 2, 3], [4]]


def test_template_split_holds_out_relation_chains():
    qs = [
        Question(
            f"q{i}", f"question {i}", (f"a{i}",), (f"e{i}",), ((f"e{i}", f"r{i % 25}", f"a{i}"),)
        )
        for i in range(500)
    ]
    split = split_questions(qs, seed=0, group_by="template")
    assert template_seen_share(split["train"], split["test"]) == 0.0
    assert template_seen_share(split["train"], split["val"]) == 0.0
    by_question = split_questions(qs, seed=0)
    assert template_seen_share(by_question["train"], by_question["test"]) == 1.0


def test_topic_split_keeps_a_topic_entity_set_in_one_split():
    # CWQ-style: several questions built from one seed share their topic entities, no path
    qs = [Question(f"q{i}", f"question {i}", (f"a{i}",), (f"e{i % 60}",)) for i in range(600)]
    split = split_questions(qs, seed=0, group_by="topic")
    where = {}
    for name, part in split.items():
        for q in part:
            where.setdefault(q.topic_entities, set()).add(name)
    assert all(len(names) == 1 for names in where.values())
    assert min(len(part) for part in split.values()) > 0
    by_question = split_questions(qs, seed=0)  # texts differ: topics spread over splits
    assert any(
        len({n for n, part in by_question.items() for q in part if q.topic_entities == t}) > 1
        for t in where
    )


def test_template_seen_share_by_hand():
    def q(i, chain):
        return Question(f"q{i}", f"t{i}", ("a",), ("e",), tuple(("e", r, "a") for r in chain))

    train = [q(0, ["r1", "r2"]), q(1, ["r3"])]
    test = [q(2, ["r1", "r2"]), q(3, ["r2", "r1"]), q(4, ["r3"]), q(5, ["r4"])]
    assert template_seen_share(train, test) == 0.5
    assert template_seen_share(train, [Question("n", "no path", ("a",), ("e",))]) is None


def test_path_is_a_deprecated_alias_of_question(caplog):
    with caplog.at_level("WARNING"):
        assert ids(split_questions(make(), seed=1, group_by="path")) == ids(
            split_questions(make(), seed=1)
        )


def test_different_seed_different_split():
    assert ids(split_questions(make(), seed=0)) != ids(split_questions(make(), seed=1))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ratios": (0.5, 0.5)}, "data.split_ratios=[0.5, 0.5]; expected three non-negative"),
        ({"ratios": (0.9, 0.2, -0.1)}, "data.split_ratios=[0.9, 0.2, -0.1]; expected three"),
        ({"ratios": (float("nan"), 0.5, 0.5)}, "data.split_ratios=[nan, 0.5, 0.5]; expected"),
        ({"ratios": ("a", 0.5, 0.5)}, "data.split_ratios=['a', 0.5, 0.5]; expected"),
        (
            {"group_by": "anchor"},
            "data.split_group_by='anchor'; expected one of ('question', 'template', 'topic')",
        ),
    ],
)
def test_bad_split_settings(kwargs, message):
    with pytest.raises(InputError) as err:
        split_questions(make(20, 1), **kwargs)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(
    ("n_paths", "paraphrases", "ratios", "sizes"),
    [
        (3, 1, (0.8, 0.1, 0.1), "3 questions in 3 groups (questions sharing a text or a topic"),
        (1, 1, (0.8, 0.1, 0.1), "1 questions in 1 groups"),
        (2, 5, (0.8, 0.1, 0.1), "10 questions in 2 groups"),  # enough questions, too few paths
    ],
)
def test_a_split_that_comes_out_empty_is_an_error_naming_the_sizes(
    n_paths, paraphrases, ratios, sizes
):
    with pytest.raises(InputError) as err:
        split_questions(make(n_paths, paraphrases), ratios, source="questions.jsonl")
    msg = str(err.value)
    assert msg.startswith(f"questions.jsonl: {sizes}") and "\n" not in msg
    assert "with ratios 0.8/0.1/0.1 (seed 0, group_by=question); 10 or more questions" in msg


def test_a_zero_ratio_may_leave_its_split_empty():
    split = split_questions(make(3, 1), (0.5, 0.5, 0.0))
    assert [len(split[s]) for s in ("train", "val", "test")] == [2, 1, 0]


@pytest.mark.parametrize("ratios", [(0.8, 0.1, 0.1), (0.6, 0.3, 0.1), (0.9, 0.05, 0.05)])
def test_the_advertised_size_is_enough(ratios):
    need = round(1 / min(ratios))
    for n in range(need, need + 25):
        split = split_questions(make(n, 1), ratios, seed=n)
        assert all(split.values())
