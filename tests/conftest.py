"""Shared fixtures: composing the real Hydra configs."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, open_dict

from lokg.config import register_configs

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"


def compose_config(name: str, overrides: list[str], tmp_path: Path) -> DictConfig:
    """Compose ``configs/<name>.yaml`` as ``train.py``/``evaluate.py`` would, with all paths in
    ``tmp_path`` (artifacts, logs, outputs)."""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(
            config_name=name,
            overrides=[f"paths.root_dir={tmp_path}", *overrides],
            return_hydra_config=True,
        )
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path / "outputs")
        del cfg.hydra
    return cfg


@pytest.fixture
def make_cfg(tmp_path):
    def _make(name: str = "train", overrides: list[str] | None = None) -> DictConfig:
        return compose_config(name, overrides or [], tmp_path)

    return _make
