"""Shared fixtures: composing the real Hydra configs."""

import pytest
from omegaconf import DictConfig

from lokg.config import compose_config


@pytest.fixture
def make_cfg(tmp_path):
    def _make(name: str = "train", overrides: list[str] | None = None) -> DictConfig:
        return compose_config(name, overrides or [], tmp_path)

    return _make
