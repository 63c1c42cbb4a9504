"""Per-question results as resumable, append-only JSONL, keyed by question id.

One line per attempt at a question, written with append + flush + fsync, so a killed run
loses at most the line being written. The file is never rewritten (except to cut a torn
last line), so a record of a question that *failed* (``status="failed"``) may be followed
by a later record of the same id: the rerun that answered it again. The rule for one id:

- a later record supersedes a ``failed`` one; readers keep the last record per id;
- an ``ok`` record is final: the writer refuses any later record of its id (an answered
  question is never re-paid). A later record after an ``ok`` one can only come from two runs
  writing one file at once (possible before the writer's lock): the reader keeps the first
  answer, ignores the rest and counts them in one warning line, so such a file still resumes.

One writer per file: :class:`ResultsWriter` holds an exclusive OS lock on ``<name>.lock``
from opening to closing (:mod:`lokg.eval.lock`); a second writer is refused with one line
naming the holder's pid, or waits for it (``wait=True``). On reopening, it reads the current
record of every id, drops (and reports) a torn last line, and refuses to write over an
answered id; the run loop skips the answered ids and asks the failed ones again. A sidecar
``<name>.meta.json`` holds the run's configuration fingerprint; resuming under a different
fingerprint is an error rather than a silent mix of two setups.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from lokg.atomic_io import write_atomic
from lokg.eval.lock import lock_results
from lokg.eval.metrics import QuestionScore, score_question

log = logging.getLogger(__name__)

STATUSES = ("ok", "failed")
#: the failure class of a failed record written before records carried one
UNCLASSIFIED = "unclassified"


@dataclass(frozen=True)
class QuestionResult:
    """The record of one answered (or failed) question.

    Attributes:
        id: question id (the resume key).
        question: question text.
        gold: gold answer labels.
        predictions: parsed answers, most likely first (empty when failed).
        output: the raw reader output text.
        status: ``"ok"`` or ``"failed"`` (no usable answer after all retries).
        error: one-line reason when failed.
        failure_kind: the class of that failure in one word (``ContextTooLong``,
            ``BadRequest``, ``ServerError``, ``BudgetExceeded``, ...); None when answered, and
            in failed records written before it was recorded.
        reader: label of what produced the answers (an LLM model id, or
            ``"extractive (retriever-only)"``).
        prompt: the exact chat messages sent (empty for readers without an LLM).
        context: the evidence text injected into the prompt.
        prompt_tokens, completion_tokens: billed tokens from the API ``usage``, summed
            over the question's calls.
        prompt_tokens_cl100k, completion_tokens_cl100k: the same counted with cl100k_base.
        calls: LLM calls made for this question (cache hits included: they are the
            method's calls; ``cached_calls`` says how many were free).
        cached_calls: calls answered from the response cache.
        attempts: HTTP attempts, retries included.
        truncated: LLM replies of this question cut at the generation limit
            (``finish_reason: "length"``); its answers are read from them as they are.
        t_after, t_naive: TCR numerator/denominator (tokens), when measured.
        retrieval_latency_s, llm_latency_s: wall times in seconds, when measured.
        extra: anything method-specific (paths, chosen granularities, ...), JSON-able.
        covered_all_constraints: whether the triples packed into the context connect a gold
            answer to every topic entity in the graph
            (:func:`~lokg.eval.metrics.covers_all_constraints`, judged when the record is
            built: the packed triple ids are not stored); None when not measured (a failed
            question, evidence that is not whole triples, a record written before it existed).
    """

    id: str
    question: str
    gold: list[str]
    predictions: list[str] = field(default_factory=list)
    output: str = ""
    status: str = "ok"
    error: str | None = None
    failure_kind: str | None = None
    reader: str = ""
    prompt: list[dict] = field(default_factory=list)
    context: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_cl100k: int = 0
    completion_tokens_cl100k: int = 0
    calls: int = 0
    cached_calls: int = 0
    attempts: int = 0
    truncated: int = 0
    t_after: int | None = None
    t_naive: int | None = None
    retrieval_latency_s: float | None = None
    llm_latency_s: float | None = None
    extra: dict = field(default_factory=dict)
    covered_all_constraints: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"QuestionResult.id must be a non-empty str, got {self.id!r}")
        if self.status not in STATUSES:
            raise ValueError(
                f"QuestionResult.status must be one of {list(STATUSES)}, got {self.status!r}"
            )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def score(self) -> QuestionScore:
        """This record's contribution to the run metrics (a failed question scores 0)."""
        return score_question(
            self.predictions,
            self.gold,
            output_text=self.output or None,
            context=self.context,
            tokens=self.tokens,
            tokens_cl100k=self.prompt_tokens_cl100k + self.completion_tokens_cl100k,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            calls=self.calls,
            t_after=self.t_after,
            t_naive=self.t_naive,
            retrieval_latency_s=self.retrieval_latency_s,
            failed=self.status == "failed",
            truncated=self.truncated > 0,
            covered_all_constraints=self.covered_all_constraints,
        )

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> QuestionResult:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"QuestionResult: unknown keys {unknown}; expected a subset of {sorted(known)}"
            )
        return cls(**data)


@dataclass
class ResultsFile:
    """What :func:`read_results` found.

    Attributes:
        records: the current (last) record of every id, in the order ids first appear.
        torn_line: a dropped torn last line, if any.
        valid_bytes: length of the file without the torn line.
        superseded: failed records replaced by a later record of their id.
        duplicates: records ignored because their id was already answered (two runs wrote
            the file at once).
    """

    records: dict[str, QuestionResult]
    torn_line: str | None = None
    valid_bytes: int = 0
    superseded: int = 0
    duplicates: int = 0

    @property
    def answered_ids(self) -> set[str]:
        """Ids whose current record is ``ok`` (never asked again)."""
        return {i for i, r in self.records.items() if r.status == "ok"}

    @property
    def failed_ids(self) -> set[str]:
        """Ids whose current record is ``failed`` (asked again by a rerun)."""
        return {i for i, r in self.records.items() if r.status == "failed"}


def read_results(path: str | os.PathLike) -> ResultsFile:
    """Read a results JSONL file, keeping the last record per id; a missing file reads as
    empty.

    A last line without its terminating newline is a torn write: it is dropped and
    returned in ``torn_line`` (callers report it). A malformed complete line is an error
    naming the file and line. A record whose id was already answered is ignored (the first
    answer wins) and counted in ``duplicates``, with one warning line for the file.
    """
    path = Path(path)
    if not path.exists():
        return ResultsFile(records={})
    data = path.read_bytes()
    found = ResultsFile(records={})
    repeated: dict[str, int] = {}  # answered id -> line of its first ignored record
    offset = 0
    lineno = 0
    while offset < len(data):
        end = data.find(b"\n", offset)
        lineno += 1
        if end < 0:
            found.torn_line = data[offset:].decode("utf-8", errors="replace")
            break
        line = data[offset:end]
        offset = end + 1
        if not line.strip():
            continue
        try:
            rec = QuestionResult.from_json(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{lineno}: not a valid result record ({exc})") from exc
        earlier = found.records.get(rec.id)
        if earlier is not None and earlier.status == "ok":  # an answer is final
            found.duplicates += 1
            repeated.setdefault(rec.id, lineno)
            continue
        found.superseded += earlier is not None
        found.records[rec.id] = rec
    found.valid_bytes = offset if found.torn_line is not None else len(data)
    if repeated:
        log.warning(
            "%s: %d records of %d question ids were written after their id was answered "
            "(first at line %d: two runs wrote this file at once); the first answer of each "
            "id is kept",
            path,
            found.duplicates,
            len(repeated),
            min(repeated.values()),
        )
    return found


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ResultsWriter:
    """Append-only, resumable writer of :class:`QuestionResult` lines.

    Args:
        path: the JSONL file (its directory is created).
        fingerprint: identifies the run's configuration; stored beside the file on first
            open and checked on every later open (``None`` skips the check).
        wait: when another process writes ``path``, wait for it to end instead of refusing.

    Opening takes the file's exclusive lock (:func:`~lokg.eval.lock.lock_results`, held
    until :meth:`close`; :class:`~lokg.eval.lock.ResultsBusy` when another live process holds
    it and ``wait`` is false), then truncates a torn last line (reported with a warning and
    kept in ``dropped_torn_line``). ``records`` holds the current record of every id. ``write`` is
    thread-safe and durable (flush + fsync); it appends a record for a new id or for an id
    whose current record failed (the new record supersedes it), and refuses an answered id.
    """

    def __init__(
        self, path: str | os.PathLike, fingerprint: str | None = None, wait: bool = False
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer_lock = lock_results(self.path, wait=wait)
        try:
            self._open(fingerprint)
        except BaseException:
            self._writer_lock.release()
            raise

    def _open(self, fingerprint: str | None) -> None:
        """Check the fingerprint, read the records, cut a torn last line, open for append."""
        self._check_fingerprint(fingerprint)
        found = read_results(self.path)
        self.dropped_torn_line = found.torn_line
        if found.torn_line is not None:
            log.warning(
                "%s: dropped a torn last line (%d bytes) left by an interrupted write; "
                "that question will be answered again",
                self.path,
                len(found.torn_line.encode("utf-8")),
            )
            with open(self.path, "r+b") as fh:
                fh.truncate(found.valid_bytes)
                fh.flush()
                os.fsync(fh.fileno())
        self.records: dict[str, QuestionResult] = found.records
        self._lock = threading.Lock()
        existed = self.path.exists()
        self._fh = open(self.path, "ab")  # noqa: SIM115 - closed in close()
        if not existed:
            _fsync_dir(self.path.parent)

    def _check_fingerprint(self, fingerprint: str | None) -> None:
        if fingerprint is None:
            return
        meta = self.path.with_name(self.path.name + ".meta.json")
        if meta.exists():
            try:
                stored = json.loads(meta.read_text())["fingerprint"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{meta}: expected a JSON object with key 'fingerprint'") from exc
            if stored != fingerprint:
                raise ValueError(
                    f"{self.path}: results were written under configuration {stored!r}, "
                    f"not {fingerprint!r}; use a new run directory"
                )
            return
        write_atomic(meta, json.dumps({"fingerprint": fingerprint}) + "\n")

    @property
    def done_ids(self) -> set[str]:
        """Ids answered ``ok`` (final: a rerun never asks them again)."""
        with self._lock:
            return {i for i, r in self.records.items() if r.status == "ok"}

    @property
    def failed_ids(self) -> set[str]:
        """Ids whose current record failed."""
        with self._lock:
            return {i for i, r in self.records.items() if r.status == "failed"}

    @property
    def retryable_failed_ids(self) -> set[str]:
        """Failed ids a rerun asks again: those that failed for a transient reason (records
        written before ``retryable`` existed count as retryable)."""
        with self._lock:
            return {
                i
                for i, r in self.records.items()
                if r.status == "failed" and r.extra.get("retryable", True)
            }

    def failure_kinds(self, ids: Iterable[str]) -> Counter[str]:
        """How many of the failed records among ``ids`` failed for each class
        (:data:`UNCLASSIFIED`: records without one)."""
        with self._lock:
            records = [self.records.get(i) for i in ids]
        return Counter(
            r.failure_kind or UNCLASSIFIED
            for r in records
            if r is not None and r.status == "failed"
        )

    def __contains__(self, question_id: object) -> bool:
        """Whether ``question_id`` has a record (answered or failed)."""
        with self._lock:
            return question_id in self.records

    def write(self, result: QuestionResult) -> None:
        line = (json.dumps(result.to_json(), ensure_ascii=False, sort_keys=True) + "\n").encode()
        with self._lock:
            if self._fh.closed:
                raise ValueError(f"{self.path}: writer is closed")
            earlier = self.records.get(result.id)
            if earlier is not None and earlier.status == "ok":
                raise ValueError(f"{self.path}: question id {result.id!r} is already answered")
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self.records[result.id] = result

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()
            self._writer_lock.release()

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
