"""Information value of a rendered triple (Sec. 2.4, Eqs. (9)-(10))."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from lokg.kg.graph import KnowledgeGraph

__all__ = ["query_boost", "triple_values"]


def query_boost(
    triples: np.ndarray, relevant_entities: Collection[int], lambda_boost: float
) -> np.ndarray:
    """α(t) of Eq. (10): ``lambda_boost`` if {s, o} ∩ E_q ≠ ∅, else 1.

    Args:
        triples: ``[N, 3]`` (s, r, o) ids.
        relevant_entities: E_q = E_query ∪ E_cand (entity ids).
        lambda_boost: λ_boost ≥ 1.

    Returns:
        ``[N]`` float64.
    """
    if lambda_boost < 1:
        raise ValueError(f"lambda_boost must be >= 1 (Eq. (10)), got {lambda_boost}")
    triples = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
    eq = np.fromiter(relevant_entities, dtype=np.int64, count=len(relevant_entities))
    hit = np.isin(triples[:, 0], eq) | np.isin(triples[:, 2], eq)
    return np.where(hit, float(lambda_boost), 1.0)


def triple_values(
    kg: KnowledgeGraph,
    triples: np.ndarray,
    relevant_entities: Collection[int],
    betas: Sequence[float] = (0.5, 0.8, 1.0),
    lambda_boost: float = 3.0,
) -> np.ndarray:
    """v(t_i, k) = β_k · α(t_i) · H(O | R = r_i) of Eq. (9).

    H(O | R = r) is the tail entropy of Eq. (4) (``kg.relation_tail_entropy``, nats).

    Args:
        kg: graph providing H(r) for the relations of ``triples``.
        triples: ``[N, 3]`` (s, r, o) ids.
        relevant_entities: E_q of Eq. (10).
        betas: β_1..β_K, the granularity retention coefficients.
        lambda_boost: λ_boost of Eq. (10).

    Returns:
        ``[N, K]`` float64 values.
    """
    betas_arr = np.asarray(betas, dtype=np.float64)
    if betas_arr.ndim != 1 or len(betas_arr) == 0 or np.any(betas_arr < 0):
        raise ValueError(f"betas must be a non-empty list of non-negative numbers, got {betas}")
    triples = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
    h = kg.relation_tail_entropy[triples[:, 1]]  # [N]
    alpha = query_boost(triples, relevant_entities, lambda_boost)  # [N]
    return (alpha * h)[:, None] * betas_arr[None, :]  # [N, K]
