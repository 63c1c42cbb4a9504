"""Inverse relation pairs (``scos.merge_inverse``, beyond the paper, off by default).

Two relations r and r' are inverse when the (head, tail) pairs of one mirror the other's
(``people.person.place_of_birth`` and ``location.location.people_born_here``).  The score
of a pair is the mirrored Jaccard over their distinct pairs,

    J_inv(r, r') = |P(r) ∩ flip(P(r'))| / |P(r) ∪ flip(P(r'))|,  flip(h, t) = (t, h),

and a pair merges when ``J_inv >= theta_base`` (Eq. (5)'s base threshold; the entropy
adaptation does not apply, since the tail entropies of r and its inverse differ by nature).
The merged relation keeps the direction of the member with more triples; the other's
triples are flipped, so every triple keeps its meaning, and its direction flag is -1.
Each relation joins at most one inverse pair; a symmetric relation is not its own inverse.
Every inverse merge records its contradiction (:mod:`lokg.scos.contradiction`) as the kept
relation against the flipped one read backwards, ``c(r, flip(r'))``; with
``max_contradiction`` set (``scos.max_contradiction``) a pair above it is refused and
reported, and its relations stay free to pair otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lokg.kg.graph import KnowledgeGraph
from lokg.scos.contradiction import CountedRecord, contradiction, flip_keys, named_examples

__all__ = ["InverseRecord", "find_inverse_pairs"]


@dataclass
class InverseRecord(CountedRecord):
    """One inverse merge (or, in ``refused``, one refused): ``flipped`` is stored as the
    inverse of ``kept``. The contradiction fields are ``c(kept, flip(flipped))`` (module doc;
    defaults for reports written before they existed)."""

    kept: str
    flipped: str
    mirrored_jaccard: float
    contradiction: float = 0.0
    shared_heads: int = 0
    differing_heads: int = 0
    common_facts: int = 0
    examples: list[dict] = field(default_factory=list)


def find_inverse_pairs(
    kg: KnowledgeGraph, theta: float, max_contradiction: float | None = None
) -> tuple[np.ndarray, np.ndarray, list[InverseRecord], list[InverseRecord]]:
    """Greedy inverse pairing of ``kg``'s relations by mirrored Jaccard (best first).

    Returns:
        ``(partner [R], direction [R], records, refused)``: ``partner[r]`` is the relation
        ``r`` is merged into (itself when kept or unpaired), ``direction[r]`` is -1 for a
        flipped relation and +1 otherwise; ``refused``: the pairs that reached ``theta`` and
        whose contradiction exceeds ``max_contradiction``.
    """
    R, E = kg.num_relations, kg.num_entities
    partner = np.arange(R)
    direction = np.ones(R, dtype=np.int64)
    tr = kg.unique_triples()
    if len(tr) == 0:
        return partner, direction, [], []
    counts = np.bincount(tr[:, 1], minlength=R).astype(np.float64)
    keys = tr[:, 0] * E + tr[:, 2]  # [T] (h, t)
    flipped = tr[:, 2] * E + tr[:, 0]  # [T] (t, h)
    order = np.argsort(keys, kind="stable")
    skeys, srel = keys[order], tr[order, 1]
    lo = np.searchsorted(skeys, flipped, side="left")
    hi = np.searchsorted(skeys, flipped, side="right")
    n = hi - lo  # [T] triples of any relation whose (h, t) is this triple's (t, h)
    a = np.repeat(tr[:, 1], n)
    b = srel[np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)]
    keep = a < b  # each unordered pair once; a == b is a symmetric relation, not an inverse
    code, shared = np.unique(a[keep] * R + b[keep], return_counts=True)
    ra, rb = code // R, code % R
    jac = shared / (counts[ra] + counts[rb] - shared)
    by_relation = np.argsort(tr[:, 1], kind="stable")
    bounds = np.searchsorted(tr[by_relation, 1], np.arange(R + 1))
    rel_keys = keys[by_relation]

    def keys_of(r: int) -> np.ndarray:
        return rel_keys[bounds[r] : bounds[r + 1]]

    records, refused = [], []
    used = np.zeros(R, dtype=bool)
    labels = kg.relations.labels
    for k in np.lexsort((rb, ra, -jac)):
        i, j = int(ra[k]), int(rb[k])
        if jac[k] < theta or used[i] or used[j]:
            continue
        keep_r, flip_r = (i, j) if counts[i] >= counts[j] else (j, i)
        kept, backwards = keys_of(keep_r), flip_keys(keys_of(flip_r), E)
        c = contradiction(kept, backwards, E)
        record = InverseRecord(
            labels[keep_r],
            labels[flip_r],
            float(jac[k]),
            contradiction=c.rate,
            shared_heads=c.shared_heads,
            differing_heads=c.differing_heads,
            common_facts=c.common_facts,
            examples=named_examples(kg, kept, backwards),
        )
        if max_contradiction is not None and c.rate > max_contradiction:
            refused.append(record)
            continue
        used[i] = used[j] = True
        partner[flip_r] = keep_r
        direction[flip_r] = -1
        records.append(record)
    return partner, direction, records, refused
