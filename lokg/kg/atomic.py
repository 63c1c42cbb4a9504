"""Saved artifacts: write a directory atomically (build it under a temporary name, then
rename it in place) and read its versioned metadata back."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_directory(target: str | os.PathLike, replace: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling of ``target`` to fill; on success it becomes ``target``.

    On an exception the temporary directory is removed and ``target`` is untouched.  With
    ``replace=False`` an existing ``target`` (e.g. written by a concurrent process) is kept
    and the new copy discarded.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
        if target.exists():
            if not replace:
                shutil.rmtree(tmp)
                return
            old = target.with_name(f".{target.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
            tmp.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_versioned_json(path: Path, version: int, what: str, remedy: str) -> dict:
    """The metadata file of a saved artifact, with a one-line error when it is missing
    (``<path>: no saved <what> here``) or of another format version (``...; <remedy>``)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no saved {what} here")
    meta = json.loads(path.read_text(encoding="utf-8"))
    if meta.get("format_version") != version:
        raise ValueError(
            f"{path}: format_version {meta.get('format_version')!r}, expected {version}; {remedy}"
        )
    return meta
