"""bench/bench_scale.py at a toy size: its figures, its last line, the second-process open of
the saved graph and step index (memory-mapped), and a walk model it cannot find."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "bench_scale.py"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LOKG_ROOT": str(cwd)}
    return subprocess.run(
        [sys.executable, str(BENCH), *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


@pytest.mark.slow
def test_a_toy_size_prints_every_figure_and_the_scale_line(tmp_path):
    out = tmp_path / "s.json"
    proc = _run("--triples", "3000", "--queries", "3", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"scale n=3000 build_s=[\d.]+ rss_gib=[\d.]+ cold_p50_ms=none warm_p50_ms=none", last
    ), last
    d = json.loads(out.read_text())
    assert d["triples"] == 3000 and d["entities"] == 1000 and d["relations"] == 50
    assert d["steps_mapped"] is True and d["open_graph_s"] >= 0 and d["generate_rss_gib"] > 0
    parts = ("build_graph_s", "build_stats_s", "build_step_index_s", "build_taimr_s")
    assert d["build_s"] == pytest.approx(sum(d[k] for k in parts))
    assert "cold_p50_ms" in d and "learned_cold_p50_ms" not in d  # TAIMR's, no walk asked


@pytest.mark.slow
def test_a_dataset_without_a_default_walk_takes_the_shipped_one_or_is_one_error_line(tmp_path):
    """A fresh root has no walk trained on pq2h: the pretrained walk shipped in the package
    is timed where this install has one, else the bench stops with one error line."""
    from lokg.taimr.walk import artifact

    shipped = getattr(artifact, "pretrained_walk", lambda: None)()
    proc = _run("--triples", "3000", "--queries", "2", "--walk-model", "pq2h", cwd=tmp_path)
    if shipped is not None:
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "the pretrained walk (no default walk on pq2h)" in proc.stdout
        assert "cold_p50_ms=none" not in proc.stdout.strip().splitlines()[-1]
        return
    assert proc.returncode == 2
    err = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and "experiment=train_walk data=pq2h" in err[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
