"""Every ``baseline=`` config composes, labels its row, and builds its encoder and reader; the
row label ``method`` stays a plain key that benches may set (``method=BFS+truncate``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import instantiate

from lokg.baselines import BASELINE_CONFIGURATIONS
from lokg.errors import InputError
from lokg.labels import run_label

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "baseline"


def test_one_config_file_per_baseline():
    assert sorted(p.stem for p in CONFIGS.glob("*.yaml")) == sorted(BASELINE_CONFIGURATIONS)


@pytest.mark.parametrize("name", BASELINE_CONFIGURATIONS)
def test_baseline_composes_and_builds(make_cfg, name):
    cfg = make_cfg("evaluate", [f"baseline={name}", "llm=extractive"])
    assert cfg.configuration == name and cfg.method
    assert run_label(cfg).ablation == "full"  # a baseline is never recorded as an ablation
    instantiate(cfg.encoder)
    assert instantiate(cfg.llm).template in ("answer", "kaping", "tog", "graphrag")
    assert callable(instantiate(cfg.retriever))


def test_baselines_are_not_ablated(make_cfg):
    cfg = make_cfg("evaluate", ["baseline=kaping", "ablation=no_ittc", "llm=extractive"])
    with pytest.raises(InputError, match="Table 6 ablates LOKG only"):
        run_label(cfg)


def test_the_row_label_is_still_a_free_key(make_cfg):
    cfg = make_cfg("evaluate", ["method=BFS+truncate", "retriever=bfs"])
    assert cfg.method == "BFS+truncate" and cfg.configuration == "lokg"
