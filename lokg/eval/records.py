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
status stays ``ok``, with no answers and 0 calls).
"""

from __future__ import annotations

from lokg.eval.results import QuestionResult

__all__ = ["question_record"]

#: ranked candidate answers and paths kept in a record's ``extra``
NUM_RECORDED_CANDIDATES = 20
NUM_RECORDED_PATHS = 5


def question_record(output) -> QuestionResult:
    """The record of one answered question (``output``: a ``PipelineOutput``)."""
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
        },
    )
