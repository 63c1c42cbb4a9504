"""Write files and directories atomically (fill a temporary sibling, then rename it in
place: a run killed mid-write leaves the old file or nothing, never half of one), with the
manifest that lets a later load check them (:mod:`lokg.manifest`), and read a saved
artifact's versioned metadata back.

A write the operating system refuses (a full disk, a read-only or unwritable directory, an
I/O error) leaves nothing behind and raises an ``OSError`` that names the target (a write
error inside numpy or torch often carries no file name; one torch reports as a
``RuntimeError`` on a full disk is raised as ``ENOSPC``), which the entry points print as one
``error:`` line (:mod:`lokg.cli`)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lokg.errors import InputError
from lokg.manifest import write_file_manifest, write_manifest

#: free bytes under which a failed write is taken for a full disk (torch reports one as a
#: ``RuntimeError``, "file write failed")
_FULL_DISK_BYTES = 1 << 20


def _named_os_error(exc: BaseException, target: Path) -> OSError | None:
    """The ``OSError`` naming ``target`` to raise for ``exc`` raised while writing it, or
    ``None`` to let ``exc`` propagate unchanged."""
    if isinstance(exc, OSError):
        if exc.filename is not None or exc.errno is None:
            return None
        return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(target))
    if type(exc) is not RuntimeError:
        return None  # torch's "file write failed" only; an input error stays itself
    try:
        free = shutil.disk_usage(target.parent).free
    except OSError:
        return None
    if free >= _FULL_DISK_BYTES:
        return None
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))


@contextmanager
def atomic_file(
    target: str | os.PathLike, suffix: str = ".tmp", manifest: bool = False
) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``target`` to write; on success it replaces
    ``target`` (``os.replace``).

    The temporary name is ``.<name>.<random hex><suffix>`` in ``target``'s directory (pass
    ``suffix=".npz"`` for ``np.savez``, which appends ``.npz`` otherwise, or ``".png"`` for a
    figure whose format is read from the extension); the file is not created, so the writer
    creates it with the usual permissions.  On an exception the temporary file is removed,
    ``target`` is untouched and the exception propagates (named, see the module doc).  The
    directory must exist.  With ``manifest`` the file gets a sidecar manifest
    (:func:`lokg.manifest.write_file_manifest`), written just before the rename.
    """
    target = Path(target)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}{suffix}")
    try:
        yield tmp
        if manifest:
            write_file_manifest(tmp, final=target)
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        named = _named_os_error(exc, target)
        if named is not None:
            raise named from exc
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
def atomic_directory(
    target: str | os.PathLike, replace: bool = True, manifest: bool = True
) -> Iterator[Path]:
    """Yield a temporary sibling of ``target`` to fill; on success it becomes ``target``.

    On an exception the temporary directory is removed, ``target`` is untouched and the
    exception propagates (named, see the module doc).  With ``replace=False`` an existing
    ``target`` (e.g. written by a concurrent process) is kept and the new copy discarded.
    With ``manifest`` (the default) its ``MANIFEST.json`` is written last, before the rename
    (:func:`lokg.manifest.write_manifest`).
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as exc:
        inside = str(exc.filename or "").startswith(str(target.parent) + os.sep)
        if exc.errno is None or not inside:
            raise  # mkdir's error names the directory it could not make
        # the temporary directory refused: name the directory, not the temporary name
        raise OSError(exc.errno, exc.strerror, str(target.parent)) from exc
    try:
        yield tmp
        if manifest:
            write_manifest(tmp)
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
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        named = _named_os_error(exc, target)
        if named is not None:
            raise named from exc
        raise


def read_versioned_json(path: Path, version: int, what: str, remedy: str) -> dict:
    """The metadata file of a saved artifact, with a one-line error when it is missing
    (``<path>: no saved <what> here``) or of another format version (``...; <remedy>``)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no saved {what} here")
    meta = read_json(path, f"saved {what}", remedy)
    if meta.get("format_version") != version:
        raise ValueError(
            f"{path}: format_version {meta.get('format_version')!r}, expected {version}; {remedy}"
        )
    return meta


def read_json(path: Path, what: str, remedy: str) -> dict:
    """The JSON object in ``path``, with a one-line error naming it when it is not UTF-8 JSON
    holding an object (``<path>: not valid JSON (...), expected a <what> file; <remedy>``)."""
    try:
        body = json.loads(Path(path).read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise InputError(
            f"{path}: not valid UTF-8 (byte {err.start}), expected a {what} file; {remedy}"
        ) from None
    except json.JSONDecodeError as err:
        raise InputError(
            f"{path}: not valid JSON ({err}), expected a {what} file; {remedy}"
        ) from None
    if not isinstance(body, dict):
        raise InputError(f"{path}: not a JSON object, expected a {what} file; {remedy}")
    return body
