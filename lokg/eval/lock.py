"""One writer per results file: an exclusive OS lock held while a run writes it.

Two runs of one configuration share one ``results.jsonl`` (its directory is the run key), so
without a lock two runs started together both ask every question, pay every prompt twice
and write two answers per id. :func:`lock_results` takes ``fcntl.flock(LOCK_EX)`` on the
sibling ``<name>.lock`` and writes the holder's pid into it; :meth:`WriterLock.release`
empties it and unlocks. A second run on the same file is refused at once with one line
naming the file and the holder's pid (:class:`ResultsBusy`, an input error: exit 2), or,
with ``wait=True``, waits for the holder to end and then resumes what it wrote.

The kernel releases a flock when its holder dies (``kill -9`` included), so a lock is never
stale; its pid file is: a holder that died leaves its pid behind, and the next run says in
one warning line that it took that lock over. The lock file is never deleted (deleting it
would let a run lock a new file while another still holds the old one).
"""

from __future__ import annotations

import fcntl
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from lokg.errors import InputError

__all__ = ["ResultsBusy", "WriterLock", "lock_path", "lock_results"]

log = logging.getLogger(__name__)


class ResultsBusy(InputError):
    """Another live run holds the lock of a results file."""


def lock_path(target: str | os.PathLike) -> Path:
    """The lock file of ``target``: ``<name>.lock`` beside it."""
    target = Path(target)
    return target.with_name(target.name + ".lock")


@dataclass
class WriterLock:
    """A held lock of one results file (release it once: :meth:`release`).

    Attributes:
        target: the results file it guards.
        fd: the open lock file, flock-ed exclusively.
        took_over: the pid a dead holder left in the lock file, when there was one.
    """

    target: Path
    fd: int
    took_over: str | None = None

    def release(self) -> None:
        """Empty the pid file, then unlock and close it (idempotent)."""
        if self.fd < 0:
            return
        fd, self.fd = self.fd, -1
        try:
            os.ftruncate(fd, 0)  # no pid is left for the next run to take for a stale one
        finally:
            os.close(fd)  # closing the last descriptor releases the flock


def _holder(fd: int) -> str | None:
    """The pid recorded in the lock file (None when it is empty)."""
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 64).decode("ascii", errors="replace").strip()
    return text or None


def _flock(fd: int, target: Path, wait: bool) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        holder = _holder(fd) or "unknown"
    except OSError as exc:  # a file system without locks
        raise InputError(
            f"{lock_path(target)}: cannot take a file lock here ({exc.strerror}); keep "
            "paths.log_dir on a file system with locks"
        ) from exc
    if not wait:
        raise ResultsBusy(
            f"{target}: another run (pid {holder}) is writing this results file; wait for it "
            "to end, or pass wait=true to start when it does"
        )
    log.warning("%s: waiting for pid %s, which is writing this results file", target, holder)
    fcntl.flock(fd, fcntl.LOCK_EX)


def lock_results(target: str | os.PathLike, wait: bool = False) -> WriterLock:
    """Take the exclusive lock of the results file ``target`` (its directory must exist).

    Raises:
        ResultsBusy: another live process holds it and ``wait`` is false (with ``wait``, the
            call blocks until that process ends or releases it).
    """
    target = Path(target)
    fd = os.open(lock_path(target), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        _flock(fd, target, wait)
        stale = _holder(fd)  # we hold the lock: whoever wrote this pid no longer does
        if stale is not None:
            log.warning(
                "%s: took over the lock left by pid %s, which ended without releasing it",
                target,
                stale,
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return WriterLock(target=target, fd=fd, took_over=stale)
