"""Node information gain mu(v), Eq. (12) of the paper (Sec. 2.5)."""

from __future__ import annotations

import numpy as np

from lokg.kg.graph import KnowledgeGraph

__all__ = ["node_information_gain"]


def node_information_gain(kg: KnowledgeGraph) -> np.ndarray:
    """Eq. (12): ``mu(v) = (1 + log(deg_in(v) + 1)) * div(v)`` for every node, vectorised.

    ``deg_in`` counts parallel edges (``kg.in_degree``); ``div(v)`` is the number of distinct
    incoming relations over ``|R*|`` (``kg.in_relation_diversity``, in [0, 1]); ``log`` is the
    natural logarithm.  A node with no incoming edge has mu = 0; Eq. (16) only evaluates mu
    on nodes reached through an edge (i >= 1), where mu >= 1/|R*| > 0.

    Returns:
        ``[E]`` float64 array; computed once per graph and indexed in O(1).
    """
    deg_in = np.asarray(kg.in_degree, dtype=np.float64)
    return (1.0 + np.log1p(deg_in)) * np.asarray(kg.in_relation_diversity, dtype=np.float64)
