"""GATModule: shortest-path positives by hand, the loss, a short fit, wiring errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from lokg.kg.graph import KnowledgeGraph
from lokg.models.gat_module import GATModule, question_subgraph
from lokg.typing import Question


@pytest.fixture
def kg() -> KnowledgeGraph:
    # a -r-> b -s-> d ; a -s-> c -r-> d ; a -t-> e ; d -t-> f
    return KnowledgeGraph.from_labeled_triples(
        [("a", "r", "b"), ("b", "s", "d"), ("a", "s", "c"), ("c", "r", "d"),
         ("a", "t", "e"), ("d", "t", "f")]
    )  # fmt: skip


def _labels(kg, tids, mask):
    return {kg.labeled(int(t)) for t, m in zip(tids, mask, strict=True) if m}


def test_positives_are_all_shortest_paths(kg):
    E = kg.entities
    nodes, tids, pos = question_subgraph(kg, E["a"], [E["d"]], max_hops=3)
    # two shortest a -> d paths (length 2); (d, t, f) and (a, t, e) are not on them
    assert _labels(kg, tids, pos) == {
        ("a", "r", "b"), ("b", "s", "d"), ("a", "s", "c"), ("c", "r", "d"),
    }  # fmt: skip
    assert set(nodes.tolist()) == set(range(kg.num_entities))
    _, tids2, pos2 = question_subgraph(kg, E["a"], [E["f"]], max_hops=2)
    assert not pos2.any()  # f is 3 hops away
    assert ("d", "t", "f") not in {kg.labeled(int(t)) for t in tids2}  # d is at the border


def _module(kg, query_encoder=None, **kwargs):
    torch.manual_seed(0)
    m = GATModule(kg.num_entities, kg.num_relations, node_dim=8, rel_dim=4, hidden=8,
                  heads=2, dropout=0.0, **kwargs)  # fmt: skip
    m.set_graph(kg, torch.randn(kg.num_entities, 8), query_encoder=query_encoder)
    return m


def test_loss_is_mean_negative_log_attention_of_positives(kg):
    m = _module(kg)
    q = [Question("q", "?", ("d",), ("a",))]
    batch = m._batch(q)
    _, alpha = m(batch, q)
    expected = -alpha[batch["positive"]].log().mean()
    assert torch.isclose(m._loss(alpha, batch["positive"]), expected)
    # every softmax group in the subgraph is complete: a's three out-edges sum to 1
    src = batch["edge_index"][0]
    assert torch.allclose(alpha[src == batch["topics"][0]].sum(0), torch.ones(2), atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("query_conditioning", [False, True])
def test_fit_raises_attention_on_answer_paths(kg, query_conditioning):
    kwargs = {"query_conditioning": True, "query_dim": 3} if query_conditioning else {}
    encoder = (lambda texts: torch.ones(len(texts), 3)) if query_conditioning else None
    m = _module(kg, encoder, optimizer=lambda params: torch.optim.Adam(params, lr=0.05), **kwargs)
    qs = [Question("q", "?", ("f",), ("a",))]
    batch = m._batch(qs)
    with torch.no_grad():
        m.eval()
        before = m._loss(m(batch, qs)[1], batch["positive"]).item()
    loader = DataLoader(qs * 8, batch_size=4, collate_fn=list)
    trainer = pl.Trainer(
        max_epochs=8,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(m, loader, loader)
    m.eval()
    with torch.no_grad():
        after = m._loss(m(batch, qs)[1], batch["positive"]).item()
    assert after < before
    assert math.isclose(trainer.callback_metrics["val/paths_recall"].item(), 1.0)


def test_wiring_errors(kg):
    with pytest.raises(ValueError, match=r"relation_source must be one of \('learned', 'fixed'\)"):
        GATModule(kg.num_entities, kg.num_relations, relation_source="transe")
    m = GATModule(kg.num_entities, kg.num_relations, node_dim=8, relation_source="fixed")
    with pytest.raises(ValueError, match="node_features must be"):
        m.set_graph(kg, torch.zeros(kg.num_entities, 5))
    with pytest.raises(ValueError, match="needs relation_embeddings"):
        m.set_graph(kg, torch.zeros(kg.num_entities, 8))
    rel = torch.randn(kg.num_relations, 64)
    m.set_graph(kg, torch.zeros(kg.num_entities, 8), rel)
    assert torch.equal(m.relation_table.weight, rel) and not m.relation_table.weight.requires_grad
    with pytest.raises(ValueError, match="model was built for"):
        GATModule(3, 1).set_graph(kg, torch.zeros(kg.num_entities, 384))
    with pytest.raises(RuntimeError, match="set_graph"):
        GATModule(3, 1)._batch([Question("q", "?", (), ("a",))])
    assert np.isfinite(m._mu).all()


def test_model_config_has_the_papers_values(kg):
    from pathlib import Path

    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    configs = Path(__file__).resolve().parents[2] / "configs"
    gat_yaml = OmegaConf.load(configs / "model" / "gat.yaml")  # @package _global_
    # the exported attention comes from the best checkpoint on the held-out loss
    assert gat_yaml.callbacks.model_checkpoint.monitor == "val/loss"
    assert gat_yaml.callbacks.model_checkpoint.mode == "min"
    model_cfg = gat_yaml.model
    for embedder, node_dim in (("e5", 768), ("minilm", 384)):  # Table 3: E5, 768-d
        cfg = OmegaConf.create(
            {
                "model": model_cfg,
                "embedder": OmegaConf.load(configs / "embedder" / f"{embedder}.yaml"),
            }
        )
        assert cfg.model.node_dim == node_dim
    m = instantiate(cfg.model, num_entities=kg.num_entities, num_relations=kg.num_relations)
    hp = m.hparams
    assert (hp.num_layers, hp.heads, hp.hidden, hp.dropout, hp.rel_dim) == (2, 4, 128, 0.3, 64)
    assert hp.query_conditioning is False
    assert isinstance(m.configure_optimizers(), torch.optim.Adam)


def test_fanout_samples_hub_out_edges():
    hub = KnowledgeGraph.from_labeled_triples([("h", "r", f"t{i}") for i in range(10)])
    nodes, tids, _ = question_subgraph(hub, hub.entities["h"], [], 2, max_fanout=3, seed=1)
    assert len(tids) == 3 and len(nodes) == 4
    again = question_subgraph(hub, hub.entities["h"], [], 2, max_fanout=3, seed=1)[1]
    assert np.array_equal(tids, again)  # seeded
