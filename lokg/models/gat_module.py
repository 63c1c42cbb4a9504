"""LightningModule training TAIMR's relation-aware GAT by weak path supervision.

The paper does not say how the GAT of Sec. 2.5 is trained.  Objective used here (the issue's
proposal): for each training question, the edges lying on a shortest path (at most
``max_hops`` hops) from its topic entity to a gold answer are positives; the loss is the
cross-entropy of ``alpha(u -> . | r)`` over u's out-edges at each positive edge (u -> v),
i.e. ``-log alpha_m(u -> v | r)``, averaged over heads and positive edges.  This is exactly
the term Eq. (16) sums along a path, so training raises S_topo of answer-bearing paths.

Mini-batches are per-question subgraphs: the edges of the ``max_hops`` out-ball of each
topic entity, with their heads' other out-edges (so every softmax group is complete, up to
``max_fanout`` sampled out-edges per node for hubs), as a disjoint union.  The receptive
field of the 2-layer GAT is truncated to that subgraph (as with neighbour sampling), so a
1M-triple graph is never materialised in a training step.

Validation: ``val/paths_recall`` = fraction of val questions whose gold answer ends one of
the ``k_top`` best paths by S_topo (Eq. (16), with mu) inside the question's subgraph (the
one beam search, :func:`lokg.taimr.beam.search_paths` over
:class:`~lokg.taimr.beam.EdgeSteps`, ``beam_width`` paths a hop),
``val/hits@1`` = the same for the single best path, and ``val/loss``; a val question whose
topic entity is not in the graph counts as missed.  Under ``trainer=ddp`` the metrics are
question-weighted means all-reduced across processes (:mod:`lokg.models.ddp`).

Inputs that come from other stages are given through :meth:`GATModule.set_graph` before
``fit`` (train.py does it): the graph, the node features (sentence encoder over entity
names), optionally TransE relation embeddings (``relation_source="fixed"``; with
``"learned"`` a trainable ``[R, rel_dim]`` table is used), and, with query conditioning, a
function embedding question texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torchmetrics import MeanMetric

from lokg.kg.graph import KnowledgeGraph
from lokg.models.ddp import nothing_to_learn
from lokg.nn.rel_gat import RelGAT
from lokg.taimr.beam import BeamPath, EdgeSteps, search_paths
from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.subgraph import question_subgraph
from lokg.typing import Question

__all__ = ["GATModule", "question_subgraph"]

RELATION_SOURCES = ("learned", "fixed")


class GATModule(pl.LightningModule):
    """Trains :class:`~lokg.nn.rel_gat.RelGAT` on training questions.

    Args:
        num_entities, num_relations: vocabulary sizes (from ``dm.model_kwargs()``).
        node_dim: d_v of the node features (384 MiniLM, 768 E5).
        rel_dim: d_r (64, TransE's).
        hidden: d' (128).  heads: M (4).  num_layers: 2 (the paper's; only 2 is built).
        dropout: 0.3.
        max_hops: L of the subgraphs and positives (3).
        k_top: paths counted by ``val/paths_recall`` (20).
        beam_width: paths kept per hop by the validation search (64).
        max_fanout: out-edges sampled per node in training subgraphs (16; ``None`` = all).
        lambda_topo: weight of log mu in the validation S_topo (1.0).
        relation_source: ``"learned"`` (trainable table) or ``"fixed"`` (TransE's, given to
            :meth:`set_graph`).
        query_conditioning: the option beyond the paper (off): question embedding in the
            attention logits; needs ``query_dim`` and a ``query_encoder``.
        query_dim: size of question embeddings (the embedder's, 384/768).
        optimizer: a ``functools.partial`` of a torch optimizer (Hydra ``_partial_: true``);
            ``None`` = Adam(lr=1e-3).
    """

    def __init__(
        self,
        num_entities: int,
        num_relations: int,
        node_dim: int = 384,
        rel_dim: int = 64,
        hidden: int = 128,
        heads: int = 4,
        num_layers: int = 2,
        dropout: float = 0.3,
        max_hops: int = 3,
        k_top: int = 20,
        beam_width: int = 64,
        max_fanout: int | None = 16,
        lambda_topo: float = 1.0,
        relation_source: str = "learned",
        query_conditioning: bool = False,
        query_dim: int = 384,
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
    ):
        super().__init__()
        if relation_source not in RELATION_SOURCES:
            raise ValueError(
                f"model.relation_source must be one of {RELATION_SOURCES}, got {relation_source!r}"
            )
        if num_layers != 2:
            raise ValueError(f"model.num_layers must be 2 (Eq. (14) then (15)), got {num_layers}")
        self.save_hyperparameters(ignore=["optimizer"])
        self.optimizer_factory = optimizer
        self.gat = RelGAT(
            node_dim,
            rel_dim,
            hidden,
            heads,
            dropout,
            query_dim=query_dim if query_conditioning else None,
        )
        self.relation_table = nn.Embedding(num_relations, rel_dim)
        nn.init.normal_(self.relation_table.weight, std=rel_dim**-0.5)
        if relation_source == "fixed":
            self.relation_table.weight.requires_grad_(False)
        self.kg: KnowledgeGraph | None = None
        self.register_buffer("node_features", torch.zeros(0, node_dim), persistent=False)
        self.query_encoder: Callable[[list[str]], Tensor] | None = None
        self._mu: np.ndarray | None = None
        # question-weighted means over the epoch, all-reduced across DDP processes
        self.val_loss, self.val_hits, self.val_recall = MeanMetric(), MeanMetric(), MeanMetric()

    # ------------------------------------------------------------------ wiring
    def set_graph(
        self,
        kg: KnowledgeGraph,
        node_features: Tensor,
        relation_embeddings: Tensor | None = None,
        query_encoder: Callable[[list[str]], Tensor] | None = None,
    ) -> None:
        """Attach the graph and the artifacts of earlier stages (call before ``fit``)."""
        hp = self.hparams
        if (kg.num_entities, kg.num_relations) != (hp.num_entities, hp.num_relations):
            raise ValueError(
                f"graph has {kg.num_entities} entities / {kg.num_relations} relations, the "
                f"model was built for {hp.num_entities} / {hp.num_relations}"
            )
        if tuple(node_features.shape) != (kg.num_entities, hp.node_dim):
            raise ValueError(
                f"node_features must be [{kg.num_entities}, {hp.node_dim}], "
                f"got {list(node_features.shape)}"
            )
        if hp.relation_source == "fixed":
            if relation_embeddings is None:
                raise ValueError("model.relation_source='fixed' needs relation_embeddings")
            if tuple(relation_embeddings.shape) != (kg.num_relations, hp.rel_dim):
                raise ValueError(
                    f"relation_embeddings must be [{kg.num_relations}, {hp.rel_dim}], "
                    f"got {list(relation_embeddings.shape)}"
                )
            with torch.no_grad():
                self.relation_table.weight.copy_(relation_embeddings)
        if hp.query_conditioning and query_encoder is None:
            raise ValueError("model.query_conditioning=true needs a query_encoder")
        self.kg = kg
        self.node_features = node_features.float().to(self.relation_table.weight.device)
        self.query_encoder = query_encoder
        self._mu = node_information_gain(kg)

    # ------------------------------------------------------------------ batches
    def _batch(self, questions: Sequence[Question]):
        """Disjoint union of the questions' subgraphs (local ids), positives, groups."""
        if self.kg is None:
            raise RuntimeError("GATModule.set_graph(kg, node_features, ...) was not called")
        kg = self.kg
        nodes, edges, types, pos, owner, topics, answers = [], [], [], [], [], [], []
        offset = 0
        for qi, q in enumerate(questions):
            topic = kg.entities.get(q.topic_entities[0]) if q.topic_entities else None
            if topic is None:
                continue
            ans = [a for a in (kg.entities.get(x) for x in q.answers) if a is not None]
            n, t, p = question_subgraph(
                kg, topic, ans, self.hparams.max_hops, self.hparams.max_fanout, self.current_epoch
            )
            local = {int(g): i + offset for i, g in enumerate(n.tolist())}
            tri = kg.triples_np[t]
            edges.append(
                np.stack([[local[int(h)] for h in tri[:, 0]], [local[int(v)] for v in tri[:, 2]]])
                if len(t)
                else np.zeros((2, 0), np.int64)
            )
            types.append(tri[:, 1])
            pos.append(p)
            owner.append(np.full(len(t), qi))
            nodes.append(n)
            topics.append(offset)
            answers.append({local[a] for a in ans if a in local})
            offset += len(n)
        if not nodes:
            return None
        device = self.relation_table.weight.device
        as_long = partial(torch.as_tensor, dtype=torch.long, device=device)
        return {
            "nodes": as_long(np.concatenate(nodes)),
            "edge_index": as_long(np.concatenate(edges, axis=1)),
            "edge_type": as_long(np.concatenate(types)),
            "positive": torch.as_tensor(np.concatenate(pos), device=device),
            "owner": as_long(np.concatenate(owner)),
            "topics": topics,
            "answers": answers,
            "global_nodes": np.concatenate(nodes),
        }

    def forward(self, batch: dict, questions: Sequence[Question]) -> tuple[Tensor, Tensor]:
        """Node states ``[n, d']`` and attention ``[m, M]`` on the batch's subgraphs."""
        x = self.node_features[batch["nodes"]]  # [n, d_v]
        query = None
        if self.hparams.query_conditioning:
            assert self.query_encoder is not None
            q = self.query_encoder([q.text for q in questions]).to(x.device).float()
            query = q[batch["owner"]]  # [m, d_q]
        return self.gat(
            x, batch["edge_index"], batch["edge_type"], self.relation_table.weight, query
        )

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        # Batches are lists of frozen Question records: nothing to move (Lightning's default
        # would try to rebuild the frozen dataclasses).  Tensors are built on the device.
        if isinstance(batch, list) and all(isinstance(q, Question) for q in batch):
            return batch
        return super().transfer_batch_to_device(batch, device, dataloader_idx)

    def _loss(self, alpha: Tensor, positive: Tensor) -> Tensor:
        """Mean over positive edges and heads of -log alpha_m(u -> v | r)."""
        if not positive.any():
            return alpha.sum() * 0.0
        return -alpha[positive].clamp_min(1e-12).log().mean()

    def training_step(self, questions: Sequence[Question], batch_idx: int) -> Tensor | None:
        batch = self._batch(questions)
        if batch is None:
            return nothing_to_learn(self)
        _, alpha = self(batch, questions)
        loss = self._loss(alpha, batch["positive"])
        self.log("train/loss", loss, batch_size=len(questions), prog_bar=True)
        return loss

    def validation_step(self, questions: Sequence[Question], batch_idx: int) -> None:
        batch = self._batch(questions)
        if batch is not None:
            _, alpha = self(batch, questions)
            found, top1 = self._paths_recall(batch, alpha.mean(dim=1))
            n = len(questions)  # a question without its topic in the graph counts as missed
            self.val_loss.update(self._loss(alpha, batch["positive"]).detach(), weight=n)
            self.val_recall.update(found / n, weight=n)
            self.val_hits.update(top1 / n, weight=n)
        # logged every step, scored or not: under DDP every process must hold each metric when
        # they are all-reduced at the epoch's end (lokg.models.ddp)
        self.log("val/loss", self.val_loss, on_step=False, on_epoch=True)
        self.log("val/paths_recall", self.val_recall, on_step=False, on_epoch=True, prog_bar=True)
        self.log("val/hits@1", self.val_hits, on_step=False, on_epoch=True)

    def _paths_recall(self, batch: dict, alpha: Tensor) -> tuple[int, int]:
        """Questions whose answer ends one of the k_top best S_topo paths, and those whose
        best path ends at an answer (a GAT-only Hits@1: no relation linking, no S_sem)."""
        assert self._mu is not None
        hp = self.hparams
        ei = batch["edge_index"].cpu().numpy()
        log_a = alpha.clamp_min(1e-30).log().double().cpu().numpy()
        with np.errstate(divide="ignore"):
            log_mu = np.log(self._mu[batch["global_nodes"]])
        inc = log_a + hp.lambda_topo * log_mu[ei[1]]  # Eq. (16) increment per edge
        source = EdgeSteps(ei[0], ei[1], inc)
        found = top1 = 0
        for topic, answers in zip(batch["topics"], batch["answers"], strict=True):
            kept = search_paths(
                source, BeamPath(0.0, topic), max_hops=hp.max_hops, width=hp.beam_width
            )
            ends = sorted(kept, key=lambda p: -p.score)  # stable: ties in the order kept
            found += bool(answers & {p.node for p in ends[: hp.k_top]})
            top1 += bool(ends) and ends[0].node in answers
        return found, top1

    def configure_optimizers(self):
        params = [p for p in self.parameters() if p.requires_grad]
        if self.optimizer_factory is None:
            return torch.optim.Adam(params, lr=1e-3)
        return self.optimizer_factory(params=params)
