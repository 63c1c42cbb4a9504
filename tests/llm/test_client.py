"""ChatClient against the scripted test-double server: retries, faults, cache, accounting."""

from __future__ import annotations

import random
import threading

import pytest

from lokg.llm import (
    CallLedger,
    ChatClient,
    LLMCallFailed,
    LLMFatalError,
    MissingAPIKeyError,
    backoff_delay,
    cl100k_count,
)

MSG = [{"role": "user", "content": "Which city is the capital of France?"}]


def make_client(server, **kw) -> ChatClient:
    kw.setdefault("backoff_base_s", 0.001)
    kw.setdefault("backoff_max_s", 0.002)
    kw.setdefault("timeout_s", 5.0)
    return ChatClient(model="double-model", base_url=server.base_url, **kw)


def test_ok_call_records_billed_usage_and_cl100k(scripted_server):
    client = make_client(scripted_server)
    ledger = CallLedger()
    resp = client.chat(MSG, ledger=ledger)
    assert resp.text == "Paris"
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (11, 3)
    assert resp.usage.prompt_tokens_cl100k == cl100k_count(MSG[0]["content"])
    assert resp.usage.completion_tokens_cl100k == cl100k_count("Paris")
    assert ledger.as_dict()["calls"] == 1 and ledger.tokens == 14
    sent = scripted_server.requests[0]
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 512
    assert sent["model"] == "double-model"


@pytest.mark.parametrize(
    "fault",
    [
        ("status", 429),
        ("status", 500),
        ("status", 503),
        ("garbage",),
        ("empty",),
        ("no_choices",),
        ("reset",),
    ],
)
def test_transient_fault_is_retried_then_succeeds(scripted_server, fault):
    scripted_server.script = [fault, fault, ("ok", "Paris")]
    ledger = CallLedger()
    resp = make_client(scripted_server, max_attempts=3).chat(MSG, ledger=ledger)
    assert resp.text == "Paris" and resp.attempts == 3
    assert len(scripted_server.requests) == 3
    assert ledger.calls == 1 and ledger.attempts == 3


def test_slow_answer_times_out_and_is_retried(scripted_server):
    scripted_server.script = [("slow", 1.0, "late"), ("ok", "Paris")]
    resp = make_client(scripted_server, timeout_s=0.3, max_attempts=2).chat(MSG)
    assert resp.text == "Paris" and resp.attempts == 2


def test_persistent_fault_raises_call_failed_after_max_attempts(scripted_server):
    scripted_server.script = [("status", 500)]
    ledger = CallLedger()
    with pytest.raises(LLMCallFailed, match=r"after 4 attempt\(s\): HTTP 500") as info:
        make_client(scripted_server, max_attempts=4).chat(MSG, ledger=ledger)
    assert info.value.attempts == 4
    assert len(scripted_server.requests) == 4
    assert ledger.calls == 0 and ledger.attempts == 4


@pytest.mark.parametrize("code", [401, 402, 403, 404, 405])
def test_run_fatal_answer_is_not_retried_and_stops_every_later_call(scripted_server, code):
    scripted_server.script = [("status", code), ("ok", "Paris")]
    client = make_client(scripted_server, max_attempts=5)
    with pytest.raises(LLMFatalError, match=f"HTTP {code}"):
        client.chat(MSG)
    with pytest.raises(LLMFatalError, match=f"HTTP {code}"):  # nothing more is sent
        client.chat([{"role": "user", "content": "another question"}])
    assert len(scripted_server.requests) == 1


@pytest.mark.parametrize("code", [400, 413, 422])
def test_rejected_request_fails_the_question_at_once(scripted_server, code):
    scripted_server.script = [("status", code), ("ok", "Paris")]
    client = make_client(scripted_server, max_attempts=5)
    with pytest.raises(LLMCallFailed, match=f"HTTP {code}") as info:
        client.chat(MSG)
    assert info.value.attempts == 1 and len(scripted_server.requests) == 1
    assert client.chat([{"role": "user", "content": "next"}]).text == "Paris"  # run goes on


def test_missing_usage_falls_back_to_cl100k(scripted_server):
    scripted_server.script = [("ok_no_usage", "Paris")]
    resp = make_client(scripted_server).chat(MSG)
    assert not resp.usage.billed_reported
    assert resp.usage.prompt_tokens == resp.usage.prompt_tokens_cl100k
    assert resp.usage.completion_tokens == cl100k_count("Paris")


def test_cache_makes_the_second_identical_call_free(scripted_server, tmp_path):
    cache = tmp_path / "cache.sqlite"
    client = make_client(scripted_server, cache_path=cache)
    first = client.chat(MSG)
    ledger = CallLedger()
    second = client.chat(MSG, ledger=ledger)
    assert len(scripted_server.requests) == 1
    assert second.cached and second.attempts == 0 and second.text == first.text
    assert second.usage == first.usage  # the answer's cost is kept for tok/q
    assert ledger.calls == 1 and ledger.cached_calls == 1
    client.close()
    # persistent: a new client (a rerun) reads the same file
    again = make_client(scripted_server, cache_path=cache).chat(MSG)
    assert again.cached and len(scripted_server.requests) == 1


def test_cache_key_separates_model_messages_and_params(scripted_server, tmp_path):
    cache = tmp_path / "cache.sqlite"
    make_client(scripted_server, cache_path=cache).chat(MSG)
    make_client(scripted_server, cache_path=cache, max_tokens=64).chat(MSG)
    make_client(scripted_server, cache_path=cache).chat([{"role": "user", "content": "other"}])
    ChatClient("other-model", scripted_server.base_url, cache_path=cache).chat(MSG)
    assert len(scripted_server.requests) == 4


def test_failed_call_is_not_cached(scripted_server, tmp_path):
    scripted_server.script = [("status", 500), ("ok", "Paris")]
    client = make_client(scripted_server, cache_path=tmp_path / "c.sqlite", max_attempts=1)
    with pytest.raises(LLMCallFailed):
        client.chat(MSG)
    assert client.chat(MSG).text == "Paris"


def test_concurrency_is_bounded_by_the_client(scripted_server):
    scripted_server.script = [("slow", 0.15, "Paris")]
    client = make_client(scripted_server, max_concurrency=2)
    threads = [
        threading.Thread(target=client.chat, args=([{"role": "user", "content": f"q{i}"}],))
        for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(scripted_server.requests) == 6
    assert scripted_server.max_in_flight == 2
    assert client.totals.calls == 6


def test_missing_api_key_is_one_line_error_at_construction(monkeypatch):
    monkeypatch.delenv("LOKG_TEST_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="LOKG_TEST_KEY is not set") as info:
        ChatClient("m", "http://127.0.0.1:9/v1", api_key_env="LOKG_TEST_KEY", name="deepseek")
    assert "\n" not in str(info.value)


def test_api_key_never_appears_in_repr_or_logs(monkeypatch, scripted_server, caplog):
    secret = "sk-very-secret-123"
    monkeypatch.setenv("LOKG_TEST_KEY", secret)
    scripted_server.script = [("status", 500), ("ok", "Paris")]
    with caplog.at_level("DEBUG"):
        client = make_client(scripted_server, api_key_env="LOKG_TEST_KEY", max_attempts=2)
        client.chat(MSG)
    assert secret not in repr(client) and secret not in str(vars(client).get("name"))
    assert secret not in caplog.text


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"max_attempts": 0}, "max_attempts"), ({"max_concurrency": 0}, "max_concurrency"),
     ({"max_tokens": 0}, "max_tokens"), ({"model": ""}, "model")],
)  # fmt: skip
def test_bad_arguments_are_rejected(kw, match):
    args = {"model": "m", "base_url": "http://127.0.0.1:9/v1", **kw}
    with pytest.raises(ValueError, match=match):
        ChatClient(**args)


def test_backoff_is_exponential_with_equal_jitter():
    rng = random.Random(0)
    for attempt, full in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 30.0)]:
        d = backoff_delay(attempt, base_s=1.0, max_s=30.0, rng=rng)
        assert full / 2 <= d <= full
    delays = {backoff_delay(3, 1.0, 30.0, rng) for _ in range(20)}
    assert len(delays) > 1  # jittered
