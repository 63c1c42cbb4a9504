"""The paper's evaluation metrics (§3.2), per question and aggregated per run.

Per question, :func:`score_question` compares the predicted answer list (most likely
first) with the gold answers through the one normalisation of
:mod:`lokg.normalize`. Per run, :class:`KGQAMetrics` (a torchmetrics ``Metric``
whose states are sums, so it also reduces across processes) aggregates
:class:`QuestionScore` records into:

============================  ================================================================
key                           definition
============================  ================================================================
``hits@1``                    §3.2(a): fraction of questions whose *first* predicted answer is a
                              gold answer.
``hit``                       fraction of questions with *any* gold answer in the output text
                              (reported beside H@1, never called Hits@1).
``precision``/``recall``      per-question set precision |Â∩A|/|Â| and recall |Â∩A|/|A|,
                              averaged.
``f1``                        §3.2(b): per-question 2|Â∩A|/(|Â|+|A|), averaged.
``tcr``                       §3.2(c): per-question T_after/T_naive, averaged over the questions
                              whose candidate subgraph is non-empty (T_naive > 0).
``tok/q``                     §3.2(f): mean billed input+output tokens over all LLM calls.
``tok_cl100k/q``              the same with cl100k_base counts (our tokenizer, alongside).
``prompt_tok/q``              mean billed prompt tokens per question (all calls).
``completion_tok/q``          mean billed completion tokens per question (all calls).
``evidence_tok/q``            mean T_after: tokens of the evidence block as injected, for every
                              reader (the extractive reader makes no call but its contexts are
                              built and counted all the same).
``empty_contexts``            number of questions whose evidence block came out empty.
``p@1k``                      §3.2(d): F1 × 1000 / T_total with the run means, i.e.
                              ``f1 * 1000 / tok/q`` (this reproduces Table 5, e.g. PQ-2hop
                              0.710 × 1000 / 101 = 7.030); NaN when tok/q = 0.
``h@1k``                      §3.2(e): ``hits@1 * 1000 / tok/q``; NaN when tok/q = 0.
``calls/q``                   §3.2(g): mean LLM calls per question (counted by the client).
``coverage``                  fraction of questions (where measured) whose injected context
                              contains a gold answer.
``answer_recall``             answer recall at the run's budget B (issue 28, beyond the paper):
                              per question the share of *all* its gold answers that the injected
                              context contains, averaged where measured (= coverage when every
                              question has one answer; the measure for many-answer questions).
``coverage_all_constraints``  issue 28 §2, beyond the paper: fraction of questions (where
                              measured) whose packed triples connect one gold answer to *every*
                              topic entity in the KG within L hops
                              (:func:`covers_all_constraints`); a conjunction or a constraint
                              whose second arm is missing from the context is not covered.
``retrieval_latency_s``       mean retrieval wall time per question, seconds.
``failed``                    fraction of questions recorded as failed (scored as wrong).
``truncated``                 fraction of questions with an LLM reply cut at the generation limit
                              (``finish_reason: "length"``; scored as they are).
``n``                         number of questions aggregated.
``gold_n``                    number of them with gold answers: the answer metrics
                              (:data:`ANSWER_METRICS`) are means over these; ``None``, rendered
                              :data:`NO_GOLD`, when there is none (a questions file for answering
                              only), while the evidence, token and call metrics still count all.
============================  ================================================================
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torchmetrics import Metric

from lokg.normalize import normalize_answer, normalize_set, text_contains_answer
from lokg.typing import EntityId

METRIC_KEYS = (
    "hits@1",
    "hit",
    "f1",
    "precision",
    "recall",
    "tcr",
    "p@1k",
    "h@1k",
    "tok/q",
    "tok_cl100k/q",
    "prompt_tok/q",
    "completion_tok/q",
    "evidence_tok/q",
    "empty_contexts",
    "calls/q",
    "coverage",
    "answer_recall",
    "coverage_all_constraints",
    "retrieval_latency_s",
    "failed",
    "truncated",
    "n",
    "gold_n",
)
#: the metrics that compare with gold answers: ``None`` when no question has any
ANSWER_METRICS = (
    "hits@1",
    "hit",
    "f1",
    "precision",
    "recall",
    "p@1k",
    "h@1k",
    "coverage",
    "answer_recall",
    "coverage_all_constraints",
)
#: how an answer metric without gold answers is rendered (console, summary.json's notes)
NO_GOLD = "n/a (no gold answers)"


@dataclass(frozen=True)
class QuestionScore:
    """Everything one question contributes to the run metrics.

    The answer scores (``hits1``, ``hit``, ``precision``, ``recall``, ``f1``) are ``None`` for
    a question without gold answers (:attr:`has_gold` false), as are ``covered``,
    ``answer_recall`` and ``covered_all_constraints``.

    Attributes:
        hits1: 1.0 when the first prediction is a gold answer, else 0.0.
        hit: 1.0 when any gold answer appears in the output text, else 0.0.
        precision, recall, f1: set scores of the normalised prediction and gold sets.
        tokens: billed input + output tokens over all LLM calls (from ``usage``).
        tokens_cl100k: the same counted with cl100k_base.
        prompt_tokens, completion_tokens: the billed ``tokens`` split by side.
        calls: LLM calls made for the question.
        t_after: tokens injected into the context (TCR numerator); None if not measured.
        t_naive: tokens of the naive full serialisation (TCR denominator); None if not
            measured.
        covered: whether the injected context contains a gold answer; None if not measured.
        answer_recall: the share of the gold answers the injected context contains; None if
            not measured.
        covered_all_constraints: whether the packed triples connect a gold answer to every
            known topic entity (:func:`covers_all_constraints`); None if not measured.
        retrieval_latency_s: retrieval wall time in seconds; None if not measured.
        failed: the question was recorded as failed (no answer after all retries).
        truncated: an LLM reply of the question was cut at the generation limit.
    """

    hits1: float | None
    hit: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    tokens: int = 0
    tokens_cl100k: int = 0
    calls: int = 0
    t_after: int | None = None
    t_naive: int | None = None
    covered: bool | None = None
    retrieval_latency_s: float | None = None
    failed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    empty_context: bool | None = None
    truncated: bool = False
    answer_recall: float | None = None
    covered_all_constraints: bool | None = None

    @property
    def has_gold(self) -> bool:
        """Whether the question had gold answers to score against."""
        return self.hits1 is not None


def set_scores(predictions: Iterable[str], gold: Iterable[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of two answer sets after normalisation, §3.2(b).

    F1 = 2|Â∩A| / (|Â|+|A|); an empty prediction set scores 0 on all three.
    """
    pred = set(normalize_set(predictions))
    ref = set(normalize_set(gold))
    if not ref:
        raise ValueError("set_scores: the gold answer set is empty after normalisation")
    inter = len(pred & ref)
    if not pred:
        return 0.0, 0.0, 0.0
    return inter / len(pred), inter / len(ref), 2.0 * inter / (len(pred) + len(ref))


def score_question(
    predictions: Sequence[str],
    gold: Sequence[str],
    *,
    output_text: str | None = None,
    context: str | None = None,
    tokens: int = 0,
    tokens_cl100k: int = 0,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    calls: int = 0,
    t_after: int | None = None,
    t_naive: int | None = None,
    retrieval_latency_s: float | None = None,
    failed: bool = False,
    truncated: bool = False,
    covered_all_constraints: bool | None = None,
) -> QuestionScore:
    """Score one question.

    Args:
        predictions: parsed answers, most likely first.
        gold: gold answer labels; empty for a question without gold answers (answering
            only: every answer score is ``None``, the accounting is kept). A non-empty list
            with no non-empty label is an error.
        output_text: the raw model output, searched for ``hit``; defaults to the
            predictions joined by newlines.
        context: the evidence text injected into the prompt, searched for ``coverage``;
            None leaves coverage (and emptiness) unmeasured for this question.
        tokens, tokens_cl100k, prompt_tokens, completion_tokens, calls, t_after, t_naive,
            retrieval_latency_s, failed, truncated, covered_all_constraints: copied into the
            score (see :class:`QuestionScore`; the last is judged on the packed triples when
            the record is built, :func:`covers_all_constraints`).
    """
    if not gold:
        return QuestionScore(
            None, None, None, None, None, tokens=int(tokens), tokens_cl100k=int(tokens_cl100k),
            prompt_tokens=int(prompt_tokens), completion_tokens=int(completion_tokens),
            calls=int(calls), t_after=t_after, t_naive=t_naive,
            empty_context=None if context is None else not context,
            retrieval_latency_s=retrieval_latency_s, failed=failed, truncated=truncated,
        )  # fmt: skip
    gold_norm = normalize_set(gold)
    if not gold_norm:
        raise ValueError(f"score_question: no non-empty gold answer in {list(gold)!r}")
    first = normalize_answer(predictions[0]) if predictions else ""
    hits1 = float(bool(first) and first in gold_norm)
    text = "\n".join(predictions) if output_text is None else output_text
    hit = float(any(text_contains_answer(text, g) for g in gold))
    precision, recall, f1 = set_scores(predictions, gold)
    found = None if context is None else [text_contains_answer(context, g) for g in gold]
    covered = None if found is None else any(found)
    # recall over the distinct normalised gold answers (a label listed twice counts once)
    distinct = {normalize_answer(g): f for g, f in zip(gold, found or [], strict=False)}
    distinct.pop("", None)
    recall_in_context = None if found is None else sum(distinct.values()) / len(distinct)
    return QuestionScore(
        hits1=hits1,
        hit=hit,
        precision=precision,
        recall=recall,
        f1=f1,
        tokens=int(tokens),
        tokens_cl100k=int(tokens_cl100k),
        prompt_tokens=int(prompt_tokens),
        completion_tokens=int(completion_tokens),
        calls=int(calls),
        t_after=t_after,
        t_naive=t_naive,
        covered=covered,
        answer_recall=recall_in_context,
        covered_all_constraints=covered_all_constraints,
        empty_context=None if context is None else not context,
        retrieval_latency_s=retrieval_latency_s,
        failed=failed,
        truncated=truncated,
    )


def covers_all_constraints(
    triples: np.ndarray,
    topics: Iterable[EntityId],
    answers: Iterable[EntityId],
    max_hops: int,
) -> bool:
    """Whether the packed context carries a gold answer's support from every topic entity
    (``coverage_all_constraints``; issue 28 §2, beyond the paper).

    True when some answer ``a`` of ``answers`` is an entity of ``triples`` and, for every
    entity ``k`` of ``topics``, the triples read as undirected edges (a fact is support
    whichever way it is stated) hold a path from ``k`` to ``a`` of at most ``max_hops`` edges
    (``k = a`` is a path of 0 edges). So a conjunction {x : A -r1-> x, B -r2-> x} needs both
    arms in the context, a chain with a constraint needs the chain and the filter, and a
    one-topic question needs a path from its topic, not only the answer's name. With no
    topic the condition reduces to an answer among the triples' entities; no triple: False.

    Args:
        triples: ``[M, 3]`` (s, r, o) entity ids of the triples packed under the budget.
        topics: the question's topic entities found in the graph (unknown ones left out).
        answers: the entities standing for gold answers.
        max_hops: L, the longest path counted (>= 1).
    """
    if max_hops < 1:
        raise ValueError(f"covers_all_constraints: max_hops must be >= 1, got {max_hops}")
    neighbours = _undirected(triples)
    left = {int(a) for a in answers} & neighbours.keys()
    for k in topics:
        left &= _within(neighbours, int(k), max_hops)
    return bool(left)


def _undirected(triples: np.ndarray) -> dict[int, set[int]]:
    """Entity -> the entities one packed triple away, in either direction."""
    out: dict[int, set[int]] = defaultdict(set)
    for s, _, o in np.asarray(triples, dtype=np.int64).reshape(-1, 3).tolist():
        out[s].add(o)
        out[o].add(s)
    return dict(out)


def _within(neighbours: dict[int, set[int]], start: int, max_hops: int) -> set[int]:
    """The entities at most ``max_hops`` edges from ``start`` (``start`` included)."""
    seen, frontier = {start}, {start}
    for _ in range(max_hops):
        frontier = {v for u in frontier for v in neighbours.get(u, ())} - seen
        seen |= frontier
    return seen


_SUM_STATES = (
    "n",
    "gold_n",
    "hits1",
    "hit",
    "precision",
    "recall",
    "f1",
    "tokens",
    "tokens_cl100k",
    "prompt_tokens",
    "completion_tokens",
    "calls",
    "evidence_sum",
    "evidence_n",
    "empty_contexts",
    "tcr_sum",
    "tcr_n",
    "covered",
    "coverage_n",
    "answer_recall_sum",
    "answer_recall_n",
    "covered_all",
    "covered_all_n",
    "latency_sum",
    "latency_n",
    "failed",
    "truncated",
)


class KGQAMetrics(Metric):
    """Run-level aggregate of :class:`QuestionScore` records (keys in the module docstring).

    Every state is a float64 sum reduced with ``sum``, so the metric is exact under
    distributed reduction. ``update`` takes one score or a sequence of scores;
    ``compute`` returns a ``dict[str, float | None]`` with the keys of :data:`METRIC_KEYS`
    (NaN: undefined, e.g. TCR with no candidate; ``None``: an answer metric when no question
    has gold answers).
    """

    full_state_update = False
    higher_is_better = None

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        for name in _SUM_STATES:
            self.add_state(
                name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum"
            )

    def update(self, scores: QuestionScore | Sequence[QuestionScore]) -> None:
        if isinstance(scores, QuestionScore):
            scores = [scores]
        for s in scores:
            self.n += 1
            if s.has_gold:
                self.gold_n += 1
                self.hits1 += s.hits1
                self.hit += s.hit
                self.precision += s.precision
                self.recall += s.recall
                self.f1 += s.f1
            self.tokens += s.tokens
            self.tokens_cl100k += s.tokens_cl100k
            self.prompt_tokens += s.prompt_tokens
            self.completion_tokens += s.completion_tokens
            self.calls += s.calls
            if s.t_after is not None:
                self.evidence_sum += s.t_after
                self.evidence_n += 1
            if s.empty_context:
                self.empty_contexts += 1
            self.failed += float(s.failed)
            self.truncated += float(s.truncated)
            if s.t_naive is not None and s.t_after is not None and s.t_naive > 0:
                self.tcr_sum += s.t_after / s.t_naive
                self.tcr_n += 1
            if s.covered is not None:
                self.covered += float(s.covered)
                self.coverage_n += 1
            if s.answer_recall is not None:  # a record written before it existed has none
                self.answer_recall_sum += s.answer_recall
                self.answer_recall_n += 1
            if s.covered_all_constraints is not None:  # nor has one written before this
                self.covered_all += float(s.covered_all_constraints)
                self.covered_all_n += 1
            if s.retrieval_latency_s is not None:
                self.latency_sum += s.retrieval_latency_s
                self.latency_n += 1

    def compute(self) -> dict[str, float | None]:
        n, gold = float(self.n), float(self.gold_n)
        if n == 0:
            raise ValueError("KGQAMetrics.compute: no question was scored")

        def mean(total: torch.Tensor, count: float) -> float:
            return float(total) / count if count > 0 else math.nan

        out = {
            "hits@1": mean(self.hits1, gold),
            "hit": mean(self.hit, gold),
            "f1": mean(self.f1, gold),
            "precision": mean(self.precision, gold),
            "recall": mean(self.recall, gold),
            "tcr": mean(self.tcr_sum, float(self.tcr_n)),
            "tok/q": mean(self.tokens, n),
            "tok_cl100k/q": mean(self.tokens_cl100k, n),
            "prompt_tok/q": mean(self.prompt_tokens, n),
            "completion_tok/q": mean(self.completion_tokens, n),
            "evidence_tok/q": mean(self.evidence_sum, float(self.evidence_n)),
            "empty_contexts": float(self.empty_contexts),
            "calls/q": mean(self.calls, n),
            "coverage": mean(self.covered, float(self.coverage_n)),
            "answer_recall": mean(self.answer_recall_sum, float(self.answer_recall_n)),
            "coverage_all_constraints": mean(self.covered_all, float(self.covered_all_n)),
            "retrieval_latency_s": mean(self.latency_sum, float(self.latency_n)),
            "failed": mean(self.failed, n),
            "truncated": mean(self.truncated, n),
            "n": n,
            "gold_n": gold,
        }
        tok = out["tok/q"]
        out["p@1k"] = out["f1"] * 1000.0 / tok if tok > 0 else math.nan
        out["h@1k"] = out["hits@1"] * 1000.0 / tok if tok > 0 else math.nan
        if gold == 0:  # answering only: nothing to compare with (rendered NO_GOLD)
            out.update(dict.fromkeys(ANSWER_METRICS))
        return {k: out[k] for k in METRIC_KEYS}


def not_applicable(metrics: dict[str, float | None]) -> dict[str, str]:
    """Metric -> :data:`NO_GOLD` for every answer metric of ``metrics`` left ``None`` (no
    question had gold answers): what the console and ``summary.json`` say instead."""
    return {k: NO_GOLD for k in ANSWER_METRICS if k in metrics and metrics[k] is None}


def aggregate(scores: Iterable[QuestionScore]) -> dict[str, float | None]:
    """Convenience: run :class:`KGQAMetrics` over ``scores`` and return ``compute()``."""
    metric = KGQAMetrics()
    metric.update(list(scores))
    return metric.compute()
