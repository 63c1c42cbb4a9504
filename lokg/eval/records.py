"""The pipeline's output -> the evaluation record of one question.

:func:`question_record` takes a :class:`lokg.pipeline.PipelineOutput` (read by attribute:
``lokg.eval`` sits below the pipeline and never imports it) and returns the
:class:`~lokg.eval.results.QuestionResult` that the metrics, the resumable results file and
the W&B table read.

What a record's token fields hold: ``t_after`` is the evidence block's tokens exactly as
sent (the encoder's tokenizer, cl100k by default); ``prompt_tokens_cl100k`` is the whole
prompt's (template + question + evidence: the message contents as the LLM client counts
them, 0 when no call was made), so the two sit side by side and are not duplicated in
``extra``. ``extra`` adds ``budget`` (B), ``budget_scope`` (what B caps: ``evidence`` or
``prompt``), ``evidence_budget`` (the budget the evidence was encoded for: B, or B minus the
prompt without evidence) and ``no_evidence`` (no topic entity in the graph, or empty
evidence: the LLM call was skipped unless ``answer_without_evidence=true``; the record's
status stays ``ok``, with no answers and 0 calls) and ``coverage_max_hops`` (the L under which
``covered_all_constraints`` was judged).

``covered_all_constraints`` is judged here, on the ids of the triples packed under the budget
(``context.triples``) in the retrieval's graph, because the record keeps only their text.
"""

from __future__ import annotations

import numpy as np

from lokg.eval.metrics import covers_all_constraints
from lokg.eval.results import QuestionResult
from lokg.normalize import normalize_answer, normalize_set

__all__ = ["DEFAULT_MAX_HOPS", "covered_all_constraints", "question_record"]

#: ranked candidate answers and paths kept in a record's ``extra``
NUM_RECORDED_CANDIDATES = 20
NUM_RECORDED_PATHS = 5
#: L of ``coverage_all_constraints`` when the caller names none (Table 3's L)
DEFAULT_MAX_HOPS = 3


def question_record(output, max_hops: int = DEFAULT_MAX_HOPS) -> QuestionResult:
    """The record of one answered question (``output``: a ``PipelineOutput``); ``max_hops``:
    the L of :func:`covered_all_constraints` (the retriever's)."""
    q, ctx, ret, acc = output.question, output.context, output.retrieval, output.accounting
    kg = ret.kg
    return QuestionResult(
        id=q.id,
        question=q.text,
        gold=list(q.answers),
        predictions=list(output.answers),
        output=output.output,
        reader=output.reader,
        prompt=list(output.prompt),
        context=ctx.text,
        prompt_tokens=int(acc.get("prompt_tokens", 0)),
        completion_tokens=int(acc.get("completion_tokens", 0)),
        prompt_tokens_cl100k=int(acc.get("prompt_tokens_cl100k", 0)),
        completion_tokens_cl100k=int(acc.get("completion_tokens_cl100k", 0)),
        calls=int(acc.get("calls", 0)),
        cached_calls=int(acc.get("cached_calls", 0)),
        attempts=int(acc.get("attempts", 0)),
        truncated=int(acc.get("truncated", 0)),
        t_after=ctx.num_tokens,
        t_naive=ctx.naive_tokens,
        retrieval_latency_s=output.retrieval_latency_s,
        llm_latency_s=output.llm_latency_s,
        covered_all_constraints=covered_all_constraints(output, max_hops),
        extra={
            "budget": output.budget,
            "budget_scope": output.budget_scope,
            "evidence_budget": output.evidence_budget,
            "no_evidence": output.no_evidence,
            "solver": ctx.solver,
            "order": ctx.order,
            "granularity": ctx.granularity_counts(),
            "over_budget": ctx.over_budget,
            "empty_context": not ctx.text,
            "unknown_topics": list(ret.unknown_topics),
            "fallback": ret.extra.get("fallback"),
            "candidates": [a.label for a in ret.answers[:NUM_RECORDED_CANDIDATES]],
            "merged_candidates": ret.merged_answers,  # answers merged by spelling
            "paths": [
                [kg.labeled(int(t)) for t in p.triple_ids] for p in ret.paths[:NUM_RECORDED_PATHS]
            ],
            "retrieval": dict(ret.extra),  # e.g. ToG's fallbacks, GraphRAG's indexing calls
            "encoder": dict(ctx.report),  # e.g. LLMLingua's target vs achieved tokens
            "coverage_max_hops": max_hops,
        },
    )


def covered_all_constraints(output, max_hops: int) -> bool | None:
    """:func:`~lokg.eval.metrics.covers_all_constraints` on what ``output`` packed: the ids of
    ``context.triples`` in the retrieval's graph, the topic entities the retrieval found there
    (unknown ones left out), and as answers the packed entities whose label or display name
    normalises to a gold answer. None when the evidence is not whole triples (text passages,
    LLMLingua's compressed text: a non-empty text with no triple placed), and for a question
    without gold answers (nothing to connect)."""
    ctx, ret = output.context, output.retrieval
    packed = np.asarray(ctx.triples, dtype=np.int64).reshape(-1, 3)
    if ctx.units is None or (ctx.text and not len(packed)) or not output.question.answers:
        return None
    answers = _gold_entities(ret.kg, packed, output.question.answers)
    topics = [t.entity for t in ret.topics]
    return covers_all_constraints(packed, topics, answers, max_hops)


def _gold_entities(kg, packed: np.ndarray, gold) -> list[int]:
    """The entities of the ``packed [M, 3]`` triples named by a gold answer (normalised)."""
    wanted = set(normalize_set(gold))
    return [
        e
        for e in np.unique(packed[:, [0, 2]]).tolist()
        if {normalize_answer(kg.entities.label(e)), normalize_answer(kg.entity_name(e))} & wanted
    ]
