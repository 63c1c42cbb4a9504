"""The retriever config group instantiates and both retrievers answer the same call."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from lokg.assemble import retriever_plan
from lokg.taimr.retriever import SemanticRetriever, TAIMRRetriever
from lokg.taimr.topology import uniform_log_attention
from lokg.typing import Question

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _q(text: str, *topics: str) -> Question:
    """A question with the given text and topic entities (gold answers are not read)."""
    return Question(id="q", text=text, answers=("?",), topic_entities=topics)


@pytest.mark.parametrize("name", ["taimr", "semantic"])
def test_retriever_configs_instantiate(name, family, embedder, tmp_path):
    plan = retriever_plan(OmegaConf.load(CONFIGS / "retriever" / f"{name}.yaml"))
    available = {
        "embedder": embedder,
        "edge_log_alpha": uniform_log_attention(family),
        "train_questions": [],
    }
    retriever = plan.make(family, **{n: available[n] for n in plan.needs})
    assert isinstance(retriever, TAIMRRetriever if name == "taimr" else SemanticRetriever)
    assert retriever.k_top == 20 and retriever.max_hops == 3
    res = retriever.retrieve(_q("which nationality is alice 's couple ?", "alice"))
    assert res.answers and set(res.triple_ids) <= set(range(family.num_triples))


def test_taimr_config_defaults_are_the_papers():
    cfg = OmegaConf.load(CONFIGS / "retriever" / "taimr.yaml")
    assert (cfg.max_hops, cfg.k_top, cfg.lambda_topo, cfg.lambda_q) == (3, 20, 1.0, 1.0)


def test_gat_attention_needs_alpha_and_attention_is_validated(family, embedder):
    factory = instantiate(OmegaConf.load(CONFIGS / "retriever" / "taimr.yaml"))
    with pytest.raises(ValueError, match="needs edge_log_alpha"):
        factory(kg=family, embedder=embedder)
    with pytest.raises(ValueError, match=r"attention must be one of \('gat', 'uniform'\)"):
        factory(kg=family, embedder=embedder, attention="none")
