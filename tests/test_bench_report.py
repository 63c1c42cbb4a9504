"""bench/run_all.py (``make bench``): the report's header, key figures and last line, built
from sections run for real (a small MCKP bench) or absent (skipped with a note)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def run_all():
    spec = importlib.util.spec_from_file_location("lokg_bench_run_all", BENCH / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_an_absent_bench_is_skipped_with_a_note(run_all, tmp_path):
    sec = run_all.Section("x", "Someone's bench", ["bench_not_here.py"], 10, owned=False)
    run_all.run_section(sec, tmp_path, tmp_path / "root")
    assert sec.status == "skipped" and "not in this checkout" in sec.note
    # a section planned as skipped (a command the bench lacks) is not run
    planned = run_all.Section("y", "MCKP", ["bench_mckp.py"], 10, status="skipped", note="n/a")
    run_all.run_section(planned, tmp_path, tmp_path / "root")
    assert planned.status == "skipped" and planned.output == "" and planned.note == "n/a"


def test_every_section_reads_one_fresh_root_the_demo_or_prepare_trains(run_all, monkeypatch):
    """The latency benches read PQ-2H artifacts: the timed demo trains them in the run's root
    (its ``--keep`` is that root), and the prepare section runs the demo's training commands
    where no demo ran (quick mode), so no section reads the working directory's artifacts."""
    full = {s.key: s for s in run_all.plan()}
    assert full["demo"].argv == ["bench_demo.py", "--keep", run_all.BENCH_ROOT]
    keys = list(full)
    assert keys.index("demo") < keys.index("prepare") < keys.index("latency")
    monkeypatch.setattr(run_all, "QUICK", True)
    quick = [s.key for s in run_all.plan()]
    assert "demo" not in quick and quick.index("prepare") < quick.index("latency")


def test_prepare_needs_a_root(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LOKG_ROOT"}
    proc = subprocess.run([sys.executable, str(BENCH / "bench_prepare.py")], env=env,
                          capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: LOKG_ROOT is not set: the root to train PQ-2H's artifacts in"
    )


@pytest.mark.slow
def test_report_from_a_real_mckp_run_and_hand_made_scale_rows(run_all, tmp_path):
    mckp = run_all.Section("mckp", "MCKP", ["bench_mckp.py", "--sizes", "20", "200"], 300,
                           json_name="mckp")  # fmt: skip
    run_all.run_section(mckp, tmp_path, tmp_path / "root")
    assert mckp.status == "ok", mckp.output
    rows = {r["n"]: r for r in mckp.data["rows"]}
    assert set(rows) == {20, 200} and all(r["same_choice"] for r in rows.values())
    # the speed-up is the ratio of the two timings measured in that run
    r200 = rows[200]
    assert r200["speedup"] == pytest.approx(r200["python_dp_ms"] / r200["numba_dp_ms"])
    scale = {"build_s": 70.5, "peak_rss_gib": 1.77, "cold_p50_ms": 30.0, "warm_p50_ms": 8.0}
    learned = {"learned_cold_p50_ms": 40.0, "learned_cold_p95_ms": 61.0,
               "learned_warm_p50_ms": 9.0, "learned_warm_p95_ms": 12.5,
               "open_graph_s": 1.25, "open_steps_s": 0.5}  # fmt: skip
    s1 = run_all.Section("scale1m", "Scale: 1M", ["bench_scale.py"], 1, status="ok",
                         data={**scale, "build_s": 7.05, "peak_rss_gib": 0.59})  # fmt: skip
    s10 = run_all.Section("scale10m", "Scale: 10M | big", ["bench_scale.py"], 1, status="ok",
                          data=scale)  # fmt: skip
    absent = run_all.Section("methods", "Baselines", ["bench_methods.py"], 1, status="skipped")
    timed = {"total_s": 412.4, "steps": {"data": 9.0, "walk": 80.2}}
    demo = run_all.Section("demo", "make demo", ["bench_demo.py"], 1, status="ok", data=timed)
    secs = [mckp, s1, s10, absent, demo]
    figs = run_all.figures({s.key: s for s in secs})
    meta = {"machine": "M", "load": "L", "gpu": "none", "commit": "abc123", "date": "D",
            "software": "S"}  # fmt: skip
    text = run_all.render(meta, secs, figs, 60.0)
    assert "- **commit**: abc123" in text and "- **date**: D" in text
    # 3 MCKP figures per size, the demo's time, 3 per scale size, and the 1M -> 10M growth
    assert len(figs) == 2 * 3 + 1 + 2 * 3 + 1
    assert "| make demo from a fresh root, s (data 9, walk 80) | 412 | ≤ 600 s" in text
    assert "| scale growth 1M → 10M: build / RSS / TAIMR cold p50 (×) | 10.0 / 3.0 / 1.0 |" in text
    assert "| scale 10M: peak RSS, GiB | 1.77 | ≤ 4 GiB |" in text
    # with the learned walk (the default retriever) and the second-process open: 2 more a
    # size, and the growth compares the learned walk's cold p50
    s1.data, s10.data = {**s1.data, **learned, "learned_cold_p50_ms": 20.0}, {**scale, **learned}
    text2 = run_all.render(meta, secs, run_all.figures({s.key: s for s in secs}), 60.0)
    assert (
        "| scale 10M: retriever=learned query p50 / p95 cold, p50 / p95 warm, ms | "
        "40.0 / 61.0, 9.0 / 12.5 | cold p50 ≤ 50 ms |" in text2
    )
    assert "| scale 1M: open the saved graph + step index in a second process, s | 1.75 |" in text2
    assert "build / RSS / learned walk cold p50 (×) | 10.0 / 3.0 / 2.0 |" in text2
    assert "Scale: 10M \\| big" in text  # a | inside a table cell is escaped
    last = text.rstrip().splitlines()[-1]
    assert last == (
        f"bench: {len(figs)} figures, mckp_speedup={r200['speedup']:.0f}, "
        "scale10m_build_s=70.5, scale10m_rss_gib=1.77, demo_total_s=412"
    )
    assert re.search(r"\| Baselines \| .* \| skipped", text)
