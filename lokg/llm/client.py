"""One chat client for every OpenAI-compatible endpoint (DeepSeek, DashScope, OpenAI,
the local llama.cpp server), built on the official ``openai`` package.

The client owns everything around a call: the API key (read from the environment
only, redacted from every message and log line it produces, never shown in ``repr``),
the response cache, retries with exponential backoff and jitter (or the server's
``Retry-After``), a bound on concurrent requests, and token/call accounting.
Generation defaults follow Table 4: temperature 0, generation limit 512.

What a failed attempt means (:func:`status_outcome`):

======================================================  =========  ======================
answer                                                  retried    then
======================================================  =========  ======================
timeout, connection reset, 408, 409, 425, 429, 5xx,     yes        :class:`LLMCallFailed`
200 with a body not UTF-8 / not JSON / without content,            (question failed)
or with negative token usage
other 4xx: 400, 413, 422 (prompt too long, filtered)    no         :class:`LLMCallFailed`
401, 402, 403, 404, 405 (key, credit, model, endpoint)  no         :class:`LLMFatalError`
======================================================  =========  ======================

A question that failed is recorded as failed and asked again by a rerun; a fatal answer
stops the run, and after it the client sends nothing more.

A reply cut at the generation limit (``finish_reason: "length"``) is an answer, but a
truncated one: it is returned with ``truncated=True`` (the question's record counts it),
never written to the response cache, and asked once more with the same limit when
``retry_truncated`` is set.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple, NoReturn
from urllib.parse import urlsplit

import openai

from lokg.errors import InputError
from lokg.llm.accounting import CallLedger, Usage, cl100k_count, messages_cl100k
from lokg.llm.cache import ResponseCache, cache_key
from lokg.llm.errors import LLMCallFailed, LLMFatalError, MissingAPIKeyError
from lokg.llm.ratelimit import RateLimiter

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
        truncated: the reply was cut at the generation limit (``finish_reason: "length"``);
            such a reply is never cached.
    """

    text: str
    usage: Usage
    cached: bool
    attempts: int
    latency_s: float
    truncated: bool = False


class _MalformedResponse(Exception):
    """The server answered 200 with no usable message (retryable)."""


class Completion(NamedTuple):
    """What :func:`parse_completion` reads from a 200 chat-completion body.

    Attributes:
        text: ``choices[0].message.content``, stripped (non-empty).
        prompt_tokens, completion_tokens: the reported ``usage`` (>= 0), or None when the
            server reported none (or not as integers).
        finish_reason: ``choices[0].finish_reason`` (``"stop"``, ``"length"``, ...), or None.
    """

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None

    @property
    def truncated(self) -> bool:
        """The reply was cut at the generation limit."""
        return self.finish_reason == "length"


#: Answers every later question would get too: the run stops before sending more
#: (401 bad key, 402 no credit, 403 no access, 404 unknown model or endpoint, 405 wrong
#: endpoint).
FATAL_STATUSES = frozenset({401, 402, 403, 404, 405})
#: Transient answers, retried (as is every 5xx): 408 request timeout, 409 conflict,
#: 425 too early, 429 rate limit. Any other 4xx (400, 413, 422, ...) rejects this
#: question's request: it fails the question at once (the same prompt would be rejected
#: again) and the run goes on.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
OUTCOMES = ("retry", "question", "fatal")
#: words in an error body that say the prompt is too long (they only label the reason)
_TOO_LONG = ("context length", "context_length", "context window", "maximum context",
             "too long", "too many tokens", "too large", "reduce the length")  # fmt: skip
#: what the API key is replaced with in every message and log line the client produces
MASK = "***"
_MIN_FRAGMENT = 8
_EXCERPT_CHARS = 200


def status_outcome(status: int) -> str:
    """What a non-2xx HTTP ``status`` means for the call: one of :data:`OUTCOMES`.

    ``"fatal"`` stops the run (:data:`FATAL_STATUSES`); ``"retry"`` retries with backoff
    (:data:`RETRYABLE_STATUSES`, 5xx, anything unexpected outside 4xx); ``"question"``
    fails this question at once (any other 4xx: the server rejected this request).
    """
    if status in FATAL_STATUSES:
        return "fatal"
    if status in RETRYABLE_STATUSES or not 400 <= status < 500:
        return "retry"
    return "question"


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Delay before retry number ``attempt`` (1-based): exponential with equal jitter.

    ``d = min(max_s, base_s * 2**(attempt-1))``; the delay is uniform in ``[d/2, d]``,
    so retries of parallel workers spread out but never collapse to zero.
    """
    d = min(max_s, base_s * 2.0 ** (attempt - 1))
    return d / 2.0 + rng.uniform(0.0, d / 2.0)


def retry_after_s(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a server asks for, in seconds, or None when it asks for none (or garbles it).

    Reads ``retry-after-ms`` (OpenAI's milliseconds) first, then ``Retry-After`` as
    seconds or as an HTTP-date (RFC 9110 §10.2.3); a date in the past means 0.
    """
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        pass
    else:
        return value if math.isfinite(value) and value >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def redact(text: str, secret: str | None) -> str:
    """``text`` with every trace of ``secret`` replaced by :data:`MASK`.

    Removes the whole secret, any fragment of it of 8 or more characters (a provider
    echoing the first part of a key), and masked echoes that end in its last four
    characters (``sk-...abcd``, ``sk-proj-****abcd``).
    """
    if not secret:
        return text
    out = text.replace(secret, MASK)
    if len(secret) > _MIN_FRAGMENT:
        while True:
            best = ""
            for i in range(len(secret) - _MIN_FRAGMENT + 1):
                j = i + _MIN_FRAGMENT
                if secret[i:j] not in out:
                    continue
                while j < len(secret) and secret[i : j + 1] in out:
                    j += 1
                if j - i > len(best):
                    best = secret[i:j]
            if not best:
                break
            out = out.replace(best, MASK)
    if len(secret) >= _MIN_FRAGMENT:
        tail = re.escape(secret[-4:])
        out = re.sub(r"[^\s\"']*(?:\*|\u2026|\.\.\.)[^\s\"']*?" + tail, MASK, out)
    return out


def _one_line(text: str, limit: int = _EXCERPT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _error_excerpt(body: bytes) -> str:
    """The server's own error message from an error body, on one short line."""
    text = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return _one_line(text)
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            err = err.get("message") or err.get("detail") or err
        elif "detail" in data:
            err = data["detail"]
        text = err if isinstance(err, str) else json.dumps(err, ensure_ascii=False)
    return _one_line(text)


def parse_completion(body: bytes) -> Completion:
    """The answer, token usage and finish reason of a 200 chat-completion body.

    Raises:
        _MalformedResponse: with a one-line reason, when the body is not UTF-8, not JSON,
            has no non-empty ``choices[0].message.content``, or reports a negative token
            count in ``usage``.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _MalformedResponse(
            f"body is not valid UTF-8 (byte {exc.start} of {len(body)})"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _MalformedResponse(
            f"body is not JSON ({exc.msg} at char {exc.pos} of {len(text)})"
        ) from None
    if not isinstance(data, dict):
        raise _MalformedResponse(f"body is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        if "error" in data:
            raise _MalformedResponse(f"error in a 200 body: {_error_excerpt(body)}")
        raise _MalformedResponse("no choices in the response")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise _MalformedResponse("no message content in the response")
    if not content.strip():
        raise _MalformedResponse("empty answer")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
    negative = [
        f"{name}={v}"
        for name, v in (("prompt_tokens", pt), ("completion_tokens", ct))
        if isinstance(v, int | float) and not isinstance(v, bool) and v < 0
    ]
    if negative:
        raise _MalformedResponse(f"negative token usage ({', '.join(negative)})")
    ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (pt, ct))
    finish = choices[0].get("finish_reason")
    return Completion(
        content.strip(),
        pt if ok else None,
        ct if ok else None,
        finish if isinstance(finish, str) else None,
    )


@dataclass(frozen=True)
class _Failure:
    """One failed attempt: what it means (one of :data:`OUTCOMES`), why, its class in one
    word (:attr:`LLMCallFailed.kind`), and the wait the server asked for."""

    outcome: str
    reason: str
    kind: str
    retry_after_s: float | None = None


@dataclass(frozen=True)
class _Answer:
    """One answered attempt: the text, its tokens, and whether it was cut at the limit."""

    text: str
    usage: Usage
    truncated: bool


#: the class of a retried HTTP status (5xx: ``ServerError``; others: ``UnexpectedStatus``)
_STATUS_KINDS = {408: "RequestTimeout", 409: "Conflict", 425: "TooEarly", 429: "RateLimited"}


def _status_kind(status: int) -> str:
    if status in _STATUS_KINDS:
        return _STATUS_KINDS[status]
    return "ServerError" if status >= 500 else "UnexpectedStatus"


#: the schemes an endpoint may use
URL_SCHEMES = ("http", "https")


def check_base_url(url: object, key: str = "base_url") -> str:
    """``url`` when it is an endpoint root a request can be sent to: an ``http://`` or
    ``https://`` URL with a host (and a numeric port, if any), no spaces.

    Raises:
        InputError: ``<key>='not a url'; expected an http:// or https:// URL with a host,
            e.g. https://api.openai.com/v1`` (``key``: the config key it came from).
    """
    parts = urlsplit(url) if isinstance(url, str) and not re.search(r"\s", url) else None
    try:
        ok = (
            parts is not None
            and parts.scheme in URL_SCHEMES
            and bool(parts.hostname)
            and (parts.port is None or parts.port > 0)
        )
    except ValueError:  # a port that is not a number, or out of range
        ok = False
    if not ok:
        raise InputError(
            f"{key}={url!r}; expected an http:// or https:// URL with a host, "
            "e.g. https://api.openai.com/v1"
        )
    return url  # type: ignore[return-value]


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
        name: the reader's name in labels and messages (default: ``model``).
        retry_after_max_s: the longest wait honoured from a server's ``Retry-After``
            (a longer one is cut to this); used instead of the jittered backoff.
        requests_per_minute: the most HTTP requests (retries included) begun per minute
            through this client, spaced evenly (:class:`~lokg.llm.ratelimit.RateLimiter`);
            None: no limit. Cache hits are not requests.
        retry_truncated: ask once more, with the same generation limit, when a reply is cut
            at it (``finish_reason: "length"``). Either way a truncated reply is returned
            with ``truncated=True`` and never cached; the retry's reply replaces it (its
            tokens are added), and if the retry fails the truncated reply stands.

    Raises:
        MissingAPIKeyError: ``api_key_env`` is set but the variable is not.
        ValueError: an out-of-range argument, or a ``base_url`` that is not an http(s) URL
            with a host (:func:`check_base_url`).

    Retried (up to ``max_attempts``, then :class:`LLMCallFailed`): timeouts, connection
    errors, HTTP 408/409/425/429 and 5xx, and 200 answers whose body is not UTF-8, not
    JSON, has no non-empty message, or reports negative token usage. Not retried: a 4xx
    that rejects this request (400, 413, 422, ...: :class:`LLMCallFailed` at once) and the
    run-fatal 401/402/403/404/405 (:class:`LLMFatalError`; the client then refuses every
    later call).
    """

    def __init__(
        self,
        model: str,
        base_url: str | None,
        *,
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
        retry_after_max_s: float = 60.0,
        requests_per_minute: float | None = None,
        retry_truncated: bool = False,
    ) -> None:
        if not model:
            raise ValueError("ChatClient: 'model' must be a non-empty model id")
        if max_attempts < 1:
            raise ValueError(f"ChatClient: 'max_attempts' must be >= 1, got {max_attempts}")
        if max_concurrency < 1:
            raise ValueError(f"ChatClient: 'max_concurrency' must be >= 1, got {max_concurrency}")
        if max_tokens < 1:
            raise ValueError(f"ChatClient: 'max_tokens' must be >= 1, got {max_tokens}")
        if timeout_s <= 0 or backoff_base_s < 0 or backoff_max_s < 0 or retry_after_max_s < 0:
            raise ValueError(
                "ChatClient: 'timeout_s' must be > 0, and backoff_base_s, backoff_max_s and "
                "retry_after_max_s >= 0"
            )
        if base_url is not None:
            check_base_url(base_url, "ChatClient: base_url")
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
        self.__secret = key if api_key_env is not None else None
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.timeout_s = float(timeout_s)
        self.max_attempts = int(max_attempts)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.retry_after_max_s = float(retry_after_max_s)
        self.max_concurrency = int(max_concurrency)
        self.retry_truncated = bool(retry_truncated)
        self.extra_body = dict(extra_body) if extra_body else None
        self.cache = ResponseCache(cache_path) if cache_path is not None else None
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self.rate = None if requests_per_minute is None else RateLimiter(requests_per_minute)
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()
        #: client-wide totals: every call, whether answered by the API or the cache.
        self.totals = CallLedger()
        #: the message of the run-fatal answer, once one came: no request is sent after it
        self._fatal: str | None = None

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

    def redact(self, text: str) -> str:
        """``text`` without the API key (see :func:`redact`)."""
        return redact(text, self.__secret)

    def _warn(self, msg: str, *args) -> None:
        log.warning("%s", self.redact(msg % args if args else msg))

    def _retry_delay(self, attempt: int, failure: _Failure) -> float:
        """The server's ``Retry-After`` (capped at ``retry_after_max_s``) when it sent one,
        else the jittered exponential backoff."""
        if failure.retry_after_s is not None:
            return min(failure.retry_after_s, self.retry_after_max_s)
        with self._rng_lock:
            return backoff_delay(attempt, self.backoff_base_s, self.backoff_max_s, self._rng)

    def _status_failure(self, status: int, headers: Mapping[str, str], body: bytes) -> _Failure:
        outcome = status_outcome(status)
        excerpt = _error_excerpt(body)
        if outcome == "fatal":
            what = {
                401: f"the API key in ${self.api_key_env} was refused"
                if self.api_key_env
                else "the endpoint requires an API key (set llm.client.api_key_env)",
                402: "payment required (is the account out of credit?)",
                403: f"the key may not use model {self.model!r}",
                404: f"model {self.model!r} or endpoint {self.base_url()} not found",
                405: f"{self.base_url()} does not accept chat completions",
            }[status]
            reason = f"llm={self.name}: HTTP {status}: {what}; stopping before more questions"
            reason = f"{reason} (server: {excerpt})" if excerpt else reason
            return _Failure("fatal", reason, "Fatal")
        if outcome == "question":
            too_long = status == 413 or any(w in excerpt.lower() for w in _TOO_LONG)
            label = "prompt too long" if too_long else "request rejected"
            kind = "ContextTooLong" if too_long else "BadRequest"
            return _Failure("question", f"HTTP {status} ({label}, not retried): {excerpt}", kind)
        reason = f"HTTP {status}: {excerpt}"
        return _Failure("retry", reason, _status_kind(status), retry_after_s(headers))

    def _attempt(self, messages: list[dict], max_tokens: int | None = None) -> _Answer | _Failure:
        """One HTTP attempt: the answer, or what went wrong (never raises for the server's
        behaviour; raises :class:`LLMFatalError` if an earlier call was fatal)."""
        kwargs = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
        }
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        with self._slots:
            if self._fatal is not None:  # another thread's call was fatal: send nothing
                raise LLMFatalError(self._fatal)
            if self.rate is not None:  # paced start, holding the slot: sends stay spaced
                self.rate.acquire()
                if self._fatal is not None:
                    raise LLMFatalError(self._fatal)
            try:
                raw = self._openai().chat.completions.with_raw_response.create(**kwargs)
                body = raw.http_response.content
            except openai.APITimeoutError:
                reason = f"no answer within timeout_s={self.timeout_s:g}"
                return _Failure("retry", reason, "Timeout")
            except openai.APIConnectionError as exc:
                cause = exc.__cause__
                detail = f"{type(cause).__name__}: {cause}" if cause else str(exc)
                reason = f"connection failed ({_one_line(detail)})"
                return _Failure("retry", reason, "ConnectionFailed")
            except openai.APIStatusError as exc:
                response = exc.response
                failure = self._status_failure(exc.status_code, response.headers, response.content)
                if failure.outcome == "fatal":  # latch it while holding the slot, so that
                    self._fatal = self.redact(failure.reason)  # no call queued behind sends
                return failure
            except openai.APIError as exc:
                reason = f"malformed response ({type(exc).__name__})"
                return _Failure("retry", reason, "MalformedResponse")
        try:
            done = parse_completion(body)
        except _MalformedResponse as exc:
            return _Failure("retry", f"malformed 200 response: {exc}", "MalformedResponse")
        in_cl = messages_cl100k(messages)
        out_cl = cl100k_count(done.text)
        pt, ct = done.prompt_tokens, done.completion_tokens
        if pt is not None and ct is not None:
            usage = Usage(pt, ct, in_cl, out_cl, billed_reported=True)
        else:
            log.warning("%s: response without usage; billed tokens fall back to cl100k", self.name)
            usage = Usage(in_cl, out_cl, in_cl, out_cl, billed_reported=False)
        return _Answer(done.text, usage, done.truncated)

    def chat(
        self,
        messages: Sequence[dict],
        ledger: CallLedger | None = None,
        max_tokens: int | None = None,
    ) -> ChatResponse:
        """Answer one chat request (cache first), recording it in ``ledger`` and ``totals``.

        ``max_tokens`` overrides the client's generation limit for this call (a baseline's
        intermediate prompts: ToG's ``max_length``); it is part of the cache key.

        A reply cut at the generation limit comes back with ``truncated=True`` and is not
        cached; with ``retry_truncated`` it is asked once more first (see the class).

        Raises:
            LLMCallFailed: this question's call failed: every attempt hit a transient
                fault, or the server rejected the request (400/413/422, ...).
            LLMFatalError: a run-fatal answer (401/402/403/404/405), now or in an earlier
                call of this client.
        """
        if self._fatal is not None:
            raise LLMFatalError(self._fatal)
        messages = [{"role": m["role"], "content": m["content"]} for m in messages]
        params = self.generation_params()
        if max_tokens is not None:
            if max_tokens < 1:
                raise ValueError(f"chat: max_tokens must be >= 1, got {max_tokens}")
            params["max_tokens"] = max_tokens
        key = cache_key(self.model, messages, params)
        start = time.perf_counter()
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                text, usage = hit
                response = ChatResponse(text, usage, True, 0, time.perf_counter() - start)
                self._record(response, ledger)
                return response
        answer, attempts = self._answer(messages, max_tokens)
        if isinstance(answer, _Failure):
            self._fail(answer, attempts, ledger)
        paid = answer.usage
        if answer.truncated and self.retry_truncated:
            self._warn(
                "%s: reply cut at max_tokens=%d (finish_reason=length); asking once more "
                "(retry_truncated=true)",
                self.name,
                params["max_tokens"],
            )
            again, more = self._answer(messages, max_tokens)
            attempts += more
            if isinstance(again, _Failure):
                if again.outcome == "fatal":
                    self._fail(again, attempts, ledger)
                self._warn(
                    "%s: the retry failed; keeping the truncated reply (%s)",
                    self.name,
                    again.reason,
                )
            else:  # the retry's reply replaces the truncated one; both were paid for
                answer, paid = again, paid + again.usage
        latency = time.perf_counter() - start
        response = ChatResponse(answer.text, paid, False, attempts, latency, answer.truncated)
        if answer.truncated:
            self._warn(
                "%s: reply cut at max_tokens=%d (finish_reason=length); recorded as truncated, "
                "not cached",
                self.name,
                params["max_tokens"],
            )
        elif self.cache is not None:
            request = {"model": self.model, "messages": messages, "params": params}
            self.cache.put(key, self.model, request, answer.text, answer.usage)
        self._record(response, ledger)
        return response

    def _answer(
        self, messages: list[dict], max_tokens: int | None
    ) -> tuple[_Answer | _Failure, int]:
        """Attempt until an answer comes or the call fails: ``(answer or last failure,
        attempts made)`` (the failure's reason redacted)."""
        failure = _Failure("retry", "no attempt made", "NoAttempt")
        attempt = 0
        while attempt < self.max_attempts:
            attempt += 1
            outcome = self._attempt(messages, max_tokens)
            if not isinstance(outcome, _Failure):
                return outcome, attempt
            failure = _Failure(
                outcome.outcome, self.redact(outcome.reason), outcome.kind, outcome.retry_after_s
            )
            if failure.outcome != "retry":
                break
            self._warn(
                "%s: attempt %d/%d failed (%s)",
                self.name,
                attempt,
                self.max_attempts,
                failure.reason,
            )
            if attempt < self.max_attempts:
                delay = self._retry_delay(attempt, failure)
                if failure.retry_after_s is not None and failure.retry_after_s > delay:
                    self._warn(
                        "%s: the server asked to wait %.1f s; waiting retry_after_max_s=%g s",
                        self.name,
                        failure.retry_after_s,
                        delay,
                    )
                time.sleep(delay)
        return failure, attempt

    def _fail(self, failure: _Failure, attempts: int, ledger: CallLedger | None) -> NoReturn:
        """Record a failed call's ``attempts`` in ``ledger`` and ``totals``, then raise what
        ``failure`` means (see :meth:`chat`)."""
        for book in (ledger, self.totals):
            if book is not None:
                book.add_failed_attempts(attempts)
        if failure.outcome == "fatal":
            raise LLMFatalError(failure.reason)
        if failure.outcome == "question":
            self._warn("%s: %s", self.name, failure.reason)
        raise LLMCallFailed(
            failure.reason, attempts, retryable=failure.outcome == "retry", kind=failure.kind
        )

    def _record(self, response: ChatResponse, ledger: CallLedger | None) -> None:
        for book in (ledger, self.totals):
            if book is not None:
                book.add(
                    response.usage,
                    cached=response.cached,
                    attempts=response.attempts,
                    latency_s=response.latency_s,
                    truncated=response.truncated,
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
