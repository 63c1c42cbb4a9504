"""The training job behind ``train.py``: data -> model fit/test, all built from config.
With ``transe_import.path`` (``experiment=import_transe``) TransE's embeddings are read from
DGL-KE's or PyTorch-BigGraph's output instead of fitted, and SCOS runs on them
(:func:`lokg.train_stages.run_import_stage`).

Kept out of the root script so it can be called from tests and notebooks with a composed
config (``hydra.compose``) and so ``train.py`` stays a thin entry point.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import hydra
import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.utilities.model_helpers import is_overridden
from pytorch_lightning.utilities.rank_zero import rank_zero_only

from lokg import preemption, train_stages
from lokg.config import check_target_keys, instantiate_list, resolve_seed
from lokg.console import configure_console, format_stats
from lokg.data.self_labels import resolve_newest_walk
from lokg.errors import InputError

if TYPE_CHECKING:
    from pathlib import Path

    from lokg.artifacts import GraphArtifacts

log = logging.getLogger(__name__)


def early_stop_line(trainer: pl.Trainer) -> str | None:
    """One line when the fit was stopped early (:class:`lokg.callbacks.EarlyStopping`):
    after which epoch of how many, and why; ``None`` when it ran to ``max_epochs``."""
    from lokg.callbacks import EarlyStopping

    for cb in trainer.callbacks:
        if isinstance(cb, EarlyStopping) and cb.stopping_reason_message:
            return (
                f"early stopping: stopped after epoch {cb.stopped_epoch} "
                f"(max_epochs {trainer.max_epochs}): {cb.stopping_reason_message}"
            )
    return None


#: the float32 matmul precisions torch takes (``torch.set_float32_matmul_precision``)
MATMUL_PRECISIONS = ("highest", "high", "medium")
_said_precision: set[str] = set()  # the precisions already said on this process's console


def build_trainer(*, float32_matmul_precision: str | None = None, **settings: Any) -> pl.Trainer:
    """``pl.Trainer(**settings)``, after setting torch's float32 matmul precision when given
    (``trainer=gpu``: ``high``, TF32 on tensor cores, about 10 mantissa bits in products and
    float32 sums; Lightning warns on every CUDA run while it is unset). Said once per
    precision and process, by rank 0."""
    if float32_matmul_precision is not None:
        if float32_matmul_precision not in MATMUL_PRECISIONS:
            raise InputError(
                f"trainer.float32_matmul_precision={float32_matmul_precision!r}; expected one "
                f"of {list(MATMUL_PRECISIONS)}"
            )
        torch.set_float32_matmul_precision(float32_matmul_precision)
        if float32_matmul_precision not in _said_precision and rank_zero_only.rank == 0:
            print(
                f"float32 matmul precision: {float32_matmul_precision} "
                "(trainer.float32_matmul_precision; 'high' is TF32 on tensor cores)",
                flush=True,
            )
        _said_precision.add(float32_matmul_precision)
    return pl.Trainer(**settings)


def _embedder(cfg: DictConfig):
    """The sentence encoder, its progress bar obeying ``trainer.enable_progress_bar``."""
    embedder = hydra.utils.instantiate(cfg.embedder)
    embedder.show_progress = bool(cfg.trainer.get("enable_progress_bar", True))
    return embedder


def run(cfg: DictConfig) -> dict:
    """Prepare data, print its statistics, and fit/test ``cfg.model`` when one is selected.

    Returns the dataset statistics and, when a model was trained, the logged metrics.

    Raises:
        lokg.errors.Interrupted: on SIGTERM (exit status 143), after saving a checkpoint
            that the same command resumes from when the fit had started (lokg.preemption).
    """
    with preemption.StopOnSigterm() as sigterm:
        return _run(cfg, sigterm)


def _run(cfg: DictConfig, sigterm: preemption.StopOnSigterm) -> dict:
    configure_console(cfg.verbose)
    _check_config(cfg)  # a bad key: its one line is all the run prints
    resolve_newest_walk(cfg)  # data=self_labels: data.source.walk=newest, a directory
    seed = resolve_seed(cfg.seed)
    pl.seed_everything(seed, workers=True)
    log.info("seed %d%s", seed, "" if cfg.seed is not None else " (drawn)")
    datamodule = _prepared_data(cfg)
    stats = datamodule.summary()
    print(format_stats(stats), flush=True)
    result: dict = {"seed": seed, "stats": stats}
    if train_stages.import_request(cfg) is not None:  # TransE read, not fitted
        scos_dir = train_stages.run_import_stage(cfg, datamodule)
        result.update(metrics={}, scos_dir=scos_dir, datamodule=datamodule)
        return result
    if cfg.get("model") is None:
        return result
    fit = _built_model(cfg, datamodule)
    model = fit.model
    trainer, resume = _trainer(cfg, datamodule, fit.stage, seed)
    if (scos_dir := _reused_scos(cfg, datamodule, model, trainer, seed)) is not None:
        # TransE + SCOS depend on the graph only: another question file over it reuses them
        print(f"TransE + SCOS of this graph and config already trained: {scos_dir}", flush=True)
        result.update(metrics={}, scos_dir=scos_dir, trainer=trainer, model=model)
        result["datamodule"] = datamodule
        return result
    if cfg.train:
        resuming = resume is not None and resume.is_file()
        if resuming:
            preemption.check_resume(resume)
        ckpt_path = resume if resuming else cfg.get("ckpt_path")
        with preemption.stops_fit(resume):
            # the resume checkpoint is this job's own file: unpickled whole, as the export
            # stages read its checkpoints (TransE's hparams carry the optimizer partial,
            # which torch's weights_only loader refuses)
            trainer.fit(
                model, datamodule=datamodule, ckpt_path=ckpt_path,
                weights_only=False if resuming else None,
            )  # fmt: skip
        if (line := early_stop_line(trainer)) is not None:
            print(line, flush=True)
    with preemption.keeps_finished_fit(trainer, resume, sigterm):  # test and export
        result["metrics"] = _tested(cfg, datamodule, model, trainer)
        exported = _exported(cfg, datamodule, fit, trainer, seed)
        result.update(exported)
    if exported and not cfg.get("keep_checkpoints", False):
        train_stages.drop_checkpoints(trainer)  # the artifact holds the weights now
    if resume is not None and trainer.is_global_zero:
        preemption.discard(resume)  # done: the same command trains afresh
    result["trainer"] = trainer
    result["model"] = model
    result["datamodule"] = datamodule
    return result


def _check_config(cfg: DictConfig) -> None:
    """The config boundary: the config's groups, ``trainer.max_epochs`` and the SCOS warning
    threshold checked, so a bad key fails in one line before any work or output."""
    for group in ("data", "model", "embedder"):
        check_target_keys(cfg.get(group), group)
    train_stages.check_max_epochs(cfg.get("trainer"))
    train_stages.warn_threshold(cfg)  # a bad scos_warn_contradiction fails before any training
    _check_import(cfg)


def _check_import(cfg: DictConfig) -> None:
    """``transe_import`` checked (:func:`lokg.train_stages.import_request`): it stands in for
    TransE's fit, so the model, when one is selected, is TransE."""
    from lokg.models.transe_module import TransEModule

    if train_stages.import_request(cfg) is None or cfg.get("model") is None:
        return
    target = hydra.utils.get_class(str(cfg.model._target_))
    if not issubclass(target, TransEModule):
        raise InputError(
            f"transe_import reads TransE's embeddings in place of its fit, but model is "
            f"{target.__name__}; use experiment=import_transe (model=transe)"
        )


def _prepared_data(cfg: DictConfig):
    """The DataModule of ``cfg.data``, prepared and set up for the fit."""
    datamodule = hydra.utils.instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup("fit")
    return datamodule


@dataclass
class _Fit:
    """The model to fit, its stage (``gat``, the walk's kind, ``rerank``, ``scos`` or ``fit``)
    and what its post-fit stage needs: the GAT's graph and node features, the walk's graph or
    the answer GAT's inputs (``None`` when not that model)."""

    model: pl.LightningModule
    stage: str
    gat_art: GraphArtifacts | None = None
    feats: torch.Tensor | None = None  # [E, d_v] the GAT's node features
    walk_art: GraphArtifacts | None = None
    rerank_in: train_stages.RerankInputs | None = None


def _built_model(cfg: DictConfig, datamodule) -> _Fit:
    """``cfg.model`` built on the graph and inputs its kind trains on."""
    from lokg.models.gat_module import GATModule
    from lokg.models.rerank_module import RerankModule
    from lokg.models.transe_module import TransEModule, dense_hint
    from lokg.models.walk_module import WalkModule
    from lokg.taimr.walk.artifact import KIND as WALK_KIND

    build = hydra.utils.instantiate(cfg.model, _partial_=True)
    is_class = isinstance(build.func, type)
    if is_class and issubclass(build.func, GATModule):
        datamodule.require_answers("the GAT (experiment=train_gat)")
        # the GAT runs on SCOS's compressed graph, with the embedder's node features
        embedder = _embedder(cfg)
        gat_art, sizes = train_stages.prepare_gat(cfg, datamodule, embedder)
        model = build(**sizes)
        feats = train_stages.attach_gat_graph(model, gat_art, embedder)
        return _Fit(model, "gat", gat_art=gat_art, feats=feats)
    if is_class and issubclass(build.func, WalkModule):
        datamodule.require_answers("the walk model (experiment=train_walk)")
        # the walk model: SCOS's graph as given (it walks both directions by itself, so no
        # added inverse edge), the embedder's features, TransE's merged e_r
        embedder = _embedder(cfg)
        walk_art = train_stages.prepare_gat(cfg, datamodule, embedder)[0].own_edges()
        switches = train_stages.start_walk_switches(str(cfg.model.get("init", "scratch")))
        if changed := {k: v for k, v in switches.items() if cfg.model.get(k) != v}:
            said = ", ".join(f"{k}={v}" for k, v in changed.items())
            print(f"walk model: {said}, as the walk it starts from (model.init)", flush=True)
        model = build(num_relations=walk_art.kg.num_relations, **switches)
        train_stages.attach_walk_graph(model, walk_art, embedder)
        train_stages.stretch_epochs_to_min_steps(cfg, datamodule, model.hparams.min_steps)
        return _Fit(model, WALK_KIND, walk_art=walk_art)
    if is_class and issubclass(build.func, RerankModule):
        datamodule.require_answers("the answer GAT (experiment=train_rerank)")
        # the answer GAT: the trained walk's candidates over the train and val questions
        rerank_in = train_stages.prepare_rerank(cfg, datamodule, _embedder(cfg))
        model = build(**rerank_in.sizes)
        model.set_items(rerank_in.items)
        return _Fit(model, "rerank", rerank_in=rerank_in)
    model = build(**datamodule.model_kwargs())
    if isinstance(model, TransEModule) and cfg.train:
        hint = dense_hint(model.hparams.num_entities, model.sparse)
        if hint is not None and rank_zero_only.rank == 0:
            print(hint, flush=True)
    stage = "scos" if isinstance(model, TransEModule) and cfg.get("scos") is not None else "fit"
    return _Fit(model, stage)


def _trainer(cfg: DictConfig, datamodule, stage: str, seed: int) -> tuple[pl.Trainer, Path | None]:
    """``(trainer, resume)``: the trainer with the config's callbacks and loggers (the
    hyper-parameters logged) and, for a real fit, the checkpoint a fit stopped by SIGTERM
    leaves and the same command resumes from (``None`` otherwise)."""
    callbacks = instantiate_list(cfg.get("callbacks"))
    resume = None
    if cfg.train and not cfg.trainer.get("fast_dev_run"):
        resume = preemption.resume_path(cfg, datamodule.artifact_dir, stage, seed)
        callbacks.append(preemption.ResumeCheckpoint(resume, resuming=resume.is_file()))
    loggers = instantiate_list(cfg.get("logger"))
    trainer: pl.Trainer = hydra.utils.instantiate(cfg.trainer, callbacks=callbacks, logger=loggers)
    hparams = OmegaConf.to_container(cfg, resolve=True)
    hparams["seed"] = seed
    for lg in loggers:
        lg.log_hyperparams(hparams)
    return trainer, resume


def _is_transe_with_scos(cfg: DictConfig, model) -> bool:
    """Whether the fit is TransE's with SCOS after it (its stage is ``scos``)."""
    from lokg.models.transe_module import TransEModule

    return isinstance(model, TransEModule) and cfg.get("scos") is not None


def _reused_scos(cfg: DictConfig, datamodule, model, trainer: pl.Trainer, seed: int) -> Path | None:
    """The SCOS artifact this TransE fit would make, when it exists already (``None``
    otherwise, and for every other model, an explicit checkpoint or a debug run)."""
    reuse = (
        _is_transe_with_scos(cfg, model)
        and cfg.train
        and not cfg.get("ckpt_path")
        and not trainer.fast_dev_run
    )
    return train_stages.reuse_scos_stage(cfg, datamodule, seed) if reuse else None


def _tested(cfg: DictConfig, datamodule, model, trainer: pl.Trainer) -> dict:
    """The fit's logged metrics, and the test split's when ``cfg.test`` and the model has a
    test step (link prediction and the GAT stop at val), on the best checkpoint."""
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    if cfg.test and is_overridden("test_step", model):
        ckpt = (
            "best"
            if trainer.checkpoint_callback and trainer.checkpoint_callback.best_model_path
            else None
        )
        trainer.test(model, datamodule=datamodule, ckpt_path=ckpt)
        metrics.update({k: float(v) for k, v in trainer.callback_metrics.items()})
    if trainer.world_size > 1:  # trainer=ddp: each process says it trained, and what it saw
        synced = ", ".join(f"{k}={v!r}" for k, v in sorted(metrics.items()) if k.startswith("val/"))
        log.info("rank %d: fit done; %s", trainer.global_rank, synced or "no val/ metrics")
    return metrics


def _exported(cfg: DictConfig, datamodule, fit: _Fit, trainer: pl.Trainer, seed: int) -> dict:
    """The post-fit stage of ``fit``'s model: ``{"<kind>_dir": its artifact directory}``, or
    nothing on the other DDP ranks (rank 0 writes), in a debug run or for a plain fit."""
    model = fit.model
    if not trainer.is_global_zero:  # trainer=ddp: the post-fit stages run once, on rank 0
        log.info("rank %d: post-fit artifacts are written by rank 0", trainer.global_rank)
        return {}
    if trainer.fast_dev_run:  # debug=fdr checks that things run; it publishes no artifacts
        log.info("fast_dev_run: SCOS/GAT artifacts are not written")
        return {}
    if _is_transe_with_scos(cfg, model):
        return {"scos_dir": train_stages.run_scos_stage(cfg, datamodule, model, trainer, seed)}
    if fit.gat_art is not None:
        out = train_stages.run_gat_stage(
            cfg, datamodule, model, trainer, fit.gat_art, fit.feats, seed
        )
        return {"gat_dir": out}
    if fit.rerank_in is not None:
        out = train_stages.run_rerank_stage(cfg, datamodule, model, trainer, fit.rerank_in, seed)
        return {"rerank_dir": out}
    if fit.walk_art is not None:
        out = train_stages.run_walk_stage(cfg, datamodule, model, trainer, fit.walk_art, seed)
        return {"walk_dir": out}
    return {}
