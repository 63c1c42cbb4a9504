"""The LOKG pipeline as a plain Python API (no Lightning): retrieve -> encode -> answer.

    lokg = LOKG(retriever, encoder, reader, budget=2048)
    out = lokg.answer(question)            # one reader call
    out.answers, out.prompt, out.context.text, out.retrieval, out.evidence_tokens

``retriever`` is any :class:`lokg.retrieval.Retriever` (TAIMR, a baseline, a per-question
wrapper); the pipeline only calls ``retrieve(question)`` and its cache methods. ``LOKG``
returns a :class:`PipelineOutput` (what happened); ``lokg.eval`` turns it into its record.
``LOKG.from_config`` builds it from a composed Hydra config and the offline artifacts
(``train.py model=transe`` -> SCOS, ``train.py model=gat`` -> attention) through the
composition root, :mod:`lokg.assemble`. Importing this module or constructing ``LOKG`` loads
no Lightning and nothing of ``lokg.eval``.

The budget B is a :class:`~lokg.tokens.Budget`, validated where it enters: ``LOKG(budget=)``
and the per-call ``budget=`` of :meth:`LOKG.answer` / :meth:`LOKG.encode` take a plain ``int``
from a library user (one-line error), a ``Budget`` read from the config passes unchanged, and
the steps below take it as given.

The budget B is checked on the exact evidence string placed in the prompt for every encoder
that promises it (ITTC, truncate); a violation fails that question (:class:`BudgetExceeded`,
a :class:`~lokg.errors.QuestionFailed` the evaluation loop records) and the run goes on.
``budget_scope`` says what B caps: ``evidence`` (the paper's: the evidence block) or
``prompt`` (the whole first prompt: template, question and evidence, for an API user who pays
for all of it). A question whose topic entities are all unknown to the graph, or whose
evidence comes out empty, is marked ``no_evidence`` and its LLM call is skipped unless
``answer_without_evidence``.

Methods other than LOKG (``baseline=`` in evaluate.yaml: the baselines of lokg/baselines) plug
into the same steps: a retriever whose builder declares the chat client (ToG, GraphRAG;
:mod:`lokg.assemble`) is given the reader's and reports the calls it made in
``RetrievalResult.accounting``, which the pipeline adds to the reader's, so calls/q and tok/q
count every call; a retrieval whose evidence is text (``RetrievalResult.passages``:
GraphRAG's community reports) is placed under B by
:func:`lokg.ittc.passages.encode_passages` instead of the encoder. Either way B is
checked on the exact block sent.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from lokg.errors import QuestionFailed
from lokg.ittc.encoder import EncodedContext, Encoder
from lokg.ittc.passages import encode_passages
from lokg.llm.accounting import add_accounting
from lokg.retrieval import RetrievalResult, Retriever
from lokg.tokens import Budget, check_budget_scope
from lokg.typing import Question

__all__ = [
    "LOKG",
    "NUM_BOOST_CANDIDATES",
    "BudgetExceeded",
    "PipelineOutput",
]

#: candidate answers (TAIMR's coarse filter) whose triples get alpha = lambda_boost, Eq. (10)
NUM_BOOST_CANDIDATES = 5
#: re-encodings allowed when the whole prompt counts more than its parts (``prompt`` scope)
_PROMPT_FIT_TRIES = 4


class BudgetExceeded(QuestionFailed):
    """The evidence (or, with ``budget_scope=prompt``, the prompt) of one question is over B.

    Raised instead of sending it; the evaluation loop records the question as failed with
    ``reason`` and goes on (no call was made: ``attempts`` is 0). Not retried by a rerun: the
    same configuration builds the same evidence.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason, attempts=0, retryable=False)


@dataclass(frozen=True)
class PipelineOutput:
    """One answered question: what was retrieved, what was sent, what came back.

    Attributes:
        question: the question answered.
        answers: the reader's answers, most likely first.
        output: the reader's raw output text.
        reader: the reader's label (an LLM model id, or the extractive label).
        prompt: the exact chat messages sent (empty for the extractive reader).
        context: the encoded evidence; ``context.text`` is placed in the prompt verbatim.
        retrieval: the retriever's result.
        budget: the token budget B (of the evidence, or of the whole prompt: ``budget_scope``).
        budget_scope: ``"evidence"`` or ``"prompt"`` (:data:`lokg.tokens.BUDGET_SCOPES`).
        evidence_budget: the budget the evidence was encoded for: B, or with
            ``budget_scope="prompt"`` B minus the prompt's tokens without evidence.
        no_evidence: no topic entity was found in the graph or the evidence is empty; the LLM
            call was skipped unless ``answer_without_evidence`` (then ``prompt`` is empty).
        accounting: the reader's call ledger (calls, prompt/completion tokens, ...).
        retrieval_latency_s, llm_latency_s: wall times in seconds.
    """

    question: Question
    answers: list[str]
    output: str
    reader: str
    prompt: list[dict]
    context: EncodedContext
    retrieval: RetrievalResult
    budget: Budget
    budget_scope: str = "evidence"
    evidence_budget: Budget | None = None
    no_evidence: bool = False
    accounting: dict = field(default_factory=dict)
    retrieval_latency_s: float = 0.0
    llm_latency_s: float = 0.0

    @property
    def evidence_tokens(self) -> int:
        """T_after: tokens of the evidence block exactly as sent."""
        return self.context.num_tokens

    @property
    def empty_context(self) -> bool:
        """True when the reader got no evidence at all."""
        return not self.context.text


class LOKG:
    """Retrieval (TAIMR or a baseline), encoding (ITTC or an ablation) and one reader call.

    Args:
        retriever: a :class:`~lokg.retrieval.Retriever`.
        encoder: an ITTC / naive / truncate encoder.
        reader: an LLM reader or the extractive reader.
        budget: token budget B (the top-level ``budget`` key).
        cache_dir: where the retriever persists its cache (``None``: not persisted).
        provenance: identities of the artifacts answers depend on (enters evaluate's key).
        budget_scope: what B caps, one of :data:`lokg.tokens.BUDGET_SCOPES`: ``"evidence"``
            (the paper's) or ``"prompt"`` (template + question + evidence, counted with the
            encoder's tokenizer; the reader says what its prompt costs). The naive "w/o ITTC"
            encoder is cut to neither (Table 6).
        answer_without_evidence: ask the LLM even when a question has no evidence (default
            False: the call is skipped and the question recorded as ``no_evidence``).
    """

    def __init__(
        self,
        retriever: Retriever,
        encoder: Encoder,
        reader,
        *,
        budget: int | Budget = 2048,
        cache_dir: str | os.PathLike | None = None,
        provenance: dict[str, str | None] | None = None,
        budget_scope: str = "evidence",
        answer_without_evidence: bool = False,
    ):
        if not isinstance(retriever, Retriever):
            raise TypeError(
                f"LOKG: retriever must implement lokg.retrieval.Retriever, got "
                f"{type(retriever).__name__}"
            )
        self.retriever = retriever
        self.encoder = encoder
        self.reader = reader
        self.budget = Budget(budget)  # the API boundary: an int is validated here
        check_budget_scope(budget_scope)
        if budget_scope == "prompt" and not hasattr(reader, "prompt_overhead"):
            raise TypeError(
                f"LOKG: budget_scope='prompt' needs a reader that counts its prompt "
                f"(prompt_overhead, prompt_tokens); {type(reader).__name__} does not"
            )
        self.budget_scope = budget_scope
        self.answer_without_evidence = bool(answer_without_evidence)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        if self.cache_dir is not None:
            retriever.load_cache(self.cache_dir)
        self.provenance = {**(provenance or {}), "retriever_cache": retriever.cache_key}
        #: the artifact directories loaded (``from_config`` fills it): scos, transe, gat, walk
        self.artifact_dirs: dict[str, Path | None] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, cfg, datamodule, reader=None, *, settings=None) -> LOKG:
        """Build from a composed ``evaluate.yaml`` and a prepared DataModule: the composition
        root, :func:`lokg.assemble.assemble` (``reader``: default built from
        ``cfg.llm``; ``settings``: the run's :class:`~lokg.assemble.RunSettings` when the
        caller has read them)."""
        from lokg.assemble import assemble

        parts = assemble(cfg, datamodule, reader, settings=settings)
        pipeline = cls(
            parts.retriever,
            parts.encoder,
            parts.reader,
            budget=parts.settings.budget,
            cache_dir=parts.cache_dir,
            provenance=parts.provenance,
            budget_scope=parts.settings.budget_scope,
            answer_without_evidence=parts.settings.answer_without_evidence,
        )
        pipeline.artifact_dirs = parts.artifact_dirs
        return pipeline

    # ------------------------------------------------------------------ steps
    def retrieve(self, question: Question) -> RetrievalResult:
        """TAIMR (or the configured retriever) for one question."""
        return self.retriever.retrieve(question)

    def encode(
        self, retrieval: RetrievalResult, question: Question, budget: int | Budget | None = None
    ) -> EncodedContext:
        """ITTC (or the configured encoder) over the retrieved candidate triples; a retrieval
        whose evidence is text (``passages``) is placed under the budget as ranked passages.
        ``budget``: B for this call (default the pipeline's; an ``int`` is validated)."""
        b = self.budget if budget is None else Budget(budget)
        if retrieval.passages:
            return encode_passages(self.encoder.tokenizer, retrieval.passages, b)
        return self.encoder.encode(
            retrieval.kg,
            list(retrieval.triple_ids),
            budget=b,
            query_entities=[t.entity for t in retrieval.topics],
            candidate_entities=[a.entity for a in retrieval.answers[:NUM_BOOST_CANDIDATES]],
        )

    def answer(self, question: Question, budget: int | Budget | None = None) -> PipelineOutput:
        """Retrieve, encode under the budget, and make the single reader call.

        The call is skipped (0 calls, no answers) when the question has no evidence: none of
        its topic entities is in the graph, or the evidence came out empty; unless
        ``answer_without_evidence``, or the reader makes no LLM call (the extractive reader
        keeps the retriever's candidates that the evidence names: none for an empty block).

        Raises:
            BudgetExceeded: the evidence sent would exceed B (an encoder that promises B broke
                it), or with ``budget_scope="prompt"`` the prompt would: B is smaller than the
                prompt without evidence, or no evidence budget makes it fit.
        """
        b = self.budget if budget is None else Budget(budget)
        t0 = time.perf_counter()
        retrieval = self.retrieve(question)
        retrieval_latency = time.perf_counter() - t0
        evidence_budget = b
        if self.budget_scope == "prompt":
            overhead = self.reader.prompt_overhead(question.text, self.encoder.tokenizer)
            evidence_budget = self._evidence_room(question, b, overhead)
        context = self._encode_checked(retrieval, question, evidence_budget)
        if self.budget_scope == "prompt" and self.encoder.respects_budget:
            context, evidence_budget = self._fit_prompt(
                retrieval, question, b, context, evidence_budget
            )
        no_evidence = self._no_evidence(retrieval, context)
        t1 = time.perf_counter()
        if self._skips(retrieval, context):  # no evidence: the call is not made
            answers, output, label, messages, accounting = [], "", self.reader.label, [], {}
        else:
            out = self.reader.answer(
                question.text, context.text, [a.label for a in retrieval.answers]
            )
            answers, output, label = list(out.answers), out.output, out.reader
            messages, accounting = list(out.messages), dict(out.accounting)
        if retrieval.accounting:  # the method's own calls (ToG's pruning, GraphRAG's reports)
            accounting = add_accounting(retrieval.accounting, accounting)
        return PipelineOutput(
            question=question,
            answers=answers,
            output=output,
            reader=label,
            prompt=messages,
            context=context,
            retrieval=retrieval,
            budget=b,
            budget_scope=self.budget_scope,
            evidence_budget=evidence_budget,
            no_evidence=no_evidence,
            accounting=accounting,
            retrieval_latency_s=retrieval_latency,
            llm_latency_s=time.perf_counter() - t1 if messages else 0.0,
        )

    @staticmethod
    def _no_evidence(retrieval: RetrievalResult, context: EncodedContext) -> bool:
        """No topic entity of the question is in the graph, or the evidence is empty."""
        return not retrieval.topics or not context.text

    def _skips(self, retrieval: RetrievalResult, context: EncodedContext) -> bool:
        """No evidence, and the LLM call is to be skipped for it."""
        return (
            self._no_evidence(retrieval, context)
            and self.reader.uses_llm
            and not self.answer_without_evidence
        )

    def _encode_checked(
        self, retrieval: RetrievalResult, question: Question, budget: Budget
    ) -> EncodedContext:
        """Encode, and check the promise of B on the exact block the prompt receives."""
        context = self.encode(retrieval, question, budget)
        promised = self.encoder.respects_budget or bool(retrieval.passages)
        if promised and context.num_tokens > budget:
            raise BudgetExceeded(
                f"{question.id}: evidence has {context.num_tokens} tokens > budget {budget} "
                f"(encoder {self.encoder.name} broke its budget; nothing was sent)"
            )
        return context

    def _evidence_room(self, question: Question, budget: Budget, overhead: int) -> Budget:
        """B minus the prompt without evidence (``budget_scope=prompt``), at least 1."""
        if overhead >= budget:
            raise BudgetExceeded(
                f"{question.id}: budget_scope=prompt: budget {budget} leaves no room for "
                f"evidence; the prompt without evidence already has {overhead} tokens"
            )
        return Budget(budget - overhead)

    def _fit_prompt(
        self,
        retrieval: RetrievalResult,
        question: Question,
        budget: Budget,
        context: EncodedContext,
        evidence_budget: Budget,
    ) -> tuple[EncodedContext, Budget]:
        """Make the whole prompt fit B (``budget_scope=prompt``).

        A prompt's tokens are not the sum of its parts' (BPE merges across the boundaries of
        the evidence block), so the prompt is counted as sent; when it is over, the evidence
        is re-encoded for a budget smaller by the excess.
        """
        tok = self.encoder.tokenizer
        for tries in range(_PROMPT_FIT_TRIES + 1):
            if self._skips(retrieval, context):  # nothing will be sent
                return context, evidence_budget
            total = self.reader.prompt_tokens(question.text, context.text, tok)
            if total <= budget:
                return context, evidence_budget
            room = evidence_budget - (total - budget)
            if tries == _PROMPT_FIT_TRIES or room < 1 or not context.text:
                break
            evidence_budget = Budget(room)
            context = self._encode_checked(retrieval, question, evidence_budget)
        raise BudgetExceeded(
            f"{question.id}: budget_scope=prompt: the prompt has {total} tokens > budget "
            f"{budget} and less evidence does not make it fit"
        )

    def close(self) -> None:
        """Persist the retriever's cache (entries computed this run) and release the reader."""
        if self.cache_dir is not None:
            self.retriever.save_cache(self.cache_dir)
        self.reader.close()
