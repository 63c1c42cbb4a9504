"""Shared fixtures: composing the real Hydra configs; the toy KG of tests/fixtures/toy_kg.py."""

import pytest
from omegaconf import DictConfig

from lokg.config import compose_config
from lokg.kg.graph import KnowledgeGraph

from .fixtures import toy_kg


@pytest.fixture
def make_cfg(tmp_path):
    def _make(name: str = "train", overrides: list[str] | None = None) -> DictConfig:
        return compose_config(name, overrides or [], tmp_path)

    return _make


@pytest.fixture
def family() -> KnowledgeGraph:
    """toy_kg.FAMILY: alice -spouse-> bob -nationality-> france, alice -children-> carol
    -nationality-> spain, bob -children-> carol.  Some tests keep another graph under this
    name (baselines/conftest.py, data/test_paraphrase.py, data/test_restyle.py,
    kg/test_inverse_edges.py, test_pipeline.py); theirs is the one they get."""
    return toy_kg.family()
