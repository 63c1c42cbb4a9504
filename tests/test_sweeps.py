"""Every training experiment and model runs one batch of everything (debug=fdr), as the
lightning-hydra-template sweep tests do; fast_dev_run publishes no artifacts."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lokg.train import run

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def is_training_experiment(path: Path) -> bool:
    """A training experiment chooses what ``train.py`` fits (``override /model`` or
    ``model:``); the others configure evaluation and are composed in test_configs."""
    cfg = OmegaConf.load(path)
    chosen = {
        key for entry in cfg.get("defaults", []) if not isinstance(entry, str) for key in entry
    }
    return "model" in cfg or "override /model" in chosen


EXPERIMENTS = sorted(
    p.stem for p in (CONFIGS / "experiment").glob("*.yaml") if is_training_experiment(p)
)


def test_the_sweep_covers_the_training_experiments():
    assert {"stats", "train_transe", "train_gat"} <= set(EXPERIMENTS)


@pytest.mark.slow
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_fast_dev_run(make_cfg, experiment, tmp_path):
    if experiment == "train_rerank":
        pytest.skip("needs a trained walk: tests/models/test_rerank_stage.py trains one, then it")
    if experiment == "import_transe":
        pytest.skip("reads an engine's output: tests/kg/test_external_embeddings.py runs it")
    overrides = [f"experiment={experiment}", "debug=fdr", "scos=off"]
    # no TransE in this fresh root: a free table
    if experiment in ("train_gat", "train_walk", "train_qgat"):
        overrides.append("model.relation_source=learned")
    if experiment == "adapt_walk":  # chains over pq2h's KB, asked by their relations' words
        overrides += ["data@data.source.base=pq2h", "data.source.questions=60",
                      "data.source.synonyms=0", "data.source.unnamed=0"]  # fmt: skip
    if experiment == "self_train_walk":  # 20 of pq2h's questions labelled by the shipped walk
        from lokg.taimr.walk.artifact import PRETRAINED_DIR

        overrides += ["data@data.source.base=pq2h", "+data.source.base.train_limit=20",
                      f"data.source.walk={PRETRAINED_DIR}"]  # fmt: skip
    cfg = make_cfg("train", overrides)
    result = run(cfg)
    # pretrain_walk(_bundled) trains on the union of the bundled sets (data=pretrain),
    # adapt_walk on chain questions over pq2h's KB, self_train_walk on pq2h's questions
    # labelled by a walk, the rest on pq2h
    union = experiment.startswith("pretrain_walk")
    named = {"adapt_walk": "kg_chains_pq2h", "self_train_walk": "self_labels_pq2h"}
    expected = named.get(experiment, "pretrain" if union else "pq2h")
    assert result["stats"]["dataset"] == expected
    if cfg.get("model") is not None:
        assert result["trainer"].fast_dev_run
        assert "scos_dir" not in result and "gat_dir" not in result
        assert not list((tmp_path / "artifacts").rglob("*.latest"))


def test_default_train_config_trains_transe(make_cfg):
    cfg = make_cfg("train")
    assert cfg.model._target_ == "lokg.models.transe_module.TransEModule"
    assert cfg.trainer.max_epochs == 100 and cfg.model.dim == 64  # Table 3
