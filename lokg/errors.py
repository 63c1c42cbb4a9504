"""The kinds of failure every layer of lokg shares (no lokg imports: layer 1).

- :class:`InputError` — the user's input is wrong (a file, a line of it, a config key or
  value). The entry points print it as one line, ``error: <message>``, and exit 2; the
  message names the file and line or the key, and what was expected. It subclasses
  ``ValueError`` so callers that catch ``ValueError`` keep working.
- :class:`CorruptArtifact` — a file lokg wrote earlier fails its manifest check
  (:mod:`lokg.manifest`: truncated, emptied, changed). An ``InputError``: one line naming the
  file, what is wrong and the command that rebuilds it.
- :class:`QuestionFailed` — one question could not be answered (its LLM call failed after
  every retry, the server rejected its prompt, its evidence broke the budget invariant). The
  evaluation loop records the question as failed with ``reason`` and goes on; a rerun asks
  again the questions that failed for a transient reason (``retryable``), not those that
  would fail the same way (a rejected prompt, a broken budget).
- :class:`Interrupted` — the job was stopped by a signal (SIGTERM: a cluster preempting
  it). The entry points print it as one line and exit ``128 + signal``, 143 for SIGTERM;
  the line says whether a checkpoint was written and that the same command resumes.
"""

from __future__ import annotations

import signal

__all__ = ["CorruptArtifact", "InputError", "Interrupted", "QuestionFailed"]


class InputError(ValueError):
    """Wrong user input; ``str(error)`` is the one line the entry points print."""


class CorruptArtifact(InputError):
    """A file lokg wrote fails its check: ``<path>: <problem>; <remedy>``.

    Attributes:
        path: the file (or the manifest) that failed.
        problem: what is wrong (``truncated: 812 bytes, 1,810,357 when written``).
        remedy: what rebuilds it.
    """

    def __init__(self, path: object, problem: str, remedy: str) -> None:
        super().__init__(f"{path}: {problem}; {remedy}")
        self.path = path
        self.problem = problem
        self.remedy = remedy


class QuestionFailed(Exception):
    """One question failed; the run records it and continues.

    Attributes:
        reason: one-line description (recorded in the question's result).
        attempts: HTTP attempts made for it (0 when no call was made).
        retryable: whether asking again may succeed (a transient fault) — a rerun retries it.
    """

    def __init__(self, reason: str, attempts: int = 0, retryable: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts
        self.retryable = retryable


class Interrupted(SystemExit):
    """The job stopped on a signal; ``str(error)`` is the one line the entry points print.

    A ``SystemExit`` whose ``code`` is ``128 + signum`` (143 for SIGTERM, as a shell reports
    a process the signal killed), so it passes ``except Exception`` handlers (Hydra's job
    runner) and, left uncaught, ends the process with that status.
    """

    def __init__(self, message: str, signum: int = signal.SIGTERM) -> None:
        super().__init__(128 + int(signum))
        self.message = message

    def __str__(self) -> str:
        return self.message
