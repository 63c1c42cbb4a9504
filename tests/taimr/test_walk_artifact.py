"""The walk's artifact survives the move of its code (issue 27): the keys of trained walk
models, results and the test ledger are those they had before, the default-model lookup still
finds artifacts trained under the old class paths, and the old config names still compose."""

from __future__ import annotations

import json
import logging

import pytest
from omegaconf import OmegaConf

from lokg.artifacts import config_key
from lokg.config import DEPRECATED_OPTIONS, warn_deprecated_options
from lokg.errors import InputError
from lokg.taimr.walk.artifact import (
    KIND,
    META_FILE,
    MOVED_TARGETS,
    default_walk_settings,
    hashed_targets,
    read_walk_meta,
    walk_models,
)
from lokg.train_stages import training_key

#: computed on main before the move (commit 5edd938), from the configs as composed then
#: (``experiment=train_qgat``, ``model=qgat``, ``experiment=lokg data=pq2h``)
KEY_BEFORE_MOVE = {
    "model": "3c2f9186c2",  # config_key(cfg.model)
    "train_walk": "64777d7e1a",  # training_key(cfg, "scos-dir", 0), experiment=train_qgat
    "model_walk": "08a6c9bee7",  # the same with model=qgat alone
    "retriever": "f83e3741d4",  # config_key(cfg.retriever), experiment=lokg
}


def test_default_walk_keys_are_those_before_the_move(make_cfg):
    cfg = make_cfg("train", ["experiment=train_walk"])
    assert cfg.model._target_ == "lokg.models.walk_module.WalkModule"
    assert config_key(cfg.model) == KEY_BEFORE_MOVE["model"]
    assert training_key(cfg, "scos-dir", 0) == KEY_BEFORE_MOVE["train_walk"]
    cfg = make_cfg("train", ["model=walk"])
    assert training_key(cfg, "scos-dir", 0) == KEY_BEFORE_MOVE["model_walk"]


def test_learned_retriever_key_is_the_one_before_the_move(make_cfg):
    """``retriever.by_length`` and ``retriever.anchor_answers`` (2026-12-07) changed the
    ranking, so they name a new configuration; the rest of the retriever's config keeps the
    key it had before the move."""
    added = ["~retriever.by_length", "~retriever.anchor_answers"]
    cfg = make_cfg("evaluate", ["experiment=lokg", "data=pq2h", *added])
    assert cfg.retriever._target_ == "lokg.taimr.walk.retriever.build_learned"
    assert config_key(cfg.retriever) == KEY_BEFORE_MOVE["retriever"]
    now = make_cfg("evaluate", ["experiment=lokg", "data=pq2h"])
    assert now.retriever.by_length == "auto"
    assert config_key(now.retriever) != KEY_BEFORE_MOVE["retriever"]


def test_moved_targets_name_importable_classes():
    from hydra.utils import get_object

    for new in MOVED_TARGETS:
        assert get_object(new) is not None
    assert hashed_targets({"a": [{"_target_": "lokg.models.walk_module.WalkModule"}]}) == {
        "a": [{"_target_": "lokg.models.path_module.PathGATModule"}]
    }
    assert hashed_targets({"_target_": "torch.optim.Adam"}) == {"_target_": "torch.optim.Adam"}


@pytest.mark.parametrize(
    "target", ["lokg.models.path_module.PathGATModule", "lokg.models.walk_module.WalkModule"]
)
def test_walk_models_finds_artifacts_under_either_class_path(tmp_path, target):
    trained = tmp_path / f"{KIND}-0123456789"
    trained.mkdir()
    model = {**default_walk_settings(), "_target_": target, "node_dim": 384}
    OmegaConf.save(OmegaConf.create({"model": model}), trained / "config.yaml")
    (trained / META_FILE).write_text(json.dumps({"best_value": 1.0}), encoding="utf-8")
    assert walk_models(tmp_path) == [trained]
    assert walk_models(tmp_path, {"name_match": False}) == []


@pytest.mark.parametrize(("group", "old"), sorted(DEPRECATED_OPTIONS))
def test_deprecated_names_compose_the_new_config_with_one_line(make_cfg, caplog, group, old):
    new = DEPRECATED_OPTIONS[group, old]
    job = "evaluate" if group == "retriever" else "train"  # the job that composes the group
    with caplog.at_level(logging.WARNING, logger="lokg.config"):
        cfg = make_cfg(job, [f"{group}={old}"])
    lines = [r.getMessage() for r in caplog.records if r.name == "lokg.config"]
    assert lines == [
        f"{group}={old} is deprecated: it is {group}={new} (the same config); use that name"
    ]
    node = "retriever" if group == "retriever" else "model"
    assert OmegaConf.to_container(cfg[node]) == OmegaConf.to_container(
        make_cfg(job, [f"{group}={new}"])[node]
    )
    assert warn_deprecated_options({group: new}) == []


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "no such file"),
        ('{"architecture": ', "not JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
    ],
)
def test_a_walk_meta_that_cannot_be_read_is_one_line_naming_the_file(tmp_path, text, says):
    if text is not None:
        (tmp_path / META_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_walk_meta(tmp_path)
    line = str(err.value)
    assert line.startswith(str(tmp_path / META_FILE)) and says in line and "\n" not in line


def test_read_walk_meta_is_the_qgat_json_written(tmp_path):
    body = {"architecture": {"node_dim": 4}, "kg_fingerprint": "abc"}
    (tmp_path / META_FILE).write_text(json.dumps(body), encoding="utf-8")
    assert read_walk_meta(tmp_path) == body
