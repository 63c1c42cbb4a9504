"""Token and call accounting: billed ``usage`` from the API with cl100k counts alongside."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lokg.tokens import count_tokens


def cl100k_count(text: str) -> int:
    """cl100k_base tokens of ``text`` via :func:`lokg.tokens.count_tokens` (the one counter)."""
    return count_tokens(text)


def messages_cl100k(messages: Sequence[dict]) -> int:
    """cl100k tokens of the message contents (role names and chat framing not counted)."""
    return sum(cl100k_count(m["content"]) for m in messages)


@dataclass(frozen=True)
class Usage:
    """Tokens of one call.

    Attributes:
        prompt_tokens, completion_tokens: billed tokens from the API's ``usage`` (T_in,
            T_out); where the server reports no usage they fall back to the cl100k counts
            and ``billed_reported`` is False.
        prompt_tokens_cl100k, completion_tokens_cl100k: cl100k_base counts of the message
            contents and of the answer text.
        billed_reported: whether the server reported ``usage``.
    """

    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_cl100k: int
    completion_tokens_cl100k: int
    billed_reported: bool = True

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        """The tokens of two replies to one call (a truncated reply and its retry)."""
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.prompt_tokens_cl100k + other.prompt_tokens_cl100k,
            self.completion_tokens_cl100k + other.completion_tokens_cl100k,
            self.billed_reported and other.billed_reported,
        )


class CallLedger:
    """Per-question tally the client writes into: calls, cache hits, attempts, tokens, and
    ``truncated``: answers cut at the generation limit (``finish_reason: "length"``).

    Thread-safe, so one ledger may be shared by calls running in parallel.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.cached_calls = 0
        self.attempts = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.prompt_tokens_cl100k = 0
        self.completion_tokens_cl100k = 0
        self.latency_s = 0.0
        self.truncated = 0

    def add(
        self,
        usage: Usage,
        *,
        cached: bool,
        attempts: int,
        latency_s: float,
        truncated: bool = False,
    ) -> None:
        with self._lock:
            self.calls += 1
            self.cached_calls += int(cached)
            self.truncated += int(truncated)
            self.attempts += attempts
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.prompt_tokens_cl100k += usage.prompt_tokens_cl100k
            self.completion_tokens_cl100k += usage.completion_tokens_cl100k
            self.latency_s += latency_s

    def add_failed_attempts(self, attempts: int) -> None:
        with self._lock:
            self.attempts += attempts

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int | float]:
        with self._lock:
            return {
                "calls": self.calls,
                "cached_calls": self.cached_calls,
                "attempts": self.attempts,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "prompt_tokens_cl100k": self.prompt_tokens_cl100k,
                "completion_tokens_cl100k": self.completion_tokens_cl100k,
                "llm_latency_s": self.latency_s,
                "truncated": self.truncated,
            }


def add_accounting(*ledgers: Mapping[str, int | float] | None) -> dict[str, int | float]:
    """Key-wise sum of ``CallLedger.as_dict()`` records (missing keys count 0): the
    retriever's calls and the reader's, so calls/q and tok/q count every call a method makes
    for a question."""
    out: dict[str, int | float] = {}
    for ledger in ledgers:
        for key, value in (ledger or {}).items():
            out[key] = out.get(key, 0) + value
    return out
