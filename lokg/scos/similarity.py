"""Tri-signal relation similarity (Eq. (3)), tail entropy (Eq. (4)) and threshold (Eq. (5)).

Everything here works on *relation clusters*: a cluster is represented by the distinct
(head, tail) pairs of its triples, encoded as int64 keys ``head * E + tail``.  A single
relation is a cluster of one, so the same functions serve the initial similarity matrix
and the recomputation after each merge.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "adaptive_threshold",
    "cosine_similarity",
    "fused_similarity",
    "jaccard",
    "pair_keys_entropy",
    "type_nmi_similarity",
    "type_pair_distribution",
]

_LOG2 = np.log(2.0)


def pair_keys_entropy(keys: np.ndarray, num_entities: int) -> float:
    """H(r) of Eq. (4), in nats, for a cluster given its distinct (head, tail) keys.

    p(o | r) = |{s : (s, r, o)}| / |{(s, o)}|: the keys are distinct (s, o) pairs, so the
    count of keys with tail o is the number of distinct subjects of o.
    """
    if len(keys) == 0:
        return 0.0
    _, counts = np.unique(keys % num_entities, return_counts=True)
    p = counts / len(keys)
    return float(-(p * np.log(p)).sum())


def type_pair_distribution(
    keys: np.ndarray, num_entities: int, types: np.ndarray, num_types: int
) -> tuple[np.ndarray, np.ndarray]:
    """The (head type, tail type) distribution of a cluster.

    Returns:
        ``(type_pairs, probs)``: sorted int64 ids ``type(h) * num_types + type(t)`` and their
        probabilities over the cluster's distinct (head, tail) pairs (both ``[k]``).
    """
    if len(keys) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    tp = types[keys // num_entities] * num_types + types[keys % num_entities]
    uniq, counts = np.unique(tp, return_counts=True)
    return uniq.astype(np.int64), counts / len(keys)


def _nmi_terms(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per shared type pair: ``p log2(1 + q/p) + q log2(1 + p/q)`` (p, q > 0)."""
    s = p + q
    return (p * np.log(s / p) + q * np.log(s / q)) / _LOG2


def type_nmi_similarity(
    dist_i: tuple[np.ndarray, np.ndarray], dist_j: tuple[np.ndarray, np.ndarray]
) -> float:
    """The NMI term of Eq. (3) between two relations (or clusters).

    Let X pick one of the two relations with probability 1/2 and Y be the (head type,
    tail type) pair of a random triple of X.  Two relations with the same type-pair
    distribution make Y useless for telling them apart (I(X; Y) = 0); two relations with
    disjoint type pairs make Y identify X (I(X; Y) = H(X) = log 2).  The similarity is

        NMI(r_i, r_j) = 1 - I(X; Y) / H(X) = 1 - JSD(p_i || p_j) / log 2  in [0, 1],

    which only involves the type pairs the two share:
    ``1/2 * sum_k [p_k log2(1 + q_k/p_k) + q_k log2(1 + p_k/q_k)]``.
    """
    ki, pi = dist_i
    kj, pj = dist_j
    _, a, b = np.intersect1d(ki, kj, assume_unique=True, return_indices=True)
    if len(a) == 0:
        return 0.0
    return float(min(1.0, 0.5 * _nmi_terms(pi[a], pj[b]).sum()))


def jaccard(intersection: np.ndarray, size_i: np.ndarray, size_j: np.ndarray) -> np.ndarray:
    """Jaccard term of Eq. (3): |S_i ∩ S_j| / |S_i ∪ S_j| over head ∪ tail entity sets.

    Two empty sets have Jaccard 0.
    """
    union = size_i + size_j - intersection
    return np.divide(
        intersection, union, out=np.zeros(np.broadcast(intersection, union).shape), where=union > 0
    )


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine term of Eq. (3) between rows of ``a [n, d]`` and ``b [m, d]`` -> ``[n, m]``.

    A zero vector has cosine 0 with everything.
    """
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    a = np.divide(a, na, out=np.zeros_like(a), where=na > 0)
    b = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0)
    return a @ b.T


def fused_similarity(
    nmi: np.ndarray | float,
    jac: np.ndarray | float,
    cos: np.ndarray | float,
    weights: tuple[float, float, float],
) -> np.ndarray | float:
    """Eq. (3): ``sim = w1 * NMI + w2 * Jaccard + w3 * cos``."""
    w1, w2, w3 = weights
    return w1 * nmi + w2 * jac + w3 * cos


def adaptive_threshold(
    h_i: np.ndarray | float, h_j: np.ndarray | float, theta_base: float, epsilon: float
) -> np.ndarray:
    """Eq. (5): ``theta = min(theta_base * (1 + epsilon * delta), 1)``.

    ``delta = |H_i - H_j| / max(H_i, H_j)`` is the relative entropy difference (Eq. (4)
    entropies); two zero-entropy relations have ``delta = 0``.
    """
    h_i = np.asarray(h_i, dtype=np.float64)
    h_j = np.asarray(h_j, dtype=np.float64)
    hmax = np.maximum(h_i, h_j)
    delta = np.divide(
        np.abs(h_i - h_j), hmax, out=np.zeros(np.broadcast(h_i, h_j).shape), where=hmax > 0
    )
    return np.minimum(theta_base * (1.0 + epsilon * delta), 1.0)
