"""Versioned artifact directories of the offline stages (TransE + SCOS, GAT).

Each stage writes into ``<dataset artifact dir>/<kind>-<key>/`` where ``key`` hashes the
configuration that produced it (so two configurations never overwrite each other) and then
records that directory as the latest of its kind in ``<kind>.latest``.  Later stages and
``evaluate.py`` use an explicit directory when given, else the latest one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

KINDS = ("scos", "gat")


def config_key(*nodes: Any) -> str:
    """A short stable hash of configuration nodes (DictConfigs are resolved first)."""
    plain = [
        OmegaConf.to_container(n, resolve=True) if isinstance(n, DictConfig) else n for n in nodes
    ]
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:10]


def stage_dir(root: Path, kind: str, key: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"artifact kind {kind!r}; expected one of {KINDS}")
    return Path(root) / f"{kind}-{key}"


def mark_latest(root: Path, kind: str, directory: Path) -> None:
    """Record ``directory`` as the latest ``kind`` artifact (atomic replace)."""
    pointer = Path(root) / f"{kind}.latest"
    tmp = pointer.with_name(f".{pointer.name}.tmp")
    tmp.write_text(Path(directory).name + "\n", encoding="utf-8")
    os.replace(tmp, pointer)


def latest(root: Path, kind: str) -> Path | None:
    """The latest ``kind`` artifact directory under ``root``, or ``None`` when there is none."""
    pointer = Path(root) / f"{kind}.latest"
    if not pointer.is_file():
        return None
    directory = Path(root) / pointer.read_text(encoding="utf-8").strip()
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{pointer} points to {directory.name}, which does not exist; re-run train.py"
        )
    return directory


def resolve(root: Path, kind: str, explicit: str | None) -> Path | None:
    """``explicit`` when given (must exist), else the latest ``kind`` artifact, else ``None``."""
    if explicit:
        path = Path(explicit)
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no {kind} artifact directory here")
        return path
    return latest(root, kind)
