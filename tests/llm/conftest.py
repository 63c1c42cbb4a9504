"""Test double: a scripted OpenAI-protocol HTTP server on 127.0.0.1 that misbehaves on cue.

``ScriptedOpenAIDouble`` answers ``POST /v1/chat/completions`` with one step per request:
from ``route(payload)`` when a route is set (a reply chosen by the prompt), else from
``script`` (request ``i`` gets ``script[i]``, the last step repeating). Steps:

- ``("ok", text)``              200 with a well-formed completion and ``usage``
- ``("ok_no_usage", text)``     200 with a completion but no ``usage``
- ``("length", text)``          200 with a completion cut at the limit (``finish_reason:
  "length"``)
- ``("usage", text, usage)``    200 with a completion whose ``usage`` is the dict ``usage``
- ``("status", code)``          an HTTP error (429, 500, 503, 401, ...) with a JSON error body;
  ``("status", code, message)`` sets the body's message, ``("status", code, message,
  headers)`` adds response headers (``{"Retry-After": "1"}``)
- ``("context_length",)``       400 with OpenAI's ``context_length_exceeded`` body
- ``("echo_key", code)``        ``code`` with a body that echoes the bearer token it was sent
  (some providers do) — and ``("echo_key", code, "masked")`` echoes ``sk-…abcd`` instead
- ``("garbage",)``              200 with a body that is not JSON
- ``("non_utf8",)``             200 with a body that is not valid UTF-8
- ``("truncated",)``            200 with the first half of a valid completion body
- ``("empty",)``                200 with an empty assistant message
- ``("no_choices",)``           200 with ``{"choices": []}``
- ``("no_content",)``           200 with a message that has no ``content``
- ``("slow", s, text)``         waits ``s`` seconds, then answers like ``ok``
- ``("delay", s, step)``        waits ``s`` seconds, then answers with ``step``
- ``("hang",)``                 never answers (until the double stops); the client times out
- ``("reset",)``                closes the connection without answering

``requests`` holds every request body in arrival order and ``arrivals`` the
``time.monotonic()`` of each (to measure the client's waits between retries).

tests/reliability loads this module by path (pytest's importlib mode makes conftest modules
unimportable by name), so it stays free of test-directory imports.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

CONTEXT_LENGTH_MESSAGE = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9123 tokens. Please reduce the length of the messages."
)


def completion_body(text: str, usage: bool | dict = True, finish_reason: str = "stop") -> bytes:
    """An OpenAI chat-completion body answering ``text`` (``usage``: True for a well-formed
    one, False for none, or the dict to send)."""
    body: dict = {
        "id": "cmpl-double",
        "object": "chat.completion",
        "created": 0,
        "model": "double",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if isinstance(usage, dict):
        body["usage"] = usage
    elif usage:
        body["usage"] = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    return json.dumps(body).encode()


def error_body(code: int, message: str, kind: str = "invalid_request_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode()


class ScriptedOpenAIDouble:
    """A fake OpenAI-protocol server on 127.0.0.1 (a test double, never a real endpoint)."""

    def __init__(self) -> None:
        self.script: list[tuple] = [("ok", "Paris")]
        self.route: Callable[[dict], tuple] | None = None
        self.requests: list[dict] = []
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def _send(self, code: int, body: bytes, headers: dict | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, str(value))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up first
                    self.close_connection = True

            def do_GET(self) -> None:
                self._send(200, json.dumps({"data": [{"id": "double"}]}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                with outer._lock:
                    index = len(outer.requests)
                    outer.requests.append(payload)
                    outer.arrivals.append(time.monotonic())
                    if outer.route is not None:
                        step = outer.route(payload)
                    else:
                        step = outer.script[min(index, len(outer.script) - 1)]
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    self._answer(step)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            def _answer(self, step: tuple) -> None:
                kind = step[0]
                if kind == "ok":
                    self._send(200, completion_body(step[1]))
                elif kind == "ok_no_usage":
                    self._send(200, completion_body(step[1], usage=False))
                elif kind == "length":
                    self._send(200, completion_body(step[1], finish_reason="length"))
                elif kind == "usage":
                    self._send(200, completion_body(step[1], usage=step[2]))
                elif kind == "status":
                    message = step[2] if len(step) > 2 else "scripted"
                    headers = step[3] if len(step) > 3 else None
                    self._send(step[1], error_body(step[1], message), headers)
                elif kind == "context_length":
                    self._send(400, error_body(400, CONTEXT_LENGTH_MESSAGE))
                elif kind == "echo_key":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    if len(step) > 2 and step[2] == "masked":
                        token = f"{token[:3]}\u2026{token[-4:]}"
                    message = f"Incorrect API key provided: {token}. Check your key."
                    self._send(step[1], error_body(step[1], message, "invalid_api_key"))
                elif kind == "garbage":
                    self._send(200, b"<html>this is not json")
                elif kind == "non_utf8":
                    self._send(200, b'{"choices": [{"message": {"content": "\xff\xfe Paris"}}]}')
                elif kind == "truncated":
                    body = completion_body("Paris")
                    self._send(200, body[: len(body) // 2])
                elif kind == "empty":
                    self._send(200, completion_body(""))
                elif kind == "no_choices":
                    self._send(200, json.dumps({"id": "x", "choices": []}).encode())
                elif kind == "no_content":
                    choice = {"index": 0, "message": {"role": "assistant"}}
                    self._send(200, json.dumps({"id": "x", "choices": [choice]}).encode())
                elif kind == "slow":
                    time.sleep(step[1])
                    self._send(200, completion_body(step[2]))
                elif kind == "delay":
                    time.sleep(step[1])
                    self._answer(step[2])
                elif kind == "hang":
                    outer._stopping.wait(30.0)
                    self.close_connection = True
                elif kind == "reset":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                else:
                    raise AssertionError(f"unknown script step {step!r}")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def gaps(self) -> list[float]:
        """Seconds between consecutive requests."""
        return [b - a for a, b in itertools.pairwise(self.arrivals)]

    def start(self) -> ScriptedOpenAIDouble:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hung handlers
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def scripted_server():
    server = ScriptedOpenAIDouble().start()
    yield server
    server.stop()
