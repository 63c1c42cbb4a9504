"""What a LightningModule's steps need to stay in step with the other DDP processes.

Under ``trainer=ddp`` each process trains on its share of the questions; backward
all-reduces every trainable parameter's gradient and the epoch's end all-reduces the
validation metrics. Both collectives need every process to take part, so a batch with
nothing to learn must still run backward (:func:`nothing_to_learn`) and every validation
step must log its metrics, scored or not (``torchmetrics.MeanMetric`` updated with the
batch's question count, so the synced value is the question-weighted mean: Lightning's own
``sync_dist`` mean divides an integer total of the batch sizes, wrong when processes saw
different numbers).
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import Tensor


def zero_loss(module: torch.nn.Module) -> Tensor:
    """``0`` with a (zero) gradient path to every trainable parameter of ``module``."""
    params = [p for p in module.parameters() if p.requires_grad]
    return torch.stack([p.sum() for p in params]).sum() * 0.0


def nothing_to_learn(module: pl.LightningModule) -> Tensor | None:
    """``training_step``'s return for a batch with nothing to learn: skipped (``None``) in one
    process; under DDP a zero loss (:func:`zero_loss`), since the other processes' gradient
    all-reduce waits for this one (and Lightning refuses ``None`` there)."""
    trainer = module._trainer  # None when a step is called without a Trainer (benches)
    if trainer is not None and trainer.world_size > 1:
        return zero_loss(module)
    return None
