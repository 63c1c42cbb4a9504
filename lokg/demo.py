"""``make demo``: PQ-2H end to end on CPU, ending in one table a newcomer can read.

    python -m lokg.demo [--llm "llm=local llm.client.n_threads=1"] [--limit 40]
                        [--root DIR] [--json FILE]

Eight steps, each the command a user would type (printed before it runs, timed):

1. ``train.py experiment=stats``: prepare PQ-2H (the question-grouped split), print its
   statistics;
2. ``train.py experiment=train_transe``: TransE, then SCOS on its e_r (ours, ``scos=lokg``);
3. ``train.py experiment=train_transe scos=default``: the same with the paper's SCOS, which
   ``experiment=paper`` reads (SCOS artifacts are keyed by their settings; TransE is
   trained again);
4. ``train.py experiment=train_gat scos=default``: the relation-aware GAT whose attention
   ``experiment=paper`` reads (Eq. (16)), on the paper's SCOS graph;
5. ``train.py experiment=train_walk``: the walk model of the default configuration;
6. ``evaluate.py experiment=paper llm=extractive``: the paper as written, retriever only;
7. ``evaluate.py llm=extractive``: ours, retriever only;
8. ``evaluate.py <llm> limit=<N> allow_failures=true``: ours with the local LLM on the first
   N test questions (a sample: at ~5-10 s a question on 2 cores the whole split is half an
   hour; the run key leaves ``limit`` out, so the full run printed at the end resumes from
   these N); a failed or truncated question scores as it is (the step prints their shares),
   it does not stop the demo with evaluate.py's exit status 1.

Trainings stop when validation stops improving (:mod:`lokg.callbacks`). Then one table
(:func:`demo_table`) from the three evaluations' summaries, printed and written to
``<root>/logs/demo_summary.md``. ``--json`` writes each step's wall time and the total
(``bench/bench_demo.py`` runs the demo in a fresh ``--root`` and reports them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from lokg.eval.tables import read_run_summary, summary_file

__all__ = ["DemoStep", "StepResult", "demo_steps", "demo_table", "main"]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LLM = "llm=local llm.client.n_threads=1"
DEFAULT_LIMIT = 40
#: the closing table's columns: (metric key, header)
COLUMNS = (
    ("hits@1", "Hits@1"),
    ("hit", "Hit"),
    ("coverage", "coverage"),
    ("evidence_tok/q", "evidence tok/q"),
    ("tok/q", "tok/q"),
    ("calls/q", "calls/q"),
    ("n", "n"),
)


@dataclass(frozen=True)
class DemoStep:
    """One command of the demo; ``row`` names its line in the closing table (evaluations)."""

    name: str
    argv: tuple[str, ...]  # after the interpreter: the script, then Hydra overrides
    row: str | None = None

    @property
    def command(self) -> str:
        """The step as a user types it: ``python <script> <overrides>``, shell-quoted."""
        return "python " + " ".join(shlex.quote(a) for a in self.argv)


@dataclass
class StepResult:
    name: str
    command: str
    wall_s: float
    returncode: int
    summary: str | None = None  # the evaluation's summary file


def demo_steps(llm: str = DEFAULT_LLM, limit: int = DEFAULT_LIMIT) -> list[DemoStep]:
    """The demo's commands, in order (module docstring)."""
    quiet = "trainer.enable_progress_bar=false"
    return [
        DemoStep("data", ("train.py", "experiment=stats")),
        DemoStep("transe+scos", ("train.py", "experiment=train_transe", quiet)),
        DemoStep(
            "transe+scos (paper)", ("train.py", "experiment=train_transe", "scos=default", quiet)
        ),
        DemoStep("gat", ("train.py", "experiment=train_gat", "scos=default", quiet)),
        DemoStep("walk", ("train.py", "experiment=train_walk", quiet)),
        DemoStep(
            "paper",
            ("evaluate.py", "experiment=paper", "llm=extractive"),
            row="LOKG (paper), retriever only",
        ),
        DemoStep("ours", ("evaluate.py", "llm=extractive"), row="LOKG (ours), retriever only"),
        DemoStep(
            "ours+llm",
            # a reply of the small model cut at max_tokens scores as it is (the step's own
            # metrics print its failed/truncated shares): not a failed demo, as exit 1 would be
            ("evaluate.py", *shlex.split(llm), f"limit={limit}", "allow_failures=true"),
            row="LOKG (ours) + local LLM",
        ),
    ]


_RESULTS_LINE = re.compile(r"^results: (.+)$", re.MULTILINE)
_LIMIT = re.compile(r"^limit=(\d+)$")


def summary_of(step: DemoStep, stdout: str) -> Path | None:
    """The summary an evaluation step wrote: its ``results: <run dir>`` line and its limit."""
    found = _RESULTS_LINE.findall(stdout)
    if not found:
        return None
    limit = next((int(m.group(1)) for a in step.argv if (m := _LIMIT.match(a))), None)
    return Path(found[-1].strip()) / summary_file(limit)


def run_step(step: DemoStep, env: dict[str, str], index: int, total: int) -> StepResult:
    """Run one step with this interpreter, its stdout echoed live (and kept), stderr passed
    through (progress bars); returns its wall time and exit status."""
    command = step.command
    print(f"\n[demo {index}/{total}] {command}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *step.argv], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    code = proc.wait()
    wall = time.perf_counter() - t0
    summary = summary_of(step, "".join(lines)) if step.row and code == 0 else None
    print(f"[demo {index}/{total}] {step.name}: {wall:.0f} s", flush=True)
    return StepResult(step.name, command, wall, code, None if summary is None else str(summary))


def _cell(key: str, value: float | None) -> str:
    if value is None or value != value:  # missing or NaN
        return "—"
    if key == "n":
        return f"{value:,.0f}"
    return f"{value:.1f}" if key.endswith("tok/q") else f"{value:.3f}"


def demo_table(rows: list[tuple[str, Path | None]]) -> str:
    """A Markdown table, one line per (row label, summary file); a row whose run did not
    finish reads "not run"."""
    head = "| configuration | reader | B | " + " | ".join(h for _, h in COLUMNS) + " |"
    rule = "|---|---|---:|" + "---:|" * len(COLUMNS)
    out = [head, rule]
    for label, path in rows:
        if path is None or not Path(path).is_file():
            out.append(f"| {label} | not run | — | " + " | ".join("—" for _ in COLUMNS) + " |")
            continue
        s = read_run_summary(path)
        cells = " | ".join(_cell(k, s.metrics.get(k)) for k, _ in COLUMNS)
        reader = s.llm if s.limit is None else f"{s.llm}, first {s.limit} of {s.split}"
        out.append(f"| {label} | {reader} | {s.budget if s.budget else '—'} | {cells} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", default=DEFAULT_LLM, help="the last step's reader overrides")
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, help="test questions the LLM answers"
    )
    parser.add_argument("--root", type=Path, help="LOKG_ROOT for every step (default: as set)")
    parser.add_argument("--json", type=Path, help="write each step's wall time here")
    args = parser.parse_args(argv)
    if args.limit < 1:
        parser.error(f"--limit {args.limit}; expected a positive number of questions")
    env = dict(os.environ)
    if args.root is not None:
        env["LOKG_ROOT"] = str(args.root.resolve())
    root = Path(env.get("LOKG_ROOT") or os.getcwd())
    steps = demo_steps(args.llm, args.limit)
    t0 = time.perf_counter()
    results: list[StepResult] = []
    for i, step in enumerate(steps, 1):
        result = run_step(step, env, i, len(steps))
        results.append(result)
        if result.returncode != 0:
            print(f"demo: step {step.name} failed (exit {result.returncode})", file=sys.stderr)
            break
    total = time.perf_counter() - t0
    rows = [
        (s.row, Path(r.summary) if r.summary else None)
        for s, r in zip(steps, results, strict=False)
        if s.row
    ]
    table = demo_table(rows + [(s.row, None) for s in steps[len(results) :] if s.row])
    full = "python evaluate.py " + " ".join(shlex.split(args.llm))
    page = (
        f"# make demo: PQ-2H test\n\n{table}\n\n"
        f"The LLM row answers the first {args.limit} test questions; the whole split "
        f"(resuming from them): `{full}`\n\nSteps: "
        + ", ".join(f"{r.name} {r.wall_s:.0f} s" for r in results)
        + f"; in all {total:.0f} s.\n"
    )
    out = root / "logs" / "demo_summary.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    print(f"\n{table}\n\nwhole test split with the LLM (resumes from these {args.limit}): {full}")
    print(f"demo: {total:.0f} s in all; this table: {out}", flush=True)
    if args.json is not None:
        record = {"steps": [asdict(r) for r in results], "total_s": total}
        args.json.write_text(json.dumps(record, indent=1), encoding="utf-8")
    failed = any(r.returncode != 0 for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
