"""Corrupt every file of a trained artifact directory, one at a time, and load it.

    python -m lokg.tools.artifact_fuzz <LOKG_ROOT or its artifacts/ directory> [--cache DIR] [-v]

For every file under the artifacts directory (and of the sentence-embedding cache, its
``shard-*`` files and their manifests: ``--cache``, default ``<root>/cache`` when it exists;
the LLM response cache there, an SQLite file, is not swept) and each of three kinds of
damage -- ``truncate`` (the first half kept), ``empty`` (0 bytes), ``garble`` (up to 16
bytes in the middle inverted, the size unchanged) -- a copy of the tree is made (hard
links; the damaged file is written anew, so the original is never touched), that file is
damaged, and the copy is
loaded as ``train.py`` and ``evaluate.py`` load it (:func:`load_everything`: the prepared
data, every ``*.latest`` pointer, the SCOS, GAT, walk and answer-GAT artifacts, the default
walk model lookup, the retriever's path caches, the embedding cache). Each case ends as:

- ``error``: a one-line input error (``error: ...`` at the entry points) naming the file;
- ``rebuilt``: a cache that failed its check was rebuilt, with a WARNING naming the file;
- ``unread``: no loader reads the file, as :data:`lokg.artifacts.NOT_READ` documents;
- ``unnamed``: a one-line error that does not name the file;
- ``traceback``: any other exception (a bug);
- ``silent``: the damaged file was accepted without a check.

The last line is ``artifact_fuzz cases=N tracebacks=T silent=S`` (after one line per case
that is not ``error``/``rebuilt``, or per case with ``-v``); the exit status is 1 when any
case is ``traceback``, ``silent`` or ``unnamed``, else 0. The configs that say how to load a
dataset are read from the undamaged tree (each stage's ``config.yaml``).
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, OmegaConf

MODES = ("truncate", "empty", "garble")
BAD = ("traceback", "silent", "unnamed")


@dataclass(frozen=True)
class Case:
    """One damaged file and what loading made of it (:data:`MODES`, the module doc)."""

    file: str  # relative to the copied tree
    mode: str
    outcome: str
    detail: str = ""


def damage(path: Path, mode: str) -> None:
    """Replace ``path`` by a new file holding its bytes damaged by ``mode``."""
    data = path.read_bytes()
    if mode == "truncate":
        data = data[: len(data) // 2]
    elif mode == "empty":
        data = b""
    elif mode == "garble":
        mid = len(data) // 2
        span = data[mid : mid + 16] or b"\x00"
        data = data[:mid] + bytes(b ^ 0xFF for b in span) + data[mid + len(span) :]
    else:
        raise ValueError(f"mode {mode!r}; expected one of {MODES}")
    path.unlink()
    path.write_bytes(data)


def _link_tree(src: Path, dst: Path) -> None:
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link, symlinks=True)


def stage_configs(artifacts: Path) -> dict[str, DictConfig]:
    """Each stage directory's ``config.yaml`` (path relative to ``artifacts`` -> config)."""
    out = {}
    for cfg_path in sorted(artifacts.rglob("config.yaml")):
        out[cfg_path.parent.relative_to(artifacts).as_posix()] = OmegaConf.load(cfg_path)
    return out


def _moved(cfg: DictConfig, artifacts: Path, cache: Path | None) -> DictConfig:
    cfg = copy.deepcopy(cfg)
    cfg.data.artifacts_dir = str(artifacts)
    if cfg.get("embedder") is not None:
        cfg.embedder.cache_dir = None if cache is None else str(cache)
    return cfg


def _datamodule(cfg: DictConfig):
    import hydra

    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    return dm


def _path_caches(data_dir: Path, graphs: list) -> None:
    """Load each ``retriever_cache/*.npz`` as TAIMR does (``load_cache``: one that fails its
    check is rebuilt), over the graph and attention whose fingerprint names it (``graphs``:
    GraphArtifacts, with uniform attention or their GAT's); one whose inputs are not among
    them is checked alone."""
    from lokg.manifest import check_file
    from lokg.taimr.build import build_taimr

    files = sorted((data_dir / "retriever_cache").glob("*.npz"))
    by_key = {}
    for art in graphs if files else []:
        found = [build_taimr(art.kg, None, attention="uniform", relation_linking="off")]
        if art.edge_log_alpha is not None:
            alpha = art.edge_log_alpha
            found.append(build_taimr(art.kg, None, edge_log_alpha=alpha, relation_linking="off"))
        by_key.update({r.cache_key: r for r in found})
    for path in files:
        retriever = by_key.get(path.stem)
        if retriever is None:
            check_file(path, remedy="delete it to rebuild")
        else:
            retriever.load_cache(path.parent)


def _step_indexes(kg, directory: Path) -> None:
    """Open the step indexes saved beside the graph loaded from ``directory`` (its own
    ``steps-*`` and its own part's ``own-steps-*``), as the walk's search opens them."""
    for prefix, graph in (("", kg), ("own-", None)):
        for both in (True, False):
            if (directory / f"{prefix}steps-{'both' if both else 'out'}").is_dir():
                (graph or kg.own_part()).steps_by_relation(both)


def _load_dataset(data_dir: Path, cfg: DictConfig, configs: dict[str, DictConfig], art_root: Path):
    """Everything of one dataset's directory, as the jobs load it."""
    from lokg.artifacts import KINDS, default_walk_model, kg_store, latest, load_graph_artifacts
    from lokg.scos import SCOSResult
    from lokg.taimr.walk.artifact import RELATION_TABLE_FILE, load_walk_network
    from lokg.taimr.walk.rerank import load_answer_gat

    dm = _datamodule(cfg)
    _step_indexes(dm.kg, data_dir / "kg")
    for d in sorted(kg_store(art_root, dm.kg).glob("scos-*/scos/kg")):
        _step_indexes(SCOSResult.load(d.parent).kg, d)
    for kind in KINDS:
        latest(data_dir, kind)

    def cfg_of(d: Path) -> DictConfig:
        moved = configs.get(d.relative_to(art_root).as_posix())
        return cfg if moved is None else _moved(moved, art_root, None)

    graphs = [
        load_graph_artifacts(cfg_of(d), dm, need_gat=False, scos_dir=str(d))
        for d in sorted(kg_store(art_root, dm.kg).glob("scos-*"))
    ]
    for d in sorted(data_dir.glob("gat-*")):
        graphs.append(load_graph_artifacts(cfg_of(d), dm, need_gat=True, gat_dir=str(d)))
    for d in sorted(data_dir.glob("qgat-*")):
        art = load_graph_artifacts(cfg_of(d), dm, need_gat=False, need_walk=True, walk_dir=str(d))
        load_walk_network(art.walk_dir.resolve())
        np.load(d / RELATION_TABLE_FILE)
    default_walk_model(data_dir)
    for d in sorted(data_dir.glob("rerank-*")):
        load_answer_gat(d.resolve())
    _path_caches(data_dir, graphs)


def load_everything(art_root: Path, cache: Path | None, configs: dict[str, DictConfig]) -> None:
    """Load every dataset under ``art_root/data`` and the embedding cache (the module doc);
    ``configs``: :func:`stage_configs` of the undamaged tree."""
    import hydra

    from lokg.taimr.walk.artifact import load_walk_network
    from lokg.taimr.walk.rerank import load_answer_gat

    load_walk_network.cache_clear()
    load_answer_gat.cache_clear()
    for data_dir in sorted((art_root / "data").glob("*-*")):
        prefix = data_dir.relative_to(art_root).as_posix() + "/"
        mine = [c for k, c in configs.items() if k.startswith(prefix)]
        fingerprint = data_dir.name.rsplit("-", 1)[-1]
        if not mine:  # trained over this KG from another question file: a SCOS config
            mine = list(configs.values())
        for cfg in mine:
            cfg = _moved(cfg, art_root, cache)
            if hydra.utils.instantiate(cfg.data).fingerprint() == fingerprint:
                _load_dataset(data_dir, cfg, configs, art_root)
                break
    embedders = {repr(c.get("embedder")): c for c in configs.values() if c.get("embedder")}
    if cache is not None:
        for cfg in embedders.values():
            hydra.utils.instantiate(_moved(cfg, art_root, cache).embedder)


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _captured() -> Iterator[_Warnings]:
    """The WARNING lines logged inside the ``with`` (kept here, not printed)."""
    handler = _Warnings()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(min(level, logging.WARNING) if level else logging.WARNING)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def _outcome(rel: str, copy: Path, run) -> tuple[str, str]:
    """Run ``run()`` on a damaged copy: (outcome, detail) for the file ``rel`` of ``copy``."""
    from lokg.artifacts import NOT_READ, not_read_reason
    from lokg.cli import describe, input_error

    names = {rel, Path(rel).name, str(copy / rel)}
    names.add(Path(rel).name.removesuffix(".manifest.json"))  # a sidecar names its file
    with _captured() as warned:
        try:
            run()
        except Exception as exc:  # what a case found is the point
            err = input_error(exc)
            if err is None:
                return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
            line = describe(err)
            return ("error" if any(n in line for n in names) else "unnamed"), line
    hit = next((w for w in warned.lines if any(n in w for n in names)), None)
    if hit is not None:
        return "rebuilt", hit
    reason = not_read_reason(rel)
    if reason is not None:
        return "unread", reason
    return "silent", f"accepted; {len(NOT_READ)} documented unread patterns do not cover it"


def fuzz(root: Path, cache: Path | None = None) -> list[Case]:
    """Every (file, mode) case over ``root`` (LOKG_ROOT or its artifacts directory)."""
    art = root / "artifacts" if (root / "artifacts" / "data").is_dir() else root
    if cache is None and (art.parent / "cache").is_dir():
        cache = art.parent / "cache"
    if not (art / "data").is_dir():
        raise FileNotFoundError(f"{art}: no data/ here; expected LOKG_ROOT or its artifacts/")
    configs = stage_configs(art)
    trees = {"artifacts": art, **({"cache": cache} if cache is not None else {})}
    files = [
        f"{name}/{p.relative_to(top).as_posix()}"
        for name, top in trees.items()
        for p in sorted(top.rglob("*" if name == "artifacts" else "shard-*"))
        if p.is_file() and not p.is_symlink()
    ]
    return [_case(rel, mode, trees, configs) for rel in files for mode in MODES]


def _case(rel: str, mode: str, trees: dict[str, Path], configs: dict[str, DictConfig]) -> Case:
    """Damage ``rel`` by ``mode`` in a linked copy of ``trees`` and load the copy."""
    with tempfile.TemporaryDirectory(prefix="artifact_fuzz.", dir=trees["artifacts"].parent) as t:
        copy = Path(t)
        for name, top in trees.items():
            _link_tree(top, copy / name)
        damage(copy / rel, mode)
        cache = copy / "cache" if "cache" in trees else None
        outcome, detail = _outcome(
            rel, copy, lambda: load_everything(copy / "artifacts", cache, configs)
        )
    return Case(rel, mode, outcome, detail)


def summary(cases: list[Case]) -> str:
    """``artifact_fuzz cases=N tracebacks=T silent=S`` and the other outcomes' counts."""
    n = Counter(c.outcome for c in cases)
    rest = " ".join(f"{k}={n[k]}" for k in ("error", "rebuilt", "unread", "unnamed"))
    head = f"artifact_fuzz cases={len(cases)} tracebacks={n['traceback']} silent={n['silent']}"
    return f"{head} {rest}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lokg.tools.artifact_fuzz", description=__doc__)
    parser.add_argument("root", type=Path, help="LOKG_ROOT, or its artifacts/ directory")
    parser.add_argument("--cache", type=Path, default=None, help="the sentence-embedding cache")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    args = parser.parse_args(argv)
    cases = fuzz(args.root, args.cache)
    for c in cases:
        if args.verbose or c.outcome not in ("error", "rebuilt"):
            print(f"{c.outcome:9s} {c.mode:8s} {c.file}: {c.detail}")
    print(summary(cases))
    return 1 if any(c.outcome in BAD for c in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
