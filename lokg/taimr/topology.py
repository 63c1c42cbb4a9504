"""Edge attention alpha(u -> v | r) for the whole graph, as Eq. (16) consumes it.

``gat_log_attention`` runs the trained relation-aware GAT (Eq. (13)-(15)) once over the graph
and returns ``log alpha`` of its last layer averaged over heads; ``uniform_log_attention``
is the "without GAT" ablation, ``alpha = 1 / out_degree(u)`` (the same normaliser as
Eq. (13), every out-edge equally likely).
"""

from __future__ import annotations

import numpy as np
import torch

from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.nn.rel_gat import RelGAT
from lokg.taimr.subgraph import question_subgraph

__all__ = ["QueryConditionedAttention", "gat_log_attention", "uniform_log_attention"]


def uniform_log_attention(kg: KnowledgeGraph) -> np.ndarray:
    """``[T]`` log(1 / out_degree(head)) for every triple."""
    heads = kg.triples_np[:, 0]
    return -np.log(kg.out_degree[heads].astype(np.float64))


@torch.no_grad()
def gat_log_attention(
    gat: RelGAT, kg: KnowledgeGraph, node_features: torch.Tensor, rel_emb: torch.Tensor
) -> np.ndarray:
    """``[T]`` log of Eq. (13)'s alpha, last GAT layer, mean over heads, in triple order.

    Shapes:
        - ``node_features``: ``[E, d_v]``; ``rel_emb``: ``[R, d_r]``
    """
    if gat.conv1.query_dim is not None:
        raise ValueError(
            "a query-conditioned GAT has no query-independent attention; "
            "set model.query_conditioning=false for the path cache"
        )
    was_training = gat.training
    gat.eval()
    try:
        device = next(gat.parameters()).device
        _, alpha = gat(
            node_features.to(device),
            kg.edge_index.to(device),
            kg.edge_type.to(device),
            rel_emb.to(device),
        )  # [T, M]
    finally:
        gat.train(was_training)
    return alpha.mean(dim=1).clamp_min(1e-30).log().double().cpu().numpy()


class QueryConditionedAttention:
    """Per-question alpha from a query-conditioned GAT (option beyond the paper).

    The question embedding enters the attention logits, so alpha cannot be cached per
    (head, relation) across questions: for each question the GAT runs on the topic
    entity's ``max_hops`` out-ball (at most ``max_fanout`` out-edges per node) and the
    retriever overlays the resulting alpha on its path cache.

    Args:
        gat: a trained ``RelGAT`` built with ``query_dim``.
        kg, node_features ``[E, d_v]``, rel_emb ``[R, d_r]``: as for training.
        encoder: embeds the question (``kind="query"``), as the query encoder in training.
    """

    def __init__(
        self,
        gat: RelGAT,
        kg: KnowledgeGraph,
        node_features: torch.Tensor,
        rel_emb: torch.Tensor,
        encoder: SentenceEncoder,
        max_hops: int = 3,
        max_fanout: int | None = 16,
    ):
        if gat.conv1.query_dim is None:
            raise ValueError("QueryConditionedAttention needs a GAT built with query_dim")
        self.gat, self.kg, self.encoder = gat, kg, encoder
        self.node_features, self.rel_emb = node_features, rel_emb
        self.max_hops, self.max_fanout = max_hops, max_fanout

    @torch.no_grad()
    def __call__(self, question: str, topic: int) -> tuple[np.ndarray, np.ndarray]:
        """``(triple_ids [m], log alpha [m])`` on the question's subgraph."""
        nodes, tids, _ = question_subgraph(self.kg, topic, (), self.max_hops, self.max_fanout)
        if len(tids) == 0:
            return tids, np.zeros(0)
        local = {int(g): i for i, g in enumerate(nodes.tolist())}
        tri = self.kg.triples_np[tids]
        edge_index = torch.tensor(
            [[local[int(h)] for h in tri[:, 0]], [local[int(t)] for t in tri[:, 2]]]
        )
        q = torch.from_numpy(self.encoder.encode([question], kind="query"))  # [1, d_q]
        was_training = self.gat.training
        self.gat.eval()
        try:
            _, alpha = self.gat(
                self.node_features[torch.from_numpy(nodes)],
                edge_index,
                torch.from_numpy(tri[:, 1]),
                self.rel_emb,
                q,
            )  # [m, M]
        finally:
            self.gat.train(was_training)
        return tids, alpha.mean(dim=1).clamp_min(1e-30).log().double().numpy()
