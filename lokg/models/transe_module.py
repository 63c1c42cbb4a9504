"""Lightning wrapper around :class:`lokg.nn.transe.TransE` (SCOS, Section 2.3).

Wires the scorer to the margin loss, the negative sampler, an optimizer, the entity-norm
constraint (re-applied after every optimizer step) and filtered link-prediction metrics
(``val/mrr``, ``val/hits@1``, ``val/hits@10``).  Checkpoints carry the hyper-parameters,
including the vocabulary sizes; loading a checkpoint trained on other vocabularies raises.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from torchmetrics import MeanMetric

from lokg.data.loaders import triple_batches
from lokg.nn.transe import (
    FilterIndex,
    NegativeSampler,
    TransE,
    filtered_ranks,
)

__all__ = [
    "TransEModule",
    "fit_transe",
    "relation_embeddings_from_checkpoint",
]

_VOCAB_KEYS = ("num_entities", "num_relations", "dim")
#: optimizers that take the sparse gradients of ``sparse=True`` (each moves only the rows a
#: gradient has: SparseAdam's moments, Adagrad's sums and plain SGD are kept or applied per row)
SPARSE_OPTIMIZERS = (torch.optim.SparseAdam, torch.optim.Adagrad, torch.optim.SGD)
#: from this many entities on, dense TransE says once that ``model=transe_sparse`` exists: a
#: dense step moves every row (on the synthetic 10M-triple graph, 10^6 entities, CPU: 5.4k
#: against 258k triples/s at batch 4,096; docs/results.md, "Scale")
SPARSE_HINT_ENTITIES = 1_000_000


def dense_hint(num_entities: int, sparse: bool) -> str | None:
    """The line train.py prints before a dense TransE fit over ``SPARSE_HINT_ENTITIES`` or
    more entities (``None``: nothing to say: sparse, or a small graph)."""
    if sparse or num_entities < SPARSE_HINT_ENTITIES:
        return None
    return (
        f"TransE: dense gradients over {num_entities:,} entities move every row each step; "
        "model=transe_sparse moves only the batch's (docs/configs.md, Training)"
    )


class TransEModule(pl.LightningModule):
    """TransE trained with a margin ranking loss on ``[B, 3]`` triple batches.

    Args:
        num_entities: |E| (from ``dm.model_kwargs()``).
        num_relations: |R| (from ``dm.model_kwargs()``).
        dim: embedding dimension (paper Table 3: 64).
        p_norm: 1 or 2.
        margin: margin of the ranking loss.
        negative_sampler: ``uniform`` or ``bernoulli``.
        num_negatives: corruptions per positive.
        optimizer: a partial optimizer ``params -> Optimizer`` (Hydra ``_partial_: true``);
            default Adam(lr=0.01), SparseAdam(lr=0.01) with ``sparse``.
        sparse: sparse embedding gradients (beyond the paper; ``model=transe_sparse``): a step
            costs O(batch) instead of O(|E|), and the norm constraint is re-applied to the
            rows the step moved only (the sparse gradient's indices: the batch's entities,
            every process's under DDP; the others did not move). Needs an optimizer that
            takes sparse gradients (``torch.optim.SparseAdam``, ``Adagrad``, ``SGD``).

    A training step reads nothing back to the host (negatives drawn on the batch's device,
    the loss logged as a tensor into a metric that syncs at the epoch's end, the constraint
    gathered and written back on the device), so on a GPU the Python side runs ahead of the
    kernels instead of waiting for them every step.

    Triples: ``train_triples`` (for the Bernoulli statistics) and ``known_triples`` (for the
    filtered metrics) come from the DataModule at ``setup`` (``dm.train_triples``,
    ``dm.kg.triples``), or from :meth:`attach_triples`.
    """

    def __init__(
        self,
        num_entities: int,
        num_relations: int,
        dim: int = 64,
        p_norm: int = 1,
        margin: float = 1.0,
        negative_sampler: str = "bernoulli",
        num_negatives: int = 1,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
        sparse: bool = False,
    ):
        super().__init__()
        self.save_hyperparameters(logger=False)
        self.model = TransE(num_entities, num_relations, dim, p_norm, margin, sparse)
        self.sparse = sparse
        self.sampler = NegativeSampler(num_entities, num_relations, negative_sampler, num_negatives)
        self.optimizer_factory = optimizer
        self.filter_index: FilterIndex | None = None
        # "disable": no NaN check, whose `.any()` would synchronise with the device each step
        self.train_loss = MeanMetric(nan_strategy="disable")
        self.val_mrr = MeanMetric()
        self.val_hits1 = MeanMetric()
        self.val_hits10 = MeanMetric()

    # ------------------------------------------------------------------ data
    def attach_triples(
        self,
        train_triples: np.ndarray | torch.Tensor | None = None,
        known_triples: np.ndarray | torch.Tensor | None = None,
    ) -> None:
        """Fit the Bernoulli sampler on ``train_triples``; index ``known_triples`` (all true
        triples, train and validation) for filtered ranking."""
        if train_triples is not None:
            self.sampler.fit(train_triples)
        if known_triples is not None:
            self.filter_index = FilterIndex(
                known_triples, self.hparams.num_entities, self.hparams.num_relations
            )

    def setup(self, stage: str) -> None:
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if dm is None:
            return
        train = getattr(dm, "train_triples", None)
        kg = getattr(dm, "kg", None)
        known = kg.triples if kg is not None else None
        if known is None and train is not None:
            parts = [train, getattr(dm, "val_triples", None)]
            known = torch.cat([torch.as_tensor(p) for p in parts if p is not None])
        if train is not None and not bool(self.sampler.fitted):
            self.sampler.fit(train)
        if known is not None and self.filter_index is None:
            self.attach_triples(known_triples=known)

    # ------------------------------------------------------------------ training
    def on_fit_start(self) -> None:
        self.model.normalize_entities_()

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        neg = self.sampler(batch)  # [B, k, 3], drawn on batch.device
        pos_score = self.model.score(batch)  # [B]
        neg_score = self.model.score(neg)  # [B, k]
        loss = self.model.loss(pos_score, neg_score)
        self.train_loss.update(loss.detach())  # accumulated on the device; read at epoch end
        self.log("train/loss", self.train_loss, on_step=False, on_epoch=True, prog_bar=True)
        return loss

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """With ``sparse``: coalesce the gradients (repeated rows summed) once, after backward
        (and DDP's all-reduce): SparseAdam and Adagrad coalesce them anyway (now a no-op), and
        the norm constraint then visits each moved row once. On CUDA a coalesce learns its
        row count from the device: the sparse path's one synchronisation a step, which
        SparseAdam makes in any case (the dense path has none)."""
        if not self.sparse:
            return
        for p in self.model.parameters():
            if p.grad is not None and p.grad.is_sparse:
                p.grad = p.grad.coalesce()

    def optimizer_step(self, *args: Any, **kwargs: Any) -> None:
        """Optimizer step, then the TransE constraint ||e||_2 = 1 on every entity (with
        ``sparse``, on the rows of the sparse gradient the step applied: every batch since
        the last step under gradient accumulation, every process's under DDP; no other row
        moved)."""
        super().optimizer_step(*args, **kwargs)
        self.model.normalize_entities_(self.model.moved_entities() if self.sparse else None)

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        if self.filter_index is None:
            raise RuntimeError(
                "TransEModule has no known triples for filtered ranking: use a DataModule "
                "with kg/train_triples or call attach_triples(known_triples=...)"
            )
        ranks = filtered_ranks(self.model, batch, self.filter_index).to(torch.float64)
        self.val_mrr.update(1.0 / ranks)
        self.val_hits1.update((ranks <= 1).to(torch.float64))
        self.val_hits10.update((ranks <= 10).to(torch.float64))
        self.log("val/mrr", self.val_mrr, on_step=False, on_epoch=True, prog_bar=True)
        self.log("val/hits@1", self.val_hits1, on_step=False, on_epoch=True)
        self.log("val/hits@10", self.val_hits10, on_step=False, on_epoch=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        default = torch.optim.SparseAdam if self.sparse else torch.optim.Adam
        factory = self.optimizer_factory or functools.partial(default, lr=0.01)
        optimizer = factory(params=self.parameters())
        if self.sparse and not isinstance(optimizer, SPARSE_OPTIMIZERS):
            raise ValueError(
                f"model.sparse=true needs an optimizer that takes sparse gradients "
                f"(torch.optim.SparseAdam, Adagrad or SGD), got {type(optimizer).__name__}: set "
                "model.optimizer._target_=torch.optim.SparseAdam (model=transe_sparse)"
            )
        return optimizer

    # ------------------------------------------------------------------ checkpoints
    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Refuse a checkpoint trained with other vocabulary sizes or dimension."""
        saved = checkpoint.get("hyper_parameters", {})
        for key in _VOCAB_KEYS:
            if key in saved and saved[key] != self.hparams[key]:
                raise ValueError(
                    f"checkpoint was trained with {key}={saved[key]}, this model has "
                    f"{key}={self.hparams[key]}: the vocabulary or config differs; "
                    "retrain or use the matching data"
                )

    def relation_embeddings(self) -> np.ndarray:
        """``[R, d]`` relation embeddings for SCOS (Eq. (3)) and the GAT (Eq. (7))."""
        return self.model.relation.weight.detach().cpu().numpy().copy()

    def entity_embeddings(self) -> np.ndarray:
        """``[E, d]`` entity embeddings (SCOS's learned entity types, ``entity_types=transe``)."""
        return self.model.entity.weight.detach().cpu().numpy().copy()


def relation_embeddings_from_checkpoint(
    path: str | os.PathLike, num_relations: int | None = None
) -> np.ndarray:
    """``[R, d]`` TransE relation embeddings read from a :class:`TransEModule` checkpoint.

    Args:
        path: a ``.ckpt`` written by Lightning (a trusted, locally produced file: it is
            unpickled with ``weights_only=False`` because it carries the optimizer partial).
        num_relations: when given, the checkpoint's R must equal it.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no TransE checkpoint here")
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    state = ckpt.get("state_dict", {})
    key = "model.relation.weight"
    if key not in state:
        raise ValueError(f"{path}: not a TransEModule checkpoint (no {key!r} in state_dict)")
    emb = state[key].detach().cpu().numpy().copy()
    if num_relations is not None and emb.shape[0] != num_relations:
        raise ValueError(
            f"{path}: checkpoint has {emb.shape[0]} relations, expected {num_relations}"
        )
    return emb


def fit_transe(
    triples: np.ndarray | torch.Tensor,
    num_entities: int,
    num_relations: int,
    epochs: int = 100,
    batch_size: int = 4096,
    seed: int = 0,
    **module_kwargs: Any,
) -> TransEModule:
    """Train a :class:`TransEModule` on every triple of a graph (no validation): the benches'
    way to get SCOS's relation embeddings for a graph that is not a prepared dataset."""
    pl.seed_everything(seed, workers=True)
    triples = torch.as_tensor(np.asarray(triples), dtype=torch.long)
    module = TransEModule(num_entities, num_relations, **module_kwargs)
    module.attach_triples(train_triples=triples)
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, triple_batches(triples, batch_size, shuffle=True, seed=seed))
    return module
