"""The answer prompt (one template file) and the parser of its one-answer-per-line output.

The paper's Appendix A (its template) is not in our copy; ``prompts/answer.txt`` is
written in the same spirit: answer from the evidence, one answer per line, most likely
first. It is a :class:`string.Template` with the fields ``$evidence`` and ``$question``.

Baselines answer with their own prompt (:data:`TEMPLATES`, chosen by the reader's
``template`` key): ``kaping`` (KAPING's "Below are the facts that might be relevant to
answer the question" over its ``(s, r, o)`` lines), ``tog`` (ToG's answer-from-explored-
triplets prompt), ``graphrag`` (local search over community reports). Each keeps the same two
fields and ends by asking for one answer per line, so one parser reads every method.

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
#: answer templates by name (files under ``lokg/llm/prompts``): ours and the baselines' own
TEMPLATES = {
    "answer": TEMPLATE_FILE,
    "kaping": "kaping.txt",
    "tog": "tog_answer.txt",
    "graphrag": "graphrag_answer.txt",
}
#: what the prompt says in place of an empty evidence block
NO_EVIDENCE = "(no evidence retrieved)"


def check_template(name: object) -> str:
    """``name`` as one of :data:`TEMPLATES`, or a one-line error listing them."""
    if name not in TEMPLATES:
        raise ValueError(f"llm.template={name!r}; expected one of {sorted(TEMPLATES)}")
    return name


@lru_cache(maxsize=len(TEMPLATES))
def answer_template(name: str = "answer") -> Template:
    """The template ``name`` from ``lokg/llm/prompts`` (default ``answer.txt``)."""
    file = TEMPLATES[check_template(name)]
    return Template(resources.files("lokg.llm").joinpath("prompts", file).read_text("utf-8"))


@lru_cache(maxsize=16)
def prompt_template(file: str) -> Template:
    """Any prompt file under ``lokg/llm/prompts`` (a baseline's intermediate prompts: ToG's
    relation pruning, entity scoring and sufficiency check; GraphRAG's community report)."""
    path = resources.files("lokg.llm").joinpath("prompts", file)
    if not path.is_file():
        raise ValueError(f"no prompt file {file!r} under lokg/llm/prompts")
    return Template(path.read_text("utf-8"))


def render_answer_prompt(question: str, evidence: str, template: str = "answer") -> str:
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
    return _fill(question, evidence if evidence.strip() else NO_EVIDENCE, template)


def render_answer_prompt_without_evidence(question: str, template: str = "answer") -> str:
    """The prompt with nothing in the evidence slot (not even ``(no evidence retrieved)``).

    Its tokens are the prompt's overhead: template and question, which a budget over the
    whole prompt (``budget_scope=prompt``) pays before any evidence.
    """
    return _fill(question, "", template)


def _fill(question: str, block: str, template: str = "answer") -> str:
    if not question or not question.strip():
        raise ValueError("render_answer_prompt: the question text is empty")
    filled = answer_template(template).substitute(evidence=block, question=question.strip())
    return filled.rstrip()


def answer_messages(question: str, evidence: str, template: str = "answer") -> list[dict]:
    """The chat messages of one answering call: a single user turn with the prompt."""
    return [{"role": "user", "content": render_answer_prompt(question, evidence, template)}]


def answer_prompt_tokens(
    question: str, evidence: str, tokenizer: Tokenizer | None = None, template: str = "answer"
) -> int:
    """Tokens of the messages :func:`answer_messages` makes (their contents, as the client
    counts ``prompt_tokens_cl100k``; the chat format's few tokens per message are not
    counted). ``tokenizer``: default cl100k_base."""
    messages = answer_messages(question, evidence, template)
    return sum(count_tokens(m["content"], tokenizer) for m in messages)


def answer_prompt_overhead(
    question: str, tokenizer: Tokenizer | None = None, template: str = "answer"
) -> int:
    """Tokens of the prompt with the evidence slot empty: template and question."""
    return count_tokens(render_answer_prompt_without_evidence(question, template), tokenizer)


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
    occurrence first; finer matching is the metrics' job (:mod:`lokg.normalize`,
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
