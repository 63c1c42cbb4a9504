"""MCKP (Eq. (11)) speed: Numba DP vs the pure-Python DP, and the greedy's gap to the DP.

Prints, for N = 20, 200, 2000 at B = 2048, K = 3, the time of the Numba DP (best of several
runs), of the pure-Python DP (one run; same recurrence, checked to give the same choices),
their ratio, and the greedy's value as a fraction of the DP optimum; plus the Numba compile
time (a fresh, uncached compile) and the first call of this process (served from the
``cache=True`` on-disk cache when present).

    .venv/bin/python bench/bench_mckp.py [--budget 2048] [--sizes 20 200 2000] [--seed 0]
        [--json FILE]   # also write the rows as JSON (make bench reads it)

Instances: per item, compact cost ~ U[1, 2u] with u = max(1, B // (2N)), balanced and verbose
each 1..u+1 tokens dearer, so that all-compact fits and all-verbose does not (a binding
budget); values v = β_k · α · H with H ~ U(0, 3), α ∈ {1, 3}, β = (0.5, 0.8, 1.0).
``slack`` = B − Σ min cost, the width of the DP's window (mckp.py): at N = 2,000 and
B = 2,048 every item costs ≥ 1 token, so there is almost none and the exact DP settles in
one pass (the pure-Python reference sweeps the full array).
"""

from __future__ import annotations

import argparse
import json
import time

import numba
import numpy as np

from lokg.ittc import mckp


def instance(n: int, budget: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    u = max(1, budget // (2 * n))
    compact = rng.integers(1, 2 * u + 1, size=n)
    balanced = compact + rng.integers(1, u + 2, size=n)
    verbose = balanced + rng.integers(1, u + 2, size=n)
    costs = np.stack([compact, balanced, verbose], axis=1).astype(np.int64)
    while costs[:, 0].sum() > budget:  # keep it feasible
        costs[rng.integers(n)] = np.maximum(costs[rng.integers(n)] - 1, 1)
    h = rng.uniform(0, 3, size=n) * np.where(rng.random(n) < 0.3, 3.0, 1.0)
    values = h[:, None] * np.array([0.5, 0.8, 1.0])[None, :]
    return costs, values


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 200, 2000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    b = args.budget

    costs, values = instance(20, b, rng)
    t0 = time.perf_counter()
    mckp.solve_dp(costs, values, b)
    first = time.perf_counter() - t0
    hits = sum(mckp._dp_kernel.stats.cache_hits.values())
    fresh = numba.njit(cache=False)(mckp._dp_kernel.py_func)
    table = np.empty((len(costs), b + 1), dtype=mckp._choice_dtype(costs.shape[1]))
    t0 = time.perf_counter()
    fresh(costs, values, b, table)
    compile_s = time.perf_counter() - t0
    print(
        f"numba {numba.__version__}: uncached compile + first run {compile_s:.2f} s; "
        f"first call this process {first * 1e3:.1f} ms "
        f"({'loaded from cache' if hits else 'compiled, now cached'})"
    )

    print(f"\nB = {b}, K = 3")
    rows = []
    print(
        f"{'N':>6} {'numba DP':>12} {'python DP':>12} {'ratio':>8} {'same':>5} "
        f"{'greedy/DP':>10} {'greedy':>12} {'slack':>6}"
    )
    for n in args.sizes:
        costs, values = instance(n, b, rng)
        fast = mckp.solve_dp(costs, values, b)
        t_fast = best_of(lambda c=costs, v=values: mckp.solve_dp(c, v, b), 20)
        t0 = time.perf_counter()
        slow = mckp.solve_dp_python(costs, values, b)
        t_slow = time.perf_counter() - t0
        greedy = mckp.solve_greedy(costs, values, b)
        t_greedy = best_of(lambda c=costs, v=values: mckp.solve_greedy(c, v, b), 5)
        same = fast.choice.tolist() == slow.choice.tolist()
        slack = b - int(costs.min(axis=1).sum())  # the DP's window width: B − Σ min cost
        rows.append(
            {"n": n, "budget": b, "numba_dp_ms": t_fast * 1e3, "python_dp_ms": t_slow * 1e3,
             "greedy_ms": t_greedy * 1e3, "speedup": t_slow / t_fast, "same_choice": same,
             "greedy_value_ratio": greedy.value / fast.value, "slack": slack}
        )  # fmt: skip
        print(
            f"{n:>6} {t_fast * 1e3:>9.3f} ms {t_slow * 1e3:>9.1f} ms {t_slow / t_fast:>7.0f}x "
            f"{'yes' if same else 'NO':>5} {greedy.value / fast.value:>10.6f} "
            f"{t_greedy * 1e3:>9.3f} ms {slack:>6}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"compile_s": compile_s, "first_call_ms": first * 1e3, "rows": rows}, f)


if __name__ == "__main__":
    main()
