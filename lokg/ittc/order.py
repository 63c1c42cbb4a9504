"""Prefix-conditional-entropy encoding order of ITTC (Sec. 2.4, Eqs. (7)-(8)).

A triple has three components ``s``, ``r``, ``o``.  For an order ``σ`` (a permutation of
them) the prefix uncertainty of Eq. (7) is

    U(σ) = H(x_σ(1)) + H(x_σ(2) | x_σ(1)),

and Eq. (8) picks ``σ* = argmin_σ U(σ)``.  The entropies are those of the empirical joint
distribution of (S, R, O) when a triple is drawn uniformly from the KG's distinct triples,
in nats.  By the chain rule ``U(σ) = H(x_σ(1), x_σ(2))``, so ``σ`` and the order that swaps
its first two components always tie (e.g. r→s→o and s→r→o).  The paper breaks this tie by
its own argument ("low-entropy components as anchor points", relation first because its
marginal entropy is smallest): among the minimisers we take the order whose first component
has the smallest marginal entropy; remaining ties follow :data:`ORDERS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np

from lokg.kg.graph import KnowledgeGraph

__all__ = ["COMPONENTS", "ORDERS", "EncodingOrder", "component_entropies", "select_order"]

#: Names of the triple components, in the column order of ``triples_np``.
COMPONENTS = ("s", "r", "o")
#: The 3! = 6 orders as strings (``"rso"`` is r→s→o), in itertools order of ``COMPONENTS``.
ORDERS = tuple("".join(p) for p in permutations(COMPONENTS))
_COLUMN = {"s": 0, "r": 1, "o": 2}
_TIE_TOL = 1e-9


@dataclass(frozen=True)
class EncodingOrder:
    """The order chosen by Eq. (8) and the numbers behind it.

    Attributes:
        order: the chosen order, e.g. ``"rso"`` (relation, subject, object).
        prefix_uncertainty: U(σ) of Eq. (7) for each of the six orders, in nats.
        marginal_entropy: H(S), H(R), H(O) in nats.
        selected_by: ``"entropy"`` (Eq. (8)) or ``"fixed"`` (set in the config).
    """

    order: str
    prefix_uncertainty: dict[str, float]
    marginal_entropy: dict[str, float]
    selected_by: str = "entropy"

    @property
    def columns(self) -> tuple[int, int, int]:
        """Column indices into an (s, r, o) triple, in encoding order."""
        return tuple(_COLUMN[c] for c in self.order)  # type: ignore[return-value]

    def arrow(self) -> str:
        """Human-readable form, ``"r→s→o"``."""
        return "→".join(self.order)


def _entropy_of_rows(rows: np.ndarray) -> float:
    """Entropy (nats) of the empirical distribution of the rows of ``rows [T, k]``."""
    if len(rows) == 0:
        return 0.0
    _, counts = np.unique(rows, axis=0, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def component_entropies(kg: KnowledgeGraph) -> dict[str, float]:
    """Marginal and pairwise joint entropies of (S, R, O) over the distinct triples.

    Returns a dict with keys ``"s"``, ``"r"``, ``"o"`` (marginals) and ``"sr"``, ``"so"``,
    ``"ro"`` (joints), in nats.
    """
    uniq = kg.unique_triples()
    out: dict[str, float] = {}
    for c in COMPONENTS:
        out[c] = _entropy_of_rows(uniq[:, [_COLUMN[c]]])
    for a, b in (("s", "r"), ("s", "o"), ("r", "o")):
        out[a + b] = _entropy_of_rows(uniq[:, [_COLUMN[a], _COLUMN[b]]])
    return out


def prefix_uncertainty(entropies: dict[str, float], order: str) -> float:
    """U(σ) of Eq. (7): H(x_σ(1)) + H(x_σ(2) | x_σ(1)), with H(Y | X) = H(X, Y) - H(X)."""
    first, second = order[0], order[1]
    joint = entropies["".join(sorted((first, second), key=COMPONENTS.index))]
    conditional = joint - entropies[first]
    return entropies[first] + conditional


def select_order(kg: KnowledgeGraph, fixed: str | None = None) -> EncodingOrder:
    """σ* of Eq. (8) for ``kg`` (or the ``fixed`` order, with the U values still reported).

    Args:
        kg: the graph whose triple statistics define H.
        fixed: one of :data:`ORDERS` to bypass the argmin (ablation), or None.
    """
    if fixed is not None and fixed not in ORDERS:
        raise ValueError(f"encoding order {fixed!r} is not one of {list(ORDERS)}")
    ent = component_entropies(kg)
    u = {o: prefix_uncertainty(ent, o) for o in ORDERS}
    marg = {c: ent[c] for c in COMPONENTS}
    if fixed is not None:
        return EncodingOrder(fixed, u, marg, selected_by="fixed")
    best = min(u.values())
    tied = [o for o in ORDERS if u[o] <= best + _TIE_TOL]
    chosen = min(tied, key=lambda o: (marg[o[0]], ORDERS.index(o)))
    return EncodingOrder(chosen, u, marg, selected_by="entropy")
