"""The answer prompt (one template file) and the one-answer-per-line parser."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lokg.llm import answer_messages, parse_answers, render_answer_prompt
from lokg.llm.prompt import answer_template


def test_prompt_holds_the_evidence_block_verbatim_then_the_question():
    evidence = "(frederica, spouse, ernest_augustus)\n  (ernest_augustus, nationality, uk)"
    prompt = render_answer_prompt("  Which nationality is Frederica's spouse? ", evidence)
    assert "Evidence:\n" + evidence + "\n\nQuestion:" in prompt  # byte for byte
    assert "Question: Which nationality is Frederica's spouse?" in prompt
    assert prompt.index(evidence) < prompt.index("Question:")
    assert "one answer per line" in prompt and "most likely answer first" in prompt


def test_prompt_with_no_evidence_says_so():
    assert "(no evidence retrieved)" in render_answer_prompt("who?", "")


def test_evidence_must_be_one_block():
    with pytest.raises(ValueError, match="evidence must be the block as one string, got list"):
        render_answer_prompt("who?", ["(a, r, b)"])


def test_template_dollar_in_evidence_is_kept_verbatim():
    assert "(film, budget, $5 million)" in render_answer_prompt(
        "budget?", "(film, budget, $5 million)"
    )


def test_empty_question_is_rejected():
    with pytest.raises(ValueError, match="question text is empty"):
        render_answer_prompt("  ", "x")


def test_template_has_exactly_the_two_fields():
    fields = {
        m.group("named") or m.group("braced")
        for m in answer_template().pattern.finditer(answer_template().template)
        if m.group("named") or m.group("braced")
    }
    assert fields == {"evidence", "question"}


def test_messages_are_one_user_turn():
    msgs = answer_messages("who?", "(a, r, b)")
    assert [m["role"] for m in msgs] == ["user"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paris\nLyon", ["Paris", "Lyon"]),
        ("1. Paris\n2) Lyon\n", ["Paris", "Lyon"]),
        ("- united_kingdom\n* france", ["united_kingdom", "france"]),
        ("Answer: Paris.", ["Paris"]),
        ("The answer is: London", ["London"]),
        ("Answers are: x", ["x"]),
        ('Answers:\n**Paris**\n\n  \n"Lyon"', ["Paris", "Lyon"]),
        ("Paris\nparis\nPARIS ", ["Paris"]),
        ("", []),
        ("3.14", ["3.14"]),
        ("-5 degrees", ["-5 degrees"]),
    ],
)
def test_parse_one_answer_per_line_most_likely_first(text, expected):
    assert parse_answers(text) == expected


def test_parse_max_answers_keeps_the_first():
    assert parse_answers("a1\na2\na3", max_answers=2) == ["a1", "a2"]


@given(st.lists(st.text(alphabet="abcdefgh _", min_size=1, max_size=12), max_size=6))
def test_parse_property_answers_are_nonempty_single_lines_in_input_order(lines):
    answers = parse_answers("\n".join(lines))
    assert all(a and "\n" not in a for a in answers)
    keys = [" ".join(a.casefold().split()) for a in answers]
    assert len(keys) == len(set(keys))
    positions = [next(i for i, ln in enumerate(lines) if ln.strip() == a) for a in answers]
    assert positions == sorted(positions)


def test_prompt_without_evidence_leaves_the_slot_empty():
    from lokg.llm.prompt import (
        answer_prompt_overhead,
        answer_prompt_tokens,
        render_answer_prompt_without_evidence,
    )
    from lokg.tokens import count_tokens

    bare = render_answer_prompt_without_evidence(" who? ")
    assert "Evidence:\n\n\nQuestion: who?" in bare and "(no evidence retrieved)" not in bare
    assert answer_prompt_overhead("who?") == count_tokens(bare)
    assert answer_prompt_tokens("who?", "(a, r, b)") == count_tokens(
        render_answer_prompt("who?", "(a, r, b)")
    )
