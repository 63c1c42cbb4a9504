"""Edge attention alpha(u -> v | r) for the whole graph, as Eq. (16) consumes it.

``gat_log_attention`` runs the trained relation-aware GAT (Eq. (13)-(15)) once over the graph
and returns ``log alpha`` of its last layer averaged over heads; ``uniform_log_attention``
is the "without GAT" ablation, ``alpha = 1 / out_degree(u)`` (the same normaliser as
Eq. (13), every out-edge equally likely).
"""

from __future__ import annotations

import numpy as np
import torch

from lokg.kg.graph import KnowledgeGraph
from lokg.nn.rel_gat import RelGAT

__all__ = ["gat_log_attention", "uniform_log_attention"]


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
