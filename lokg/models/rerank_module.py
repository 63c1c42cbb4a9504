"""Trains the answer GAT that re-scores the walk's candidates (issue 28 §3, beyond the paper;
:mod:`lokg.taimr.walk.rerank`).  ``python train.py experiment=train_rerank data=<d>``.

Before fit, train.py runs the trained walk over the training and validation questions and
hands this module one :class:`~lokg.taimr.walk.rerank.JointItem` per question whose joint
subgraph has candidates (:meth:`RerankModule.set_items`).  The loss is the likelihood of the
gold answers among the candidates,

    L(q) = -log sum_{a in C, a gold} softmax_{a' in C} s_GAT(a' | q),

over questions with a gold candidate.  Validation logs ``val/hits@1`` (the GAT's first
candidate a gold answer, over every validation question with candidates), ``val/hits@1_walk``
(the walk's first, for reference) and ``val/hits@1_fused`` (``walk + 1 * log softmax GAT``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytorch_lightning as pl
import torch
from torch import Tensor
from torchmetrics import MeanMetric

from lokg.models.ddp import nothing_to_learn
from lokg.nn.answer_gat import AnswerGAT
from lokg.taimr.walk.rerank import JointItem, batch_items, score_batch
from lokg.typing import Question

__all__ = ["RerankModule"]


def first_hits(batch, log_probs: Tensor) -> tuple[Tensor, Tensor]:
    """``[B]`` whether the best candidate by ``log_probs`` and by the walk is gold."""
    hits, walk_hits = [], []
    for b in range(batch.num_questions):
        mine = batch.candidate_owner == b
        gold = batch.gold[mine]
        hits.append(gold[int(torch.argmax(log_probs[mine]))])
        walk_hits.append(gold[int(torch.argmax(batch.walk[mine]))])
    return torch.stack(hits).float(), torch.stack(walk_hits).float()


class RerankModule(pl.LightningModule):
    """Fits :class:`~lokg.nn.answer_gat.AnswerGAT` on the walk's candidates (module doc).

    Args:
        node_dim: d_v (name embedding + structure features).  rel_dim: the walk's step-relation
            features (TransE's d_r + name + direction).  query_dim: the question's size.
        hidden, heads, dropout: d' (128), M (4), 0.3 (Table 3).
        layers: 2 (TAIMR's GAT) or 0 (no message passing: the ablation).
        question_in_attention: the question in the GAT's logits.
        use_transe: the GAT reads TransE's e_r (``False``: that part zeroed, the ablation).
        transe_dim: how many leading columns of the relation features are TransE's.
        max_candidates, max_neighbours: the joint subgraph's sizes (:mod:`~lokg.taimr.walk.joint`).
        weight: omega at retrieval when the artifact is used without ``retriever.rerank_weight``.
        walk_dir: the walk model (a ``qgat-*`` directory) whose candidates it learns from
            (``None``: the default walk model of the graph; read by train.py's stage).
        optimizer: ``functools.partial`` of a torch optimizer (``None`` = Adam 1e-3).
    """

    def __init__(
        self,
        node_dim: int,
        rel_dim: int,
        query_dim: int,
        hidden: int = 128,
        heads: int = 4,
        dropout: float = 0.3,
        layers: int = 2,
        question_in_attention: bool = True,
        use_transe: bool = True,
        transe_dim: int = 64,
        max_candidates: int = 32,
        max_neighbours: int = 8,
        weight: float = 1.0,
        walk_dir: str | None = None,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
    ):
        super().__init__()
        self.save_hyperparameters(ignore=["optimizer"])
        self.optimizer_factory = optimizer
        self.net = AnswerGAT(
            node_dim, rel_dim, query_dim, hidden, heads, dropout, layers, question_in_attention
        )
        self.items: dict[str, JointItem] = {}
        self.val_hits, self.val_walk, self.val_fused = MeanMetric(), MeanMetric(), MeanMetric()

    def architecture(self) -> dict:
        """What :func:`~lokg.taimr.walk.rerank.load_answer_gat` rebuilds the network from."""
        keys = ("node_dim", "rel_dim", "query_dim", "hidden", "heads", "layers")
        arch = {k: self.hparams[k] for k in keys}
        arch["question_in_attention"] = self.hparams.question_in_attention
        for k in ("use_transe", "transe_dim", "max_candidates", "max_neighbours", "weight"):
            arch[k] = self.hparams[k]
        return arch

    def set_items(self, items: Mapping[str, JointItem]) -> None:
        """One joint item per question id (training and validation questions)."""
        self.items = dict(items)

    def _batch(self, questions: Sequence[Question], need_gold_candidate: bool):
        items = [self.items[q.id] for q in questions if q.id in self.items]
        if need_gold_candidate:
            items = [it for it in items if bool(it.gold.any())]
        return batch_items(items).to(self.device) if items else None

    def training_step(self, questions: Sequence[Question], batch_idx: int) -> Tensor | None:
        batch = self._batch(questions, need_gold_candidate=True)
        if batch is None:
            return nothing_to_learn(self)
        lp = score_batch(self.net, batch)
        gold_lp = lp.masked_fill(~batch.gold, float("-inf"))
        per_q = torch.full((batch.num_questions,), float("-inf"), device=lp.device)
        per_q = per_q.scatter_reduce(0, batch.candidate_owner, gold_lp, "amax")
        total = torch.zeros_like(per_q).index_add(
            0, batch.candidate_owner, (gold_lp - per_q[batch.candidate_owner]).exp()
        )
        loss = -(total.log() + per_q).mean()
        self.log("train/loss", loss, batch_size=batch.num_questions, prog_bar=True)
        return loss

    def validation_step(self, questions: Sequence[Question], batch_idx: int) -> None:
        batch = self._batch(questions, need_gold_candidate=False)
        if batch is not None:
            lp = score_batch(self.net, batch)
            hits, walk = first_hits(batch, lp)
            fused, _ = first_hits(batch, batch.walk + lp)
            n = batch.num_questions
            self.val_hits.update(hits.mean(), weight=n)
            self.val_walk.update(walk.mean(), weight=n)
            self.val_fused.update(fused.mean(), weight=n)
        self.log("val/hits@1", self.val_hits, on_step=False, on_epoch=True, prog_bar=True)
        self.log("val/hits@1_walk", self.val_walk, on_step=False, on_epoch=True)
        self.log("val/hits@1_fused", self.val_fused, on_step=False, on_epoch=True, prog_bar=True)

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        if isinstance(batch, list) and all(isinstance(q, Question) for q in batch):
            return batch  # tensors are built on the device
        return super().transfer_batch_to_device(batch, device, dataloader_idx)

    def configure_optimizers(self):
        params = [p for p in self.parameters() if p.requires_grad]
        if self.optimizer_factory is None:
            return torch.optim.Adam(params, lr=1e-3)
        return self.optimizer_factory(params=params)
