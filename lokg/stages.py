"""The offline stages around the Lightning fits, and loading their artifacts.

- after TransE: SCOS (:func:`run_scos_stage`) -> ``scos-<key>/``;
- before the GAT: its graph (SCOS's compressed G* when there is one), node features from the
  sentence encoder, relation embeddings (:func:`prepare_gat`);
- after the GAT: edge attention log alpha for Eq. (16) over the whole graph
  (:func:`run_gat_stage`) -> ``gat-<key>/``.

``evaluate.py`` loads the same artifacts through :func:`load_graph_artifacts`.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf

from lokg.artifacts import config_key, mark_latest, resolve, stage_dir
from lokg.kg.graph import KnowledgeGraph

log = logging.getLogger(__name__)


def scos_mode(cfg: DictConfig) -> str:
    """``off`` when no SCOS config is selected or ``scos=off``; else the configured mode."""
    scos = cfg.get("scos")
    return "off" if scos is None else str(scos.get("mode", "greedy"))


def merged_relation_embeddings(embeddings: np.ndarray, mapping: np.ndarray) -> np.ndarray:
    """``[R*, d]``: a merged cluster's embedding is the mean of its members' (Sec. 2.3)."""
    num = int(mapping.max()) + 1 if len(mapping) else 0
    sums = np.zeros((num, embeddings.shape[1]), dtype=np.float64)
    np.add.at(sums, mapping, embeddings)
    counts = np.bincount(mapping, minlength=num)[:, None]
    return (sums / counts).astype(np.float32)


def run_scos_stage(cfg: DictConfig, datamodule, model, trainer: pl.Trainer, seed: int) -> Path:
    """SCOS on the fitted TransE: write ``scos-<key>/`` under the dataset's artifacts.

    The directory holds the SCOS result (``scos/``: phi, compressed KG, merge report), the
    TransE relation embeddings before (``relation_embeddings.npy``, [R0, d]) and after merging
    (``relation_embeddings_merged.npy``, [R*, d]), the TransE checkpoint and the config that
    produced them; it becomes the latest ``scos`` artifact of the dataset.
    """
    from lokg.scos import compress

    embeddings = model.relation_embeddings()
    result = compress(datamodule.kg, embeddings, OmegaConf.to_container(cfg.scos, resolve=True))
    print(result.format_report().splitlines()[0], flush=True)
    key = config_key(cfg.model, cfg.trainer.get("max_epochs"), cfg.scos, seed)
    out = stage_dir(datamodule.artifact_dir, "scos", key)
    if out.exists():
        shutil.rmtree(out)
    result.save(out / "scos")
    np.save(out / "relation_embeddings.npy", embeddings)
    np.save(
        out / "relation_embeddings_merged.npy",
        merged_relation_embeddings(embeddings, result.mapping),
    )
    ckpt = trainer.checkpoint_callback.last_model_path if trainer.checkpoint_callback else ""
    if ckpt:
        shutil.copy(ckpt, out / "transe.ckpt")
    OmegaConf.save(cfg, out / "config.yaml", resolve=True)
    mark_latest(datamodule.artifact_dir, "scos", out)
    log.info("SCOS artifacts: %s", out)
    return out


@dataclass
class GraphArtifacts:
    """What retrieval needs from the offline stages for one dataset.

    Attributes:
        kg: the graph retrieval runs on (G* after SCOS, else the original).
        scos_dir: the SCOS artifact used (``None`` with ``scos=off``).
        relation_embeddings: ``[R, d]`` TransE embeddings of ``kg``'s relations, when trained.
        gat_dir: the GAT artifact used, when one is loaded.
        edge_log_alpha: ``[T]`` log alpha of the trained GAT in ``kg``'s triple order.
    """

    kg: KnowledgeGraph
    scos_dir: Path | None = None
    relation_embeddings: np.ndarray | None = None
    gat_dir: Path | None = None
    edge_log_alpha: np.ndarray | None = None


def load_graph_artifacts(
    cfg: DictConfig,
    datamodule,
    need_gat: bool,
    scos_dir: str | None = None,
    gat_dir: str | None = None,
) -> GraphArtifacts:
    """The graph after SCOS and, when ``need_gat``, the trained GAT's attention.

    With ``scos=off`` the original graph is used. Otherwise the given or latest SCOS artifact
    of the dataset is required (a one-line error says to run ``train.py model=transe``).
    """
    from lokg.scos import SCOSResult

    root = datamodule.artifact_dir
    art = GraphArtifacts(kg=datamodule.kg)
    if scos_mode(cfg) != "off":
        art.scos_dir = resolve(root, "scos", scos_dir)
        if art.scos_dir is None:
            raise FileNotFoundError(
                f"no SCOS artifacts for {datamodule.name} under {root}; run "
                f"`python train.py model=transe data=...` first, or use scos=off"
            )
        art.kg = SCOSResult.load(art.scos_dir / "scos").kg
        art.relation_embeddings = np.load(art.scos_dir / "relation_embeddings_merged.npy")
    if need_gat:
        art.gat_dir = resolve(root, "gat", gat_dir)
        if art.gat_dir is None:
            raise FileNotFoundError(
                f"no GAT artifacts for {datamodule.name} under {root}; run "
                f"`python train.py model=gat data=...` first, or use retriever.attention=uniform"
            )
        meta = json.loads((art.gat_dir / "gat.json").read_text(encoding="utf-8"))
        if meta["kg_fingerprint"] != art.kg.fingerprint():
            raise ValueError(
                f"{art.gat_dir}: the GAT was trained on another graph (kg fingerprint "
                f"{meta['kg_fingerprint']}, this one {art.kg.fingerprint()}); retrain model=gat "
                "with the same scos setting"
            )
        art.edge_log_alpha = np.load(art.gat_dir / "edge_log_alpha.npy")
    return art


def entity_features(embedder, kg: KnowledgeGraph) -> torch.Tensor:
    """``[E, d_v]`` node features: the sentence encoder over entity names (Sec. 2.5)."""
    names = [kg.entity_name(e) for e in range(kg.num_entities)]
    return torch.from_numpy(np.asarray(embedder.encode(names, kind="passage"), dtype=np.float32))


def prepare_gat(cfg: DictConfig, datamodule, embedder) -> tuple[GraphArtifacts, dict]:
    """The GAT's graph and constructor sizes: (artifacts, model kwargs)."""
    art = load_graph_artifacts(cfg, datamodule, need_gat=False)
    kwargs = {"num_entities": art.kg.num_entities, "num_relations": art.kg.num_relations}
    return art, kwargs


def attach_gat_graph(model, art: GraphArtifacts, embedder) -> torch.Tensor:
    """``model.set_graph`` with node features, TransE relation embeddings and the encoder."""
    feats = entity_features(embedder, art.kg)
    rel = None if art.relation_embeddings is None else torch.from_numpy(art.relation_embeddings)
    if model.hparams.relation_source == "fixed" and rel is None:
        raise ValueError("model.relation_source=fixed needs TransE embeddings: run model=transe")

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
    """After the GAT fit: log alpha of every edge (Eq. (13)) for Eq. (16) -> ``gat-<key>/``."""
    from lokg.taimr.topology import gat_log_attention

    log_alpha = gat_log_attention(model.gat, art.kg, feats, model.relation_table.weight.detach())
    key = config_key(
        cfg.model, cfg.trainer.get("max_epochs"), cfg.embedder, str(art.scos_dir), seed
    )
    out = stage_dir(datamodule.artifact_dir, "gat", key)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    np.save(out / "edge_log_alpha.npy", log_alpha)
    ckpt = trainer.checkpoint_callback.last_model_path if trainer.checkpoint_callback else ""
    if ckpt:
        shutil.copy(ckpt, out / "gat.ckpt")
    meta = {
        "kg_fingerprint": art.kg.fingerprint(),
        "scos_dir": str(art.scos_dir) if art.scos_dir else None,
        "num_edges": len(log_alpha),
    }
    (out / "gat.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    OmegaConf.save(cfg, out / "config.yaml", resolve=True)
    mark_latest(datamodule.artifact_dir, "gat", out)
    log.info("GAT artifacts: %s", out)
    return out
