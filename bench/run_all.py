"""``make bench``: run every bench and regenerate bench/RESULTS.md (never edit it by hand).

    .venv/bin/python bench/run_all.py [--out bench/RESULTS.md]      # full, <= 30 min
    BENCH_QUICK=1 .venv/bin/python bench/run_all.py                 # subset, <= 5 min

Each bench runs as its own process (so peak RSS is that bench's), with a time limit; its
output goes verbatim into the report, and the figures this driver quotes come from the JSON
the bench writes in the same run (ratios are measured in the run, never copied). The header
records the machine, the commit and the date. Benches other engineers own
(bench_scos.py, bench_transe.py, bench_methods.py) run when present and are skipped with a
note when absent; a section that fails is reported as failed with its last output lines, and
the driver exits 1 after writing the report when one of the sections it owns failed.

Every section runs with ``LOKG_ROOT`` set to one fresh root for the run (a temporary
directory, removed at the end), never the working directory's: the timed demo trains PQ-2H's
artifacts there (``bench_demo.py --keep``), and where it did not (``BENCH_QUICK=1``, or the demo
failed) ``bench_prepare.py`` runs the demo's training commands, so the latency benches read the
same freshly trained TransE, SCOS, GAT and walk on a clean clone as anywhere else.

The report's last line is ``bench: <n> figures, mckp_speedup=<x>, scale10m_build_s=<s>,
scale10m_rss_gib=<g>, demo_total_s=<s>``: ``n`` counts the key figures measured in this run
(the rows of the "Key figures" table that have a value); ``mckp_speedup`` is the pure-Python
DP's time over the Numba DP's at N = 200, B = 2,048; then the 10M-triple scale run's build
time and peak RSS (``skipped`` under BENCH_QUICK=1, which runs the 1M size only) and
``make demo``'s wall time from a fresh root (bench_demo.py; ``skipped`` under BENCH_QUICK=1).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUICK = os.environ.get("BENCH_QUICK", "0") not in ("", "0", "false")
#: stands for the run's fresh root in a section's argv (replaced when it runs)
BENCH_ROOT = "<bench-root>"


@dataclass
class Section:
    """One bench run: ``argv`` after the interpreter, relative to bench/."""

    key: str
    title: str
    argv: list[str]
    timeout_s: int
    owned: bool = True  # ours: a failure fails make bench
    json_name: str | None = None  # the bench writes its figures to this file (--json)
    status: str = "pending"
    output: str = ""
    wall_s: float = 0.0
    data: object = None
    note: str = ""


@dataclass
class Figure:
    name: str
    value: str
    goal: str = ""
    section: str = ""


@dataclass
class Report:
    sections: list[Section] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


def sh(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    except OSError:
        return ""


def machine() -> dict[str, str]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024**2:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    import numba
    import numpy
    import torch

    dirty = bool(sh("git", "status", "--porcelain", "--untracked-files=no"))
    return {
        "machine": f"{platform.system()} {platform.machine()}, {cpu or 'unknown CPU'}, "
        f"{os.cpu_count()} CPUs, {mem} RAM",
        "load": f"{os.getloadavg()[0]:.1f} (1-min average at start; timings move with it)",
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
        "commit": (sh("git", "rev-parse", "--short=12", "HEAD") or "unknown")
        + (" + uncommitted changes" if dirty else ""),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "software": f"Python {platform.python_version()}, torch {torch.__version__}, "
        f"numpy {numpy.__version__}, numba {numba.__version__}",
    }


def run_section(sec: Section, tmp: Path, root: Path) -> None:
    if sec.status == "skipped":  # decided when planned (the note says why)
        return
    script = HERE / sec.argv[0]
    if not script.is_file():
        sec.status, sec.note = "skipped", f"bench/{sec.argv[0]} is not in this checkout"
        return
    argv = [
        sys.executable,
        str(script),
        *(str(root) if a == BENCH_ROOT else a for a in sec.argv[1:]),
    ]
    out_json = tmp / f"{sec.key}.json"
    if sec.json_name:
        argv += ["--json", str(out_json)]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
        "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS", "1"),
        "BENCH_QUICK": "1" if QUICK else "0",
        "PYTHONWARNINGS": "ignore",
        # every section reads and trains the run's own root, never the working directory's
        "LOKG_ROOT": str(root),
        # this checkout's lokg, whatever an installed (editable) lokg points at
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    print(f"[bench] {sec.title}: {' '.join(sec.argv)}", flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=sec.timeout_s
        )
        sec.output, code = proc.stdout, proc.returncode
        if code != 0:
            sec.output += "\n" + "\n".join(proc.stderr.strip().splitlines()[-8:])
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        sec.output, code = out, None
    sec.wall_s = time.perf_counter() - t0
    if code is None:
        sec.status, sec.note = "failed", f"stopped after its {sec.timeout_s} s limit"
    elif code != 0:
        sec.status, sec.note = "failed", f"exit status {code}"
    else:
        sec.status = "ok"
        if sec.json_name and out_json.is_file():
            sec.data = json.loads(out_json.read_text())
    print(f"[bench]   {sec.status} in {sec.wall_s:.0f} s {sec.note}", flush=True)


def help_text(script: str) -> str:
    path = HERE / script
    if not path.is_file():
        return ""
    proc = subprocess.run(
        [sys.executable, str(path), "--help"], cwd=ROOT, capture_output=True, text=True
    )
    return proc.stdout + proc.stderr


def plan() -> list[Section]:
    q = QUICK
    secs = [
        Section(
            "mckp",
            "MCKP solvers (Eq. (11))",
            ["bench_mckp.py", "--sizes", "20", "200", *([] if q else ["2000"])],
            600,
            json_name="mckp",
        ),
    ]
    if not q:  # `make demo` from a fresh root, with the user's environment (issue 29); the
        # root it trains is kept as the bench root every later section reads (module doc)
        demo = ["bench_demo.py", "--keep", BENCH_ROOT]
        secs.append(
            Section("demo", "make demo, timed (bench_demo.py)", demo, 1800, json_name="demo")
        )
    # the demo's training commands, run only where the demo did not train the bench root
    secs.append(Section("prepare", "PQ-2H artifacts for the latency benches (bench_prepare.py)",
                        ["bench_prepare.py"], 900))  # fmt: skip
    scos_help = help_text("bench_scos.py")
    if scos_help:
        sizes = ["100", "400"] if q else ["100", "400", "1600"]
        secs.append(
            Section(
                "scos_timing",
                "SCOS scaling over |R|",
                ["bench_scos.py", "timing", "--sizes", *sizes],
                600,
                owned=False,
            )
        )
        planted = Section(
            "scos_planted",
            "SCOS planted-synonym precision / recall",
            # the package's KBs only (PQL, WebQSP / CWQ pools): the 130k-triple synthetic
            # plant alone takes ~9 min; the paper's SCOS, and ours on the same TransE
            [
                "bench_scos.py",
                "planted",
                "--synthetic-triples",
                "0",
                "--variant",
                "scos=lokg",
                *(["--data", "pql2h", "--skip-unmodified"] if q else []),
            ],
            900,
            owned=False,
        )
        if "planted" not in scos_help:
            planted.status = "skipped"
            planted.note = "bench/bench_scos.py has no 'planted' command in this checkout"
        secs.append(planted)
    else:
        secs.append(Section("scos", "SCOS", ["bench_scos.py"], 1, owned=False))
    lat = [
        "bench_taimr.py",
        "latency",
        "--data",
        "pq2h",
        "--split",
        "val",
        "--limit",
        "20" if q else "100",
        "--synthetic-queries",
        "0" if q else "100",
    ]
    secs.append(Section("latency", "Retrieval latency (LOKG)", lat, 600))
    secs.append(
        Section("methods", "Retrieval latency (baselines)", ["bench_methods.py"], 900, owned=False)
    )
    if not q:  # the learned walk against TAIMR (issue 14), retriever-only, on PQ-2H val
        secs.append(
            Section(
                "retrieval",
                "Learned retrieval vs TAIMR (bench_retrieval.py)",
                [
                    "bench_retrieval.py",
                    "--data",
                    "pq2h",
                    "--split",
                    "val",
                    "--limit",
                    "100",
                    "--latency-n",
                    "20",
                    # the rows whose walk model `make demo` / the README's commands train;
                    # the ablation rows need one model each (bench_retrieval.py --help)
                    "--rows",
                    "paper",
                    "uniform+rules",
                    "learned",
                ],
                900,
                owned=False,
            )
        )
    secs.append(
        Section(
            "scale1m",
            "Scale: 1M triples",
            [
                "bench_scale.py",
                "--triples",
                "1000000",
                "--queries",
                "20" if q else "50",
                "--walk-model",
                "pq2h",
            ],
            600,
            json_name="s",
        )
    )
    if not q:
        secs.append(
            Section(
                "scale10m",
                "Scale: 10M triples",
                [
                    "bench_scale.py",
                    "--triples",
                    "10000000",
                    "--queries",
                    "50",
                    "--walk-model",
                    "pq2h",
                ],
                1200,
                json_name="s",
            )
        )
    secs.append(
        Section(
            "transe",
            "TransE training throughput",
            ["bench_train.py", "--steps", "20" if q else "100"],
            600,
            json_name="t",
        )
    )
    gat = [
        "bench_taimr.py",
        "train",
        "--n",
        "5" if q else "20",
        "--synthetic-triples",
        "200000" if q else "1000000",
    ]
    secs.append(Section("gat", "GAT training throughput", gat, 600))
    secs.append(
        Section(
            "transe_ext",
            "TransE (bench_transe.py)",
            ["bench_transe.py", "--sparse"],
            900,
            owned=False,
        )
    )
    return secs


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def scale_figures(d: dict, size: str, key: str) -> list[Figure]:
    """The key figures of one bench_scale.py size (its ``--json``); the goals are issue 41's
    at 10M triples."""
    goal = size == "10M"
    figs = [
        Figure(
            f"scale {size}: build (graph + H(r)/degrees + step index + TAIMR), s",
            _fmt(d["build_s"], 1),
            "≤ 120 s" if goal else "",
            key,
        ),
        Figure(
            f"scale {size}: peak RSS, GiB", _fmt(d["peak_rss_gib"]), "≤ 4 GiB" if goal else "", key
        ),
    ]
    if "open_graph_s" in d:
        figs.append(
            Figure(
                f"scale {size}: open the saved graph + step index in a second process, s",
                _fmt(d["open_graph_s"] + d["open_steps_s"]),
                "",
                key,
            )
        )
    if "learned_cold_p50_ms" in d:  # the default retriever
        figs.append(
            Figure(
                f"scale {size}: retriever=learned query p50 / p95 cold, p50 / p95 warm, ms",
                f"{_fmt(d['learned_cold_p50_ms'], 1)} / {_fmt(d['learned_cold_p95_ms'], 1)}, "
                f"{_fmt(d['learned_warm_p50_ms'], 1)} / {_fmt(d['learned_warm_p95_ms'], 1)}",
                "cold p50 ≤ 50 ms" if goal else "",
                key,
            )
        )
    figs.append(
        Figure(
            f"scale {size}: TAIMR (paper, beam 64) query p50 cold / warm, ms",
            f"{_fmt(d['cold_p50_ms'], 1)} / {_fmt(d['warm_p50_ms'], 1)}",
            "",
            key,
        )
    )
    return figs


def figures(secs: dict[str, Section]) -> list[Figure]:
    figs: list[Figure] = []
    m = secs["mckp"].data if "mckp" in secs else None
    if m:
        for r in m["rows"]:
            figs.append(
                Figure(
                    f"MCKP N={r['n']}: Numba DP / pure-Python DP / greedy (ms)",
                    f"{_fmt(r['numba_dp_ms'], 3)} / {_fmt(r['python_dp_ms'], 1)} / "
                    f"{_fmt(r['greedy_ms'], 3)}",
                    "≤ 1 ms (N = 200)" if r["n"] == 200 else "",
                    "mckp",
                )
            )
            figs.append(
                Figure(
                    f"MCKP N={r['n']}: speed-up Numba over Python DP (same answer: "
                    f"{'yes' if r['same_choice'] else 'NO'})",
                    f"{r['speedup']:,.0f}×",
                    "≥ 100×",
                    "mckp",
                )
            )
            figs.append(
                Figure(
                    f"MCKP N={r['n']}: greedy value / DP optimum",
                    f"{r['greedy_value_ratio']:.6f}",
                    "",
                    "mckp",
                )
            )
    demo = secs.get("demo")
    if demo is not None and demo.data:
        steps = ", ".join(f"{k} {v:.0f}" for k, v in demo.data["steps"].items())
        figs.append(
            Figure(f"make demo from a fresh root, s ({steps})", _fmt(demo.data["total_s"], 0),
                   "≤ 600 s (quiet 2-core machine)", "demo")
        )  # fmt: skip
    for key in ("scale1m", "scale10m"):
        s = secs.get(key)
        if s is None or not s.data:
            continue
        figs += scale_figures(s.data, "1M" if key == "scale1m" else "10M", key)
    s1, s10 = secs.get("scale1m"), secs.get("scale10m")
    if s1 and s10 and s1.data and s10.data:
        a, b = s1.data, s10.data
        learned = "learned_cold_p50_ms" in a and "learned_cold_p50_ms" in b
        cold = "learned_cold_p50_ms" if learned else "cold_p50_ms"
        figs.append(
            Figure(
                f"scale growth 1M → 10M: build / RSS / {'learned walk' if learned else 'TAIMR'}"
                " cold p50 (×)",
                f"{b['build_s'] / a['build_s']:.1f} / "
                f"{b['peak_rss_gib'] / a['peak_rss_gib']:.1f} / "
                f"{b[cold] / a[cold]:.1f}",
                "",
                "scale",
            )
        )
    t = secs["transe"].data if "transe" in secs else None
    if t:
        for r in t:
            figs.append(
                Figure(
                    f"TransE training on {r['device']} ({r['dataset']}, batch "
                    f"{r['batch_size']}), triples/s",
                    f"{r['triples_per_s']:,.0f}",
                    "",
                    "transe",
                )
            )
    g = secs.get("gat")
    if g is not None and g.status == "ok":
        import re

        hit = re.search(r"batch (\d+) questions.*?p50=(\d+)ms", g.output)
        if hit:
            qps = int(hit.group(1)) / (int(hit.group(2)) / 1e3)
            figs.append(
                Figure(
                    "GAT training on cpu (synthetic graph, one step = 32 questions), questions/s",
                    f"{qps:,.0f}",
                    "",
                    "gat",
                )
            )
    lat = secs.get("latency")
    if lat is not None and lat.status == "ok":
        import re

        for line in lat.output.splitlines():
            hit = re.search(
                r"^(\S+) \((\d+) triples.*cold_p50=([\d.]+)ms\s+cold_p95=([\d.]+)ms"
                r"\s+warm_p50=([\d.]+)ms\s+warm_p95=([\d.]+)ms",
                line,
            )
            if hit:
                figs.append(
                    Figure(
                        f"LOKG retrieval on {hit.group(1)}: p50 / p95 cold, p50 / p95 warm (ms)",
                        f"{hit.group(3)} / {hit.group(4)}, {hit.group(5)} / {hit.group(6)}",
                        "",
                        "latency",
                    )
                )
    return figs


def _cell(text: str) -> str:
    """Text for a Markdown table cell (a literal ``|`` would end the cell)."""
    return text.replace("|", "\\|")


def render(meta: dict, secs: list[Section], figs: list[Figure], wall_s: float) -> str:
    by = {s.key: s for s in secs}
    mode = "quick (BENCH_QUICK=1)" if QUICK else "full"
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (bench/run_all.py): do not edit by hand; rerun it.",
        "Every figure below was measured in this run; ratios compare timings of the same run.",
        "",
        f"- **machine**: {meta['machine']}; GPU: {meta['gpu']}",
        f"- **load**: {meta['load']}",
        f"- **commit**: {meta['commit']}",
        f"- **date**: {meta['date']}",
        f"- **software**: {meta['software']}",
        f"- **mode**: {mode}; {len(secs)} sections in {wall_s / 60:.1f} min",
        "",
        "## Key figures",
        "",
        "| figure | value | goal |",
        "|---|---|---|",
        *[f"| {_cell(f.name)} | {_cell(f.value)} | {_cell(f.goal)} |" for f in figs],
        "",
        "## Sections",
        "",
        "| section | command | status | wall |",
        "|---|---|---|---|",
        *[
            f"| {_cell(s.title)} | `python bench/{' '.join(s.argv)}` | {s.status}"
            f"{': ' + s.note if s.note else ''} | {s.wall_s:.0f} s |"
            for s in secs
        ],
    ]
    if QUICK:
        lines += [
            "",
            "BENCH_QUICK=1: the 10M-triple scale run, MCKP at N = 2,000 and the synthetic "
            "graph of the latency bench are left out; sizes and step counts are smaller.",
        ]
    for s in secs:
        if s.status == "skipped":
            continue
        lines += [
            "",
            f"## {s.title}",
            "",
            f"`python bench/{' '.join(s.argv)}` ({s.status}, {s.wall_s:.0f} s)",
            "",
            "```",
            s.output.rstrip() or "(no output)",
            "```",
        ]
    mckp = by["mckp"].data
    speed = next((r["speedup"] for r in mckp["rows"] if r["n"] == 200), None) if mckp else None
    s10 = by.get("scale10m")
    b10 = f"{s10.data['build_s']:.1f}" if s10 and s10.data else "skipped"
    r10 = f"{s10.data['peak_rss_gib']:.2f}" if s10 and s10.data else "skipped"
    demo = by.get("demo")
    demo_s = f"{demo.data['total_s']:.0f}" if demo and demo.data else "skipped"
    lines += [
        "",
        f"bench: {len(figs)} figures, mckp_speedup={'failed' if speed is None else f'{speed:.0f}'}"
        f", scale10m_build_s={b10}, scale10m_rss_gib={r10}, demo_total_s={demo_s}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "RESULTS.md"))
    ap.add_argument("--only", nargs="*", default=None, help="section keys to run (debugging)")
    args = ap.parse_args()
    meta = machine()
    secs = plan()
    if args.only:
        secs = [s for s in secs if s.key in args.only or s.key in ("mckp", "prepare")]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lokg-bench-") as d:
        root = Path(d) / "root"
        demo = next((x for x in secs if x.key == "demo"), None)
        for s in secs:
            if s.key == "prepare" and demo is not None and demo.status == "ok":
                s.status, s.note = "skipped", "the timed demo trained the bench root"
            run_section(s, Path(d), root)
    wall = time.perf_counter() - t0
    by = {s.key: s for s in secs}
    figs = figures(by)
    text = render(meta, secs, figs, wall)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text.rstrip().splitlines()[-1])
    failed = [s.key for s in secs if s.owned and s.status == "failed"]
    if failed:
        print(f"bench: sections failed: {', '.join(failed)} (see {args.out})", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
