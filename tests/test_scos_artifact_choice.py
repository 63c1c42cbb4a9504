"""Which TransE + SCOS artifact a run loads (issue 30): the one made with its scos settings, so
the default training (guarded SCOS) and the default evaluation meet, and experiment=paper never
reads the guarded SCOS's graph as the paper's."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from lokg.artifacts import find_scos_artifact, kg_store, mark_latest, scos_settings
from lokg.config import compose_config

PAPER = {"mode": "greedy", "theta_base": 0.75}  # an older artifact: no guard keys at all
OURS = {"mode": "greedy", "theta_base": 0.64, "min_support": 5, "max_split_z": 3.0,
        "max_contradiction": 0.05, "entity_types_used": "domain"}  # fmt: skip


def _datamodule(tmp_path: Path):
    kg = SimpleNamespace(fingerprint=lambda: "kgfp")
    root = tmp_path / "artifacts"
    return SimpleNamespace(
        name="pq2h", kg=kg, artifacts_root=root, artifact_dir=root / "data" / "pq2h-0"
    )


def _artifact(dm, name: str, config: dict) -> Path:
    d = kg_store(dm.artifacts_root, dm.kg) / name
    (d / "scos").mkdir(parents=True)
    (d / "scos" / "scos.json").write_text(json.dumps({"format_version": 1, "config": config}))
    time.sleep(0.01)  # distinct modification times
    return d


def _cfg(scos: str):
    return compose_config("evaluate", [f"scos={scos}"], ".")


def test_settings_compare_with_absent_guards_at_the_papers_defaults():
    assert scos_settings(PAPER) == scos_settings(_cfg("default").scos)
    assert scos_settings(OURS) == scos_settings(_cfg("lokg").scos)
    assert scos_settings({"theta_base": 7}) is None  # not settings this version reads


def test_the_latest_when_it_was_made_with_the_runs_settings(tmp_path):
    dm = _datamodule(tmp_path)
    paper = _artifact(dm, "scos-paper", PAPER)
    ours = _artifact(dm, "scos-ours", OURS)
    mark_latest(dm.artifact_dir, "scos", ours)
    assert find_scos_artifact(_cfg("lokg"), dm) == ours
    # the paper's run finds the paper's, though it is not the latest
    assert find_scos_artifact(_cfg("default"), dm) == paper


def test_the_newest_matching_one_among_several(tmp_path):
    dm = _datamodule(tmp_path)
    _artifact(dm, "scos-old", OURS)
    newer = _artifact(dm, "scos-new", OURS)
    paper = _artifact(dm, "scos-paper", PAPER)
    mark_latest(dm.artifact_dir, "scos", paper)
    os.utime(newer / "scos" / "scos.json")  # touched last
    assert find_scos_artifact(_cfg("lokg"), dm) == newer


def test_none_made_with_the_runs_settings_is_one_line(tmp_path):
    dm = _datamodule(tmp_path)
    paper = _artifact(dm, "scos-paper", PAPER)
    mark_latest(dm.artifact_dir, "scos", paper)
    with pytest.raises(FileNotFoundError) as err:
        find_scos_artifact(_cfg("lokg"), dm)
    message = str(err.value)
    assert "\n" not in message
    assert "no SCOS artifacts for pq2h were made with this run's scos settings" in message
    assert "theta_base 0.75 (this run: 0.64)" in message
    assert "max_contradiction None (this run: 0.05)" in message
    assert "python train.py experiment=train_transe" in message


def test_no_artifact_at_all_or_an_unreadable_one(tmp_path):
    dm = _datamodule(tmp_path)
    assert find_scos_artifact(_cfg("lokg"), dm) is None
    legacy = kg_store(dm.artifacts_root, dm.kg) / "scos-legacy"
    legacy.mkdir(parents=True)  # no scos.json to read settings from: taken as before
    mark_latest(dm.artifact_dir, "scos", legacy)
    assert find_scos_artifact(_cfg("lokg"), dm) == legacy


def test_the_default_training_and_evaluation_compose_one_scos():
    train = compose_config("train", [], ".").scos
    assert OmegaConf.to_container(train) == OmegaConf.to_container(_cfg("lokg").scos)
    assert compose_config("evaluate", [], ".").scos == train
    assert compose_config("train", ["experiment=train_transe"], ".").scos == train
