"""Multiple-choice knapsack (MCKP) of ITTC, Eq. (11).

    max_{k_1..k_N}  Σ_i v(t_i, k_i)   s.t.  Σ_i c(t_i, k_i) ≤ B,   k_i ∈ {1..K}

Every item takes exactly one of its K choices.  Solvers:

- :func:`solve_dp`: exact dynamic programme over one state array ``dp[0..B]`` (``dp[c]`` = best
  value of the items seen so far with total cost ≤ c), items scanned one by one, each state
  taking the best of its K choices; O(N·B·K) time, a ``[N, B+1]`` int8 choice table for the
  reconstruction (int16 when K > 127, which a class of the grouped rendering of
  :mod:`lokg.ittc.group` may reach).  Numba-jitted with ``cache=True``.  After item i only the
  window ``[Σ_{j≤i} min c_j, min(B − Σ_{j>i} min c_j, Σ_{j≤i} max c_j)]`` of the array is swept:
  below it no assignment of the items seen fits; above ``Σ max`` every one fits and the value
  is constant; above ``B − Σ_{j>i} min c_j`` no state can be completed within B by the items
  still to come, so it is never read on the way to the answer.  The sweep is thus
  ``B − Σ_i min c_i`` wide rather than ``B`` and the answer is that of the full sweep (same
  states, same ties).
- :func:`solve_greedy`: value-density greedy for large budgets (the paper switches to it above
  B = 4096): start from each item's cheapest choice, then repeatedly apply the upgrade with the
  largest Δv/Δc that still fits.
- :func:`solve_dp_python` (pure-Python full sweep, same recurrence and tie-breaking, so the same
  answer) and :func:`solve_brute_force` (enumerates K^N assignments): references for tests
  and ``bench/bench_mckp.py``.

Ties: among choices giving the same value the lower index k (the cheaper granularity) wins.
Infeasibility (Σ_i min_k c(t_i, k) > B) returns ``None``; the encoder decides what to drop.

Shapes:
    - ``costs``: ``[N, K]`` non-negative integers (token counts)
    - ``values``: ``[N, K]`` finite floats
    - returned ``choice``: ``[N]`` int64 in ``[0, K)``
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numba
import numpy as np

__all__ = [
    "MCKPSolution",
    "solve",
    "solve_brute_force",
    "solve_dp",
    "solve_dp_python",
    "solve_greedy",
]

#: Solvers :func:`solve` may use.
SOLVERS = ("dp", "greedy")


@dataclass(frozen=True)
class MCKPSolution:
    """An assignment of one choice per item.

    Attributes:
        choice: ``[N]`` chosen index per item.
        value: Σ values[i, choice[i]].
        cost: Σ costs[i, choice[i]].
        solver: ``"dp"``, ``"greedy"``, ``"dp_python"`` or ``"brute_force"``.
    """

    choice: np.ndarray
    value: float
    cost: int
    solver: str


def _check(costs: np.ndarray, values: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    costs = np.ascontiguousarray(costs, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if costs.ndim != 2 or costs.shape != values.shape or costs.shape[1] == 0:
        raise ValueError(
            f"costs and values must both be [N, K] with K >= 1, got {list(costs.shape)} and "
            f"{list(values.shape)}"
        )
    if costs.size and costs.min() < 0:
        raise ValueError(f"costs must be >= 0, got min {costs.min()}")
    if not np.all(np.isfinite(values)):
        raise ValueError("values must be finite")
    if int(budget) != budget or budget < 0:
        raise ValueError(f"budget must be a non-negative integer, got {budget!r}")
    return costs, values


def _solution(costs, values, choice, solver) -> MCKPSolution:
    rows = np.arange(len(choice))
    return MCKPSolution(
        choice=choice,
        value=float(values[rows, choice].sum()),
        cost=int(costs[rows, choice].sum()),
        solver=solver,
    )


@numba.njit(cache=True)
def _dp_kernel(costs, values, budget, table):  # pragma: no cover - compiled; via solve_dp
    n, k_count = costs.shape
    neg = -np.inf
    cmins = np.empty(n, dtype=np.int64)
    cmaxs = np.empty(n, dtype=np.int64)
    for i in range(n):
        cmins[i] = costs[i, 0]
        cmaxs[i] = costs[i, 0]
        for k in range(1, k_count):
            cmins[i] = min(cmins[i], costs[i, k])
            cmaxs[i] = max(cmaxs[i], costs[i, k])
    rest = cmins.sum()  # Σ_{j≥i} min c_j: what the items still to come need at least
    if rest > budget:
        return np.full(n, -1, dtype=np.int64)
    dp = np.empty(budget + 1)
    dp[0] = 0.0
    # table [N, B+1]: read only inside each item's window [los[i], his[i]], written there first
    lo_prev, hi_prev = 0, 0  # dp valid on [lo_prev, hi_prev]; constant = dp[hi_prev] above
    los = np.zeros(n, dtype=np.int64)
    his = np.zeros(n, dtype=np.int64)
    for i in range(n):
        rest -= cmins[i]
        lo = lo_prev + cmins[i]
        hi = min(budget - rest, hi_prev + cmaxs[i])
        for c in range(hi, lo - 1, -1):
            best = neg
            best_k = -1
            for k in range(k_count):
                x = c - costs[i, k]
                if x < lo_prev:
                    continue
                if x > hi_prev:
                    x = hi_prev
                cand = dp[x] + values[i, k]
                if cand > best:
                    best = cand
                    best_k = k
            dp[c] = best
            table[i, c] = best_k
        los[i] = lo
        his[i] = hi
        lo_prev, hi_prev = lo, hi
    choice = np.empty(n, dtype=np.int64)
    c = hi_prev
    for i in range(n - 1, -1, -1):
        c = min(c, his[i])
        k = table[i, c]
        choice[i] = k
        c -= costs[i, k]
    return choice


def _choice_dtype(k_count: int) -> type:
    """The smallest integer type of the DP's choice table for ``k_count`` choices per item
    (int8 for the K = 3 granularities; a grouped class of :mod:`lokg.ittc.group` may hold more)."""
    return np.int8 if k_count <= 127 else np.int16 if k_count <= 32767 else np.int32


def solve_dp(costs: np.ndarray, values: np.ndarray, budget: int) -> MCKPSolution | None:
    """Exact MCKP of Eq. (11) by dynamic programming (Numba); None when infeasible."""
    costs, values = _check(costs, values, budget)
    if len(costs) == 0:
        return _solution(costs, values, np.zeros(0, dtype=np.int64), "dp")
    table = np.empty((len(costs), int(budget) + 1), dtype=_choice_dtype(costs.shape[1]))
    choice = _dp_kernel(costs, values, int(budget), table)
    if choice[0] < 0:
        return None
    return _solution(costs, values, choice, "dp")


def solve_dp_python(costs: np.ndarray, values: np.ndarray, budget: int) -> MCKPSolution | None:
    """The textbook DP in pure Python over the full array ``dp[0..B]`` (reference/benchmark).

    Same recurrence and tie-breaking as :func:`solve_dp`, hence the same assignment.
    """
    costs, values = _check(costs, values, budget)
    c_rows, v_rows = costs.tolist(), values.tolist()
    neg = float("-inf")
    dp = [0.0] * (budget + 1)
    table: list[list[int]] = []
    for cr, vr in zip(c_rows, v_rows, strict=True):
        row = [-1] * (budget + 1)
        for c in range(budget, -1, -1):
            best, best_k = neg, -1
            for k, (ck, vk) in enumerate(zip(cr, vr, strict=True)):
                if ck <= c and dp[c - ck] != neg:
                    cand = dp[c - ck] + vk
                    if cand > best:
                        best, best_k = cand, k
            dp[c] = best
            row[c] = best_k
        table.append(row)
    if c_rows and dp[budget] == neg:
        return None
    choice = np.empty(len(c_rows), dtype=np.int64)
    c = budget
    for i in range(len(c_rows) - 1, -1, -1):
        choice[i] = table[i][c]
        c -= c_rows[i][choice[i]]
    return _solution(costs, values, choice, "dp_python")


def solve_brute_force(costs: np.ndarray, values: np.ndarray, budget: int) -> MCKPSolution | None:
    """Enumerate all K^N assignments (tests only; N·log K small)."""
    costs, values = _check(costs, values, budget)
    n, k_count = costs.shape
    best: tuple[float, tuple[int, ...]] | None = None
    for combo in itertools.product(range(k_count), repeat=n):
        idx = np.asarray(combo, dtype=np.int64)
        rows = np.arange(n)
        if costs[rows, idx].sum() <= budget:
            v = float(values[rows, idx].sum())
            if best is None or v > best[0]:
                best = (v, combo)
    if best is None:
        return None
    return _solution(costs, values, np.asarray(best[1], dtype=np.int64), "brute_force")


def solve_greedy(costs: np.ndarray, values: np.ndarray, budget: int) -> MCKPSolution | None:
    """Value-density greedy: cheapest choice each, then best Δv/Δc upgrades that fit.

    An upgrade from choice k to k' is a candidate when v[k'] > v[k]; one that does not cost
    more is applied first (infinite density).  When the best upgrade of an item does not fit,
    that item's next-best upgrade is considered.  None when even the cheapest choices exceed B.
    """
    costs, values = _check(costs, values, budget)
    n = len(costs)
    # cheapest choice; ties -> higher value, then lower index
    choice = np.lexsort((np.arange(costs.shape[1])[None, :].repeat(n, 0), -values, costs))
    choice = choice[:, 0] if n else np.zeros(0, dtype=np.int64)
    rows = np.arange(n)
    total = int(costs[rows, choice].sum())
    if total > budget:
        return None
    banned: list[set[int]] = [set() for _ in range(n)]

    def best_upgrade(i: int) -> tuple[float, int, int] | None:
        k0 = choice[i]
        best = None
        for k in range(costs.shape[1]):
            if k in banned[i] or values[i, k] <= values[i, k0]:
                continue
            dc = int(costs[i, k] - costs[i, k0])
            dv = float(values[i, k] - values[i, k0])
            density = np.inf if dc <= 0 else dv / dc
            key = (-density, k, i)
            if best is None or key < best:
                best = key
        return best

    heap = [u for i in range(n) if (u := best_upgrade(i)) is not None]
    heapq.heapify(heap)
    while heap:
        _, k, i = heapq.heappop(heap)
        dc = int(costs[i, k] - costs[i, choice[i]])
        if total + dc <= budget:
            total += dc
            choice[i] = k
            banned[i].clear()
        else:
            banned[i].add(k)
        nxt = best_upgrade(i)
        if nxt is not None:
            heapq.heappush(heap, nxt)
    return _solution(costs, values, choice.astype(np.int64), "greedy")


def solve(
    costs: np.ndarray, values: np.ndarray, budget: int, dp_max_budget: int = 4096
) -> MCKPSolution | None:
    """Eq. (11): exact DP when ``budget <= dp_max_budget``, value-density greedy above."""
    if budget > dp_max_budget:
        return solve_greedy(costs, values, budget)
    return solve_dp(costs, values, budget)
