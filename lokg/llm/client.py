"""One chat client for every OpenAI-compatible endpoint (DeepSeek, DashScope, OpenAI,
the local llama.cpp server), built on the official ``openai`` package.

The client owns everything around a call: the API key (read from the environment
only, never logged or shown in ``repr``), the response cache, retries with exponential
backoff and jitter, a bound on concurrent requests, and token/call accounting.
Generation defaults follow Table 4: temperature 0, generation limit 512.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import openai

from lokg.llm.accounting import CallLedger, Usage, cl100k_count, messages_cl100k
from lokg.llm.cache import ResponseCache, cache_key
from lokg.llm.errors import LLMCallFailed, LLMFatalError, MissingAPIKeyError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatResponse:
    """One answered call.

    Attributes:
        text: the assistant message content (stripped).
        usage: billed and cl100k token counts.
        cached: answered from the response cache (no request was sent).
        attempts: HTTP attempts made (0 for a cache hit).
        latency_s: wall time of the call, retries and backoff included.
    """

    text: str
    usage: Usage
    cached: bool
    attempts: int
    latency_s: float


class _MalformedResponse(Exception):
    """The server answered 200 with no usable message (retryable)."""


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Delay before retry number ``attempt`` (1-based): exponential with equal jitter.

    ``d = min(max_s, base_s * 2**(attempt-1))``; the delay is uniform in ``[d/2, d]``,
    so retries of parallel workers spread out but never collapse to zero.
    """
    d = min(max_s, base_s * 2.0 ** (attempt - 1))
    return d / 2.0 + rng.uniform(0.0, d / 2.0)


class ChatClient:
    """OpenAI-protocol chat client with cache, retries, bounded concurrency and accounting.

    Args:
        model: model id sent with each request (also part of the cache key).
        base_url: endpoint root, e.g. ``https://api.deepseek.com/v1``.
        api_key_env: name of the environment variable holding the key; None for
            endpoints without authentication (the local server).
        temperature: sampling temperature (Table 4: 0).
        max_tokens: generation limit (Table 4: 512).
        timeout_s: per-request timeout.
        max_attempts: HTTP attempts per call before it counts as failed (>= 1).
        backoff_base_s, backoff_max_s: exponential backoff parameters (see
            :func:`backoff_delay`).
        max_concurrency: most requests in flight at once through this client (>= 1).
        cache_path: SQLite response cache file; None disables caching.
        extra_body: extra JSON fields for the request body (provider options); part of
            the cache key.
        seed: seed of the jitter generator.

    Raises:
        MissingAPIKeyError: ``api_key_env`` is set but the variable is not.
        ValueError: an out-of-range argument.

    Retried: timeouts, connection errors, HTTP 429 and 5xx, and 200 answers without a
    non-empty message. Not retried (:class:`LLMFatalError`): other 4xx (bad request,
    authentication, unknown model). A call that exhausts its attempts raises
    :class:`LLMCallFailed`.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None,
        api_key_env: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout_s: float = 60.0,
        max_attempts: int = 5,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        max_concurrency: int = 4,
        cache_path: str | os.PathLike | None = None,
        extra_body: dict | None = None,
        seed: int = 0,
        name: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("ChatClient: 'model' must be a non-empty model id")
        if max_attempts < 1:
            raise ValueError(f"ChatClient: 'max_attempts' must be >= 1, got {max_attempts}")
        if max_concurrency < 1:
            raise ValueError(f"ChatClient: 'max_concurrency' must be >= 1, got {max_concurrency}")
        if max_tokens < 1:
            raise ValueError(f"ChatClient: 'max_tokens' must be >= 1, got {max_tokens}")
        if timeout_s <= 0 or backoff_base_s < 0 or backoff_max_s < 0:
            raise ValueError("ChatClient: 'timeout_s' must be > 0 and backoff delays >= 0")
        self.name = name or model
        self.model = model
        self._base_url = base_url
        self.api_key_env = api_key_env
        if api_key_env is not None:
            key = os.environ.get(api_key_env, "")
            if not key:
                raise MissingAPIKeyError(
                    f"environment variable {api_key_env} is not set "
                    f"(the API key for llm={self.name})"
                )
        else:
            key = "no-key"
        self.__api_key = key
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.timeout_s = float(timeout_s)
        self.max_attempts = int(max_attempts)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_concurrency = int(max_concurrency)
        self.extra_body = dict(extra_body) if extra_body else None
        self.cache = ResponseCache(cache_path) if cache_path is not None else None
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()
        #: client-wide totals: every call, whether answered by the API or the cache.
        self.totals = CallLedger()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, "
            f"temperature={self.temperature}, max_tokens={self.max_tokens}, "
            f"max_concurrency={self.max_concurrency}, cache={self.cache is not None})"
        )

    @property
    def label(self) -> str:
        return f"llm:{self.name}"

    def base_url(self) -> str | None:
        """The endpoint root (subclasses may start a server here)."""
        return self._base_url

    def _openai(self) -> openai.OpenAI:
        with self._client_lock:
            if self._client is None:
                self._client = openai.OpenAI(
                    api_key=self.__api_key,
                    base_url=self.base_url(),
                    timeout=self.timeout_s,
                    max_retries=0,
                )
            return self._client

    def generation_params(self) -> dict:
        """The parameters that, with model and messages, determine an answer (cache key)."""
        params: dict = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    def _sleep_before_retry(self, attempt: int) -> None:
        with self._rng_lock:
            delay = backoff_delay(attempt, self.backoff_base_s, self.backoff_max_s, self._rng)
        time.sleep(delay)

    def _request(self, messages: list[dict]) -> tuple[str, Usage]:
        kwargs = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        with self._slots:
            resp = self._openai().chat.completions.create(**kwargs)
        choices = getattr(resp, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise _MalformedResponse(f"no choices in the response ({type(resp).__name__})")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            raise _MalformedResponse("empty answer")
        text = content.strip()
        in_cl = messages_cl100k(messages)
        out_cl = cl100k_count(text)
        usage = getattr(resp, "usage", None)
        pt = getattr(usage, "prompt_tokens", None)
        ct = getattr(usage, "completion_tokens", None)
        if isinstance(pt, int) and isinstance(ct, int):
            return text, Usage(pt, ct, in_cl, out_cl, billed_reported=True)
        log.warning("%s: response without usage; billed tokens fall back to cl100k", self.name)
        return text, Usage(in_cl, out_cl, in_cl, out_cl, billed_reported=False)

    def chat(self, messages: Sequence[dict], ledger: CallLedger | None = None) -> ChatResponse:
        """Answer one chat request (cache first), recording it in ``ledger`` and ``totals``.

        Raises:
            LLMCallFailed: every attempt failed with a retryable error.
            LLMFatalError: the endpoint rejected the request (non-retryable 4xx).
        """
        messages = [{"role": m["role"], "content": m["content"]} for m in messages]
        params = self.generation_params()
        key = cache_key(self.model, messages, params)
        start = time.perf_counter()
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                text, usage = hit
                response = ChatResponse(text, usage, True, 0, time.perf_counter() - start)
                self._record(response, ledger)
                return response
        reason = ""
        for attempt in range(1, self.max_attempts + 1):
            try:
                text, usage = self._request(messages)
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
            except (openai.RateLimitError, openai.InternalServerError) as exc:
                reason = f"HTTP {exc.status_code}: {type(exc).__name__}"
            except openai.APIStatusError as exc:
                if exc.status_code == 429 or exc.status_code >= 500:
                    reason = f"HTTP {exc.status_code}: {type(exc).__name__}"
                else:
                    raise LLMFatalError(
                        f"llm={self.name}: the endpoint rejected the request with HTTP "
                        f"{exc.status_code} ({type(exc).__name__}); check the model id and key"
                    ) from exc
            except (openai.APIResponseValidationError, json.JSONDecodeError) as exc:
                reason = f"malformed response: {type(exc).__name__}"
            except _MalformedResponse as exc:
                reason = f"malformed response: {exc}"
            else:
                response = ChatResponse(text, usage, False, attempt, time.perf_counter() - start)
                if self.cache is not None:
                    request = {"model": self.model, "messages": messages, "params": params}
                    self.cache.put(key, self.model, request, text, usage)
                self._record(response, ledger)
                return response
            log.warning(
                "%s: attempt %d/%d failed (%s)", self.name, attempt, self.max_attempts, reason
            )
            if attempt < self.max_attempts:
                self._sleep_before_retry(attempt)
        for book in (ledger, self.totals):
            if book is not None:
                book.add_failed_attempts(self.max_attempts)
        raise LLMCallFailed(reason, self.max_attempts)

    def _record(self, response: ChatResponse, ledger: CallLedger | None) -> None:
        for book in (ledger, self.totals):
            if book is not None:
                book.add(
                    response.usage,
                    cached=response.cached,
                    attempts=response.attempts,
                    latency_s=response.latency_s,
                )

    def close(self) -> None:
        """Release the HTTP client and the cache."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
