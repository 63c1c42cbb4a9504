"""Errors of the LLM layer: what stops a run versus what fails one question.

- :class:`LLMFatalError` — an answer every later question would get too (bad or missing
  key, no such model or endpoint, no credit): the run stops before sending more.
- :class:`LLMCallFailed` — one question's call failed (its prompt was rejected, or every
  retry of a transient fault failed): a :class:`lokg.errors.QuestionFailed`, so the run
  records the question as failed and goes on; a rerun asks it again.

Messages never contain the API key (the client redacts them).
"""

from __future__ import annotations

from lokg.errors import QuestionFailed


class LLMError(Exception):
    """Base class of every error raised by :mod:`lokg.llm`."""


class MissingAPIKeyError(LLMError):
    """The API key's environment variable is unset: raised at construction, before any work."""


class LLMFatalError(LLMError):
    """A run-fatal API answer (authentication, permission, unknown model or endpoint, no
    credit): stops the run, since every later question would fail the same way."""


class LLMCallFailed(LLMError, QuestionFailed):
    """One call failed for good; the runner records the question as failed.

    Raised after every retry of a transient fault (timeout, reset, 408/409/429/5xx,
    malformed 200 body) or at once when the server rejects this question's request
    (400/413/422: prompt too long, content filter, ...).

    Attributes:
        attempts: HTTP attempts made.
        reason: one-line description of the last failure.
        retryable: False when the server rejected the request itself (a rerun would send the
            same prompt and be rejected again), True after transient faults.
        kind: the class of the last failure, one word (``ContextTooLong``, ``BadRequest``,
            ``ServerError``, ``RateLimited``, ``Timeout``, ``MalformedResponse``, ...); the
            run records it, and a rerun counts the failures it keeps by it.
    """

    def __init__(
        self, reason: str, attempts: int, retryable: bool = True, kind: str = "LLMCallFailed"
    ) -> None:
        super().__init__(reason, attempts, retryable)  # QuestionFailed sets the attributes
        self.kind = kind
        self.args = (f"LLM call failed after {attempts} attempt(s): {reason}",)

    def __reduce__(self):
        return type(self), (self.reason, self.attempts, self.retryable, self.kind)


class LocalServerError(LLMError):
    """The local llama.cpp server could not be started (package or model missing, crash,
    or not ready in time)."""
