"""The answer prompt (one template file) and the parser of its one-answer-per-line output.

The paper's Appendix A (its template) is not in our copy; ``prompts/answer.txt`` is
written in the same spirit: answer from the evidence, one answer per line, most likely
first. It is a :class:`string.Template` with the fields ``$evidence`` and ``$question``.

:func:`render_answer_prompt_without_evidence` is the same prompt with the evidence slot left
empty: what a budget over the whole prompt (``budget_scope=prompt``) pays before any evidence.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from string import Template

from lokg.tokens import Tokenizer, count_tokens

TEMPLATE_FILE = "answer.txt"
#: what the prompt says in place of an empty evidence block
NO_EVIDENCE = "(no evidence retrieved)"


@lru_cache(maxsize=1)
def answer_template() -> Template:
    """The template from ``lokg/llm/prompts/answer.txt``."""
    text = resources.files("lokg.llm").joinpath("prompts", TEMPLATE_FILE).read_text("utf-8")
    return Template(text)


def render_answer_prompt(question: str, evidence: str) -> str:
    """Fill the template with the evidence block exactly as given, then the question.

    ``evidence`` is the encoder's block (one fact per line), inserted verbatim so that the
    tokens counted for the budget and TCR are the tokens sent; an empty block reads
    ``(no evidence retrieved)``.

    Raises:
        ValueError: the question is empty, or ``evidence`` is not a string.
    """
    if not isinstance(evidence, str):
        raise ValueError(
            f"render_answer_prompt: evidence must be the block as one string, "
            f"got {type(evidence).__name__}"
        )
    return _fill(question, evidence if evidence.strip() else NO_EVIDENCE)


def render_answer_prompt_without_evidence(question: str) -> str:
    """The prompt with nothing in the evidence slot (not even ``(no evidence retrieved)``).

    Its tokens are the prompt's overhead: template and question, which a budget over the
    whole prompt (``budget_scope=prompt``) pays before any evidence.
    """
    return _fill(question, "")


def _fill(question: str, block: str) -> str:
    if not question or not question.strip():
        raise ValueError("render_answer_prompt: the question text is empty")
    return answer_template().substitute(evidence=block, question=question.strip()).rstrip()


def answer_messages(question: str, evidence: str) -> list[dict]:
    """The chat messages of one answering call: a single user turn with the prompt."""
    return [{"role": "user", "content": render_answer_prompt(question, evidence)}]


def answer_prompt_tokens(question: str, evidence: str, tokenizer: Tokenizer | None = None) -> int:
    """Tokens of the messages :func:`answer_messages` makes (their contents, as the client
    counts ``prompt_tokens_cl100k``; the chat format's few tokens per message are not
    counted). ``tokenizer``: default cl100k_base."""
    return sum(count_tokens(m["content"], tokenizer) for m in answer_messages(question, evidence))


def answer_prompt_overhead(question: str, tokenizer: Tokenizer | None = None) -> int:
    """Tokens of the prompt with the evidence slot empty: template and question."""
    return count_tokens(render_answer_prompt_without_evidence(question), tokenizer)


# Leading list markers ("1.", "2)", "-", "*", "•") and an "Answer(s):" / "The answer is:" label.
_MARKER = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,3}[.)]|\(?[a-z][.)])(?=\s)\s*", re.IGNORECASE)
_LABEL = re.compile(
    r"^\s*(?:the\s+)?(?:final\s+)?answers?(?:\s+(?:is|are))?\s*[:：]\s*", re.IGNORECASE
)


def parse_answers(text: str, max_answers: int | None = None) -> list[str]:
    """Answers from a one-answer-per-line output, most likely first.

    Each non-empty line is one answer after removing a list marker (``1.``, ``-``,
    ``*``), an ``Answer:`` or ``The answer is:`` label, surrounding quotes and markdown
    emphasis, and a trailing period. Exact repeats (ignoring case and spacing) are kept once, first
    occurrence first; finer matching is the metrics' job (:mod:`lokg.eval.normalize`,
    which this layer does not import). ``max_answers`` truncates the list.
    """
    answers: list[str] = []
    seen: set[str] = set()
    for raw in text.splitlines():
        line = _LABEL.sub("", raw.strip())
        line = _MARKER.sub("", line)
        line = _LABEL.sub("", line)
        line = line.strip().strip("*`\"'“”‘’").strip()
        line = line.removesuffix(".").strip()
        if not line:
            continue
        key = " ".join(line.casefold().split())
        if key in seen:
            continue
        seen.add(key)
        answers.append(line)
        if max_answers is not None and len(answers) >= max_answers:
            break
    return answers
