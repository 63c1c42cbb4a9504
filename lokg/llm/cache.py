"""SQLite response cache keyed by model + messages + generation parameters."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from lokg.llm.accounting import Usage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    usage TEXT NOT NULL
)
"""


def cache_key(model: str, messages: Sequence[dict], params: dict) -> str:
    """sha256 of the canonical JSON of (model, messages, params)."""
    blob = json.dumps(
        {"model": model, "messages": list(messages), "params": params},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A persistent map from request to (answer text, usage).

    One SQLite file in WAL mode; safe to share between threads (one connection behind a
    lock) and between processes (SQLite's own locking). The full request is stored
    beside the key so a cache can be audited.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path}: not a usable LLM response cache ({exc})") from exc

    def get(self, key: str) -> tuple[str, Usage] | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT text, usage FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return row[0], Usage(**json.loads(row[1]))

    def put(self, key: str, model: str, request: dict, text: str, usage: Usage) -> None:
        usage_json = json.dumps(usage.__dict__, sort_keys=True)
        request_json = json.dumps(request, sort_keys=True, ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, request, text, usage) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, model, request_json, text, usage_json),
            )
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
