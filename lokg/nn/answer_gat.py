"""The answer GAT (issue 28 §3, beyond the paper): TAIMR's relation-aware GAT (Eq. (13)-(15),
``W_r e_r`` in its attention, the question in its logits) run over a question's joint
subgraph of anchors and candidates (:mod:`lokg.taimr.walk.joint`), scoring each candidate.

    h = RelGAT(x, steps, W_r e_r, q)                                [n, d']  (2 layers, M heads)
    z_v = [W_x x_v || h_v]                                            [n, 2d']
    s(a | q) = <W_o z_a, W_q q> / sqrt(d') + w^T z_a + b              (one logit per candidate)

``x_v`` is the node's name embedding beside its structure features (which anchors reach it,
how far).  The skip term ``W_x x_v`` keeps a node's own features: Eq. (14) sums only what
arrives from the neighbours.  ``layers=0`` drops the GAT (``z_v = W_x x_v``): the ablation
that says whether message passing, rather than the features, carries the score.

Shapes:
    - **input:** ``x [n, d_v]``, ``edge_index [2, m]``, ``step_relation [m]`` (rows of
      ``rel_feats [V, d_r]``), ``query [B, d_q]`` with ``edge_owner [m]`` (each step's
      question), ``candidates [c]`` (node indices) with ``candidate_owner [c]``
    - **output:** ``[c]`` logits
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from lokg.nn.grouped import group_logsumexp
from lokg.nn.rel_gat import RelGAT

__all__ = ["AnswerGAT", "candidate_log_softmax"]


def candidate_log_softmax(logits: Tensor, owner: Tensor, num_questions: int) -> Tensor:
    """``[c]`` log-softmax of ``logits`` within each question (``owner [c]``)."""
    return logits - group_logsumexp(logits, owner, num_questions)[owner]


class AnswerGAT(nn.Module):
    """Candidate scorer over the joint subgraph (module doc).

    Args:
        node_dim: d_v (name embedding + structure features).
        rel_dim: step-relation feature size.
        query_dim: question embedding size.
        hidden: d' (128).  heads: M (4).  dropout: 0.3 (Table 3's).
        layers: 2 (TAIMR's GAT) or 0 (no message passing: the features alone).
        question_in_attention: the question enters the GAT's logits (NSM/ReaRev-style).
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
    ):
        super().__init__()
        if layers not in (0, 2):
            raise ValueError(f"AnswerGAT layers must be 0 or 2 (TAIMR's GAT), got {layers}")
        self.hidden, self.layers = hidden, layers
        self.question_in_attention = question_in_attention
        self.gat = None
        if layers:
            q_dim = query_dim if question_in_attention else None
            self.gat = RelGAT(node_dim, rel_dim, hidden, heads, dropout, query_dim=q_dim)
        width = hidden * (2 if layers else 1)
        self.lin_x = nn.Linear(node_dim, hidden, bias=False)  # W_x
        self.lin_out = nn.Linear(width, hidden, bias=False)  # W_o
        self.lin_q = nn.Linear(query_dim, hidden, bias=False)  # W_q
        self.prior = nn.Linear(width, 1)  # w, b
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.gat is not None:
            self.gat.reset_parameters()
        for lin in (self.lin_x, self.lin_out, self.lin_q):
            nn.init.xavier_uniform_(lin.weight)
        nn.init.zeros_(self.prior.weight)
        nn.init.zeros_(self.prior.bias)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        step_relation: Tensor,
        rel_feats: Tensor,
        query: Tensor,
        edge_owner: Tensor,
        candidates: Tensor,
        candidate_owner: Tensor,
    ) -> Tensor:
        z = self.lin_x(x)  # [n, d']
        if self.gat is not None:
            q = query if self.question_in_attention else None
            h, _ = self.gat(x, edge_index, step_relation, rel_feats, q, edge_owner)  # [n, d']
            z = torch.cat([z, h], -1)  # [n, 2d']
        za = z[candidates]  # [c, width]
        qa = self.lin_q(query)[candidate_owner]  # [c, d']
        bilinear = (self.lin_out(za) * qa).sum(-1) / math.sqrt(self.hidden)
        return bilinear + self.prior(za).squeeze(-1)  # [c]
