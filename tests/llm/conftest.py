"""Test double: a scripted OpenAI-protocol HTTP server on 127.0.0.1 that misbehaves on cue.

``ScriptedChatServer`` answers ``POST /v1/chat/completions`` from a script of steps
(one step per request, the last step repeating):

- ``("ok", text)``        200 with a well-formed completion and ``usage``
- ``("ok_no_usage", t)``  200 with a completion but no ``usage``
- ``("status", code)``    an HTTP error (429, 500, 503, 401, ...)
- ``("garbage",)``        200 with a body that is not JSON
- ``("empty",)``          200 with an empty assistant message
- ``("no_choices",)``     200 with ``{"choices": []}``
- ``("slow", s, text)``   waits ``s`` seconds, then answers like ``ok``
- ``("reset",)``          closes the connection without answering
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class ScriptedChatServer:
    def __init__(self) -> None:
        self.script: list[tuple] = [("ok", "Paris")]
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def _send(self, code: int, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, json.dumps({"data": [{"id": "double"}]}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                with outer._lock:
                    index = len(outer.requests)
                    outer.requests.append(payload)
                    step = outer.script[min(index, len(outer.script) - 1)]
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    self._answer(step, payload)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            def _completion(self, text: str, usage: bool = True) -> bytes:
                body = {
                    "id": "cmpl-double",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "double",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                }
                if usage:
                    body["usage"] = {
                        "prompt_tokens": 11,
                        "completion_tokens": 3,
                        "total_tokens": 14,
                    }
                return json.dumps(body).encode()

            def _answer(self, step: tuple, payload: dict) -> None:
                kind = step[0]
                if kind == "ok":
                    self._send(200, self._completion(step[1]))
                elif kind == "ok_no_usage":
                    self._send(200, self._completion(step[1], usage=False))
                elif kind == "status":
                    body = json.dumps({"error": {"message": "scripted", "code": step[1]}})
                    self._send(step[1], body.encode())
                elif kind == "garbage":
                    self._send(200, b"<html>this is not json")
                elif kind == "empty":
                    self._send(200, self._completion(""))
                elif kind == "no_choices":
                    self._send(200, json.dumps({"id": "x", "choices": []}).encode())
                elif kind == "slow":
                    time.sleep(step[1])
                    self._send(200, self._completion(step[2]))
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

    def start(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def scripted_server():
    server = ScriptedChatServer().start()
    yield server
    server.stop()
