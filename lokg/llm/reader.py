"""Readers: what turns a question and its evidence into a ranked answer list.

:class:`LLMReader` makes one chat call with the answer prompt and parses one answer
per line. :class:`ExtractiveReader` makes no call: its answers are the retriever's
ranked candidates that the packed evidence names (retriever-only numbers, labelled as such
in every record), so it answers only from what survived the budget, as an LLM must.

Both say what their prompt costs before it is sent (:meth:`~LLMReader.prompt_tokens`,
:meth:`~LLMReader.prompt_overhead`), so that a budget can cap the whole prompt
(``budget_scope=prompt``); the extractive reader sends none, so both are 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lokg.llm.accounting import CallLedger
from lokg.llm.client import ChatClient
from lokg.llm.prompt import (
    answer_messages,
    answer_prompt_overhead,
    answer_prompt_tokens,
    check_template,
    parse_answers,
)
from lokg.normalize import text_contains_answer
from lokg.tokens import Tokenizer

EXTRACTIVE_LABEL = "extractive (retriever-only, no LLM)"


@dataclass(frozen=True)
class ReaderOutput:
    """One question's answers and what they cost.

    Attributes:
        answers: ranked answers, most likely first.
        output: the raw text the answers were parsed from.
        messages: the exact chat messages sent (empty without an LLM).
        reader: label of the reader (``llm:<name>`` or the extractive label).
        accounting: :meth:`CallLedger.as_dict` of the question's calls.
    """

    answers: list[str]
    output: str
    messages: list[dict]
    reader: str
    accounting: dict = field(default_factory=dict)


class LLMReader:
    """Single-call LLM answering over the evidence.

    Args:
        client: the chat client (any OpenAI-compatible endpoint).
        max_answers: keep at most this many parsed answers (None keeps all).
        template: the answer prompt, one of :data:`lokg.llm.prompt.TEMPLATES` (``answer``:
            ours; a baseline's config sets its own, e.g. ``kaping``).

    ``answer`` raises :class:`lokg.llm.LLMCallFailed` when the call fails after its
    retries; the run loop records the question as failed.
    """

    uses_llm = True

    def __init__(
        self, client: ChatClient, max_answers: int | None = None, template: str = "answer"
    ) -> None:
        if max_answers is not None and max_answers < 1:
            raise ValueError(f"LLMReader: 'max_answers' must be >= 1 or null, got {max_answers}")
        self.client = client
        self.max_answers = max_answers
        self.template = check_template(template)

    @property
    def label(self) -> str:
        return self.client.label

    @property
    def max_concurrency(self) -> int:
        """Questions worth answering in parallel: the client's bound on in-flight requests."""
        return self.client.max_concurrency

    def __repr__(self) -> str:
        return (
            f"LLMReader(client={self.client!r}, max_answers={self.max_answers}, "
            f"template={self.template!r})"
        )

    def prompt_tokens(
        self, question: str, evidence: str, tokenizer: Tokenizer | None = None
    ) -> int:
        """Tokens of the prompt :meth:`answer` would send (template, question, evidence),
        counted as ``prompt_tokens_cl100k`` is; ``tokenizer``: default cl100k_base."""
        return answer_prompt_tokens(question, evidence, tokenizer, self.template)

    def prompt_overhead(self, question: str, tokenizer: Tokenizer | None = None) -> int:
        """Tokens of that prompt with the evidence slot empty (template and question)."""
        return answer_prompt_overhead(question, tokenizer, self.template)

    def answer(self, question: str, evidence: str, candidates: Sequence[str] = ()) -> ReaderOutput:
        """Ask the LLM with the evidence block ``evidence`` (placed in the prompt verbatim);
        ``candidates`` are ignored (the LLM reads the evidence)."""
        messages = answer_messages(question, evidence, self.template)
        ledger = CallLedger()
        response = self.client.chat(messages, ledger=ledger)
        answers = parse_answers(response.text, self.max_answers)
        return ReaderOutput(answers, response.text, messages, self.label, ledger.as_dict())

    def close(self) -> None:
        self.client.close()


class ExtractiveReader:
    """No LLM: the answers are the retriever's ranked candidates present in the evidence.

    A candidate is kept when the evidence block names it as a run of whole normalised words
    (:func:`lokg.normalize.text_contains_answer`, the rule ``coverage`` uses), in the
    retriever's order; an empty block answers nothing.  So its Hits@1 never exceeds the
    coverage of the same run: it reads the context it was given, not the retriever's list.

    Args:
        max_answers: keep at most this many candidates (None keeps all).
        template: accepted so a method config may set ``llm.template`` for any reader; checked
            and unused (no prompt is sent).
    """

    uses_llm = False
    label = EXTRACTIVE_LABEL
    max_concurrency = 1

    def __init__(self, max_answers: int | None = None, template: str = "answer") -> None:
        if max_answers is not None and max_answers < 1:
            raise ValueError(
                f"ExtractiveReader: 'max_answers' must be >= 1 or null, got {max_answers}"
            )
        self.max_answers = max_answers
        self.template = check_template(template)

    def __repr__(self) -> str:
        return f"ExtractiveReader(max_answers={self.max_answers})"

    def prompt_tokens(
        self, question: str, evidence: str, tokenizer: Tokenizer | None = None
    ) -> int:
        """0: no prompt is sent."""
        return 0

    def prompt_overhead(self, question: str, tokenizer: Tokenizer | None = None) -> int:
        """0: no prompt is sent."""
        return 0

    def answer(self, question: str, evidence: str, candidates: Sequence[str] = ()) -> ReaderOutput:
        """The retriever's ``candidates`` that ``evidence`` names, in the retriever's order."""
        ranked: list[str] = []
        for c in candidates:
            if c not in ranked and text_contains_answer(evidence, c):
                ranked.append(c)
        if self.max_answers is not None:
            ranked = ranked[: self.max_answers]
        return ReaderOutput(ranked, "\n".join(ranked), [], self.label, CallLedger().as_dict())

    def close(self) -> None:
        """Nothing to release."""
