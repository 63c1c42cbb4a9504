"""Early stopping (lokg.callbacks): patience, the min_steps floor under it, the threshold stop
that ignores the floor, and the artifact key that records the settings.

``ScriptedMetric`` is a test double: a tiny module whose ``val/hits@1`` at each epoch is
read from a list, so when training must stop is known in advance.
"""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader

from lokg.artifacts import config_key
from lokg.callbacks import EarlyStopping, stopping_key
from lokg.train import early_stop_line
from lokg.train_stages import training_key

from .fixtures.training import quiet_trainer

STEPS_PER_EPOCH = 4


class ScriptedMetric(pl.LightningModule):
    """Test double: one weight, 4 training steps per epoch, ``val/hits@1`` = script[epoch]."""

    def __init__(self, script: list[float]) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.script = script

    def training_step(self, batch, batch_idx):
        return (self.w - batch.float().mean()) ** 2

    def validation_step(self, batch, batch_idx):
        self.log("val/hits@1", self.script[self.current_epoch])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(tmp_path, script, **stopping) -> tuple[pl.Trainer, EarlyStopping]:
    stop = EarlyStopping(monitor="val/hits@1", mode="max", **stopping)
    ckpt = ModelCheckpoint(dirpath=tmp_path, monitor="val/hits@1", mode="max")
    trainer = quiet_trainer(
        tmp_path, len(script), enable_checkpointing=True, num_sanity_val_steps=0,
        callbacks=[stop, ckpt],
    )  # fmt: skip
    data = torch.arange(STEPS_PER_EPOCH)
    trainer.fit(ScriptedMetric(script), DataLoader(data, batch_size=1), DataLoader(data[:1]))
    return trainer, stop


def test_patience_stops_after_that_many_checks_without_improvement(tmp_path):
    # best at epoch 1; epochs 2 and 3 do not beat it: patience 2 stops after epoch 3
    trainer, stop = _fit(tmp_path, [0.5, 0.8, 0.8, 0.7, 0.9, 0.9], patience=2)
    assert trainer.current_epoch == 4  # epochs 0..3 ran
    assert stop.stopped_epoch == 3
    assert "did not improve" in early_stop_line(trainer)


def test_no_patience_stop_before_min_steps(tmp_path):
    # the same script: patience runs out at epoch 3 (global step 16), where a floor of 17
    # steps holds it, and epoch 4 improves
    trainer, _ = _fit(tmp_path, [0.5, 0.8, 0.8, 0.7, 0.9, 0.9], patience=2, min_steps=17)
    assert trainer.current_epoch == 6  # ran to max_epochs: epoch 4 improved, then it ended
    trainer, _ = _fit(tmp_path / "b", [0.5, 0.8, 0.8, 0.7, 0.7, 0.7, 0.7], patience=2, min_steps=17)
    assert trainer.current_epoch == 5  # epoch 4 reached step 20 >= 17 with 3 non-improvements


def test_threshold_stops_at_once_even_below_the_floor(tmp_path):
    trainer, stop = _fit(
        tmp_path, [0.5, 1.0, 1.0, 1.0], patience=2, stopping_threshold=1.0, min_steps=1000
    )
    assert stop.stopped_epoch == 1 and trainer.current_epoch == 2
    # the exported checkpoint (the best) is the first epoch that reached 1.0: the same as a
    # run to max_epochs would export
    assert trainer.checkpoint_callback.best_model_path.endswith("epoch=1-step=8.ckpt")
    assert "threshold" in early_stop_line(trainer)


def test_patience_null_never_stops(tmp_path):
    trainer, _ = _fit(tmp_path, [0.9, 0.1, 0.1, 0.1, 0.1], patience=None)
    assert trainer.current_epoch == 5
    assert early_stop_line(trainer) is None


def test_bad_settings_are_one_line_errors():
    with pytest.raises(ValueError, match="callbacks.early_stopping.monitor is empty"):
        EarlyStopping(monitor=None)
    with pytest.raises(ValueError, match=r"patience=0; expected >= 1 or null"):
        EarlyStopping(monitor="val/loss", patience=0)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["experiment=train_walk"], ("val/hits@1", "max", 2, 200, 1.0)),
        (["experiment=train_gat"], ("val/loss", "min", 3, 0, None)),
        (["experiment=train_walk", "model.min_steps=50"], ("val/hits@1", "max", 2, 50, 1.0)),
    ],
)
def test_model_configs_set_early_stopping(make_cfg, overrides, expected):
    key = stopping_key(make_cfg("train", overrides))
    got = tuple(key[k] for k in ("monitor", "mode", "patience", "min_steps", "stopping_threshold"))
    assert got == expected


def test_transe_never_stops_early_and_keeps_its_artifact_key(make_cfg):
    # Table 3 trains TransE 100 epochs (experiment=paper reads it): no early stop, and the
    # SCOS artifact key is the one it had before early stopping existed
    cfg = make_cfg("train", ["experiment=train_transe"])
    assert stopping_key(cfg) is None
    assert training_key(cfg, "x") == config_key(cfg.model, cfg.trainer.max_epochs, "x")


def test_early_stopping_settings_change_the_walk_artifact_key(make_cfg):
    a = make_cfg("train", ["experiment=train_walk"])
    b = make_cfg("train", ["experiment=train_walk", "callbacks.early_stopping.patience=4"])
    c = make_cfg("train", ["experiment=train_walk", "callbacks.early_stopping=null"])
    keys = {training_key(cfg, "x") for cfg in (a, b, c)}
    assert len(keys) == 3
    assert training_key(c, "x") == config_key(c.model, c.trainer.max_epochs, "x")
