"""Budget-curve figures: what each method buys with the tokens it actually injects.

:func:`plot_budget_curves` draws, from the rows ``bench/bench_budget_curve.py`` measures, one
PNG with three panels, one line per method:

1. answer coverage against the *actual* mean injected evidence tokens (log x): a method that
   cannot use the budget (KAPING's fixed K) sits at the tokens it used, not at B;
2. retriever-only Hits@1 against the same tokens (methods that rank no answers are left out);
3. coverage per 1k injected tokens against the budget B — information per token.

matplotlib is imported when a figure is drawn (the Agg backend: no display needed).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from lokg.atomic_io import atomic_file

__all__ = ["plot_budget_curves"]


def _series(rows: Iterable[Mapping], method: str, key: str) -> tuple[list, list, list]:
    pts = sorted(
        (int(r["budget"]), float(r["mean_tokens"]), float(r[key]))
        for r in rows
        if r["method"] == method
    )
    return [p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts]


def plot_budget_curves(
    rows: Iterable[Mapping], path: str | os.PathLike, title: str = "", dpi: int = 120
) -> Path:
    """Write the three-panel budget-curve figure of ``rows`` to ``path`` (PNG) and return it.

    Args:
        rows: dicts with ``method``, ``budget``, ``coverage``, ``hits@1`` (NaN when the method
            ranks no answers) and ``mean_tokens`` (mean injected evidence tokens), one per
            (method, budget).
        path: the PNG to write (its directory is created).
        title: figure title, e.g. ``"pq3h / test"``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(rows)
    if not rows:
        raise ValueError("plot_budget_curves: no rows to plot")
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, m in enumerate(methods):
        style = {"marker": "o", "label": m, "color": palette[i % len(palette)]}  # one per method
        budgets, tokens, cov = _series(rows, m, "coverage")
        axes[0].plot(tokens, cov, **style)
        _, tok_h, hits = _series(rows, m, "hits@1")
        if not all(math.isnan(h) for h in hits):
            axes[1].plot(tok_h, hits, **style)
        per_k = [1000.0 * c / t if t > 0 else math.nan for c, t in zip(cov, tokens, strict=True)]
        axes[2].plot(budgets, per_k, **style)
    axes[0].set(xscale="log", xlabel="mean injected evidence tokens", ylabel="answer coverage")
    axes[1].set(xscale="log", xlabel="mean injected evidence tokens", ylabel="Hits@1 (retriever)")
    axes[2].set(xscale="log", yscale="log", xlabel="token budget B",
                ylabel="coverage per 1k injected tokens")  # fmt: skip
    from matplotlib.ticker import NullFormatter

    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.xaxis.set_minor_formatter(NullFormatter())  # a narrow log range labels minor ticks
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(out, suffix=".tmp.png") as tmp:  # the format is PNG whatever out's name
        fig.savefig(tmp, dpi=dpi)
    plt.close(fig)
    return out
