"""Versioned artifact directories of the offline stages (TransE + SCOS, GAT).

Each stage writes into ``<root>/<kind>-<key>/`` where ``key`` hashes the configuration that
produced it (so two configurations never overwrite each other) and then records that
directory as the latest of its kind in the dataset's ``<kind>.latest`` (a path relative to
the dataset's artifact directory).  Later stages and ``evaluate.py`` use an explicit
directory when given, else the latest one.  ``root`` is the dataset's artifact directory for
the GAT (trained on its questions) and, for TransE + SCOS, which depend on the graph only,
``<artifacts>/kg/<kg fingerprint>/`` (:func:`kg_store`), so a second question file over the
same KG reuses them.  (Entity-name embeddings are cached by text under ``cache_dir``, so they
are shared too.)

The graph retrieval runs on is SCOS's (or the KG as given with ``scos=off``) with the inverse
edges ``data.source.inverse`` asks for added last (:func:`load_graph_artifacts`,
:mod:`lokg.kg.inverse_edges`); the GAT is trained on that graph, the walk model on the KG's
own part of it (:meth:`GraphArtifacts.own_edges`: it walks both directions by itself).

**Checked on load.** Every artifact directory carries ``MANIFEST.json`` (size and blake2b of
each file, :mod:`lokg.manifest`), written last before the directory is published; the
loaders here check it before reading (:func:`checked`), so a truncated, emptied or changed
file -- read or not: ``config.yaml``, ``report.txt`` and the exported ``*.ckpt`` are checked
too -- is one line naming it and the ``train.py`` command that rebuilds it. A ``<kind>.latest``
pointer must hold one line naming a ``<kind>-*`` directory that exists (:func:`latest`).

What is *not read*, so never checked: ``qgat.latest`` while a walk model trained with the
default settings exists (:func:`default_walk_model` picks among those by their recorded
validation score; the pointer is the fallback), a ``scos.latest`` or ``gat.latest`` when the
run names its directory (``scos_dir=``, ``gat_dir=``), and anything under a dataset's
``resume/`` except the checkpoint of the fit being resumed (checked by its sidecar
manifest, :mod:`lokg.preemption`). Caches (the sentence-embedding shards, the retriever's
path cache) are checked the same way and rebuilt when they fail, with one WARNING. Artifacts
written before manifests existed have none and are loaded unchecked.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from lokg.atomic_io import write_atomic
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.inverse_edges import (
    add_inverse_edges,
    extend_relation_embeddings,
    relations_to_invert,
)
from lokg.manifest import check_directory
from lokg.taimr.walk.artifact import (
    ADAPTED,
    WALK_CONFIG,
    ZERO_SHOT,
    adapted_walk,
    hashed_targets,
    pretrained_walk,
    read_walk_meta,
    walk_models,
)
from lokg.taimr.walk.artifact import KIND as WALK_KIND
from lokg.typing import IdArray

KINDS = ("scos", "gat", WALK_KIND, "rerank")

#: files under an artifacts directory that no loader reads, so that damage to them is
#: accepted by design (relative-path glob -> why; :mod:`lokg.tools.artifact_fuzz` reports
#: them as ``unread``). Empty: every file a stage writes is in its directory's manifest and
#: checked on load, read or not (the module doc).
NOT_READ: dict[str, str] = {}

log = logging.getLogger(__name__)


def not_read_reason(relative: str) -> str | None:
    """Why the file at ``relative`` (a path under an artifacts directory) is not read, when
    :data:`NOT_READ` says it is not; else ``None``."""
    return next((why for pattern, why in NOT_READ.items() if fnmatch(relative, pattern)), None)


def config_key(*nodes: Any) -> str:
    """A short stable hash of configuration nodes (DictConfigs are resolved first; a moved
    ``_target_`` hashes under its earlier path, :data:`lokg.taimr.walk.artifact.MOVED_TARGETS`)."""
    plain = [
        OmegaConf.to_container(n, resolve=True) if isinstance(n, DictConfig) else n for n in nodes
    ]
    plain = hashed_targets(plain)
    return hashlib.sha256(json.dumps(plain, sort_keys=True, default=str).encode()).hexdigest()[:10]


def stage_dir(root: Path, kind: str, key: str) -> Path:
    if kind not in KINDS:
        raise ValueError(f"artifact kind {kind!r}; expected one of {KINDS}")
    return Path(root) / f"{kind}-{key}"


def kg_store(artifacts_root: Path, kg: KnowledgeGraph) -> Path:
    """``<artifacts_root>/kg/<kg fingerprint>/``: artifacts that depend on the graph alone."""
    return Path(artifacts_root) / "kg" / kg.fingerprint()


def mark_latest(root: Path, kind: str, directory: Path) -> None:
    """Record ``directory`` (relative to ``root``) as the latest ``kind`` artifact (atomic)."""
    pointer = Path(root) / f"{kind}.latest"
    pointer.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(pointer, os.path.relpath(directory, root) + "\n")


#: the experiment that writes each kind of artifact (its rebuild command)
_EXPERIMENT = {"scos": "train_transe", "gat": "train_gat", WALK_KIND: "train_walk"}


def latest(root: Path, kind: str) -> Path | None:
    """The latest ``kind`` artifact directory under ``root``, or ``None`` when there is none.

    Raises:
        InputError: the pointer is not one UTF-8 line naming a ``<kind>-*`` directory, or
            that directory does not exist (one line naming the pointer).
    """
    pointer = Path(root) / f"{kind}.latest"
    if not pointer.is_file():
        return None
    redo = f"re-run `python train.py experiment={_EXPERIMENT.get(kind, 'train_' + kind)}`"
    raw = pointer.read_bytes()
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        lines = []
    name = Path(lines[0].strip()).name if len(lines) == 1 else ""
    if not name.startswith(f"{kind}-"):
        raise InputError(
            f"{pointer}: expected one line naming a {kind}-* directory, got {raw[:40]!r}; "
            f"delete it or {redo}"
        )
    directory = Path(os.path.normpath(Path(root) / lines[0].strip()))
    if not directory.is_dir():
        raise FileNotFoundError(
            f"{pointer} points to {directory.name}, which does not exist; {redo}"
        )
    return directory


def checked(directory: Path) -> Path:
    """``directory`` after its manifest check (:func:`lokg.manifest.check_directory`)."""
    check_directory(directory)
    return directory


def default_walk_model(root: Path, fingerprint: str | None = None) -> Path | None:
    """The walk model ``retriever=learned`` uses without ``retriever.model_dir``: the best
    on val among those trained with the default settings (so a model trained for an ablation
    never stands in for the default), else the latest trained, with a warning."""
    matching = walk_models(root, fingerprint=fingerprint)
    if matching:
        return matching[0]
    fallback = latest(root, WALK_KIND)
    if fallback is not None:
        log.warning(
            "no walk model under %s was trained with the default settings (%s); using the "
            "latest trained, %s",
            root, WALK_CONFIG.name, fallback.name,
        )  # fmt: skip
    return fallback


def resolve(root: Path, kind: str, explicit: str | None) -> Path | None:
    """``explicit`` when given (must exist), else the latest ``kind`` artifact, else ``None``."""
    if explicit:
        path = Path(explicit)
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no {kind} artifact directory here")
        return path
    return latest(root, kind)


def scos_settings(values: Any) -> dict | None:
    """SCOS settings in one comparable form: :class:`lokg.scos.SCOSConfig`'s keys with the
    code's defaults filled in (an absent guard is its default, the paper's), or ``None`` when
    ``values`` are not settings this version reads."""
    from lokg.scos import SCOSConfig

    if isinstance(values, DictConfig):
        values = OmegaConf.to_container(values, resolve=True)
    values = dict(values or {})
    values.pop("entity_types_used", None)  # recorded beside the settings, not one of them
    values.pop("name_encoder_used", None)
    try:
        return SCOSConfig.from_mapping(values).to_dict()
    except (TypeError, ValueError):
        return None


def recorded_scos_settings(directory: Path) -> dict | None:
    """The SCOS settings a ``scos-*`` artifact was made with (its ``scos/scos.json``), in
    :func:`scos_settings`' form; ``None`` when unreadable."""
    path = Path(directory) / "scos" / "scos.json"
    check_directory(path.parent, ["scos.json"])
    try:
        config = json.loads(path.read_text(encoding="utf-8")).get("config")
    except (OSError, ValueError, AttributeError):
        return None
    return scos_settings(config)


def find_scos_artifact(cfg: DictConfig, datamodule) -> Path | None:
    """The dataset's SCOS artifact made with ``cfg.scos``'s settings: the latest when it was
    (or when its settings cannot be read), else the
    newest such one among the graph's (:func:`kg_store`); ``None`` when the dataset has none.

    Raises:
        FileNotFoundError: the dataset has SCOS artifacts, none made with these settings (one
            line naming the settings that differ and the command that makes one).
    """
    root = datamodule.artifact_dir
    newest = latest(root, "scos")
    wanted = scos_settings(cfg.scos)
    if newest is None or wanted is None:
        return newest
    have = recorded_scos_settings(newest)
    if have is None or have == wanted:
        return newest
    store = kg_store(datamodule.artifacts_root, datamodule.kg)
    matching = [d for d in store.glob("scos-*") if recorded_scos_settings(d) == wanted]
    if matching:
        found = max(matching, key=lambda d: (d / "scos" / "scos.json").stat().st_mtime_ns)
        log.info("SCOS artifacts with this run's scos settings: %s", found)
        return found
    differ = ", ".join(
        f"{k} {have.get(k)!r} (this run: {v!r})" for k, v in wanted.items() if have.get(k) != v
    )
    raise FileNotFoundError(
        f"no SCOS artifacts for {datamodule.name} were made with this run's scos settings (the "
        f"latest, {newest.name}, has {differ}); run `python train.py experiment=train_transe` "
        "with this run's data and scos overrides first, or give scos_dir="
    )


def scos_mode(cfg: DictConfig) -> str:
    """``off`` when no SCOS config is selected or ``scos=off``; else the configured mode."""
    scos = cfg.get("scos")
    return "off" if scos is None else str(scos.get("mode", "greedy"))


@dataclass
class GraphArtifacts:
    """What retrieval needs from the offline stages for one dataset.

    Attributes:
        kg: the graph retrieval runs on (G* after SCOS, else the original), with the added
            inverse edges of ``data.source.inverse`` last.
        scos_dir: the SCOS artifact used (``None`` with ``scos=off``).
        relation_embeddings: ``[R, d]`` TransE embeddings of ``kg``'s relations, when trained
            (an added ``r (inverse)`` has ``-e_r``).
        gat_dir: the GAT artifact used, when one is loaded.
        edge_log_alpha: ``[T]`` log alpha of the trained GAT in ``kg``'s triple order.
        walk_dir: the trained walk model (``qgat-*/``) used by ``retriever=learned``.
        transe_dir: the SCOS artifact whose TransE e_r are used (its ``transe.json`` says how
            they were exported), with or without SCOS's merges.
        inverse_relations: the relations of G* given an added inverse (empty: none); a
            dataset with one subgraph per question adds them to each subgraph.
    """

    kg: KnowledgeGraph
    scos_dir: Path | None = None
    relation_embeddings: np.ndarray | None = None
    gat_dir: Path | None = None
    edge_log_alpha: np.ndarray | None = None
    walk_dir: Path | None = None
    transe_dir: Path | None = None
    inverse_relations: IdArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def own_edges(self) -> GraphArtifacts:
        """These artifacts on the KG's own part of ``kg`` (no added inverse edges; every id
        unchanged): what the walk model trains and walks on, since it takes every triple in
        both directions by itself (``model.both_directions``)."""
        if not self.kg.has_added_inverses:
            return self
        own = self.kg.own_part()
        emb = self.relation_embeddings
        return dataclasses.replace(
            self,
            kg=own,
            relation_embeddings=None if emb is None else emb[: own.num_relations],
            edge_log_alpha=None,
            inverse_relations=np.zeros(0, dtype=np.int64),
        )


def unmerged_transe_relations(
    root: Path, kg: KnowledgeGraph, scos_dir: str | None = None
) -> np.ndarray | None:
    """TransE's e_r ``[R0, d]`` of ``kg``'s own relations, before any merge, for ``scos=off``:
    "w/o SCOS" removes the merging, not TransE (the walk model and the GAT still read e_r).
    From the given or latest SCOS artifact of the dataset (its TransE was trained on this
    graph); ``None`` when there is none or its relation count differs."""
    found = resolve(root, "scos", scos_dir)
    if found is None or not (found / "relation_embeddings.npy").is_file():
        return None
    embeddings = np.load(checked(found) / "relation_embeddings.npy")
    return embeddings if len(embeddings) == kg.num_relations else None


def load_graph_artifacts(
    cfg: DictConfig,
    datamodule,
    *,
    need_gat: bool,
    scos_dir: str | None = None,
    gat_dir: str | None = None,
    need_walk: bool = False,
    walk_dir: str | None = None,
) -> GraphArtifacts:
    """The graph after SCOS and, when ``need_gat``, the trained GAT's attention.

    With ``scos=off`` the original graph is used, with TransE's unmerged e_r when the dataset
    has them (:func:`unmerged_transe_relations`). Otherwise the given SCOS artifact, or the
    dataset's made with ``cfg.scos``'s settings (:func:`find_scos_artifact`), is required (a
    one-line error says to run ``train.py experiment=train_transe``).
    Then the inverse edges of ``data.source.inverse`` are added (decided on this graph,
    :func:`lokg.kg.inverse_edges.relations_to_invert`); the GAT must have been trained on the
    result (its fingerprint is checked), the walk model on its own part.
    """
    art = GraphArtifacts(kg=datamodule.kg)
    _load_scos_graph(art, cfg, datamodule, scos_dir)
    _add_inverse_edges(art, getattr(datamodule, "inverse", "never"))
    if need_gat:
        _load_gat_attention(art, datamodule, gat_dir)
    if need_walk:
        _find_walk_model(art, datamodule, walk_dir)
    return art


def _load_scos_graph(
    art: GraphArtifacts, cfg: DictConfig, datamodule, scos_dir: str | None
) -> None:
    """Set ``art``'s graph, e_r and their directories: SCOS's, or the original graph with
    ``scos=off`` (load_graph_artifacts' doc)."""
    from lokg.scos import SCOSResult

    root = datamodule.artifact_dir
    if scos_mode(cfg) == "off":
        art.relation_embeddings = unmerged_transe_relations(root, art.kg, scos_dir)
        if art.relation_embeddings is not None:
            art.transe_dir = resolve(root, "scos", scos_dir)
        return
    art.scos_dir = (
        resolve(root, "scos", scos_dir) if scos_dir else find_scos_artifact(cfg, datamodule)
    )
    if art.scos_dir is None:
        raise FileNotFoundError(
            f"no SCOS artifacts for {datamodule.name} under {root}; run `python train.py "
            "experiment=train_transe` with this run's data overrides first, or use scos=off"
        )
    art.kg = SCOSResult.load(checked(art.scos_dir) / "scos").kg
    art.relation_embeddings = np.load(art.scos_dir / "relation_embeddings_merged.npy")
    art.transe_dir = art.scos_dir


def _add_inverse_edges(art: GraphArtifacts, mode: str) -> None:
    """Add to ``art``'s graph (and e_r) the inverse edges ``data.source.inverse=mode`` asks
    for."""
    art.inverse_relations = relations_to_invert(art.kg, mode)
    if not len(art.inverse_relations):
        return
    plain = art.kg
    art.kg = add_inverse_edges(plain, art.inverse_relations)
    if art.relation_embeddings is not None:
        art.relation_embeddings = extend_relation_embeddings(art.relation_embeddings, art.kg)
    log.info(
        "data.source.inverse=%s: `r (inverse)` added for %d of %d relations (+%d triples)",
        mode, len(art.inverse_relations), plain.num_relations,
        art.kg.num_triples - plain.num_triples,
    )  # fmt: skip


def _load_gat_attention(art: GraphArtifacts, datamodule, gat_dir: str | None) -> None:
    """Set ``art``'s GAT directory and its log attention, trained on ``art``'s graph."""
    root = datamodule.artifact_dir
    art.gat_dir = resolve(root, "gat", gat_dir)
    if art.gat_dir is None:
        raise FileNotFoundError(
            f"no GAT artifacts for {datamodule.name} under {root}; run `python train.py "
            "experiment=train_gat` with this run's data overrides first, or use "
            "retriever.attention=uniform"
        )
    meta = json.loads((checked(art.gat_dir) / "gat.json").read_text(encoding="utf-8"))
    if meta["kg_fingerprint"] != art.kg.fingerprint():
        raise ValueError(
            f"{art.gat_dir}: the GAT was trained on another graph (kg fingerprint "
            f"{meta['kg_fingerprint']}, this one {art.kg.fingerprint()}); retrain model=gat "
            "with the same scos setting"
        )
    art.edge_log_alpha = np.load(art.gat_dir / "edge_log_alpha.npy")


def _find_walk_model(art: GraphArtifacts, datamodule, walk_dir: str | None) -> None:
    """Set ``art``'s walk model directory: the given one, else the default one trained on
    ``art``'s own part of the graph (GraphArtifacts.own_edges), else one adapted to the graph
    as given without answers (``experiment=adapt_walk``), else the shipped pretrained walk."""
    root = datamodule.artifact_dir
    walked = art.kg.own_part()  # the walk model's graph (GraphArtifacts.own_edges)
    art.walk_dir = (
        resolve(root, WALK_KIND, walk_dir)
        if walk_dir
        else default_walk_model(root, walked.fingerprint())
    )
    own = None if art.walk_dir is not None else datamodule.kg.own_part().fingerprint()
    if own is not None and (adapted := adapted_walk(Path(root).parent, own)) is not None:
        log.warning(
            "walk: %s (%s; no walk model trained on answered questions of %s)",
            ADAPTED, adapted, datamodule.name,
        )  # fmt: skip
        art.walk_dir = adapted
        return
    if art.walk_dir is None and (shipped := pretrained_walk()) is not None:
        log.warning(
            "walk: %s (no walk model trained for %s; `python train.py experiment=train_walk "
            "data=...` fine-tunes one from it on answered questions, `python train.py "
            "experiment=adapt_walk data@data.source.base=...` on the KG alone)",
            ZERO_SHOT, datamodule.name,
        )  # fmt: skip
        art.walk_dir = shipped
        return
    if art.walk_dir is None:
        raise FileNotFoundError(
            f"no trained walk model for {datamodule.name} under {root}, and this install has "
            "no pretrained walk; run `python train.py experiment=train_walk data=...` first, "
            "or give retriever.model_dir=<a qgat-* directory>"
        )
    meta = read_walk_meta(checked(art.walk_dir))
    if walk_dir is None and meta["kg_fingerprint"] != walked.fingerprint():
        raise ValueError(
            f"{art.walk_dir}: the walk model was trained on another graph (kg fingerprint "
            f"{meta['kg_fingerprint']}, this one {walked.fingerprint()}); retrain "
            "experiment=train_walk with the same scos setting"
        )
    log.info("walk model: %s", art.walk_dir)
