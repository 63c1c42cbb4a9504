"""Relation-aware graph attention of TAIMR (Sec. 2.5, Eq. (13)-(15)).

Direction convention (the paper's Eq. (13) is normalised over the *out*-neighbours of ``u``):

* ``edge_index[0]`` is the head ``u`` and ``edge_index[1]`` the tail ``v`` of triple (u, r, v).
* The attention logits of all edges leaving the same ``u`` are soft-maxed together, so
  ``torch_geometric.utils.softmax`` gets the *source* index ``edge_index[0]`` (not the
  ``index`` PyG passes to ``edge_update``, which is the target).  ``alpha(u -> . | r)`` is a
  distribution over u's outgoing edges: exactly the transition probability that Eq. (16)
  sums in log space along a path.
* Messages flow source -> target (PyG's default ``flow="source_to_target"``) and are summed
  at ``v`` as in Eq. (14): ``h'_v = sum_{u in N(v)} alpha(u -> v | r) W h_u``.  Because alpha
  is normalised per source, the weights arriving at ``v`` need not sum to 1 (a node with no
  in-edges receives the zero vector); this is what Eq. (14) writes, kept as is.
* A consequence worth knowing: within one source group the term ``a_src^T W h_u`` is the
  same for every edge, so before the LeakyReLU it cannot change the ranking of u's
  out-edges; the ranking is driven by the target and relation terms (and by the question,
  with the optional query conditioning).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import softmax

__all__ = ["RelGAT", "RelGATConv"]


class RelGATConv(MessagePassing):
    r"""Relation-aware multi-head graph attention, Eq. (13)-(15) of the LOKG paper.

    .. math::
        \alpha_m(u \to v \mid r) = \operatorname{softmax}_{v' \in \mathcal{N}_{out}(u)}
        \mathrm{LeakyReLU}\big(\mathbf{a}_m^\top [\mathbf{W}_m h_u \,\|\, \mathbf{W}_m h_v
        \,\|\, \mathbf{W}_{r,m} e_r]\big)                                    \quad (13)

        h'_v = \big\Vert_{m=1}^{M} \mathrm{ELU}\Big(\sum_{u \in \mathcal{N}_{in}(v)}
        \alpha_m(u \to v \mid r)\, \mathbf{W}_m h_u\Big)           \quad (14,\ \text{concat})

        h''_v = \mathrm{ELU}\Big(\frac{1}{M}\sum_{m=1}^{M}\sum_{u}
        \alpha_m(u \to v \mid r)\, \mathbf{W}_m h_u\Big)              \quad (15,\ \text{mean})

    ``W_r e_r`` enters only the attention logits, never the messages.  With ``query_dim``
    set (an option beyond the paper, off by default) the logits of every head also get
    ``<W_q q, W_r e_r + W h_v> / sqrt(d')`` so that the question can steer which out-edge
    of ``u`` is followed.

    Args:
        in_channels: node feature size d_v (384 for MiniLM, 768 for E5).
        rel_channels: relation embedding size d_r (64, TransE's).
        out_channels: per-head size d' (the paper's hidden dimension, 128).
        heads: number of heads M (default 4).
        concat: concatenate heads (Eq. 14, output ``M * d'``) or average them (Eq. 15,
            output ``d'``).
        negative_slope: LeakyReLU slope (default 0.2, as GAT).
        dropout: dropout on the normalised attention coefficients inside the messages
            (default 0.0); the returned ``alpha`` is never dropped out.
        activation: apply the ELU of Eq. (14)/(15) inside the layer (default ``True``).
        bias: add a learned bias before the activation (default ``False``: the paper has
            none).
        query_dim: size of the question embedding for query-conditioned attention
            (``None`` = off, the paper's layer).

    Shapes:
        - **input:** node features ``[N, d_v]``, edge_index ``[2, E]`` (head -> tail),
          edge_type ``[E]``, relation embeddings ``[R, d_r]``, optional query ``[d_q]``,
          ``[1, d_q]`` or ``[E, d_q]`` (one row per edge), or ``[B, d_q]`` with
          ``query_index [E]`` (each edge's row: a batch of questions projected once)
        - **output:** ``[N, M * d']`` (concat) or ``[N, d']`` (mean); with
          ``return_attention_weights=True`` also ``alpha [E, M]``, summing to 1 over the
          out-edges of each source node.
    """

    def __init__(
        self,
        in_channels: int,
        rel_channels: int,
        out_channels: int,
        heads: int = 4,
        concat: bool = True,
        negative_slope: float = 0.2,
        dropout: float = 0.0,
        activation: bool = True,
        bias: bool = False,
        query_dim: int | None = None,
    ):
        super().__init__(aggr="add", node_dim=0)
        for key, value in (
            ("in_channels", in_channels),
            ("rel_channels", rel_channels),
            ("out_channels", out_channels),
            ("heads", heads),
        ):
            if value < 1:
                raise ValueError(f"RelGATConv.{key} must be >= 1, got {value}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"RelGATConv.dropout must be in [0, 1), got {dropout}")
        if query_dim is not None and query_dim < 1:
            raise ValueError(f"RelGATConv.query_dim must be None or >= 1, got {query_dim}")
        self.in_channels = in_channels
        self.rel_channels = rel_channels
        self.out_channels = out_channels
        self.heads = heads
        self.concat = concat
        self.negative_slope = negative_slope
        self.dropout = dropout
        self.activation = activation
        self.query_dim = query_dim

        self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)  # W (all heads)
        self.lin_rel = nn.Linear(rel_channels, heads * out_channels, bias=False)  # W_r
        # a = [a_src || a_dst || a_rel], one triple of vectors per head.
        self.att_src = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_rel = nn.Parameter(torch.empty(1, heads, out_channels))
        if query_dim is not None:
            self.lin_query = nn.Linear(query_dim, heads * out_channels, bias=False)
        else:
            self.register_parameter("lin_query", None)
        if bias:
            self.bias = nn.Parameter(torch.empty(heads * out_channels if concat else out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.lin_rel.weight)
        for att in (self.att_src, self.att_dst, self.att_rel):
            nn.init.xavier_uniform_(att)
        if self.lin_query is not None:
            nn.init.xavier_uniform_(self.lin_query.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_type: Tensor,
        rel_emb: Tensor,
        query: Tensor | None = None,
        return_attention_weights: bool = False,
        query_index: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        H, C = self.heads, self.out_channels
        if x.dim() != 2 or x.size(1) != self.in_channels:
            raise ValueError(f"x must be [N, {self.in_channels}], got {list(x.shape)}")
        if rel_emb.dim() != 2 or rel_emb.size(1) != self.rel_channels:
            raise ValueError(f"rel_emb must be [R, {self.rel_channels}], got {list(rel_emb.shape)}")
        if (query is not None) != (self.query_dim is not None):
            raise ValueError(
                "query must be given exactly when the layer was built with query_dim "
                f"(query_dim={self.query_dim}, query {'given' if query is not None else 'None'})"
            )
        num_nodes = x.size(0)
        x_proj = self.lin(x).view(-1, H, C)  # [N, H, C]
        rel_proj = self.lin_rel(rel_emb).view(-1, H, C)[edge_type]  # [E, H, C]
        alpha_src = (x_proj * self.att_src).sum(-1)  # [N, H]
        alpha_dst = (x_proj * self.att_dst).sum(-1)  # [N, H]
        alpha_rel = (rel_proj * self.att_rel).sum(-1)  # [E, H]
        if query is not None:
            q = query.reshape(-1, self.query_dim)
            q_proj = self.lin_query(q).view(-1, H, C)  # [1 or E, H, C] (or [B, H, C])
            if query_index is not None:
                q_proj = q_proj[query_index]  # [E, H, C]: each edge's question
            key = rel_proj + x_proj[edge_index[1]]  # [E, H, C]
            alpha_rel = alpha_rel + (q_proj * key).sum(-1) / math.sqrt(C)

        alpha = self.edge_updater(
            edge_index,
            alpha=(alpha_src, alpha_dst),
            alpha_rel=alpha_rel,
            src_index=edge_index[0],
            num_nodes=num_nodes,
        )  # [E, H]
        out = self.propagate(edge_index, x=x_proj, alpha=alpha, size=(num_nodes, num_nodes))
        out = out.reshape(-1, H * C) if self.concat else out.mean(dim=1)  # [N, H*C] | [N, C]
        if self.bias is not None:
            out = out + self.bias
        if self.activation:
            out = F.elu(out)
        if return_attention_weights:
            return out, alpha
        return out

    def edge_update(
        self,
        alpha_j: Tensor,
        alpha_i: Tensor,
        alpha_rel: Tensor,
        src_index: Tensor,
        num_nodes: int,
    ) -> Tensor:
        """Eq. (13): logits per edge, soft-maxed over the out-edges of each source node."""
        logits = F.leaky_relu(alpha_j + alpha_i + alpha_rel, self.negative_slope)  # [E, H]
        return softmax(logits, src_index, num_nodes=num_nodes)  # grouped by head u

    def message(self, x_j: Tensor, alpha: Tensor) -> Tensor:
        # Dropout here, not in edge_update: the returned alpha stays a distribution per
        # source in training too (the path-supervision loss reads it).
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        return alpha.unsqueeze(-1) * x_j  # [E, H, C]

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, "
            f"rel={self.rel_channels}, heads={self.heads}, concat={self.concat}"
            f"{'' if self.query_dim is None else f', query={self.query_dim}'})"
        )


class RelGAT(nn.Module):
    """TAIMR's 2-layer relation-aware GAT: Eq. (14) (heads concatenated) then Eq. (15).

    The edge scores TAIMR uses (Eq. (16)) are the second layer's attention averaged over
    heads, ``alpha(u -> v | r) = mean_m alpha_m``: still a distribution over u's out-edges.

    Args:
        node_dim: d_v.  rel_dim: d_r.  hidden: d' (128).  heads: M (4).
        dropout: feature dropout between layers and attention dropout (0.3).
        query_dim: enables query-conditioned attention in both layers (``None`` = off).

    Shapes:
        - **input:** ``x [N, d_v]``, ``edge_index [2, E]``, ``edge_type [E]``,
          ``rel_emb [R, d_r]``, optional ``query [d_q]`` or ``[E, d_q]``
        - **output:** node states ``[N, d']`` and per-head attention of the last layer
          ``[E, M]``
    """

    def __init__(
        self,
        node_dim: int,
        rel_dim: int,
        hidden: int = 128,
        heads: int = 4,
        dropout: float = 0.3,
        query_dim: int | None = None,
    ):
        super().__init__()
        self.dropout = dropout
        self.conv1 = RelGATConv(
            node_dim, rel_dim, hidden, heads, concat=True, dropout=dropout, query_dim=query_dim
        )
        self.conv2 = RelGATConv(
            heads * hidden, rel_dim, hidden, heads, concat=False, dropout=dropout,
            query_dim=query_dim,
        )  # fmt: skip

    def reset_parameters(self) -> None:
        self.conv1.reset_parameters()
        self.conv2.reset_parameters()

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        edge_type: Tensor,
        rel_emb: Tensor,
        query: Tensor | None = None,
        query_index: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        x = F.dropout(x, p=self.dropout, training=self.training)
        h = self.conv1(
            x, edge_index, edge_type, rel_emb, query, query_index=query_index
        )  # [N, M*d']
        h = F.dropout(h, p=self.dropout, training=self.training)
        h, alpha = self.conv2(
            h, edge_index, edge_type, rel_emb, query, True, query_index
        )  # [N, d'], [E, M]
        return h, alpha
