"""Every training experiment and model runs one batch of everything (debug=fdr), as the
lightning-hydra-template sweep tests do; fast_dev_run publishes no artifacts."""

from pathlib import Path

import pytest

from lokg.train import run

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
# pq_best is an evaluate-time retriever setting (composed in test_configs)
EXPERIMENTS = sorted(p.stem for p in (CONFIGS / "experiment").glob("*.yaml") if p.stem != "pq_best")


@pytest.mark.slow
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_experiment_fast_dev_run(make_cfg, experiment, tmp_path):
    cfg = make_cfg("train", [f"experiment={experiment}", "debug=fdr", "scos=off"])
    result = run(cfg)
    assert result["stats"]["dataset"] == "pq2h"
    if cfg.get("model") is not None:
        assert result["trainer"].fast_dev_run
        assert "scos_dir" not in result and "gat_dir" not in result
        assert not list((tmp_path / "artifacts").rglob("*.latest"))


def test_default_train_config_trains_transe(make_cfg):
    cfg = make_cfg("train")
    assert cfg.model._target_ == "lokg.models.transe_module.TransEModule"
    assert cfg.trainer.max_epochs == 100 and cfg.model.dim == 64  # Table 3
