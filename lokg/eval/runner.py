"""The resumable per-question loop: skip answered ids, ask the rest, record each.

Method-agnostic: ``answer_one`` (supplied by the pipeline) maps a question to a
:class:`QuestionResult`. A question that fails (:class:`lokg.errors.QuestionFailed`: its
LLM call failed after all retries, the server rejected its prompt, its evidence broke the
budget invariant) is recorded with ``status="failed"`` and the run goes on. Any other
exception (a run-fatal LLM answer such as a bad key, a bug, a configuration error) stops
the run: questions not yet started are cancelled, those in flight finish and are recorded,
and the exception propagates (records already written stay, so a fixed rerun resumes).

On a rerun the answered (``ok``) ids are skipped and never re-paid; the ids recorded as
failed are asked again (``retry_failed=True``, the default) and their new record
supersedes the failed one in the append-only results file. The failures a rerun keeps (those
that would fail the same way again, and with ``retry_failed=False`` all of them) are counted
by class in one warning line.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from tqdm.auto import tqdm

from lokg.errors import QuestionFailed
from lokg.eval.results import QuestionResult, ResultsWriter
from lokg.typing import Question

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoopStats:
    """Counts of one (possibly resumed) run.

    Attributes:
        skipped: questions not asked (answered earlier, or failed earlier and kept).
        answered: questions asked in this run (``failed`` of them failed).
        failed: questions asked in this run that failed.
        retried: questions asked in this run that had failed earlier.
    """

    skipped: int
    answered: int
    failed: int
    retried: int = 0


def failed_result(question: Question, error: QuestionFailed, reader: str = "") -> QuestionResult:
    """The record of a question that failed (scored as wrong; a rerun asks it again if the
    failure was transient). ``failure_kind``: the error's ``kind`` when it has one
    (:class:`lokg.llm.LLMCallFailed`: ``ContextTooLong``, ``BadRequest``, ...), else its class
    name (``BudgetExceeded``)."""
    return QuestionResult(
        id=question.id,
        question=question.text,
        gold=list(question.answers),
        status="failed",
        error=str(error),
        failure_kind=getattr(error, "kind", None) or type(error).__name__,
        reader=reader,
        attempts=error.attempts,
        extra={"retryable": bool(getattr(error, "retryable", True))},
    )


def _kept_failures_line(kinds: Counter[str], path: object, transient: int = 0) -> str:
    """The one warning line of a rerun that keeps earlier failures: their count by class,
    most frequent first, and (``transient``) how many ``retry_failed=true`` would ask again."""
    n = sum(kinds.values())
    by_kind = ", ".join(
        f"{c} {k}" for k, c in sorted(kinds.items(), key=lambda kc: (-kc[1], kc[0]))
    )
    line = (
        f"{n} earlier failure{'s' if n != 1 else ''} kept (not retried): {by_kind}; "
        f"scored as wrong, reasons in the 'error' field of {path}"
    )
    if transient:
        line += f"; retry_failed=true asks the {transient} transient one(s) again"
    return line


def run_questions(
    questions: Sequence[Question],
    answer_one: Callable[[Question], QuestionResult],
    writer: ResultsWriter,
    *,
    concurrency: int = 1,
    reader_label: str = "",
    progress: bool = True,
    desc: str = "answering",
    retry_failed: bool = True,
) -> LoopStats:
    """Answer every question not yet answered in ``writer``, writing one record per question.

    Args:
        questions: the split to answer; ids must be unique.
        answer_one: question -> record (its ``id`` must be the question's id); raises
            :class:`~lokg.errors.QuestionFailed` for a question that failed.
        writer: the run's results file; answered ids are skipped.
        concurrency: questions answered in parallel threads (>= 1); the LLM client
            bounds in-flight requests itself.
        reader_label: stored in failed records.
        progress: show a tqdm bar with ETA.
        desc: the bar's label.
        retry_failed: ask again the questions recorded as failed for a transient reason
            (False keeps them); those that failed for good (a rejected prompt, a broken
            budget: ``QuestionFailed.retryable`` false) are never asked again.
    """
    if concurrency < 1:
        raise ValueError(f"run_questions: 'concurrency' must be >= 1, got {concurrency}")
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"run_questions: question id {dup!r} appears more than once")
    answered = writer.done_ids & set(ids)
    failed_before = writer.retryable_failed_ids & set(ids)
    # rejected prompts and broken budgets would fail the same way again: never re-sent
    permanent = (writer.failed_ids & set(ids)) - failed_before
    skip = answered | permanent | (set() if retry_failed else failed_before)
    todo = [q for q in questions if q.id not in skip]
    skipped = len(questions) - len(todo)
    if answered or failed_before or permanent:
        log.info(
            "resuming: %d answered, %d failed earlier and %s, %d failed for good (kept)",
            len(answered),
            len(failed_before),
            "retried now" if retry_failed else "kept (retry_failed=false)",
            len(permanent),
        )
    kept = permanent | (set() if retry_failed else failed_before)
    if kept:
        transient = 0 if retry_failed else len(failed_before)
        kinds = writer.failure_kinds(kept)
        log.warning("%s", _kept_failures_line(kinds, writer.path, transient))
    failed = 0

    def one(q: Question) -> QuestionResult:
        try:
            result = answer_one(q)
        except QuestionFailed as exc:
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
            failed = _run_parallel(todo, one, writer, concurrency, bar)
    finally:
        bar.close()
    retried = len(failed_before) if retry_failed else 0
    return LoopStats(skipped=skipped, answered=len(todo), failed=failed, retried=retried)


def _run_parallel(
    todo: Sequence[Question],
    one: Callable[[Question], QuestionResult],
    writer: ResultsWriter,
    concurrency: int,
    bar: tqdm,
) -> int:
    """Answer ``todo`` on ``concurrency`` threads; returns the number of failed questions.

    At most ``concurrency`` questions are submitted at once (none waits in the pool's queue,
    where a thread freed by a failing question would start it). On an exception that stops
    the run, no further question starts, the ones in flight are waited for and their records
    written (their calls were paid), and the first exception is re-raised.
    """
    failed = 0
    pool = ThreadPoolExecutor(max_workers=concurrency)
    pending: set[Future] = set()
    queue = iter(todo)
    try:
        for q in queue:
            pending.add(pool.submit(one, q))
            if len(pending) >= concurrency:
                break
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                pending.discard(fut)
                result = fut.result()
                writer.write(result)
                failed += result.status == "failed"
                bar.update(1)
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(one, nxt))
    except Exception:
        pool.shutdown(wait=True, cancel_futures=True)
        try:
            for fut in pending:
                if not fut.cancelled() and fut.exception() is None:
                    writer.write(fut.result())
        except Exception as exc:  # the writer itself failed: report it, keep the first error
            log.error("could not record the questions in flight: %s", exc)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: do not start more
    return failed
