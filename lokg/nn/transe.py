"""TransE (Bordes et al., 2013), the relation-embedding model SCOS uses for the cosine term of
Eq. (3) and TAIMR's relation-aware GAT takes as ``e_r`` (Eq. (7)).

Plain ``nn.Module``s and functions, no Lightning: the scorer, the margin ranking loss, the
uniform / Bernoulli negative sampler and filtered link-prediction ranks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = [
    "NEGATIVE_SAMPLERS",
    "FilterIndex",
    "NegativeSampler",
    "TransE",
    "filtered_ranks",
]

#: ``uniform``: corrupt head or tail with probability 1/2; ``bernoulli``: corrupt the head
#: with probability tph / (tph + hpt) of the relation (Wang et al., 2014).
NEGATIVE_SAMPLERS = ("uniform", "bernoulli")


class TransE(nn.Module):
    r"""TransE scorer ``f(h, r, t) = -|| e_h + e_r - e_t ||_p``.

    Args:
        num_entities: |E|.
        num_relations: |R|.
        dim: embedding dimension d (paper: 64).
        p_norm: 1 or 2, the norm of the translation error.
        margin: margin gamma of :meth:`loss`.
        sparse: sparse gradients for both tables (``nn.Embedding(sparse=True)``): a step
            then touches only the rows of its batch, for ``torch.optim.SparseAdam`` / SGD on
            large entity tables (:class:`lokg.models.transe_module.TransEModule`).

    Shapes:
        - ``score(triples)``: ``[B, 3]`` -> ``[B]``
        - ``score_tails(heads, rels)``: ``[B]``, ``[B]`` -> ``[B, E]`` (every tail)
        - ``score_heads(rels, tails)``: ``[B]``, ``[B]`` -> ``[B, E]`` (every head)
        - ``loss(pos, neg)``: ``[B]``, ``[B, k]`` -> scalar
    """

    def __init__(
        self,
        num_entities: int,
        num_relations: int,
        dim: int = 64,
        p_norm: int = 1,
        margin: float = 1.0,
        sparse: bool = False,
    ):
        super().__init__()
        if num_entities <= 0 or num_relations <= 0:
            raise ValueError(
                f"TransE needs num_entities > 0 and num_relations > 0, got "
                f"{num_entities} and {num_relations}"
            )
        if p_norm not in (1, 2):
            raise ValueError(f"TransE p_norm={p_norm!r} is not one of [1, 2]")
        if dim <= 0 or margin <= 0:
            raise ValueError(f"TransE needs dim > 0 and margin > 0, got {dim} and {margin}")
        self.num_entities = num_entities
        self.num_relations = num_relations
        self.dim = dim
        self.p_norm = p_norm
        self.margin = margin
        self.entity = nn.Embedding(num_entities, dim, sparse=sparse)
        self.relation = nn.Embedding(num_relations, dim, sparse=sparse)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Bordes et al.'s init: U(-6/sqrt(d), 6/sqrt(d)), relations L2-normalised once."""
        bound = 6.0 / math.sqrt(self.dim)
        nn.init.uniform_(self.entity.weight, -bound, bound)
        nn.init.uniform_(self.relation.weight, -bound, bound)
        with torch.no_grad():
            self.relation.weight.div_(self.relation.weight.norm(dim=1, keepdim=True))
        self.normalize_entities_()

    @torch.no_grad()
    def normalize_entities_(self, rows: torch.Tensor | None = None) -> None:
        """The TransE constraint ``||e||_2 = 1`` (in place) for every entity embedding, or
        for ``rows`` (``[n]`` entity ids, repeats allowed) only: after a sparse step the
        others are unchanged and already unit-norm.

        ``rows`` are gathered and written back on their device (``index_select`` /
        ``index_copy_``): O(n d), no host synchronisation, no ``unique``. A repeated id
        writes the same normalised row each time."""
        w = self.entity.weight
        if rows is None:
            w.div_(w.norm(dim=1, keepdim=True).clamp_min(1e-12))
            return
        sub = w.index_select(0, rows)  # [n, d]
        w.index_copy_(0, rows, sub / sub.norm(dim=1, keepdim=True).clamp_min(1e-12))

    def moved_entities(self) -> torch.Tensor | None:
        """``[n]`` the entity rows an optimizer step over the current gradient moves (repeats
        allowed), or ``None`` for every row: the indices of a sparse gradient (what
        ``SparseAdam``, sparse ``SGD`` and ``Adagrad`` update; under DDP the all-reduced
        gradient, so the union of every process's batch), ``None`` for a dense gradient (Adam
        moves every row through its moments) or none at all."""
        grad = self.entity.weight.grad
        if grad is None or not grad.is_sparse:
            return None
        return grad._indices()[0]

    def score_hrt(self, h: torch.Tensor, r: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """``-||h + r - t||_p`` over the last dimension of broadcastable embeddings."""
        return -(h + r - t).norm(p=self.p_norm, dim=-1)

    def score(self, triples: torch.Tensor) -> torch.Tensor:
        """``[B, 3]`` (head, relation, tail) ids -> ``[B]`` scores (higher is more plausible)."""
        h = self.entity(triples[..., 0])
        r = self.relation(triples[..., 1])
        t = self.entity(triples[..., 2])
        return self.score_hrt(h, r, t)

    def score_tails(self, heads: torch.Tensor, rels: torch.Tensor) -> torch.Tensor:
        """``[B, E]``: the score of (h, r, e) for every entity e."""
        q = self.entity(heads) + self.relation(rels)  # [B, d]
        return -torch.cdist(q, self.entity.weight, p=self.p_norm)

    def score_heads(self, rels: torch.Tensor, tails: torch.Tensor) -> torch.Tensor:
        """``[B, E]``: the score of (e, r, t) for every entity e."""
        q = self.entity(tails) - self.relation(rels)  # [B, d]; ||e + r - t|| = ||e - q||
        return -torch.cdist(q, self.entity.weight, p=self.p_norm)

    def loss(self, pos: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
        """Margin ranking loss ``mean(max(0, gamma - f(pos) + f(neg)))``.

        ``pos [B]`` scores of true triples, ``neg [B, k]`` scores of their k corruptions.
        """
        return torch.relu(self.margin - pos.unsqueeze(-1) + neg).mean()

    def forward(self, triples: torch.Tensor) -> torch.Tensor:
        return self.score(triples)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.num_entities}, {self.num_relations}, "
            f"dim={self.dim}, p_norm={self.p_norm}, margin={self.margin})"
        )


def bernoulli_head_probability(triples: np.ndarray, num_relations: int) -> np.ndarray:
    """``[R]`` probability of corrupting the head: tph / (tph + hpt) per relation.

    tph = mean number of tails per (head, relation), hpt = mean number of heads per
    (relation, tail); a relation without triples gets 1/2.
    """
    triples = np.unique(np.asarray(triples, dtype=np.int64).reshape(-1, 3), axis=0)
    prob = np.full(num_relations, 0.5)
    if len(triples) == 0:
        return prob
    rel = triples[:, 1]
    n = np.bincount(rel, minlength=num_relations).astype(np.float64)
    hr = np.unique(triples[:, [1, 0]], axis=0)[:, 0]  # relation of each distinct (r, h)
    rt = np.unique(triples[:, [1, 2]], axis=0)[:, 0]  # relation of each distinct (r, t)
    n_heads = np.bincount(hr, minlength=num_relations)
    n_tails = np.bincount(rt, minlength=num_relations)
    seen = n > 0
    tph = n[seen] / n_heads[seen]
    hpt = n[seen] / n_tails[seen]
    prob[seen] = tph / (tph + hpt)
    return prob


class NegativeSampler(nn.Module):
    """Corrupts the head or the tail of each triple with a uniformly drawn entity.

    Args:
        num_entities: |E|.
        num_relations: |R|.
        mode: one of :data:`NEGATIVE_SAMPLERS`.
        num_negatives: corruptions per positive triple (k).

    Shapes:
        ``forward(triples)``: ``[B, 3]`` -> ``[B, k, 3]``.

    The Bernoulli head probabilities live in the buffer ``head_prob [R]`` (set by
    :meth:`fit`), so they travel with checkpoints.
    """

    def __init__(
        self, num_entities: int, num_relations: int, mode: str = "bernoulli", num_negatives: int = 1
    ):
        super().__init__()
        if mode not in NEGATIVE_SAMPLERS:
            raise ValueError(f"negative_sampler={mode!r} is not one of {list(NEGATIVE_SAMPLERS)}")
        if num_negatives < 1:
            raise ValueError(f"num_negatives must be >= 1, got {num_negatives}")
        self.num_entities = num_entities
        self.mode = mode
        self.num_negatives = num_negatives
        self.register_buffer("head_prob", torch.full((num_relations,), 0.5, dtype=torch.float64))
        self.register_buffer("fitted", torch.tensor(mode == "uniform"))
        self._fitted_seen = False  # `fitted` was read as True since the last fit / load

    def fit(self, triples: np.ndarray | torch.Tensor) -> NegativeSampler:
        """Estimate the Bernoulli head probabilities from the training triples."""
        if isinstance(triples, torch.Tensor):
            triples = triples.detach().cpu().numpy()
        if self.mode == "bernoulli":
            prob = bernoulli_head_probability(triples, len(self.head_prob))
            self.head_prob.copy_(torch.from_numpy(prob))
        self.fitted.fill_(True)
        self._fitted_seen = True
        return self

    def _check_fitted(self) -> None:
        """Raise when the Bernoulli statistics were never set. ``bool(self.fitted)`` reads
        a device buffer (a host synchronisation on a GPU), so it is read once and the answer
        kept until the next :meth:`fit` or ``load_state_dict``."""
        if self._fitted_seen:
            return
        if not bool(self.fitted):
            raise RuntimeError(
                "NegativeSampler(mode='bernoulli') was not fitted: call fit(train_triples)"
            )
        self._fitted_seen = True

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._fitted_seen = False  # the loaded buffer is read again at the next draw

    def forward(self, triples: torch.Tensor) -> torch.Tensor:
        """``[B, 3]`` -> ``[B, k, 3]`` corruptions, drawn on ``triples.device``: one
        ``torch.rand`` (which side) and one ``torch.randint`` (the entity) per call, nothing
        read back to the host."""
        self._check_fitted()
        k = self.num_negatives
        neg = triples.unsqueeze(1).repeat(1, k, 1)  # [B, k, 3]
        p_head = self.head_prob[triples[:, 1]].to(torch.float32)  # [B]
        corrupt_head = torch.rand(neg.shape[:2], device=triples.device) < p_head.unsqueeze(1)
        random_ent = torch.randint(0, self.num_entities, neg.shape[:2], device=triples.device)
        neg[..., 0] = torch.where(corrupt_head, random_ent, neg[..., 0])
        neg[..., 2] = torch.where(corrupt_head, neg[..., 2], random_ent)
        return neg


class FilterIndex:
    """Known true triples for the *filtered* link-prediction setting.

    Stores, for every (head, relation) the known tails and for every (relation, tail) the
    known heads, as CSR arrays over sorted keys.
    """

    def __init__(self, triples: np.ndarray | torch.Tensor, num_entities: int, num_relations: int):
        if isinstance(triples, torch.Tensor):
            triples = triples.detach().cpu().numpy()
        t = np.unique(np.asarray(triples, dtype=np.int64).reshape(-1, 3), axis=0)
        self.num_entities = num_entities
        self.num_relations = num_relations
        hr = t[:, 0] * num_relations + t[:, 1]
        order = np.argsort(hr, kind="stable")
        self._hr_keys, self._hr_ptr = _group(hr[order])
        self._hr_vals = t[order, 2]
        rt = t[:, 1] * num_entities + t[:, 2]
        order = np.argsort(rt, kind="stable")
        self._rt_keys, self._rt_ptr = _group(rt[order])
        self._rt_vals = t[order, 0]

    def _lookup(
        self, keys: np.ndarray, gkeys: np.ndarray, ptr: np.ndarray, vals: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        if len(gkeys) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        pos = np.minimum(np.searchsorted(gkeys, keys), len(gkeys) - 1)
        found = gkeys[pos] == keys
        starts = np.where(found, ptr[pos], 0)
        lens = np.where(found, ptr[pos + 1] - ptr[pos], 0)
        row = np.repeat(np.arange(len(keys)), lens)
        idx = (
            np.arange(lens.sum())
            - np.repeat(np.cumsum(lens) - lens, lens)
            + np.repeat(starts, lens)
        )
        return row, vals[idx]

    def known_tails(self, heads: np.ndarray, rels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, entity) pairs: entity is a known tail of (heads[row], rels[row])."""
        return self._lookup(
            heads * self.num_relations + rels, self._hr_keys, self._hr_ptr, self._hr_vals
        )

    def known_heads(self, rels: np.ndarray, tails: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, entity) pairs: entity is a known head of (rels[row], tails[row])."""
        return self._lookup(
            rels * self.num_entities + tails, self._rt_keys, self._rt_ptr, self._rt_vals
        )


def _group(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys, starts = np.unique(sorted_keys, return_index=True)
    return keys, np.concatenate([starts, [len(sorted_keys)]]).astype(np.int64)


def _rank(
    scores: torch.Tensor, target: torch.Tensor, row: np.ndarray, col: np.ndarray
) -> torch.Tensor:
    """Filtered rank of ``target`` in each row of ``scores [B, E]``: 1 + #(other score > true).

    Known true entities ``(row, col)`` other than the target are excluded (the filtered
    setting); ties count in the model's favour.
    """
    true = scores.gather(1, target.unsqueeze(1))  # [B, 1]
    scores = scores.clone()
    if len(row):
        r = torch.as_tensor(row, device=scores.device)
        c = torch.as_tensor(col, device=scores.device)
        scores[r, c] = float("-inf")
    return 1 + (scores > true).sum(dim=1)


@torch.no_grad()
def filtered_ranks(model: TransE, triples: torch.Tensor, index: FilterIndex) -> torch.Tensor:
    """``[B, 3]`` test triples -> ``[2B]`` filtered ranks (tail prediction, then head)."""
    h, r, t = triples[:, 0], triples[:, 1], triples[:, 2]
    hn, rn, tn = (x.detach().cpu().numpy() for x in (h, r, t))
    row, col = index.known_tails(hn, rn)
    tail_rank = _rank(model.score_tails(h, r), t, row, col)
    row, col = index.known_heads(rn, tn)
    head_rank = _rank(model.score_heads(r, t), h, row, col)
    return torch.cat([tail_rank, head_rank])
