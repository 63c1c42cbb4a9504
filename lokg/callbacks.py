"""Stop a training when validation stops improving, with a floor on optimizer steps.

:class:`EarlyStopping` is Lightning's, with two changes that follow from how the offline
stages export a model (:func:`lokg.train_stages.restore_best_checkpoint`: the best checkpoint on
the monitored metric, the first epoch that reached it):

- ``patience: null`` never stops on patience (TransE's default: Table 3 trains 100 epochs);
- ``min_steps``: a stop for lack of improvement waits until that many optimizer steps were
  taken (the walk model's ``model.min_steps``: a small question set is not given up on
  after a few dozen updates). Lightning's ``Trainer(min_steps=...)`` would also hold back
  the ``stopping_threshold`` stop, and that one is always safe: once the metric reaches
  its best possible value (``val/hits@1`` = 1.0), no later epoch can be exported, because
  ``ModelCheckpoint`` replaces its best only on a strict improvement.

Which settings trained an artifact is part of its key (:func:`stopping_key`).
"""

from __future__ import annotations

from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.callbacks import early_stopping as _pl_early_stopping

__all__ = ["EarlyStopping", "stopping_key", "stopping_nodes"]

_Reason = _pl_early_stopping.EarlyStoppingReason


class EarlyStopping(_pl_early_stopping.EarlyStopping):
    """Lightning's ``EarlyStopping`` with ``patience=None`` (never on patience) and a floor of
    ``min_steps`` optimizer steps under the patience stop (not under the threshold stop).

    Args:
        monitor, mode, min_delta, stopping_threshold, verbose: as Lightning's.
        patience: validation checks without improvement before stopping; ``None``: never.
        min_steps: no stop for lack of improvement before this global step.
    """

    def __init__(
        self,
        monitor: str,
        *,
        mode: str = "min",
        patience: int | None = 3,
        min_steps: int = 0,
        min_delta: float = 0.0,
        stopping_threshold: float | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> None:
        if not monitor:
            raise ValueError(
                "callbacks.early_stopping.monitor is empty: the model config sets "
                "callbacks.model_checkpoint.monitor (or set callbacks.early_stopping=null)"
            )
        if patience is not None and patience < 1:
            raise ValueError(f"callbacks.early_stopping.patience={patience}; expected >= 1 or null")
        self.never_on_patience = patience is None
        self.min_steps = int(min_steps or 0)
        self._global_step = 0
        super().__init__(
            monitor=monitor,
            mode=mode,
            patience=0 if patience is None else patience,
            min_delta=min_delta,
            stopping_threshold=stopping_threshold,
            verbose=verbose,
            **kwargs,
        )

    def _reached(self, current: torch.Tensor) -> bool:
        if self.mode == "max":
            return bool(current >= self.stopping_threshold)
        return bool(current <= self.stopping_threshold)

    def _run_early_stopping_check(self, trainer) -> None:
        self._global_step = int(trainer.global_step)
        super()._run_early_stopping_check(trainer)

    def _evaluate_stopping_criteria(self, current: torch.Tensor) -> tuple[bool, str | None]:
        threshold = self.stopping_threshold
        if threshold is not None and bool(torch.isfinite(current)) and self._reached(current):
            # Lightning's test is strict (> 1.0 never holds for a hit rate); reaching it is enough
            self.stopping_reason = _Reason.STOPPING_THRESHOLD
            value = float(current)
            return True, f"{self.monitor} = {value:.4f} reached stopping_threshold {threshold}"
        should_stop, reason = super()._evaluate_stopping_criteria(current)
        held = self.never_on_patience or self._global_step < self.min_steps
        if should_stop and self.stopping_reason == _Reason.PATIENCE_EXHAUSTED and held:
            self.stopping_reason = _Reason.NOT_STOPPED
            return False, None
        return should_stop, reason


def stopping_key(cfg: DictConfig) -> dict | None:
    """The early-stopping settings a training ran with, for its artifact key; ``None`` when
    there is no early stopping or it can never stop (``patience`` and
    ``stopping_threshold`` both null), so that such a run keys as one without it."""
    node = (cfg.get("callbacks") or {}).get("early_stopping")
    if node is None:
        return None
    plain = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node
    if plain.get("patience") is None and plain.get("stopping_threshold") is None:
        return None
    keys = ("monitor", "mode", "patience", "min_steps", "min_delta", "stopping_threshold")
    return {k: plain.get(k) for k in keys}


def stopping_nodes(cfg: DictConfig) -> tuple:
    """:func:`stopping_key` as extra key nodes: ``()`` without early stopping, so a key built
    with them is the one it was before early stopping existed."""
    key = stopping_key(cfg)
    return () if key is None else (key,)
