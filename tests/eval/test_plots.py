"""Budget-curve figures are drawn from measured rows, headless."""

import math

import pytest

from lokg.eval.plots import plot_budget_curves


def _rows():
    rows = []
    for b, tok in ((64, 40.0), (128, 90.0), (2048, 300.0)):
        rows.append({"method": "lokg", "budget": b, "coverage": 0.9, "hits@1": 0.8,
                     "mean_tokens": tok})  # fmt: skip
        rows.append({"method": "bfs", "budget": b, "coverage": 0.5, "hits@1": math.nan,
                     "mean_tokens": min(b, 500)})  # fmt: skip
    return rows


def test_a_png_is_written_atomically(tmp_path):
    out = plot_budget_curves(_rows(), tmp_path / "figs" / "curve.png", title="toy / val")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert [p.name for p in out.parent.iterdir()] == ["curve.png"]  # no temporary file left


def test_no_rows_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no rows to plot"):
        plot_budget_curves([], tmp_path / "x.png")
