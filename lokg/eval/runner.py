"""The resumable per-question loop: skip finished ids, answer the rest, record each.

Method-agnostic: ``answer_one`` (supplied by the pipeline) maps a question to a
:class:`QuestionResult`. A question whose LLM call fails after all retries
(:class:`lokg.llm.LLMCallFailed`) is recorded with ``status="failed"`` and the run
goes on; any other exception is a bug or a configuration error and stops the run
(records already written stay, so a fixed rerun resumes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from tqdm.auto import tqdm

from lokg.eval.results import QuestionResult, ResultsWriter
from lokg.llm.errors import LLMCallFailed
from lokg.typing import Question

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopStats:
    """Counts of one (possibly resumed) run: skipped (already done), answered, failed."""

    skipped: int
    answered: int
    failed: int


def failed_result(question: Question, error: LLMCallFailed, reader: str = "") -> QuestionResult:
    """The record of a question whose call failed after every retry (scored as wrong)."""
    return QuestionResult(
        id=question.id,
        question=question.text,
        gold=list(question.answers),
        status="failed",
        error=str(error),
        reader=reader,
        attempts=error.attempts,
    )


def run_questions(
    questions: Sequence[Question],
    answer_one: Callable[[Question], QuestionResult],
    writer: ResultsWriter,
    *,
    concurrency: int = 1,
    reader_label: str = "",
    progress: bool = True,
    desc: str = "answering",
) -> LoopStats:
    """Answer every question not yet in ``writer``, writing one record per question.

    Args:
        questions: the split to answer; ids must be unique.
        answer_one: question -> record (its ``id`` must be the question's id).
        writer: the run's results file; finished ids are skipped.
        concurrency: questions answered in parallel threads (>= 1); the LLM client
            bounds in-flight requests itself.
        reader_label: stored in failed records.
        progress: show a tqdm bar with ETA.
        desc: the bar's label.
    """
    if concurrency < 1:
        raise ValueError(f"run_questions: 'concurrency' must be >= 1, got {concurrency}")
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"run_questions: question id {dup!r} appears more than once")
    done = writer.done_ids
    todo = [q for q in questions if q.id not in done]
    skipped = len(questions) - len(todo)
    if skipped:
        log.info("resuming: %d of %d questions already recorded", skipped, len(questions))
    failed = 0

    def one(q: Question) -> QuestionResult:
        try:
            result = answer_one(q)
        except LLMCallFailed as exc:
            log.warning("question %s failed: %s", q.id, exc)
            return failed_result(q, exc, reader_label)
        if result.id != q.id:
            raise ValueError(f"answer_one returned a record for {result.id!r}, not {q.id!r}")
        return result

    bar = tqdm(total=len(questions), initial=skipped, desc=desc, disable=not progress)
    try:
        if concurrency == 1:
            for q in todo:
                result = one(q)
                writer.write(result)
                failed += result.status == "failed"
                bar.update(1)
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                pending: set[Future] = set()
                queue = iter(todo)
                for q in queue:
                    pending.add(pool.submit(one, q))
                    if len(pending) >= 2 * concurrency:
                        break
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        result = fut.result()
                        writer.write(result)
                        failed += result.status == "failed"
                        bar.update(1)
                        nxt = next(queue, None)
                        if nxt is not None:
                            pending.add(pool.submit(one, nxt))
    finally:
        bar.close()
    return LoopStats(skipped=skipped, answered=len(todo), failed=failed)
