"""Errors of the LLM layer: what stops a run versus what fails one question."""

from __future__ import annotations


class LLMError(Exception):
    """Base class of every error raised by :mod:`lokg.llm`."""


class MissingAPIKeyError(LLMError):
    """The API key's environment variable is unset: raised at construction, before any work."""


class LLMFatalError(LLMError):
    """A non-retryable API answer (bad request, authentication, unknown model): stops the run,
    since every later question would fail the same way."""


class LLMCallFailed(LLMError):
    """One call still failed after every retry; the runner records the question as failed.

    Attributes:
        attempts: HTTP attempts made.
        reason: one-line description of the last failure.
    """

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(f"LLM call failed after {attempts} attempt(s): {reason}")
        self.reason = reason
        self.attempts = attempts


class LocalServerError(LLMError):
    """The local llama.cpp server could not be started (package or model missing, crash,
    or not ready in time)."""
