"""The training job behind ``train.py``: data -> model fit/test, all built from config.

Kept out of the root script so it can be called from tests and notebooks with a composed
config (``hydra.compose``) and so ``train.py`` stays a thin entry point.
"""

from __future__ import annotations

import logging
import random
import shutil
from pathlib import Path

import hydra
import numpy as np
import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from lokg.artifacts import config_key, mark_latest, stage_dir

log = logging.getLogger(__name__)


def resolve_seed(seed: int | None) -> int:
    """``seed`` itself when given (``0`` included), else a freshly drawn one."""
    if seed is not None:
        return int(seed)
    return random.SystemRandom().randrange(2**31)


def format_stats(stats: dict) -> str:
    """A small table of dataset statistics, as ``make demo`` prints it."""
    q = stats["questions"]
    lines = [
        f"dataset {stats['dataset']}"
        + (
            ""
            if stats.get("paper_setting", True)
            else "  [offline stand-in, not the paper's setting]"
        ),
        f"  KG: {stats['entities']:,} entities, {stats['relations']:,} relations, "
        f"{stats['triples']:,} triples",
        f"  questions: train {q['train']:,} / val {q['val']:,} / test {q['test']:,}",
    ]
    lines += [f"  read: {line}" for line in stats.get("read", [])]
    return "\n".join(lines)


def instantiate_list(cfg: DictConfig | None) -> list:
    """Instantiate every ``_target_`` entry of a dict-of-configs group (callbacks, loggers)."""
    if not cfg:
        return []
    return [hydra.utils.instantiate(c) for c in cfg.values() if c is not None and "_target_" in c]


def run(cfg: DictConfig) -> dict:
    """Prepare data, print its statistics, and fit/test ``cfg.model`` when one is selected.

    Returns the dataset statistics and, when a model was trained, the logged metrics.
    """
    seed = resolve_seed(cfg.seed)
    pl.seed_everything(seed, workers=True)
    log.info("seed %d%s", seed, "" if cfg.seed is not None else " (drawn)")

    datamodule = hydra.utils.instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup("fit")
    stats = datamodule.summary()
    print(format_stats(stats), flush=True)
    result: dict = {"seed": seed, "stats": stats}
    if cfg.get("model") is None:
        return result

    model = hydra.utils.instantiate(cfg.model, **datamodule.model_kwargs())
    callbacks = instantiate_list(cfg.get("callbacks"))
    loggers = instantiate_list(cfg.get("logger"))
    trainer: pl.Trainer = hydra.utils.instantiate(cfg.trainer, callbacks=callbacks, logger=loggers)
    hparams = OmegaConf.to_container(cfg, resolve=True)
    hparams["seed"] = seed
    for lg in loggers:
        lg.log_hyperparams(hparams)
    if cfg.train:
        trainer.fit(model, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    if cfg.test:
        ckpt = (
            "best"
            if trainer.checkpoint_callback and trainer.checkpoint_callback.best_model_path
            else None
        )
        trainer.test(model, datamodule=datamodule, ckpt_path=ckpt)
        metrics.update({k: float(v) for k, v in trainer.callback_metrics.items()})
    result["metrics"] = metrics
    from lokg.models.transe_module import TransEModule

    if isinstance(model, TransEModule) and cfg.get("scos") is not None:
        result["scos_dir"] = run_scos_stage(cfg, datamodule, model, trainer, seed)
    result["trainer"] = trainer
    result["model"] = model
    result["datamodule"] = datamodule
    return result


def merged_relation_embeddings(embeddings: np.ndarray, mapping: np.ndarray) -> np.ndarray:
    """``[R*, d]``: each merged cluster's embedding is the mean of its members' (Sec. 2.3)."""
    num = int(mapping.max()) + 1 if len(mapping) else 0
    sums = np.zeros((num, embeddings.shape[1]), dtype=np.float64)
    np.add.at(sums, mapping, embeddings)
    counts = np.bincount(mapping, minlength=num)[:, None]
    return (sums / counts).astype(np.float32)


def run_scos_stage(cfg: DictConfig, datamodule, model, trainer: pl.Trainer, seed: int) -> Path:
    """SCOS on the fitted TransE: write ``scos-<key>/`` under the dataset's artifacts.

    The directory holds the SCOS result (``scos/``: phi, compressed KG, merge report),
    the TransE relation embeddings before (``relation_embeddings.npy``, [R0, d]) and after
    merging (``relation_embeddings_merged.npy``, [R*, d]), the TransE checkpoint and the
    config that produced them; it becomes the latest ``scos`` artifact of the dataset.
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
