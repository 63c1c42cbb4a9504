"""The offline stages around the Lightning fits, and loading their artifacts.

- after TransE: SCOS (:func:`run_scos_stage`) -> ``scos-<key>/``; or, for a KG whose
  embeddings one machine cannot train, SCOS on TransE embeddings trained by DGL-KE or
  PyTorch-BigGraph (:func:`run_import_stage`, ``experiment=import_transe``) -> the same files;
- before the GAT: its graph (SCOS's compressed G* when there is one), node features from the
  sentence encoder, relation embeddings (:func:`prepare_gat`);
- after the GAT: edge attention log alpha for Eq. (16) over the whole graph
  (:func:`run_gat_stage`) -> ``gat-<key>/``.

Both stages export the best checkpoint on the monitored validation metric (``val/mrr`` for
TransE, ``val/paths_recall`` for the GAT; :func:`restore_best_checkpoint`), not the last
epoch, and record which epoch in their metadata (``transe.json``, ``gat.json``).

``evaluate.py`` loads the same artifacts through :func:`lokg.artifacts.load_graph_artifacts`
(no Lightning there, so the pipeline API stays Lightning-free).
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from lokg.artifacts import (
    GraphArtifacts,
    config_key,
    kg_store,
    load_graph_artifacts,
    mark_latest,
    stage_dir,
)
from lokg.atomic_io import atomic_directory
from lokg.callbacks import stopping_nodes
from lokg.errors import CorruptArtifact, InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.manifest import check_directory
from lokg.taimr.walk.artifact import TRANSFER_SWITCHES

log = logging.getLogger(__name__)


def merged_relation_embeddings(
    embeddings: np.ndarray, mapping: np.ndarray, direction: np.ndarray | None = None
) -> np.ndarray:
    """``[R*, d]``: a merged cluster's embedding is the mean of its members' (Sec. 2.3); a
    member stored as the inverse (``direction`` -1, ``scos.merge_inverse``) counts as -e_r."""
    num = int(mapping.max()) + 1 if len(mapping) else 0
    sums = np.zeros((num, embeddings.shape[1]), dtype=np.float64)
    signed = embeddings if direction is None else embeddings * direction[:, None]
    np.add.at(sums, mapping, signed)
    counts = np.bincount(mapping, minlength=num)[:, None]
    return (sums / counts).astype(np.float32)


@dataclass(frozen=True)
class ExportedCheckpoint:
    """Which weights a stage exported, as recorded in its metadata.

    Attributes:
        selected: ``"best"`` (restored from the best checkpoint on ``monitor``) or ``"last"``
            (the last epoch's weights: no monitored metric, or no best checkpoint saved).
        epoch: the exported epoch, 0-based as in the checkpoint names ``epoch_{epoch:03d}``.
        best_epoch: ``epoch`` when ``selected == "best"``, else ``None``.
        last_epoch: the last epoch trained.
        monitor: the monitored validation metric (``None`` without one).
        best_value: its best value (``None`` without one).
        checkpoint: the checkpoint file the weights come from (``None`` when none was saved).
    """

    selected: Literal["best", "last"]
    epoch: int
    best_epoch: int | None
    last_epoch: int
    monitor: str | None
    best_value: float | None
    checkpoint: Path | None

    def metadata(self) -> dict:
        meta = asdict(self)
        meta["checkpoint"] = self.checkpoint.name if self.checkpoint else None
        return meta

    def save(self, directory: Path, name: str, meta: dict) -> None:
        """Write ``<name>.ckpt`` (the checkpoint, when one was saved) and ``<name>.json``
        (``meta`` and :meth:`metadata`) into ``directory``."""
        if self.checkpoint is not None:
            shutil.copy(self.checkpoint, directory / f"{name}.ckpt")
        meta = meta | self.metadata()
        (directory / f"{name}.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")

    def describe(self, what: str) -> str:
        """One line for the console: which epoch was exported and why."""
        if self.selected == "best":
            return (
                f"{what}: exporting the best checkpoint, epoch {self.epoch} "
                f"({self.monitor} = {self.best_value:.4f}; last epoch {self.last_epoch})"
            )
        why = "no monitored metric" if self.monitor is None else f"no {self.monitor} checkpoint"
        return f"{what}: exporting the last epoch, {self.epoch} ({why})"


def drop_checkpoints(trainer: pl.Trainer) -> list[Path]:
    """Delete the checkpoint files this fit's ``ModelCheckpoint`` wrote (its best, its top k,
    its last) once the stage's artifact is exported, and its directory when that leaves it
    empty; print one line with what was freed. Files it did not write are left alone (a
    ``dirpath`` shared with other runs stays as it was).

    Returns:
        the deleted files.
    """
    cb = trainer.checkpoint_callback
    if cb is None or not trainer.is_global_zero:
        return []
    named = {getattr(cb, "best_model_path", ""), getattr(cb, "last_model_path", "")}
    named |= set(getattr(cb, "best_k_models", {}) or {})
    files = sorted(Path(f) for f in named if f and Path(f).is_file())
    size = sum(f.stat().st_size for f in files)
    for f in files:
        f.unlink()
    dirpath = getattr(cb, "dirpath", None)
    if files and dirpath and Path(dirpath).is_dir() and not any(Path(dirpath).iterdir()):
        Path(dirpath).rmdir()
    if files:
        print(
            f"checkpoints: {len(files)} deleted from {files[0].parent} ({size / 2**20:.0f} MB; "
            "the artifact holds the weights; keep_checkpoints=true keeps them)",
            flush=True,
        )
    return files


@contextmanager
def _published(cfg: DictConfig, datamodule, kind: str, out: Path, what: str) -> Iterator[Path]:
    """Fill the stage directory ``out`` atomically (the ``with`` body writes into the
    temporary directory it yields; the config is saved beside), then record it as the
    dataset's latest ``kind`` artifact and log ``<what> artifacts: <out>``."""
    with atomic_directory(out) as tmp:
        yield tmp
        OmegaConf.save(cfg, tmp / "config.yaml", resolve=True)
    mark_latest(datamodule.artifact_dir, kind, out)
    log.info("%s artifacts: %s", what, out)


def restore_best_checkpoint(model: pl.LightningModule, trainer: pl.Trainer) -> ExportedCheckpoint:
    """Load the best checkpoint's weights into ``model`` (strictly) when the trainer's
    ``ModelCheckpoint`` monitors a metric and saved one; otherwise keep the last epoch's.

    The checkpoints are the run's own (trusted, locally written: unpickled with
    ``weights_only=False``); the exported epoch is the one stored in the checkpoint.
    """
    cb = trainer.checkpoint_callback
    last_epoch = max(trainer.current_epoch - 1, 0)  # current_epoch counts finished epochs
    monitor = getattr(cb, "monitor", None)
    best_path = getattr(cb, "best_model_path", "") if monitor else ""
    if best_path:
        ckpt = torch.load(best_path, map_location="cpu", weights_only=False)
        model.load_state_dict(ckpt["state_dict"], strict=True)
        epoch = int(ckpt["epoch"])
        return ExportedCheckpoint(
            selected="best",
            epoch=epoch,
            best_epoch=epoch,
            last_epoch=last_epoch,
            monitor=str(monitor),
            best_value=float(cb.best_model_score),
            checkpoint=Path(best_path),
        )
    if monitor:
        log.warning("no best checkpoint on %s was saved: exporting the last epoch", monitor)
    last_path = getattr(cb, "last_model_path", "") if cb is not None else ""
    return ExportedCheckpoint(
        selected="last",
        epoch=last_epoch,
        best_epoch=None,
        last_epoch=last_epoch,
        monitor=str(monitor) if monitor else None,
        best_value=None,
        checkpoint=Path(last_path) if last_path else None,
    )


def training_key(cfg: DictConfig, *nodes) -> str:
    """The key of a trained artifact: the model, the epochs, ``nodes`` (what else it depends
    on) and, when it can stop early, the early-stopping settings
    (:func:`lokg.callbacks.stopping_key`; absent otherwise, so the keys of runs without it
    are those they had before it existed)."""
    return config_key(cfg.model, cfg.trainer.get("max_epochs"), *nodes, *stopping_nodes(cfg))


def scos_stage_dir(cfg: DictConfig, datamodule, seed: int) -> Path:
    """Where TransE + SCOS for this graph and config live: ``<artifacts>/kg/<kg fp>/scos-<key>``.

    The key hashes what the result depends on: the model, epochs, SCOS settings, seed and the
    held-out triple split (fraction and seed), and with ``scos.min_name_cosine`` the embedder
    that embeds the relation names -- not the questions, so every question file over the same
    KG finds the same directory. (That entry keeps its old name, ``name_encoder``, because
    the key hashes it.)
    """
    split = {"triple_val_fraction": datamodule.triple_val_fraction, "seed": datamodule.split_seed}
    names = name_embedder(cfg)
    key = training_key(cfg, cfg.scos, seed, split, *([{"name_encoder": names}] if names else []))
    return stage_dir(kg_store(datamodule.artifacts_root, datamodule.kg), "scos", key)


def name_embedder(cfg: DictConfig) -> str | None:
    """The model id of the sentence encoder SCOS's name guard reads (``embedder.model_id``),
    or ``None`` when ``scos.min_name_cosine`` is not set (names are not read)."""
    scos = cfg.get("scos")
    if scos is None or scos.get("min_name_cosine") is None or scos.get("mode") == "off":
        return None
    return str(cfg.embedder.model_id)


#: ``scos_warn_contradiction`` when a config has none (configs/train.yaml sets it)
DEFAULT_WARN_CONTRADICTION = 0.05


def warn_threshold(cfg: DictConfig) -> float:
    """``scos_warn_contradiction``, checked: a number in [0, 1]."""
    value = cfg.get("scos_warn_contradiction", DEFAULT_WARN_CONTRADICTION)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"scos_warn_contradiction={value!r}; expected a number in [0, 1]")
    return float(value)


def warn_contradicted_merges(merges: list, inverse: list, threshold: float) -> int:
    """One WARNING per SCOS merge whose contradiction rate (:mod:`lokg.scos.contradiction`)
    exceeds ``threshold``, whatever the SCOS settings (the paper's merge what the graph
    contradicts; ours refuse it above ``scos.max_contradiction``). ``merges``:
    :class:`lokg.scos.merge.MergeRecord`; ``inverse``: :class:`lokg.scos.inverse.InverseRecord`.
    Returns how many were logged."""
    pairs = [(", ".join(m.left), ", ".join(m.right), m) for m in merges]
    pairs += [(m.kept, f"{m.flipped} (inverse)", m) for m in inverse]
    logged = 0
    for left, right, m in pairs:
        if m.contradiction <= threshold:
            continue
        example = ""
        if m.examples:
            ex = m.examples[0]
            example = (
                f"; e.g. {ex['head']}: {left} -> {', '.join(ex['left'])} | {right} -> "
                f"{', '.join(ex['right'])}"
            )
        log.warning(
            "SCOS merged {%s} + {%s} although %d of their %d shared heads hold different tails "
            "(contradiction %.2f > scos_warn_contradiction=%s)%s; see the merge report",
            left, right, m.differing_heads, m.shared_heads, m.contradiction, threshold, example,
        )  # fmt: skip
        logged += 1
    return logged


def _warn_from_artifact(directory: Path, threshold: float) -> None:
    """:func:`warn_contradicted_merges` over a saved SCOS result's ``scos.json``."""
    from lokg.scos.inverse import InverseRecord
    from lokg.scos.merge import MergeRecord

    meta = json.loads((directory / "scos" / "scos.json").read_text(encoding="utf-8"))
    warn_contradicted_merges(
        [MergeRecord(**m) for m in meta.get("merges", [])],
        [InverseRecord(**m) for m in meta.get("inverse_merges", [])],
        threshold,
    )


def reuse_scos_stage(cfg: DictConfig, datamodule, seed: int) -> Path | None:
    """The finished TransE + SCOS artifact of this graph and config, marked as the dataset's
    latest, or ``None`` when there is none yet (then train). Its contradicted merges are
    warned about again (:func:`warn_contradicted_merges`). One that fails its manifest check
    (:mod:`lokg.manifest`) is trained again, with one WARNING."""
    return _reused_scos(cfg, datamodule, scos_stage_dir(cfg, datamodule, seed), "training")


def _reused_scos(cfg: DictConfig, datamodule, out: Path, redo: str) -> Path | None:
    """The finished SCOS artifact ``out`` (:func:`reuse_scos_stage`), or ``None``; ``redo``
    says what replaces a damaged one (``training``, ``importing``)."""
    threshold = warn_threshold(cfg)
    if not (out / "scos" / "scos.json").is_file():
        return None
    try:
        for directory in (out, out / "scos", out / "scos" / "kg"):
            check_directory(directory)
    except CorruptArtifact as err:
        log.warning("%s: %s; %s TransE + SCOS again to replace it", err.path, err.problem, redo)
        return None
    mark_latest(datamodule.artifact_dir, "scos", out)
    log.info("SCOS artifacts reused: %s", out)
    _warn_from_artifact(out, threshold)
    return out


def run_scos_stage(cfg: DictConfig, datamodule, model, trainer: pl.Trainer, seed: int) -> Path:
    """SCOS on the fitted TransE: write ``scos-<key>/`` under the dataset's artifacts.

    The TransE weights are the best checkpoint's on the monitored metric (``val/mrr``), else
    the last epoch's (:func:`restore_best_checkpoint`; ``model`` is left holding them).  The
    directory holds the SCOS result (``scos/``: phi, compressed KG, merge report), the
    TransE relation embeddings before (``relation_embeddings.npy``, [R0, d]) and after merging
    (``relation_embeddings_merged.npy``, [R*, d]), the exported TransE checkpoint
    (``transe.ckpt``), which epoch it is (``transe.json``) and the config that produced
    them; it becomes the latest ``scos`` artifact of the dataset. With
    ``scos.min_name_cosine`` the relation names are embedded by ``cfg.embedder``
    (:func:`lokg.scos.names.name_embeddings`; its model id is recorded as
    ``name_encoder_used``, the name saved results already carry). Each merge whose
    contradiction rate exceeds ``scos_warn_contradiction`` is logged as a WARNING
    (:func:`warn_contradicted_merges`), whatever ``scos=``.
    """
    exported = restore_best_checkpoint(model, trainer)
    print(exported.describe("TransE"), flush=True)
    embeddings = model.relation_embeddings()
    meta = {"num_relations": len(embeddings), "dim": int(embeddings.shape[1])}
    out = scos_stage_dir(cfg, datamodule, seed)
    return _scos_stage(
        cfg, datamodule, out, embeddings, model.entity_embeddings(),
        lambda tmp: exported.save(tmp, "transe", meta),
    )  # fmt: skip


def _scos_stage(
    cfg: DictConfig,
    datamodule,
    out: Path,
    embeddings: np.ndarray,
    entity_embeddings: np.ndarray,
    save_transe: Callable[[Path], None],
) -> Path:
    """SCOS on TransE's ``embeddings`` ``[R0, d]`` (``entity_embeddings`` ``[E, d]`` for its
    learned entity types), published as ``out`` (:func:`run_scos_stage`'s files);
    ``save_transe(tmp)`` writes where the embeddings came from (``transe.json``, and
    ``transe.ckpt`` for a fit)."""
    from lokg.scos import compress
    from lokg.scos.names import name_embeddings

    threshold = warn_threshold(cfg)
    embedder_id = name_embedder(cfg)
    names = None
    if embedder_id is not None:
        import hydra

        embedder = hydra.utils.instantiate(cfg.embedder)
        names = name_embeddings(datamodule.kg.relations.labels, embedder)
    result = compress(
        datamodule.kg,
        embeddings,
        OmegaConf.to_container(cfg.scos, resolve=True),
        entity_embeddings=entity_embeddings,
        relation_names=names,
    )
    if embedder_id is not None:
        result.config["name_encoder_used"] = embedder_id
    print(result.format_report().splitlines()[0], flush=True)
    warn_contradicted_merges(result.report, result.inverse_report, threshold)
    with _published(cfg, datamodule, "scos", out, "SCOS") as tmp:
        result.save(tmp / "scos")
        np.save(tmp / "relation_embeddings.npy", embeddings)
        np.save(
            tmp / "relation_embeddings_merged.npy",
            merged_relation_embeddings(embeddings, result.mapping, result.directions),
        )
        save_transe(tmp)
    return out


def import_request(cfg: DictConfig) -> DictConfig | None:
    """``cfg.transe_import`` when it asks for an import (``enabled``, or a ``format`` or
    ``path`` set: TransE's embeddings are read from a large-scale engine's output, not
    fitted, :func:`run_import_stage`), else ``None``; checked before any work: a directory,
    a known ``format`` and ``missing_entities``, and an ``scos`` config to run.

    Raises:
        InputError: one line naming the key and the allowed values.
    """
    from lokg.kg.external_embeddings import FORMATS, MISSING_ENTITIES

    node = cfg.get("transe_import")
    if node is None or not (node.enabled or node.format is not None or node.path is not None):
        return None
    if node.path is None:
        raise InputError(
            "transe_import.path is not set; expected the engine's output directory "
            "(transe_import.path=<dir>)"
        )
    if node.format not in FORMATS:
        given = " is not set" if node.format is None else f"={node.format!r}"
        raise InputError(f"transe_import.format{given}; expected one of {list(FORMATS)}")
    if node.missing_entities not in MISSING_ENTITIES:
        raise InputError(
            f"transe_import.missing_entities={node.missing_entities!r}; expected one of "
            f"{list(MISSING_ENTITIES)}"
        )
    if cfg.get("scos") is None:
        raise InputError("transe_import: the imported TransE feeds SCOS; select an scos config")
    if not Path(node.path).expanduser().is_dir():
        raise FileNotFoundError(f"{node.path}: no such directory (transe_import.path)")
    return node


def import_stage_dir(cfg: DictConfig, datamodule, source: dict) -> Path:
    """Where imported TransE + SCOS live: ``<artifacts>/kg/<kg fp>/scos-<key>``, the key hashing
    the source (:meth:`lokg.kg.external_embeddings.EngineOutput.fingerprint` and the
    missing-entity policy), the SCOS settings and, with ``scos.min_name_cosine``, the name
    embedder (:func:`scos_stage_dir`'s, less the fit: no model, epochs, seed or split)."""
    names = name_embedder(cfg)
    nodes = [{"transe_import": source}, cfg.scos, *([{"name_encoder": names}] if names else [])]
    return stage_dir(kg_store(datamodule.artifacts_root, datamodule.kg), "scos", config_key(*nodes))


def run_import_stage(cfg: DictConfig, datamodule) -> Path:
    """SCOS on TransE embeddings trained by DGL-KE or PyTorch-BigGraph (``cfg.transe_import``,
    :func:`lokg.kg.external_embeddings.read_external_embeddings`): the same ``scos-<key>/`` as
    :func:`run_scos_stage` (SCOS result, ``relation_embeddings.npy`` [R0, d],
    ``relation_embeddings_merged.npy`` [R*, d], config, manifest; the dataset's latest), with
    no ``transe.ckpt``: ``transe.json`` records ``imported``, where the embeddings came from
    and how many names matched. A finished artifact of the same source and settings is
    reused. Everything is read and checked before anything is written."""
    from lokg.kg.external_embeddings import read_external_embeddings

    node = import_request(cfg)
    imported = read_external_embeddings(
        datamodule.kg, node.path, node.format, node.missing_entities
    )
    print(
        f"TransE: imported from {node.format} ({imported.source.model}): "
        f"{imported.report.describe()}",
        flush=True,
    )
    source = imported.source.fingerprint() | {"missing_entities": node.missing_entities}
    out = import_stage_dir(cfg, datamodule, source)
    if _reused_scos(cfg, datamodule, out, "importing") is not None:
        print(f"SCOS of these embeddings and settings already made: {out}", flush=True)
        return out
    relation = imported.relation
    meta = {"num_relations": len(relation), "dim": int(relation.shape[1])}
    meta["imported"] = imported.record()

    def save_transe(tmp: Path) -> None:
        (tmp / "transe.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")

    return _scos_stage(cfg, datamodule, out, relation, imported.entity, save_transe)


def entity_features(embedder, kg: KnowledgeGraph) -> torch.Tensor:
    """``[E, d_v]`` node features: the sentence encoder over entity names (Sec. 2.5)."""
    names = [kg.entity_name(e) for e in range(kg.num_entities)]
    vecs = embedder.encode(names, kind="passage", desc="embedding entity names")
    return torch.from_numpy(np.asarray(vecs, dtype=np.float32))


def transe_relations(model, art: GraphArtifacts) -> torch.Tensor | None:
    """TransE's SCOS-merged e_r ``[R, d_r]`` for a model's ``set_graph`` (``None`` when there
    are none); one line naming the fix when ``model.relation_source=fixed`` needs them."""
    if art.relation_embeddings is None:
        if model.hparams.relation_source == "fixed":
            raise ValueError(
                "model.relation_source=fixed needs TransE embeddings: run experiment=train_transe "
                "first (or model.relation_source=learned)"
            )
        return None
    return torch.from_numpy(art.relation_embeddings)


def prepare_gat(cfg: DictConfig, datamodule, embedder) -> tuple[GraphArtifacts, dict]:
    """The GAT's graph and constructor sizes: (artifacts, model kwargs)."""
    art = load_graph_artifacts(cfg, datamodule, need_gat=False)
    kwargs = {"num_entities": art.kg.num_entities, "num_relations": art.kg.num_relations}
    return art, kwargs


def attach_gat_graph(model, art: GraphArtifacts, embedder) -> torch.Tensor:
    """``model.set_graph`` with node features, TransE relation embeddings and the question
    encoder (``embedder``'s query vectors)."""
    feats = entity_features(embedder, art.kg)
    rel = transe_relations(model, art)

    def query_encoder(texts: list[str]) -> torch.Tensor:
        return torch.from_numpy(np.asarray(embedder.encode(texts, kind="query"), np.float32))

    model.set_graph(art.kg, feats, rel, query_encoder)
    return feats


def run_gat_stage(
    cfg: DictConfig,
    datamodule,
    model,
    trainer: pl.Trainer,
    art: GraphArtifacts,
    feats: torch.Tensor,
    seed: int,
) -> Path:
    """After the GAT fit: log alpha of every edge (Eq. (13)) for Eq. (16) -> ``gat-<key>/``.

    The attention comes from the best checkpoint on the monitored metric
    (``val/paths_recall``), else the last epoch (:func:`restore_best_checkpoint`); the
    directory holds it (``edge_log_alpha.npy``, [T]), the exported checkpoint (``gat.ckpt``),
    ``gat.json`` (graph fingerprint, which epoch) and the config.
    """
    from lokg.taimr.topology import gat_log_attention

    exported = restore_best_checkpoint(model, trainer)
    print(exported.describe("GAT"), flush=True)
    log_alpha = gat_log_attention(model.gat, art.kg, feats, model.relation_table.weight.detach())
    key = training_key(cfg, cfg.embedder, str(art.scos_dir), seed)
    out = stage_dir(datamodule.artifact_dir, "gat", key)
    with _published(cfg, datamodule, "gat", out, "GAT") as tmp:
        np.save(tmp / "edge_log_alpha.npy", log_alpha)
        meta = {
            "kg_fingerprint": art.kg.fingerprint(),
            "scos_dir": str(art.scos_dir) if art.scos_dir else None,
            "num_edges": len(log_alpha),
        }
        exported.save(tmp, "gat", meta)
    return out


def attach_walk_graph(model, art: GraphArtifacts, embedder) -> None:
    """``model.set_graph`` for the walk model: node features (only with
    ``model.graph_context``, the option whose GAT reads them), TransE's merged e_r,
    relation-name embeddings and the question encoder."""
    from lokg.taimr.walk.net import relation_names

    if model.hparams.graph_context:
        feats = entity_features(embedder, art.kg)
    else:  # no node state enters the walk: entity names are not embedded (2 min on PQL-2H)
        feats = torch.zeros(art.kg.num_entities, 0)
    rel = transe_relations(model, art)
    names = torch.from_numpy(relation_names(art.kg, embedder)) if model.hparams.name_dim else None
    cache: dict[str, np.ndarray] = {}

    def query_encoder(texts: list[str]) -> torch.Tensor:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            for t, v in zip(missing, embedder.encode(missing, kind="query"), strict=True):
                cache[t] = np.asarray(v, np.float32)
        return torch.from_numpy(np.stack([cache[t] for t in texts]))

    def token_encoder(texts: list[str]) -> list[torch.Tensor]:
        return [torch.from_numpy(t) for t in embedder.encode_tokens(texts, kind="query")]

    question_lm = None
    if model.hparams.question_encoder == "finetune":
        from lokg.nn.question_encoder import QuestionLM

        question_lm = QuestionLM.from_embedder(embedder, model.hparams.encoder_trainable_layers)
    model.set_graph(art.kg, feats, rel, names, query_encoder, token_encoder, question_lm)
    if model.hparams.init != "scratch":
        init_from_pretrained(model)


#: the walk architecture's keys that set a parameter's shape or meaning
_SHAPE_KEYS = (
    "node_dim", "rel_dim", "name_dim", "transe_dim", "hidden", "heads", "max_hops",
    "question_key", "question_tokens", "graph_context", "normalization", "name_match",
    "question_in_attention", *TRANSFER_SWITCHES,
)  # fmt: skip

#: the switches a fine-tuned walk takes from the walk it starts from (``model.init``), not
#: from its config: the pretrained walk's transfer switches (docs/design/taimr.md item 27)
INHERITED_KEYS = TRANSFER_SWITCHES


def _start_walk(init: str) -> Path | None:
    """The walk directory ``model.init`` names (``None``: no pretrained walk shipped)."""
    from lokg.taimr.walk.artifact import pretrained_walk

    return pretrained_walk() if init == "pretrained" else Path(init)


def start_walk_switches(init: str) -> dict:
    """``{key: value}`` of :data:`INHERITED_KEYS` as the walk ``model.init`` names recorded
    them (``{}`` for ``scratch``, or when this install ships no pretrained walk:
    :func:`init_from_pretrained` then says so)."""
    from lokg.taimr.walk.artifact import META_FILE, read_walk_meta, recorded_architecture

    if init == "scratch":
        return {}
    start = _start_walk(init)
    if start is None or not (start / META_FILE).is_file():
        return {}
    a = recorded_architecture(read_walk_meta(start))
    return {k: a[k] for k in INHERITED_KEYS}


def init_from_pretrained(model) -> None:
    """``model.init=pretrained``: the walk network's weights, and the question encoder's
    trained top layers, from the walk shipped in the package
    (:data:`lokg.taimr.walk.artifact.PRETRAINED_DIR`), or ``model.init=<a qgat-* directory>``
    from that one; the relation table stays this KG's (a pretrained walk reads relations by
    name only).  One line when this install ships no pretrained walk, or one of another
    architecture."""
    from lokg.taimr.walk.artifact import (
        MODEL_FILE,
        QUESTION_ENCODER_DELTA,
        read_walk_meta,
        recorded_architecture,
    )

    init = model.hparams.init
    shipped = _start_walk(init)
    if shipped is None:
        raise InputError(
            "model.init=pretrained: this install ships no pretrained walk "
            "(lokg/resources/walk/pretrained); use model.init=scratch"
        )
    a = recorded_architecture(read_walk_meta(shipped))
    mine = model.architecture()
    differ = [
        f"{k}={mine[k]!r} (shipped: {a.get(k)!r})" for k in _SHAPE_KEYS if a.get(k) != mine[k]
    ]
    if differ:
        raise InputError(
            "model.init=pretrained: the shipped walk has another architecture: "
            + ", ".join(differ) + "; use model.init=scratch or the shipped settings"
        )  # fmt: skip
    state = torch.load(shipped / MODEL_FILE, map_location="cpu", weights_only=True)
    model.net.load_state_dict(state)
    if model.question_lm is not None and (shipped / QUESTION_ENCODER_DELTA).is_file():
        model.question_lm.load_delta(shipped / QUESTION_ENCODER_DELTA)
    print(f"walk model: starting from the pretrained walk ({shipped})", flush=True)


def check_max_epochs(trainer: DictConfig | None) -> None:
    """Refuse a ``trainer.max_epochs`` Lightning would not take or would misread: it means
    what Lightning's ``Trainer`` makes of it, ``-1`` no epoch limit (``max_steps`` or early
    stopping ends the fit), ``null`` Lightning's default, a whole number ``>= 0`` that many
    epochs; anything below ``-1`` (``-2``) is an error, here before any work rather than
    Lightning's traceback (or, for the walk model, a silent
    :func:`stretch_epochs_to_min_steps`).

    Raises:
        InputError: ``trainer.max_epochs=-2; expected -1 (no epoch limit), null (Lightning's
            default) or a whole number >= 0``.
    """
    if trainer is None or "max_epochs" not in trainer:
        return
    epochs = trainer.max_epochs
    if epochs is None or (type(epochs) is int and epochs >= -1):
        return
    raise InputError(
        f"trainer.max_epochs={epochs!r}; expected -1 (no epoch limit), null (Lightning's "
        "default) or a whole number >= 0"
    )


#: validations over a run whose epochs were raised to reach ``model.min_steps``
STRETCHED_VAL_CHECKS = 20


def stretch_epochs_to_min_steps(cfg: DictConfig, datamodule, min_steps: int) -> int | None:
    """Raise ``cfg.trainer.max_epochs`` so that training takes at least ``min_steps``
    optimizer steps (a small question set would otherwise stop after a few dozen updates);
    returns the epochs to train.  With ``min_steps = 0``, or a set large enough, the
    configured epochs stand, and so does ``-1`` or ``null`` (no epoch limit to raise:
    :func:`check_max_epochs`).  A raised run validates every ``need // STRETCHED_VAL_CHECKS``
    epochs (``trainer.check_val_every_n_epoch``, unless set), its epochs rounded up to a
    multiple of that, so a 10-question set does not validate after each of its 200 epochs."""
    t = cfg.trainer
    if t.max_epochs is None or int(t.max_epochs) == -1:
        return t.max_epochs
    epochs = int(t.max_epochs)
    if min_steps <= 0 or t.get("fast_dev_run") or t.get("limit_train_batches") not in (None, 1.0):
        return epochs  # a debug run that limits its batches keeps its epochs
    world = 1  # processes sharing an epoch's batches
    if "ddp" in str(t.get("strategy")) and isinstance(t.get("devices"), int):
        world = t.devices * int(t.get("num_nodes") or 1)
    per_epoch = math.ceil(len(datamodule.questions["train"]) / datamodule.batch_size / world)
    need = math.ceil(min_steps / max(per_epoch, 1))
    if need > epochs:
        # validate about STRETCHED_VAL_CHECKS times, not after each of the many short epochs
        # (200 validations of 520 questions took 13 of a 10-question run's 14 minutes)
        every = int(t.get("check_val_every_n_epoch") or 1)
        if every == 1:
            every = max(1, need // STRETCHED_VAL_CHECKS)
        need = math.ceil(need / every) * every  # the last epoch validates
        print(
            f"walk model: {per_epoch} batches per epoch; training {need} epochs instead of "
            f"{epochs} to reach model.min_steps={min_steps} steps, validating every {every}",
            flush=True,
        )
        with open_dict(cfg):
            cfg.trainer.max_epochs = need
            cfg.trainer.check_val_every_n_epoch = every
        return need
    return epochs


def run_walk_stage(
    cfg: DictConfig, datamodule, model, trainer: pl.Trainer, art: GraphArtifacts, seed: int
) -> Path:
    """After the walk model's fit: export the best checkpoint's network -> ``qgat-<key>/``.

    The directory holds ``walk_model.pt`` (the network's state dict), ``relation_table.npy``
    (the e_r it saw), ``qgat.json`` (architecture, graph fingerprint, embedder, which epoch)
    and the config (:mod:`lokg.taimr.walk.artifact`).
    """
    from lokg.taimr.walk.artifact import KIND, save_walk_network

    exported = restore_best_checkpoint(model, trainer)
    print(exported.describe("walk model"), flush=True)
    key = training_key(cfg, cfg.embedder, str(art.scos_dir), seed)
    out = stage_dir(datamodule.artifact_dir, KIND, key)
    architecture = model.architecture()
    meta = {
        "kg_fingerprint": art.kg.fingerprint(),
        "scos_dir": str(art.scos_dir) if art.scos_dir else None,
        "embedder": OmegaConf.to_container(cfg.embedder, resolve=True),
        "relations": list(art.kg.relations.labels),  # the vocabulary relation_table.npy rows follow
        **exported.metadata(),
    }
    with _published(cfg, datamodule, KIND, out, "walk model") as tmp:
        save_walk_network(
            tmp, model.net, architecture, model.relation_table.weight.detach().cpu().numpy(), meta,
            question_lm=model.question_lm,
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class RerankInputs:
    """What the answer GAT's fit needs: the walk it re-scores, the model's sizes and one
    joint item per training/validation question with candidates."""

    art: GraphArtifacts
    sizes: dict
    items: dict
    with_gold: dict  # split -> (questions with candidates, of which a gold candidate)


def _joint_items(cfg: DictConfig, datamodule, embedder, art: GraphArtifacts) -> RerankInputs:
    """Run the walk (``art.walk_dir``) over the train and val questions and build each
    question's joint item (:func:`lokg.taimr.walk.rerank.joint_item`)."""
    from lokg.assemble import retriever_over
    from lokg.normalize import normalize_answer
    from lokg.retrieval import PerQuestionRetriever
    from lokg.taimr.walk.joint import joint_graph
    from lokg.taimr.walk.rerank import NodeFeatures, joint_item, step_features
    from lokg.taimr.walk.retriever import build_learned

    m = cfg.model
    retriever = retriever_over(
        datamodule, art, build_learned, embedder=embedder, model_dir=art.walk_dir,
        relation_embeddings=art.relation_embeddings, k_top="auto", k_max=int(m.max_candidates),
        fallback="none",
    )  # fmt: skip
    features = NodeFeatures(embedder)
    items, counts = {}, {}
    for split in ("train", "val"):
        questions = datamodule.questions.get(split, [])
        vecs = embedder.encode([q.text for q in questions], kind="query")
        found = gold_found = 0
        for q, vec in zip(questions, vecs, strict=True):
            walk = retriever
            if isinstance(retriever, PerQuestionRetriever):
                walk = retriever.build(retriever.graph_of(q))
            result = walk.retrieve(q)
            graph = joint_graph(result, int(m.max_candidates), int(m.max_neighbours))
            if graph is None:
                continue
            kg, gold_names = result.kg, {normalize_answer(a) for a in q.answers}
            ents = graph.candidate_entities.tolist()
            score = {int(a.entity): a.score for a in result.answers}
            gold = [normalize_answer(kg.entities.label(e)) in gold_names for e in ents]
            rel = step_features(walk.model.rel_feats, graph, int(m.transe_dim), m.use_transe)
            walk_scores = [score[e] for e in ents]
            items[q.id] = joint_item(graph, kg, features, rel, vec, walk_scores, gold)
            found, gold_found = found + 1, gold_found + any(gold)
        counts[split] = (len(questions), found, gold_found)
    return RerankInputs(art, {}, items, counts)


def prepare_rerank(cfg: DictConfig, datamodule, embedder) -> RerankInputs:
    """The walk's artifacts (``model.walk_dir``, else the default walk model of this graph)
    and the answer GAT's training items and sizes."""
    from lokg.taimr.walk.artifact import read_walk_meta, recorded_architecture

    art = load_graph_artifacts(
        cfg, datamodule, need_gat=False, need_walk=True, walk_dir=cfg.model.get("walk_dir")
    )
    walk = recorded_architecture(read_walk_meta(art.walk_dir))
    if walk["transe_dim"] != cfg.model.transe_dim:
        raise ValueError(
            f"model.transe_dim={cfg.model.transe_dim}, but the walk {art.walk_dir.name} has "
            f"{walk['transe_dim']} TransE columns in its relation features; set it to that"
        )
    inputs = _joint_items(cfg, datamodule, embedder, art)
    for split, (n, found, gold) in inputs.with_gold.items():
        print(
            f"answer GAT: {split}: {found} of {n} questions have candidates, {gold} a gold one",
            flush=True,
        )
    any_item = next(iter(inputs.items.values()), None)
    if any_item is None:
        raise ValueError(f"{datamodule.name}: the walk found no candidate for any question")
    sizes = {
        "node_dim": int(any_item.x.size(1)),
        "rel_dim": int(any_item.rel.size(1)),
        "query_dim": int(any_item.query.size(0)),
    }
    return RerankInputs(art, sizes, inputs.items, inputs.with_gold)


def run_rerank_stage(
    cfg: DictConfig, datamodule, model, trainer: pl.Trainer, inputs: RerankInputs, seed: int
) -> Path:
    """After the answer GAT's fit: export the best checkpoint -> ``rerank-<key>/``
    (:mod:`lokg.taimr.walk.rerank`)."""
    from lokg.taimr.walk.rerank import KIND, save_answer_gat

    exported = restore_best_checkpoint(model, trainer)
    print(exported.describe("answer GAT"), flush=True)
    key = training_key(cfg, cfg.embedder, str(inputs.art.walk_dir), seed)
    out = stage_dir(datamodule.artifact_dir, KIND, key)
    meta = {
        "walk_dir": str(inputs.art.walk_dir),
        "embedder": OmegaConf.to_container(cfg.embedder, resolve=True),
        "questions": {k: list(v) for k, v in inputs.with_gold.items()},
        **exported.metadata(),
    }
    with _published(cfg, datamodule, KIND, out, "answer GAT") as tmp:
        save_answer_gat(tmp, model.net, model.architecture(), meta)
    return out
