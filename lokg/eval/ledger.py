"""The test ledger: one line per (configuration, dataset) reported on ``split=test``.

Settings are chosen on ``split=val``; the test split is looked at once per configuration and
the record says so.  Every bench run on ``--split test`` appends one JSON line per
configuration and dataset to the ledger (``bench/test_ledger.jsonl`` in the repository) with
the date, the commit, the configuration's hash and its numbers, and refuses to measure a
configuration whose hash already has a line unless the caller gives a reason
(``--rerun-test "<reason>"``, recorded in the new line).  The README's tables cite the lines.

The hash (:func:`lokg.evaluate.ledger_key`) covers the composed config without machine
paths, but not the trained artifacts: retraining the same configuration and measuring its
test split again is a rerun.  A config key added later at the value that runs as before it
existed leaves the hash as it was; the hashes a configuration had meanwhile are its
:attr:`LedgerKey.earlier` hashes, and their lines are its lines too.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lokg.errors import InputError

__all__ = ["LedgerEntry", "LedgerKey", "TestLedger", "git_commit"]


@dataclass(frozen=True)
class LedgerEntry:
    """One test report.

    Attributes:
        bench: the command that measured it (``bench_retrieval``, ``bench_budget_curve``).
        configuration: the row's label (``learned``, ``paper``, ...).
        dataset: the dataset config name (``pq2h``).
        config_hash: :func:`lokg.evaluate.ledger_key` of the composed config.
        numbers: the reported metrics (Hits@1, coverage, ... and ``n``).
        settings: what else identifies the report (split grouping, budget).
        date: UTC time of the report, ISO 8601.
        commit: ``git rev-parse --short HEAD`` of the code measured (``+dirty`` when the
            working tree had changes).
        rerun_reason: why a configuration already in the ledger was measured again.
    """

    bench: str
    configuration: str
    dataset: str
    config_hash: str
    numbers: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)
    date: str = ""
    commit: str = ""
    rerun_reason: str | None = None


@dataclass(frozen=True)
class LedgerKey:
    """A configuration's ledger hash (:func:`lokg.evaluate.ledger_key`), recorded in the lines
    it appends, and the hashes the same configuration was recorded under before
    (``earlier``: while a config key that leaves its runs unchanged was in the hash)."""

    hash: str
    earlier: tuple[str, ...] = ()

    def matches(self, config_hash: str) -> bool:
        return config_hash == self.hash or config_hash in self.earlier


def git_commit(cwd: str | os.PathLike | None = None) -> str:
    """The short commit hash of ``cwd``'s repository (``+dirty`` with uncommitted changes to
    tracked files), or ``unknown`` outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True, text=True,
            check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


class TestLedger:
    """The ledger file at ``path`` (created on the first :meth:`append`)."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def lines(self) -> list[tuple[int, dict]]:
        """``(line number, entry)`` for every line; a line that is not a JSON object with a
        ``config_hash`` is a :class:`~lokg.errors.InputError` naming it."""
        if not self.path.is_file():
            return []
        out = []
        for lineno, text in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not text.strip():
                continue
            try:
                entry = json.loads(text)
            except json.JSONDecodeError as err:
                raise InputError(f"{self.path}:{lineno}: invalid JSON ({err.msg})") from None
            if not isinstance(entry, dict) or "config_hash" not in entry:
                raise InputError(
                    f"{self.path}:{lineno}: expected a ledger entry (a JSON object with a "
                    "config_hash)"
                )
            out.append((lineno, entry))
        return out

    def find(self, key: LedgerKey | str) -> list[tuple[int, dict]]:
        """The lines that report ``key``'s configuration (under any of its hashes)."""
        key = key if isinstance(key, LedgerKey) else LedgerKey(key)
        return [(n, e) for n, e in self.lines() if key.matches(e["config_hash"])]

    def check(self, key: LedgerKey | str, what: str, rerun_reason: str | None = None) -> None:
        """Refuse a second test report of ``key``'s configuration without a reason: an
        :class:`~lokg.errors.InputError` naming ``what`` and the earlier line."""
        earlier = self.find(key)
        if earlier and not (rerun_reason and rerun_reason.strip()):
            n, e = earlier[-1]
            raise InputError(
                f"{what}: its test split was already reported ({self.path}:{n}, "
                f"{e.get('date', '?')}, commit {e.get('commit', '?')}); choose on --split val, "
                'or measure again with --rerun-test "<reason>"'
            )

    def append(self, entry: LedgerEntry) -> int:
        """Append ``entry`` (date and commit filled in when empty); its line number."""
        now = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
        record = asdict(entry)
        record["date"] = record["date"] or now
        record["commit"] = record["commit"] or git_commit(self.path.parent)
        if record["rerun_reason"] is None:
            del record["rerun_reason"]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return len(self.path.read_text(encoding="utf-8").splitlines())
