"""Write files and directories atomically (fill a temporary sibling, then rename it in
place: a run killed mid-write leaves the old file or nothing, never half of one) and read a
saved artifact's versioned metadata back."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_file(target: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a fresh temporary path beside ``target`` to write; on success it replaces
    ``target`` (``os.replace``).

    The temporary name is ``.<name>.<random hex><suffix>`` in ``target``'s directory (pass
    ``suffix=".npz"`` for ``np.savez``, which appends ``.npz`` otherwise, or ``".png"`` for a
    figure whose format is read from the extension); the file is not created, so the writer
    creates it with the usual permissions.  On an exception the temporary file is removed,
    ``target`` is untouched and the exception propagates.  The directory must exist.
    """
    target = Path(target)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}{suffix}")
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(target: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``target`` through :func:`atomic_file`."""
    target = Path(target)
    with atomic_file(target) as tmp:
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
    return target


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
