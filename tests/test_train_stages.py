"""The offline stages export the best checkpoint on the monitored metric, not the last epoch.

A test double callback (``PeakAtFirstEpoch``) logs a fake validation metric that peaks at
epoch 0, so the best checkpoint is known in advance and differs from the last epoch's weights;
``WeightsPerEpoch`` keeps each epoch's weights to compare the artifacts with.
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader

from lokg.kg.graph import KnowledgeGraph
from lokg.models.gat_module import GATModule
from lokg.models.transe_module import TransEModule
from lokg.taimr.topology import gat_log_attention
from lokg.train_stages import (
    GraphArtifacts,
    drop_checkpoints,
    restore_best_checkpoint,
    run_gat_stage,
    run_scos_stage,
)
from lokg.typing import Question

from .fixtures import toy_kg
from .fixtures.training import quiet_trainer

EPOCHS = 3


class PeakAtFirstEpoch(pl.Callback):
    """Test double: logs ``val/fake`` = 1.0 at epoch 0 and 0.0 afterwards."""

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        pl_module.log("val/fake", 1.0 if trainer.current_epoch == 0 else 0.0)


class WeightsPerEpoch(pl.Callback):
    """Keeps a copy of the model's weights at the end of every training epoch."""

    def __init__(self) -> None:
        self.states: list[dict[str, torch.Tensor]] = []

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.states.append(copy.deepcopy(pl_module.state_dict()))


def _fit(model, tmp_path, loaders, monitor: str | None) -> tuple[pl.Trainer, WeightsPerEpoch]:
    weights = WeightsPerEpoch()
    checkpoint = ModelCheckpoint(
        dirpath=tmp_path / "checkpoints",
        filename="epoch_{epoch:03d}",  # as configs/callbacks/default.yaml
        monitor=monitor,
        mode="max",
        save_last=True,
        auto_insert_metric_name=False,
    )
    trainer = quiet_trainer(
        tmp_path,
        EPOCHS,
        num_sanity_val_steps=0,
        callbacks=[PeakAtFirstEpoch(), weights, checkpoint],
    )
    trainer.fit(model, *loaders)
    assert len(weights.states) == EPOCHS
    return trainer, weights


def _transe(kg: KnowledgeGraph) -> TransEModule:
    pl.seed_everything(0, workers=True)
    module = TransEModule(kg.num_entities, kg.num_relations, dim=8)
    module.attach_triples(train_triples=kg.triples, known_triples=kg.triples)
    return module


@pytest.mark.parametrize(
    ("monitor", "selected", "epoch"), [("val/fake", "best", 0), (None, "last", 2)]
)
def test_scos_stage_exports_the_best_transe_epoch(
    make_cfg, tmp_path, capsys, monitor, selected, epoch
):
    kg = toy_kg.parents()
    model = _transe(kg)
    loaders = (
        DataLoader(kg.triples, batch_size=4, shuffle=True),
        DataLoader(kg.triples, batch_size=5),
    )
    trainer, weights = _fit(model, tmp_path, loaders, monitor)
    best, last = (
        weights.states[0]["model.relation.weight"],
        weights.states[-1]["model.relation.weight"],
    )
    assert not torch.allclose(best, last)  # the run did move on after epoch 0

    dm = SimpleNamespace(
        kg=kg,
        artifact_dir=tmp_path / "artifacts" / "data" / "family",
        artifacts_root=tmp_path / "artifacts",
        triple_val_fraction=0.05,
        split_seed=0,
    )
    out = run_scos_stage(make_cfg("train"), dm, model, trainer, seed=0)
    assert out.parent == tmp_path / "artifacts" / "kg" / kg.fingerprint()  # keyed by the KG

    exported = np.load(out / "relation_embeddings.npy")
    np.testing.assert_array_equal(exported, weights.states[epoch]["model.relation.weight"].numpy())
    meta = json.loads((out / "transe.json").read_text())
    assert meta["selected"] == selected and meta["last_epoch"] == EPOCHS - 1
    assert meta["epoch"] == epoch and meta["monitor"] == monitor
    if selected == "best":
        assert (meta["best_epoch"], meta["best_value"]) == (0, 1.0)
        assert meta["checkpoint"] == "epoch_000.ckpt"
    else:
        assert meta["best_epoch"] is None and meta["best_value"] is None
        assert meta["checkpoint"] == "last.ckpt"
    assert torch.load(out / "transe.ckpt", weights_only=False)["epoch"] == epoch
    assert f"exporting the {selected}" in capsys.readouterr().out


def test_the_fits_own_checkpoints_go_once_its_artifact_is_exported(tmp_path, capsys):
    """``keep_checkpoints: false`` (train.py's default): after the export, the files the
    fit's ModelCheckpoint wrote (best epoch_000.ckpt and last.ckpt here) are deleted; a file
    it did not write, in the same directory, stays, and so does the directory."""
    kg = toy_kg.parents()
    model = _transe(kg)
    loaders = (DataLoader(kg.triples, batch_size=4), DataLoader(kg.triples, batch_size=5))
    trainer, _ = _fit(model, tmp_path, loaders, "val/fake")
    ckpts = tmp_path / "checkpoints"
    assert sorted(f.name for f in ckpts.iterdir()) == ["epoch_000.ckpt", "last.ckpt"]
    (ckpts / "another_run.ckpt").write_bytes(b"not this fit's")

    deleted = drop_checkpoints(trainer)

    assert sorted(f.name for f in deleted) == ["epoch_000.ckpt", "last.ckpt"]
    assert [f.name for f in ckpts.iterdir()] == ["another_run.ckpt"]
    assert "checkpoints: 2 deleted" in capsys.readouterr().out
    (ckpts / "another_run.ckpt").unlink()
    assert drop_checkpoints(trainer) == [] and ckpts.is_dir()  # nothing of its own left


# tests/scos/test_contradiction.py's films: directed_by and written_by share f1-f3, agree on
# f1 only (and on dan at f3): contradiction 2/3
FILMS = [
    ("f1", "directed_by", "ann"), ("f1", "written_by", "ann"), ("f2", "directed_by", "bob"),
    ("f2", "written_by", "carl"), ("f3", "directed_by", "dan"), ("f3", "written_by", "dan"),
    ("f3", "written_by", "eve"), ("f4", "directed_by", "fay"), ("f5", "written_by", "gus"),
]  # fmt: skip


def _films_with_parallel_transe(monkeypatch, tmp_path):
    """FILMS with a TransE fit, and SCOS's compress patched so that every relation vector is
    one direction (cos 1), no entity types and min_support 1: Eq. (3) then admits
    directed_by + written_by, and only the guards under test can refuse it. Returns the
    DataModule stand-in, the model and its trainer."""
    import lokg.scos

    real = lokg.scos.compress

    def parallel(kg, embeddings, cfg, entity_embeddings=None, relation_names=None):
        cfg = {**cfg, "entity_types": "none", "min_support": 1}
        return real(kg, np.ones_like(embeddings), cfg, relation_names=relation_names)

    monkeypatch.setattr(lokg.scos, "compress", parallel)
    kg = KnowledgeGraph.from_labeled_triples(FILMS)
    model = _transe(kg)
    trainer, _ = _fit(model, tmp_path, (DataLoader(kg.triples, batch_size=4),), None)
    dm = SimpleNamespace(
        kg=kg, artifact_dir=tmp_path / "artifacts" / "data" / "films",
        artifacts_root=tmp_path / "artifacts", triple_val_fraction=0.05, split_seed=0,
    )  # fmt: skip
    return dm, model, trainer


@pytest.mark.parametrize(("scos", "warned"), [("default", 1), ("lokg", 0)])
def test_scos_stage_warns_once_per_contradicted_merge(
    make_cfg, tmp_path, monkeypatch, caplog, scos, warned
):
    """The SCOS stage logs a WARNING per merge above ``scos_warn_contradiction``, whatever
    ``scos=``: the paper's merges directed_by + written_by (warned), ours refuses it (nothing
    merged, nothing to warn about). TransE's vectors are replaced by one direction (cos 1) and
    types by none, as in the hand-checked test, so Eq. (3) admits the pair."""
    import logging

    dm, model, trainer = _films_with_parallel_transe(monkeypatch, tmp_path)
    with caplog.at_level(logging.WARNING, logger="lokg.train_stages"):
        run_scos_stage(make_cfg("train", [f"scos={scos}"]), dm, model, trainer, seed=0)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    lines = [line for line in lines if line.startswith("SCOS merged")]
    assert len(lines) == warned
    if warned:
        assert "{directed_by} + {written_by}" in lines[0]
        assert "contradiction 0.67 > scos_warn_contradiction=0.05" in lines[0]
    with pytest.raises(ValueError, match=r"^scos_warn_contradiction=1.5; expected a number"):
        run_scos_stage(make_cfg("train", ["scos_warn_contradiction=1.5"]), dm, model, trainer, 0)


def test_scos_stage_reads_names_with_the_name_guard(make_cfg, tmp_path, monkeypatch):
    """With ``scos.min_name_cosine`` the stage embeds the relation names with ``cfg.embedder``
    (MiniLM: "directed by" / "written by" 0.65), records the encoder and keys the artifact by
    it; at 0.7 the pair the paper's settings merge is refused by name."""
    import json

    dm, model, trainer = _films_with_parallel_transe(monkeypatch, tmp_path)
    plain = run_scos_stage(make_cfg("train", ["scos=default"]), dm, model, trainer, seed=0)
    cfg = make_cfg("train", ["scos=default", "+scos.min_name_cosine=0.7"])
    named = run_scos_stage(cfg, dm, model, trainer, seed=0)
    assert named != plain  # keyed by the guard and its encoder
    meta = json.loads((named / "scos" / "scos.json").read_text())
    assert meta["config"]["name_encoder_used"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["merges"] == []
    (refused,) = meta["refused"]
    assert refused["reason"] == "name"
    assert refused["name_cosine"] == pytest.approx(0.650, abs=0.01)
    assert len(json.loads((plain / "scos" / "scos.json").read_text())["merges"]) == 1


@pytest.mark.slow
def test_gat_stage_exports_the_attention_of_the_best_epoch(make_cfg, tmp_path, capsys):
    # a -r-> b -s-> d ; a -s-> c -r-> d ; a -t-> e ; d -t-> f
    kg = KnowledgeGraph.from_labeled_triples(
        [("a", "r", "b"), ("b", "s", "d"), ("a", "s", "c"), ("c", "r", "d"),
         ("a", "t", "e"), ("d", "t", "f")]
    )  # fmt: skip
    torch.manual_seed(0)
    feats = torch.randn(kg.num_entities, 8)
    model = GATModule(kg.num_entities, kg.num_relations, node_dim=8, rel_dim=4, hidden=8,
                      heads=2, dropout=0.0,
                      optimizer=lambda params: torch.optim.Adam(params, lr=0.05))  # fmt: skip
    model.set_graph(kg, feats)
    loader = DataLoader([Question("q", "?", ("f",), ("a",))] * 8, batch_size=4, collate_fn=list)
    trainer, weights = _fit(model, tmp_path, (loader, loader), "val/fake")

    def attention(state: dict) -> np.ndarray:
        model.load_state_dict(state)
        return gat_log_attention(model.gat, kg, feats, model.relation_table.weight.detach())

    at_best, at_last = attention(weights.states[0]), attention(weights.states[-1])
    assert not np.allclose(at_best, at_last)

    dm = SimpleNamespace(kg=kg, artifact_dir=tmp_path / "artifacts")
    out = run_gat_stage(
        make_cfg("train", ["model=gat"]), dm, model, trainer, GraphArtifacts(kg), feats, 0
    )

    np.testing.assert_allclose(np.load(out / "edge_log_alpha.npy"), at_best)
    meta = json.loads((out / "gat.json").read_text())
    assert meta["kg_fingerprint"] == kg.fingerprint()
    assert (meta["selected"], meta["best_epoch"], meta["monitor"]) == ("best", 0, "val/fake")
    assert torch.load(out / "gat.ckpt", weights_only=False)["epoch"] == 0
    assert "GAT: exporting the best checkpoint, epoch 0" in capsys.readouterr().out


def test_restore_keeps_the_last_epoch_without_a_checkpoint_callback(tmp_path):
    kg = toy_kg.parents()
    model = _transe(kg)
    trainer = quiet_trainer(tmp_path, 1, enable_checkpointing=False)
    trainer.fit(model, DataLoader(kg.triples, batch_size=4))
    before = model.relation_embeddings()
    exported = restore_best_checkpoint(model, trainer)
    assert (exported.selected, exported.epoch, exported.checkpoint) == ("last", 0, None)
    np.testing.assert_array_equal(model.relation_embeddings(), before)


@pytest.mark.parametrize(
    ("overrides", "monitor"),
    [
        ([], ("val/mrr", "max")),
        (["experiment=train_transe", "data=pq3h"], ("val/mrr", "max")),
        (["model=gat"], ("val/loss", "min")),
        (["experiment=train_gat", "data=pql2h"], ("val/loss", "min")),
    ],
)
def test_model_configs_set_the_monitored_metric_for_any_dataset(make_cfg, overrides, monitor):
    # callbacks/default.yaml is merged after model/*.yaml: it must not reset the monitor
    cfg = make_cfg("train", overrides)
    ckpt = cfg.callbacks.model_checkpoint
    assert (ckpt.monitor, ckpt.mode) == monitor


@pytest.mark.parametrize(
    ("n_train", "overrides", "epochs"),
    [
        (240, [], 25),  # 8 batches of 32: 8 epochs would be 64 steps; 25 reach 200
        (825, [], 8),  # PQL-3H: 26 batches, 8 epochs = 208 steps already
        (400, [], 16),  # 13 batches: ceil(200 / 13) = 16 epochs
        (4158, [], 8),  # PQ-3H: 130 batches, 8 epochs = 1,040 steps already
        (240, ["trainer=ddp"], 50),  # two processes: 4 batches each per epoch
        (240, ["model.min_steps=0"], 8),  # off
        (240, ["debug=limit"], 2),  # a debug run keeps its epochs
        (240, ["trainer.max_epochs=-1"], -1),  # no epoch limit: nothing to raise
        (240, ["trainer.max_epochs=null"], None),  # Lightning's default: left to it
        (10, [], 200),  # 1 batch: 200 epochs, validated every 10 (test below)
    ],
)
def test_small_training_sets_get_min_steps(make_cfg, n_train, overrides, epochs):
    """model.min_steps (walk model): max_epochs rises to ceil(min_steps / batches per epoch)
    when the configured epochs give fewer steps."""
    from lokg.train_stages import stretch_epochs_to_min_steps

    cfg = make_cfg("train", ["experiment=train_walk", *overrides])
    dm = SimpleNamespace(questions={"train": [None] * n_train}, batch_size=32)
    assert stretch_epochs_to_min_steps(cfg, dm, cfg.model.min_steps) == epochs
    assert cfg.trainer.max_epochs == epochs


@pytest.mark.parametrize(
    ("n_train", "overrides", "epochs", "every"),
    [
        (10, [], 200, 10),  # 200 epochs of one step: 20 validations, not 200
        (50, [], 100, 5),  # 2 batches: 100 epochs, every 5
        (90, [], 69, 3),  # 3 batches: 67 epochs, every 67 // 20 = 3, rounded up to 69
        (240, [], 25, None),  # 25 epochs: fewer than 40, each validated as before
        (10, ["trainer.check_val_every_n_epoch=4"], 200, 4),  # the command's interval stands
    ],
)
def test_a_raised_run_validates_about_twenty_times(make_cfg, n_train, overrides, epochs, every):
    """When min_steps raises the epochs, validation runs every need // 20 epochs, the last
    epoch included (a 10-question run validated 520 questions after each of 200 epochs)."""
    from lokg.train_stages import STRETCHED_VAL_CHECKS, stretch_epochs_to_min_steps

    assert STRETCHED_VAL_CHECKS == 20
    cfg = make_cfg("train", ["experiment=train_walk", *overrides])
    dm = SimpleNamespace(questions={"train": [None] * n_train}, batch_size=32)
    assert stretch_epochs_to_min_steps(cfg, dm, cfg.model.min_steps) == epochs
    got = cfg.trainer.get("check_val_every_n_epoch")
    assert (got if got != 1 else None) == every
    if every:
        assert epochs % every == 0
