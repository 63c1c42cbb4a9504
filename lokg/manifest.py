"""Manifests: what every artifact file held when it was written, checked when it is read.

A directory written by :func:`lokg.atomic_io.atomic_directory` gets ``MANIFEST.json`` as its
last file, before the rename that publishes it; a single file (an embedding-cache shard, a
retriever cache, a resume checkpoint) gets a sidecar ``<name>.manifest.json``
(:func:`write_file_manifest`). Format (``format_version`` 1)::

    {"format": "lokg-manifest", "format_version": 1, "hash": "blake2b-256",
     "files": {"kg/MANIFEST.json": {"size": 812, "blake2b": "<64 hex>"},
               "triples.npy": {"size": 320, "blake2b": "...",
                               "npy": {"shape": [8, 3], "dtype": "<i8", "fortran": false}}}}

Paths are relative, ``/``-separated and sorted. A sub-directory holding its own manifest (a
``kg/`` inside a SCOS result, a SCOS result inside a ``scos-*`` artifact) is listed by its
``MANIFEST.json`` alone: each level is checked by its own loader, and the parent's entry
covers the child's manifest. Files added later beside a manifest (a trained ``qgat-*/`` in a
dataset's directory, ``*.latest`` pointers, ``retriever_cache/``) are not in it.

**What a load checks** (:func:`check_directory`, :func:`check_file`): the manifest parses
(UTF-8 JSON of this format), every listed file exists with the recorded size, and its
blake2b digest matches when the file is at most :data:`HASH_LIMIT` bytes. A larger file is
checked by size and, for ``.npy``, by its header (shape, dtype, order) against the recorded
one: hashing a multi-GB memory-mapped ``triples.npy`` or checkpoint on every open would cost
seconds per file and read pages the memory map never touches, while truncation (the common
damage: a full disk, a killed copy) changes the size and a garbled header changes the
header. The full hash of every file, whatever its size, runs at build time (writing the
manifest) and on load with ``verify=true`` (:func:`set_full_check`). Each file is checked once
per process (memoised by path, size and modification time).

A failed check raises :class:`lokg.errors.CorruptArtifact`: one line naming the file, what is
wrong and the command that rebuilds it (:func:`rebuild_hint`, from the artifact kind in the
path); a cache's reader catches it, counts the file and rebuilds it. A directory or file
without a manifest was written before lokg kept them: it is loaded unchecked (the functions
return ``False``; the loaders' own shape checks still apply).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from lokg.errors import CorruptArtifact

__all__ = [
    "HASH_LIMIT",
    "MANIFEST",
    "check_directory",
    "check_file",
    "describe_file",
    "rebuild_hint",
    "set_full_check",
    "sidecar",
    "write_file_manifest",
    "write_manifest",
]

#: the manifest of a directory
MANIFEST = "MANIFEST.json"
#: suffix of a single file's manifest, ``<name>.manifest.json`` beside it
SIDECAR_SUFFIX = ".manifest.json"
#: files larger than this are checked by size and ``.npy`` header on load, hashed only with
#: ``verify=true`` (64 MiB: about 0.1 s of blake2b on one core)
HASH_LIMIT = 64 * 2**20
_FORMAT = "lokg-manifest"
_VERSION = 1
_HASH = "blake2b-256"
_CHUNK = 1 << 20

_state = {"full": False}
_checked: set[tuple[str, int, int, bool]] = set()


def set_full_check(enabled: bool) -> None:
    """Hash every file on load, whatever its size (``verify=true``); off by default."""
    _state["full"] = bool(enabled)


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _npy_header(path: Path) -> dict | None:
    """``{"shape", "dtype", "fortran"}`` of an ``.npy`` file's header, ``None`` when it has none
    that numpy reads."""
    import numpy as np

    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, dtype = read(fh)
    except Exception:  # a damaged header fails numpy's parser in many ways (TokenError...)
        return None
    return {"shape": list(shape), "dtype": dtype.str, "fortran": bool(fortran)}


def describe_file(path: str | os.PathLike) -> dict:
    """The manifest entry of ``path``: size, blake2b and, for ``.npy``, its header."""
    path = Path(path)
    entry: dict = {"size": path.stat().st_size, "blake2b": _digest(path)}
    if path.suffix == ".npy":
        header = _npy_header(path)
        if header is not None:
            entry["npy"] = header
    return entry


def _listed_files(directory: Path) -> list[str]:
    """The files a manifest of ``directory`` lists (see the module doc), relative, sorted."""
    out: list[str] = []
    for here, dirs, files in os.walk(directory):
        rel = Path(here).relative_to(directory)
        if rel != Path(".") and (Path(here) / MANIFEST).is_file():
            out.append((rel / MANIFEST).as_posix())
            dirs.clear()
            continue
        dirs.sort()
        out += [(rel / f).as_posix() for f in files if not (rel == Path(".") and f == MANIFEST)]
    return sorted(out)


def _body(entries: dict[str, dict]) -> str:
    return json.dumps(
        {"format": _FORMAT, "format_version": _VERSION, "hash": _HASH, "files": entries},
        indent=1,
        sort_keys=True,
    )


def _write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling and a rename (this module sits
    below :mod:`lokg.atomic_io`, which calls it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_manifest(directory: str | os.PathLike) -> Path:
    """Write ``directory/MANIFEST.json`` over its files (the full hash of each)."""
    directory = Path(directory)
    entries = {rel: describe_file(directory / rel) for rel in _listed_files(directory)}
    return _write(directory / MANIFEST, _body(entries) + "\n")


def sidecar(path: str | os.PathLike) -> Path:
    """Where the manifest of the single file ``path`` lives: ``<name>.manifest.json``."""
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def write_file_manifest(path: str | os.PathLike, final: str | os.PathLike | None = None) -> Path:
    """Write the sidecar manifest of one file. ``final``: the name the file will have (a
    temporary file is described before its rename; default ``path`` itself)."""
    path = Path(path)
    final = Path(final) if final is not None else path
    return _write(sidecar(final), _body({final.name: describe_file(path)}) + "\n")


# --------------------------------------------------------------------------- checks
#: artifact kinds in a path -> the command that rebuilds them
_REBUILD = (
    (re.compile(r"^scos-[0-9a-f]+$"), "python train.py experiment=train_transe"),
    (re.compile(r"^gat-[0-9a-f]+$"), "python train.py experiment=train_gat"),
    (re.compile(r"^qgat-[0-9a-f]+$"), "python train.py experiment=train_walk"),
    (re.compile(r"^rerank-[0-9a-f]+$"), "python train.py experiment=train_rerank"),
)


def rebuild_hint(path: str | os.PathLike) -> str:
    """What rebuilds the artifact ``path`` belongs to, from the kind named in the path: a
    ``scos-*``/``gat-*``/``qgat-*``/``rerank-*`` directory, a resume checkpoint, a dataset's
    prepared data (``data/<name>-<fingerprint>/``)."""
    parts = Path(path).parts
    for part in reversed(parts):
        for pattern, command in _REBUILD:
            if pattern.match(part):
                return f"rebuild it with `{command}` and this run's data overrides"
    if "resume" in parts:
        return "delete it: the same command then trains from the start"
    if "data" in parts:
        return (
            "rerun train.py or evaluate.py with this dataset's overrides: prepared data that "
            "fails its check is prepared again from the source"
        )
    return "rebuild it with the train.py command that wrote it"


def _read_manifest(path: Path, remedy: str) -> dict:
    def corrupt(problem: str) -> CorruptArtifact:
        return CorruptArtifact(path, problem, remedy)

    try:
        body = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as err:
        raise corrupt(f"not valid UTF-8 (byte {err.start})") from None
    except ValueError as err:
        raise corrupt(f"not valid JSON ({err})") from None
    ok = isinstance(body, dict) and body.get("format") == _FORMAT
    if not ok or body.get("format_version") != _VERSION or not isinstance(body.get("files"), dict):
        raise corrupt(f"not a {_FORMAT} version {_VERSION} file")
    return body["files"]


def _check_entry(path: Path, entry: object, remedy: str) -> None:
    """Raise :class:`CorruptArtifact` unless ``path`` is what its manifest ``entry`` says."""
    if not isinstance(entry, dict) or not isinstance(entry.get("size"), int):
        raise CorruptArtifact(path, "its manifest entry is malformed", remedy)
    if not path.is_file():
        raise CorruptArtifact(path, "missing (listed in its manifest)", remedy)
    stat = path.stat()
    full = _state["full"]
    key = (str(path), stat.st_size, stat.st_mtime_ns, full)
    if key in _checked:
        return
    if stat.st_size != entry["size"]:
        what = "empty" if stat.st_size == 0 else "truncated" if stat.st_size < entry["size"] else ""
        problem = f"{what or 'wrong size'}: {stat.st_size:,} bytes, {entry['size']:,} when written"
        raise CorruptArtifact(path, problem, remedy)
    if full or stat.st_size <= HASH_LIMIT:
        if _digest(path) != entry.get("blake2b"):
            problem = "its contents changed since it was written (checksum)"
            raise CorruptArtifact(path, problem, remedy)
    elif "npy" in entry and _npy_header(path) != entry["npy"]:
        raise CorruptArtifact(path, "its .npy header differs from the one written", remedy)
    _checked.add(key)


def check_directory(
    directory: str | os.PathLike, names: list[str] | None = None, remedy: str | None = None
) -> bool:
    """Check ``directory``'s files against its ``MANIFEST.json`` (``names``: only these,
    relative paths; a name the manifest does not list is not checked). Returns ``False``
    when the directory has no manifest (written before lokg kept them: not checked).

    Raises:
        CorruptArtifact: the manifest or a file fails its check (one line naming the file and
            ``remedy``, default :func:`rebuild_hint`).
    """
    directory = Path(directory)
    manifest = directory / MANIFEST
    if not manifest.is_file():
        return False
    remedy = remedy or rebuild_hint(directory)
    files = _read_manifest(manifest, remedy)
    for rel in files if names is None else [n for n in names if n in files]:
        _check_entry(directory / rel, files[rel], remedy)
    return True


def check_file(path: str | os.PathLike, remedy: str | None = None) -> bool:
    """Check one file against its sidecar manifest (:func:`sidecar`); ``False`` when it has
    none. Raises :class:`CorruptArtifact` as :func:`check_directory` does."""
    path = Path(path)
    manifest = sidecar(path)
    if not manifest.is_file():
        return False
    remedy = remedy or rebuild_hint(path)
    files = _read_manifest(manifest, remedy)
    if path.name not in files:
        raise CorruptArtifact(manifest, f"does not list {path.name}", remedy)
    _check_entry(path, files[path.name], remedy)
    return True
