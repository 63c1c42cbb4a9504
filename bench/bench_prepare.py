"""The PQ-2H artifacts the latency benches read, trained in ``$LOKG_ROOT`` by ``make demo``'s
own training commands (:func:`lokg.demo.demo_steps`: data, TransE + SCOS ours and the paper's,
the paper's GAT, the walk model).

    LOKG_ROOT=<root> .venv/bin/python bench/bench_prepare.py

``make bench`` (bench/run_all.py) runs every section in one fresh root, so a clean clone's report
never depends on what a user trained in the working directory: the full run's timed demo
trains these and keeps its root; ``BENCH_QUICK=1`` (no demo) and a demo that failed run this
instead; a step whose artifact the root already holds is reused where ``train.py`` reuses it
(TransE + SCOS do).
Prints each step's wall time, the last lines of a failed step's output, and last
``prepare_total_s=<s>``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from lokg.demo import ROOT, demo_steps


def main() -> int:
    root = os.environ.get("LOKG_ROOT")
    if not root:
        print(
            "error: LOKG_ROOT is not set: the root to train PQ-2H's artifacts in", file=sys.stderr
        )
        return 2
    Path(root).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for step in demo_steps():
        if step.argv[0] != "train.py":
            continue
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, *step.argv], cwd=ROOT, capture_output=True, text=True
        )
        print(f"{step.name}: `{step.command}` {time.perf_counter() - t:.0f} s", flush=True)
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-8:]
            print("\n".join(tail), file=sys.stderr)
            return proc.returncode
    print(f"prepare_total_s={time.perf_counter() - t0:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
