"""TransE component and Lightning module (SCOS's learned part, Section 2.3)."""

from __future__ import annotations

import functools
import math

import hydra
import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from lokg.kg.graph import KnowledgeGraph
from lokg.models.transe_module import TransEModule, relation_embeddings_from_checkpoint
from lokg.nn.transe import (
    FilterIndex,
    NegativeSampler,
    TransE,
    bernoulli_head_probability,
    filtered_ranks,
)

from ..fixtures import toy_kg
from ..fixtures.training import quiet_trainer


@pytest.fixture
def kg() -> KnowledgeGraph:
    """toy_kg.PARENTS: 6 entities, 3 relations, 10 triples."""
    return toy_kg.parents()


def _set_weights(model: TransE, ent: list[list[float]], rel: list[list[float]]) -> None:
    with torch.no_grad():
        model.entity.weight.copy_(torch.tensor(ent))
        model.relation.weight.copy_(torch.tensor(rel))


@pytest.mark.parametrize(("p_norm", "expected"), [(1, -3.0), (2, -math.sqrt(5.0))])
def test_score_is_minus_norm_of_translation_error(p_norm, expected):
    model = TransE(3, 1, dim=2, p_norm=p_norm)
    # h = (1, 0), r = (0, 2), t = (0, 0): h + r - t = (1, 2)
    _set_weights(model, [[1.0, 0.0], [0.0, 0.0], [5.0, 5.0]], [[0.0, 2.0]])
    score = model.score(torch.tensor([[0, 0, 1]]))
    assert score.shape == (1,)
    assert score.item() == pytest.approx(expected)
    # all-tails scoring agrees with the per-triple formula
    tails = model.score_tails(torch.tensor([0]), torch.tensor([0]))
    heads = model.score_heads(torch.tensor([0]), torch.tensor([1]))
    assert tails.shape == heads.shape == (1, 3)
    for e in range(3):
        assert tails[0, e].item() == pytest.approx(model.score(torch.tensor([[0, 0, e]])).item())
        assert heads[0, e].item() == pytest.approx(model.score(torch.tensor([[e, 0, 1]])).item())


def test_margin_loss_by_hand():
    model = TransE(2, 1, dim=2, margin=1.0)
    pos = torch.tensor([-1.0, -2.0])
    neg = torch.tensor([[-1.5, -4.0], [-0.5, -3.5]])
    # max(0, 1 - pos + neg): [[0.5, 0], [2.5, 0]] -> mean 0.75
    assert model.loss(pos, neg).item() == pytest.approx(0.75)


def test_invalid_options_are_refused_with_allowed_values():
    with pytest.raises(ValueError, match=r"p_norm=3 is not one of \[1, 2\]"):
        TransE(3, 1, p_norm=3)
    with pytest.raises(ValueError, match=r"'sometimes' is not one of \['uniform', 'bernoulli'\]"):
        NegativeSampler(3, 1, mode="sometimes")


def test_bernoulli_probability_by_hand():
    # relation 0: one head with three tails -> tph 3, hpt 1 -> P(corrupt head) = 3 / 4
    # relation 1: three heads with one tail  -> tph 1, hpt 3 -> 1 / 4; relation 2 unused -> 1/2
    triples = np.array([[0, 0, 1], [0, 0, 2], [0, 0, 3], [1, 1, 0], [2, 1, 0], [3, 1, 0]])
    prob = bernoulli_head_probability(triples, 3)
    np.testing.assert_allclose(prob, [0.75, 0.25, 0.5])


def test_negative_sampler_corrupts_exactly_one_side(kg):
    torch.manual_seed(0)
    sampler = NegativeSampler(kg.num_entities, kg.num_relations, "bernoulli", num_negatives=4)
    with pytest.raises(RuntimeError, match="not fitted"):
        sampler(kg.triples)
    sampler.fit(kg.triples)
    neg = sampler(kg.triples)
    assert neg.shape == (kg.num_triples, 4, 3)
    pos = kg.triples.unsqueeze(1).expand_as(neg)
    assert torch.equal(neg[..., 1], pos[..., 1])
    assert bool(((neg[..., 0] == pos[..., 0]) | (neg[..., 2] == pos[..., 2])).all())


def test_filtered_ranks_by_hand():
    # entities on a line: e_i = (i, 0); r = (1, 0).  Query (0, r, ?) scores -|1 - i|:
    # entity 1 scores 0 (best), 0 and 2 score -1, 3 scores -2.
    model = TransE(4, 1, dim=2, p_norm=1)
    _set_weights(model, [[0.0, 0], [1, 0], [2, 0], [3, 0]], [[1.0, 0]])
    test = torch.tensor([[0, 0, 2]])
    # raw: entity 1 beats entity 2 -> tail rank 2; filtered with (0, 0, 1) known -> rank 1
    raw = filtered_ranks(model, test, FilterIndex(np.array([[0, 0, 2]]), 4, 1))
    filt = filtered_ranks(model, test, FilterIndex(np.array([[0, 0, 2], [0, 0, 1]]), 4, 1))
    # head side: (?, r, 2) scores -|i + 1 - 2|: entity 1 best (0), entity 0 (true) ties with 2
    assert raw.tolist() == [2, 2]
    assert filt.tolist() == [1, 2]


class _EpochRecorder(pl.Callback):
    def __init__(self) -> None:
        self.epochs: list[int] = []

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.epochs.append(trainer.current_epoch)


def _trainer(tmp_path, max_epochs: int, callbacks=(), **settings) -> pl.Trainer:
    return quiet_trainer(
        tmp_path, max_epochs, enable_checkpointing=False, callbacks=list(callbacks),
        num_sanity_val_steps=0, **settings,
    )  # fmt: skip


def _module(kg: KnowledgeGraph, **kwargs) -> TransEModule:
    module = TransEModule(kg.num_entities, kg.num_relations, dim=8, **kwargs)
    module.attach_triples(train_triples=kg.triples, known_triples=kg.triples)
    return module


def _loaders(kg: KnowledgeGraph):
    train = DataLoader(kg.triples, batch_size=4, shuffle=True)
    val = DataLoader(kg.triples, batch_size=5)
    return train, val


def test_two_epoch_fit_keeps_entity_norms_and_logs_metrics(kg, tmp_path):
    pl.seed_everything(0, workers=True)
    module = _module(kg)
    before = module.model.relation.weight.detach().clone()
    trainer = _trainer(tmp_path, 2)
    trainer.fit(module, *_loaders(kg))
    assert trainer.current_epoch == 2
    assert not torch.equal(before, module.model.relation.weight)  # it trained
    norms = module.model.entity.weight.norm(dim=1)
    torch.testing.assert_close(norms, torch.ones_like(norms))
    metrics = trainer.callback_metrics
    assert {"train/loss", "val/mrr", "val/hits@1", "val/hits@10"} <= set(metrics)
    assert 0.0 < float(metrics["val/mrr"]) <= 1.0
    assert float(metrics["val/hits@1"]) <= float(metrics["val/hits@10"]) <= 1.0


def test_entity_norms_are_one_after_every_optimizer_step(kg, tmp_path):
    class NormCheck(pl.Callback):
        def __init__(self) -> None:
            self.max_dev = 0.0
            self.steps = 0

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            norms = pl_module.model.entity.weight.detach().norm(dim=1)
            self.max_dev = max(self.max_dev, float((norms - 1).abs().max()))
            self.steps += 1

    check = NormCheck()
    module = _module(kg, optimizer=functools.partial(torch.optim.SGD, lr=0.5))
    _trainer(tmp_path, 1, [check]).fit(module, _loaders(kg)[0])
    assert check.steps == 3  # 10 triples / batch 4
    assert check.max_dev < 1e-6


def test_resume_from_checkpoint_continues_epoch_count(kg, tmp_path):
    pl.seed_everything(0, workers=True)
    module = _module(kg)
    trainer = _trainer(tmp_path, 2)
    trainer.fit(module, *_loaders(kg))
    ckpt = tmp_path / "two.ckpt"
    trainer.save_checkpoint(ckpt)

    recorder = _EpochRecorder()
    resumed = _module(kg)
    trainer2 = _trainer(tmp_path, 3, [recorder])
    trainer2.fit(resumed, *_loaders(kg), ckpt_path=ckpt)
    assert recorder.epochs == [2]  # only the third epoch ran
    assert trainer2.current_epoch == 3
    assert resumed.hparams.num_entities == kg.num_entities

    emb = relation_embeddings_from_checkpoint(ckpt, num_relations=kg.num_relations)
    assert emb.shape == (kg.num_relations, 8)
    np.testing.assert_allclose(emb, module.relation_embeddings())


def test_checkpoint_with_other_vocabulary_is_refused(kg, tmp_path):
    module = _module(kg)
    trainer = _trainer(tmp_path, 1)
    trainer.fit(module, _loaders(kg)[0])
    ckpt = tmp_path / "one.ckpt"
    trainer.save_checkpoint(ckpt)

    bigger = TransEModule(kg.num_entities + 1, kg.num_relations, dim=8)
    bigger.attach_triples(kg.triples, kg.triples)
    with pytest.raises(ValueError, match=r"num_entities=6, this model has num_entities=7"):
        _trainer(tmp_path, 2).fit(bigger, _loaders(kg)[0], ckpt_path=ckpt)
    with pytest.raises(ValueError, match="checkpoint has 3 relations, expected 4"):
        relation_embeddings_from_checkpoint(ckpt, num_relations=4)


def test_hydra_config_instantiates_the_module_with_paper_defaults(kg):
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    configs = Path(__file__).resolve().parents[2] / "configs"
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        cfg = compose(config_name=None, overrides=["+model=transe"])
    assert cfg.trainer.max_epochs == 100
    assert cfg.data["items"] == "triples"  # `.items` is the DictConfig method
    module = instantiate(cfg.model, num_entities=kg.num_entities, num_relations=kg.num_relations)
    assert isinstance(module, TransEModule)
    assert module.hparams.dim == 64
    assert module.model.entity.weight.shape == (kg.num_entities, 64)
    optimizer = module.configure_optimizers()
    assert isinstance(optimizer, torch.optim.Adam)


def _fit_sgd(kg: KnowledgeGraph, tmp_path, sparse: bool) -> TransEModule:
    pl.seed_everything(0, workers=True)  # same init, same batches, same negatives
    module = _module(kg, optimizer=functools.partial(torch.optim.SGD, lr=0.5), sparse=sparse)
    _trainer(tmp_path, 2).fit(module, _loaders(kg)[0])
    return module


def test_sparse_gradients_train_exactly_like_dense_ones_under_sgd(kg, tmp_path):
    # SGD moves only rows with a gradient either way; the dense run re-normalises every
    # entity, the sparse one the batch's (the others are unit-norm already): same weights
    dense, sparse = _fit_sgd(kg, tmp_path, False), _fit_sgd(kg, tmp_path, True)
    assert sparse.model.entity.sparse and not dense.model.entity.sparse
    np.testing.assert_allclose(sparse.entity_embeddings(), dense.entity_embeddings(), atol=1e-6)
    np.testing.assert_allclose(sparse.relation_embeddings(), dense.relation_embeddings(), atol=1e-6)
    norms = sparse.model.entity.weight.detach().norm(dim=1)
    torch.testing.assert_close(norms, torch.ones_like(norms))


def test_normalising_the_touched_rows_leaves_the_others(kg):
    model = TransE(kg.num_entities, kg.num_relations, dim=2)
    _set_weights(model, [[3.0, 4.0], [0.6, 0.8], [2.0, 0.0], [0, 1], [1, 0], [5, 0]], [[1, 0]] * 3)
    model.normalize_entities_(torch.tensor([0, 2]))
    torch.testing.assert_close(
        model.entity.weight.detach(),
        torch.tensor([[0.6, 0.8], [0.6, 0.8], [1.0, 0.0], [0, 1], [1, 0], [5, 0]]),
    )


def test_sparse_training_needs_a_sparse_optimizer(kg, tmp_path):
    module = _module(kg, sparse=True, optimizer=functools.partial(torch.optim.Adam, lr=0.01))
    with pytest.raises(ValueError, match=r"model.sparse=true needs an optimizer .* got Adam"):
        _trainer(tmp_path, 1).fit(module, _loaders(kg)[0])


def test_sparse_config_instantiates_sparse_adam(kg):
    from lokg.config import compose_config

    cfg = compose_config("train", ["experiment=train_transe", "model=transe_sparse"], ".")
    module = hydra.utils.instantiate(
        cfg.model, num_entities=kg.num_entities, num_relations=kg.num_relations
    )
    module.attach_triples(train_triples=kg.triples)
    assert module.sparse and module.model.relation.sparse
    assert isinstance(module.configure_optimizers(), torch.optim.SparseAdam)


def test_sparse_norms_hold_with_gradient_accumulation(kg, tmp_path):
    # two batches per optimizer step: the rows of both moved, both are re-normalised
    pl.seed_everything(0, workers=True)
    module = _module(kg, optimizer=functools.partial(torch.optim.SGD, lr=0.5), sparse=True)
    trainer = _trainer(tmp_path, 2, accumulate_grad_batches=2)
    trainer.fit(module, DataLoader(kg.triples, batch_size=2, shuffle=True))
    norms = module.model.entity.weight.detach().norm(dim=1)
    torch.testing.assert_close(norms, torch.ones_like(norms))


def test_negatives_are_drawn_on_the_batch_device_in_range(kg):
    torch.manual_seed(0)
    sampler = NegativeSampler(kg.num_entities, kg.num_relations, "uniform", num_negatives=3)
    batch = kg.triples[:4]
    neg = sampler(batch)
    assert neg.shape == (4, 3, 3) and neg.dtype == torch.long and neg.device == batch.device
    assert bool(((neg[..., [0, 2]] >= 0) & (neg[..., [0, 2]] < kg.num_entities)).all())
    assert torch.equal(neg[..., 1], batch[:, 1:2].expand(4, 3))


@pytest.mark.parametrize(
    ("sparse", "optimizer"), [(False, torch.optim.Adam), (True, torch.optim.SparseAdam)]
)
def test_a_training_step_reads_no_value_back_from_the_device(kg, sparse, optimizer):
    """The whole step (negatives, scores, loss, the logged metric, backward, the optimizer,
    the norm constraint) on the ``meta`` device, whose tensors have no values: any
    ``.item()``, ``bool()``, ``.cpu()`` or data-dependent shape (``unique``) raises there, as
    it would stall a GPU every step."""
    module = _module(kg, sparse=sparse, optimizer=functools.partial(optimizer, lr=0.1))
    module.sampler(kg.triples[:1])  # `fitted` is read once, on the first draw of a fit
    module = module.to("meta")
    opt = module.configure_optimizers()
    batch = kg.triples[:4].to("meta")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = module.training_step(batch, 0)
        loss.backward()
        return loss

    module.optimizer_step(0, 0, opt, closure)
    weight = module.model.entity.weight
    assert weight.device.type == "meta" and weight.grad.is_sparse == sparse


def test_a_sparse_step_renormalises_exactly_the_rows_it_moved():
    # 5 entities (d = 2, L1, margin 1); e2 and e3 are not unit-norm, so a constraint that
    # touched them would show. Positive (0, 0, 1), negative (0, 0, 4):
    #   h + r - t = (1, 0) -> f = -1;  (0.4, 0.2) -> f = -0.6;  loss = 1 + (-0.6) + 1 = 1.4
    #   dL/de0 = (1, 0) + (-1, -1) = (0, -1), dL/de1 = (-1, 0), dL/de4 = (1, 1)
    # SGD lr 0.5: e0 (1, .5), e1 (.5, 1), e4 (.1, .3), each then divided by its norm
    model = TransE(5, 1, dim=2, p_norm=1, margin=1.0, sparse=True)
    _set_weights(model, [[1.0, 0], [0, 1], [2, 0], [0, -3], [0.6, 0.8]], [[0.0, 1.0]])
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    pos = model.score(torch.tensor([[0, 0, 1]]))
    neg = model.score(torch.tensor([[[0, 0, 4]]]))
    loss = model.loss(pos, neg)
    assert loss.item() == pytest.approx(1.4)
    loss.backward()
    opt.step()
    moved = model.moved_entities()
    assert sorted(set(moved.tolist())) == [0, 1, 4]  # the batch's entities, repeats allowed
    model.normalize_entities_(moved)
    s = math.sqrt(1.25)
    expected = [[1 / s, 0.5 / s], [0.5 / s, 1 / s], [2, 0], [0, -3], [0.1, 0.3]]
    expected[4] = [v / math.sqrt(0.1) for v in expected[4]]
    torch.testing.assert_close(model.entity.weight.detach(), torch.tensor(expected))
    # a dense gradient moves every row under Adam: the constraint covers all of them
    dense = TransE(5, 1, dim=2)
    dense.score(torch.tensor([[0, 0, 1]])).sum().backward()
    assert dense.moved_entities() is None


class _EpochLoss(pl.Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.losses.append(float(trainer.callback_metrics["train/loss"]))


@pytest.mark.parametrize("optimizer", [torch.optim.SparseAdam, torch.optim.Adagrad])
def test_sparse_optimizers_train_a_toy_kg_to_a_lower_loss(kg, tmp_path, optimizer):
    pl.seed_everything(0, workers=True)
    module = _module(kg, sparse=True, optimizer=functools.partial(optimizer, lr=0.1))
    losses = _EpochLoss()
    _trainer(tmp_path, 30, [losses]).fit(module, DataLoader(kg.triples, batch_size=10))
    first, last = np.mean(losses.losses[:3]), np.mean(losses.losses[-3:])
    assert last < 0.5 * first, losses.losses
    norms = module.model.entity.weight.detach().norm(dim=1)
    torch.testing.assert_close(norms, torch.ones_like(norms))


def test_trainer_gpu_trains_large_triple_batches_and_sets_the_matmul_precision(tmp_path):
    from lokg.config import compose_config

    cpu = compose_config("train", ["experiment=train_transe"], tmp_path)
    gpu = compose_config("train", ["experiment=train_transe", "trainer=gpu"], tmp_path)
    assert (cpu.data.batch_size, gpu.data.batch_size) == (4096, 65536)
    assert "float32_matmul_precision" not in cpu.trainer  # CPU runs are as before
    assert gpu.trainer.float32_matmul_precision == "high"
    assert gpu.trainer._target_ == "lokg.train.build_trainer"
    gat = compose_config("train", ["experiment=train_gat", "trainer=gpu"], tmp_path)
    assert gat.data.batch_size == 32  # questions, not triples: model=transe's setting only


def test_build_trainer_sets_the_matmul_precision_and_says_so_once(tmp_path, capsys):
    from lokg.errors import InputError
    from lokg.train import build_trainer

    before = torch.get_float32_matmul_precision()
    try:
        for _ in range(2):
            trainer = build_trainer(
                float32_matmul_precision="medium", accelerator="cpu", devices=1, logger=False,
                enable_progress_bar=False, default_root_dir=tmp_path,
            )  # fmt: skip
            assert isinstance(trainer, pl.Trainer)
            assert torch.get_float32_matmul_precision() == "medium"
        assert capsys.readouterr().out.count("float32 matmul precision: medium") == 1
        with pytest.raises(InputError, match=r"precision='tf32'; expected one of \['highest'"):
            build_trainer(float32_matmul_precision="tf32")
    finally:
        torch.set_float32_matmul_precision(before)


def test_dense_transe_on_many_entities_points_to_the_sparse_path(monkeypatch):
    """From ``SPARSE_HINT_ENTITIES`` on, a dense TransE fit is told that ``model=transe_sparse``
    exists (a dense step moves every row); the sparse model and small graphs get no line."""
    import lokg.models.transe_module as tm

    monkeypatch.setattr(tm, "SPARSE_HINT_ENTITIES", 50)
    assert tm.dense_hint(49, sparse=False) is None
    assert tm.dense_hint(50, sparse=True) is None
    assert tm.dense_hint(1_000_000, sparse=False) == (
        "TransE: dense gradients over 1,000,000 entities move every row each step; "
        "model=transe_sparse moves only the batch's (docs/configs.md, Training)"
    )


def test_train_py_prints_the_dense_hint_when_it_fits_transe(monkeypatch, tmp_path, capsys):
    """The hint is the entry point's (train.py, on a fit), not the module's: building
    TransEModule prints nothing."""
    import lokg.models.transe_module as tm
    from lokg.config import compose_config
    from lokg.train import _built_model

    class VocabularyOnlyDataModule:  # test double: all _built_model asks of TransE's data
        def model_kwargs(self):
            return {"num_entities": 50, "num_relations": 2}

    monkeypatch.setattr(tm, "SPARSE_HINT_ENTITIES", 2)
    TransEModule(num_entities=50, num_relations=2, dim=4)
    assert capsys.readouterr().out == ""
    cfg = compose_config("train", ["experiment=train_transe", "model.dim=4"], tmp_path)
    fit = _built_model(cfg, VocabularyOnlyDataModule())
    assert fit.stage == "scos"
    assert capsys.readouterr().out.splitlines() == [tm.dense_hint(50, sparse=False)]
    cfg.train = False  # evaluate-only: no fit, no hint
    _built_model(cfg, VocabularyOnlyDataModule())
    assert capsys.readouterr().out == ""
    sparse = compose_config("train", ["experiment=train_transe", "model=transe_sparse"], tmp_path)
    _built_model(sparse, VocabularyOnlyDataModule())
    assert capsys.readouterr().out == ""
