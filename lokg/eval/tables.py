"""Seed aggregation into the layout of the paper's Tables 5–7 (Markdown and CSV).

Each evaluation run writes one ``summary.json`` (``summary-limit<N>.json`` for the first N
questions of a split; :func:`write_run_summary`) holding its
dataset, method, ablation, LLM, seed and run metrics (:class:`KGQAMetrics` keys; ``null``
for an undefined one) and, when a metric could not be computed for want of gold answers (a
questions file for answering only), ``metric_notes``: metric -> ``"n/a (no gold answers)"``.
:func:`collect_summaries` finds them under a directory; the table builders group runs
that differ only by seed and report mean ± sample std (ddof = 1; the std is omitted
when there is a single seed):

- Table 5 (end-to-end): per LLM, rows (dataset, method) of the ``full`` configuration —
  LOKG as the paper writes it and ours, the four baselines, then the oracle and no-evidence
  references (:data:`TABLE5_ORDER`) — columns H@1, Hit, F1, P@1K, H@1K, TCR, tok/q, calls/q
  (the paper's, with Hit) and answer coverage.
- Table 6 (ablations): per LLM, rows (dataset, configuration) of the method being
  ablated (default ``LOKG``), columns H@1, F1, P@1K, H@1K, TCR, tok/q.
- Table 7 (Δ = ablated − full of the seed means): H@1, F1, P@1K, H@1K.

Command line: ``python -m lokg.eval.tables RUNS_DIR [--table 5 6 7] [--csv-dir DIR]``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
import os
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lokg.atomic_io import write_atomic
from lokg.eval.metrics import not_applicable

log = logging.getLogger(__name__)

SUMMARY_FILE = "summary.json"
#: a whole split's summary and its first-N samples' (:func:`summary_file`)
SUMMARY_GLOB = "summary*.json"
#: Ablation axis values (``full`` = all three modules).
ABLATIONS = ("full", "no_scos", "no_ittc", "no_taimr")
ABLATION_LABELS = {
    "full": "LOKG (full)",
    "no_scos": "w/o SCOS",
    "no_ittc": "w/o ITTC",
    "no_taimr": "w/o TAIMR",
}
#: (metric key, column header) per table.
TABLE5_COLUMNS = (
    ("hits@1", "H@1↑"),
    ("hit", "Hit↑"),
    ("f1", "F1↑"),
    ("p@1k", "P@1K↑"),
    ("h@1k", "H@1K↑"),
    ("tcr", "TCR↓"),
    ("tok/q", "tok/q↓"),
    ("calls/q", "calls/q↓"),
    ("coverage", "coverage↑"),
)
TABLE6_COLUMNS = (
    ("hits@1", "H@1↑"),
    ("f1", "F1↑"),
    ("p@1k", "P@1K↑"),
    ("h@1k", "H@1K↑"),
    ("tcr", "TCR↓"),
    ("tok/q", "tok/q↓"),
)
TABLE7_COLUMNS = (("hits@1", "ΔH@1↑"), ("f1", "ΔF1↑"), ("p@1k", "ΔP@1K↑"), ("h@1k", "ΔH@1K↑"))


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One evaluation run: where it sits in the tables and its metrics (keyword arguments
    only: eleven fields, several of them strings, are too easy to pass in the wrong order)."""

    dataset: str
    method: str
    ablation: str
    llm: str
    seed: int
    metrics: dict[str, float | None]
    budget: int | None = None
    limit: int | None = None
    split: str = "test"
    configuration: str = ""
    departures: tuple[str, ...] = ()
    walk: str | None = None  # which walk model answered (lokg.taimr.walk.artifact.walk_origin)

    def __post_init__(self) -> None:
        object.__setattr__(self, "departures", tuple(self.departures))
        if self.ablation not in ABLATIONS:
            raise ValueError(f"ablation must be one of {list(ABLATIONS)}, got {self.ablation!r}")


def summary_file(limit: int | None) -> str:
    """``summary.json`` for a whole split, ``summary-limit<N>.json`` for its first N questions
    (one results file holds both: a sample run never overwrites the full run's summary)."""
    return SUMMARY_FILE if limit is None else f"summary-limit{int(limit)}.json"


def write_run_summary(run_dir: str | os.PathLike, summary: RunSummary) -> Path:
    """Write :func:`summary_file` into ``run_dir`` atomically (temp file + rename)."""
    path = Path(run_dir) / summary_file(summary.limit)
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = ("dataset", "method", "ablation", "llm", "seed", "budget", "limit", "split",
            "configuration")  # fmt: skip
    data = {k: getattr(summary, k) for k in keys}
    data["departures"] = list(summary.departures)
    if summary.walk is not None:
        data["walk"] = summary.walk
    data["metrics"] = {k: (None if _isnan(v) else v) for k, v in summary.metrics.items()}
    if notes := not_applicable(summary.metrics):
        data["metric_notes"] = notes
    return write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def _isnan(v: object) -> bool:
    return isinstance(v, float) and math.isnan(v)


def read_run_summary(path: str | os.PathLike) -> RunSummary:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
        metrics = {k: (math.nan if v is None else float(v)) for k, v in data["metrics"].items()}
        return RunSummary(
            dataset=str(data["dataset"]),
            method=str(data["method"]),
            ablation=str(data["ablation"]),
            llm=str(data["llm"]),
            seed=int(data["seed"]),
            metrics=metrics,
            budget=None if data.get("budget") is None else int(data["budget"]),
            limit=None if data.get("limit") is None else int(data["limit"]),
            split=str(data.get("split", "test")),
            configuration=str(data.get("configuration", "")),
            departures=tuple(str(d) for d in data.get("departures", ())),
        )
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"{path}: expected a run summary with keys dataset, method, ablation, llm, seed, "
            f"metrics ({exc})"
        ) from exc


def collect_summaries(
    root: str | os.PathLike,
    budget: int | None = None,
    complete_only: bool = False,
    split: str | None = "test",
    latest: bool = False,
) -> list[RunSummary]:
    """Every ``summary.json`` under ``root``, sorted by path, one per seed.

    ``budget`` keeps the runs at that token budget (runs that did not record one are kept);
    ``complete_only`` drops runs limited to the first N questions of a split; ``split`` keeps
    the runs on that split (tables report test; validation runs are for choosing).  Two runs
    of one (LLM, dataset, method, ablation, seed) are an error, unless ``latest``: then the
    newest ``summary.json`` stands (a configuration re-run after its defaults changed gets a
    new run key, and the older run is superseded), and one warning counts what was left out.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: not a directory of evaluation runs")
    found = [(p, read_run_summary(p)) for p in sorted(root.rglob(SUMMARY_GLOB))]
    if budget is not None:
        found = [(p, r) for p, r in found if r.budget is None or r.budget == budget]
    if complete_only:
        found = [(p, r) for p, r in found if r.limit is None]
    if split is not None:
        found = [(p, r) for p, r in found if r.split == split]
    by_key: dict[tuple, list[tuple[Path, RunSummary]]] = {}
    for p, r in found:
        by_key.setdefault((r.llm, r.dataset, r.method, r.ablation, r.seed), []).append((p, r))
    several = {k: v for k, v in by_key.items() if len(v) > 1}
    if several and not latest:
        key, dup = next(iter(several.items()))
        raise ValueError(
            f"{root}: two runs for {key} ({dup[0][0].parent.name}, {dup[1][0].parent.name}); "
            "keep one run per seed, or take the newest (--latest)"
        )
    if several:
        log.warning(
            "%s: %d (llm, dataset, method, ablation, seed) have several runs; the newest of each "
            "stands, %d older left out",
            root, len(several), sum(len(v) - 1 for v in several.values()),
        )  # fmt: skip
    newest = {k: max(v, key=lambda pr: pr[0].stat().st_mtime_ns)[0] for k, v in several.items()}
    return [
        r
        for p, r in found
        if (k := (r.llm, r.dataset, r.method, r.ablation, r.seed)) not in newest or newest[k] == p
    ]


@dataclass(frozen=True)
class Cell:
    """Mean and sample std (None for one seed) of one metric over seeds."""

    mean: float
    std: float | None
    n: int

    def fmt(self, digits: int = 3) -> str:
        if math.isnan(self.mean):
            return "—"
        text = f"{self.mean:.{digits}f}"
        if self.std is not None and not math.isnan(self.std):
            text += f" ± {self.std:.{digits}f}"
        return text


def seed_stats(values: Sequence[float]) -> Cell:
    """Mean ± sample std (ddof = 1) over seeds; NaN values (undefined metrics) propagate."""
    if not values:
        raise ValueError("seed_stats: no values")
    if any(math.isnan(v) for v in values):
        return Cell(math.nan, None, len(values))
    std = statistics.stdev(values) if len(values) > 1 else None
    return Cell(statistics.fmean(values), std, len(values))


def _ordered(items: Iterable[str], first: Sequence[str] = ()) -> list[str]:
    out = [x for x in first if x in set(items)]
    return out + sorted(set(items) - set(out))


def _group(runs: Sequence[RunSummary]) -> dict[tuple[str, str, str, str], list[RunSummary]]:
    groups: dict[tuple[str, str, str, str], list[RunSummary]] = {}
    for r in runs:
        groups.setdefault((r.llm, r.dataset, r.method, r.ablation), []).append(r)
    return groups


def _cells(group: Sequence[RunSummary], columns) -> list[Cell]:
    return [seed_stats([r.metrics.get(k, math.nan) for r in group]) for k, _ in columns]


@dataclass(frozen=True)
class Table:
    """A built table: per-LLM blocks of rows (dataset, row label, cells)."""

    title: str
    row_header: str
    columns: tuple[tuple[str, str], ...]
    blocks: dict[str, list[tuple[str, str, list[Cell]]]]
    signed: bool = False

    def to_markdown(self, digits: int = 3) -> str:
        lines = [f"## {self.title}", ""]
        for llm, rows in self.blocks.items():
            lines += [f"### {llm}", ""]
            header = ["Dataset", self.row_header, *(h for _, h in self.columns)]
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "|".join(["---"] * 2 + ["---:"] * len(self.columns)) + "|")
            for dataset, label, cells in rows:
                vals = [self._fmt(c, digits) for c in cells]
                lines.append("| " + " | ".join([dataset, label, *vals]) + " |")
            lines.append("")
        return "\n".join(lines)

    def _fmt(self, cell: Cell, digits: int) -> str:
        if self.signed and not math.isnan(cell.mean):
            return f"{cell.mean:+.{digits}f}".replace("-", "−")
        return cell.fmt(digits)

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf)
        header = ["llm", "dataset", self.row_header.lower()]
        for key, _ in self.columns:
            header += [f"{key}_mean", f"{key}_std"]
        header.append("seeds")
        w.writerow(header)
        for llm, rows in self.blocks.items():
            for dataset, label, cells in rows:
                row: list = [llm, dataset, label]
                for c in cells:
                    row += [_csv_num(c.mean), _csv_num(c.std)]
                row.append(cells[0].n if cells else 0)
                w.writerow(row)
        return buf.getvalue()


def _csv_num(v: float | None) -> str:
    return "" if v is None or math.isnan(v) else repr(float(v))


def _blocks(runs: Sequence[RunSummary], rows_for) -> dict[str, list]:
    """One block of rows per LLM; ``rows_for(llm, dataset, groups)`` gives a dataset's rows."""
    groups = _group(runs)
    blocks: dict[str, list] = {}
    for llm in _ordered({r.llm for r in runs}):
        blocks[llm] = [
            row
            for ds in _ordered({r.dataset for r in runs if r.llm == llm})
            for row in rows_for(llm, ds, groups)
        ]
    return blocks


#: the project default's and the paper's row labels (set by experiment=lokg / experiment=paper)
OURS, PAPER = "LOKG (ours)", "LOKG (paper)"
#: Table 5's rows in order: LOKG, the baselines (configs/baseline/*.yaml labels), the references
TABLE5_ORDER = (PAPER, OURS, "KAPING", "GraphRAG", "ToG", "TAIMR+LLMLingua", "oracle", "none")


def table5(runs: Sequence[RunSummary], method_order: Sequence[str] = TABLE5_ORDER) -> Table:
    """End-to-end comparison (Table 5): the ``full`` configuration of every method."""

    def rows_for(llm, ds, groups):
        present = {m for (l_, d, m, _a) in groups if l_ == llm and d == ds}
        return [
            (ds, m, _cells(groups[(llm, ds, m, "full")], TABLE5_COLUMNS))
            for m in _ordered(present, method_order)
        ]

    blocks = _blocks([r for r in runs if r.ablation == "full"], rows_for)
    return Table("Table 5. End-to-end comparison (mean ± std over seeds)", "Method",
                 TABLE5_COLUMNS, blocks)  # fmt: skip


def table6(runs: Sequence[RunSummary], method: str = OURS) -> Table:
    """Ablations (Table 6): every configuration of ``method``."""

    def rows_for(llm, ds, groups):
        return [
            (ds, ABLATION_LABELS[ab], _cells(groups[(llm, ds, method, ab)], TABLE6_COLUMNS))
            for ab in ABLATIONS
            if groups.get((llm, ds, method, ab))
        ]

    blocks = _blocks([r for r in runs if r.method == method], rows_for)
    return Table("Table 6. Ablations (mean ± std over seeds)", "Configuration",
                 TABLE6_COLUMNS, blocks)  # fmt: skip


def table7(runs: Sequence[RunSummary], method: str = OURS) -> Table:
    """Metric changes (Table 7): Δ = mean(ablated) − mean(full) per dataset and module."""

    def rows_for(llm, ds, groups):
        full = groups.get((llm, ds, method, "full"))
        if not full:
            return []
        base = _cells(full, TABLE7_COLUMNS)
        rows = []
        for ab in ABLATIONS[1:]:
            g = groups.get((llm, ds, method, ab))
            if g:
                cells = _cells(g, TABLE7_COLUMNS)
                delta = [Cell(c.mean - b.mean, None, c.n) for c, b in zip(cells, base, strict=True)]
                rows.append((ds, ABLATION_LABELS[ab], delta))
        return rows

    blocks = _blocks([r for r in runs if r.method == method], rows_for)
    return Table("Table 7. Metric changes (Δ = ablated − full)", "Removed module",
                 TABLE7_COLUMNS, blocks, signed=True)  # fmt: skip


BUILDERS = {"5": table5, "6": table6, "7": table7}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs_dir", type=Path, help="directory searched for summary.json files")
    parser.add_argument("--table", nargs="+", choices=sorted(BUILDERS), default=sorted(BUILDERS))
    parser.add_argument("--csv-dir", type=Path, default=None, help="also write table<N>.csv here")
    parser.add_argument("--digits", type=int, default=3)
    parser.add_argument(
        "--budget", type=int, default=2048, help="token budget of the runs to tabulate (2048)"
    )
    parser.add_argument(
        "--include-partial", action="store_true", help="also use runs with limit=N questions"
    )
    parser.add_argument(
        "--split", default="test", help="split of the runs to tabulate (test; val is for choosing)"
    )
    parser.add_argument(
        "--method", default=OURS, help=f"method whose ablations Tables 6-7 show ({OURS!r})"
    )
    parser.add_argument(
        "--latest",
        action="store_true",
        help="several runs of one seed (a configuration re-run after its defaults changed): "
        "the newest stands (default: an error)",
    )
    args = parser.parse_args(argv)
    try:
        runs = collect_summaries(
            args.runs_dir, args.budget, not args.include_partial, args.split, args.latest
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not runs:
        print(f"error: no {SUMMARY_FILE} under {args.runs_dir}", file=sys.stderr)
        return 2
    for name in args.table:
        table = BUILDERS[name](runs) if name == "5" else BUILDERS[name](runs, args.method)
        print(table.to_markdown(args.digits))
        if args.csv_dir is not None:
            args.csv_dir.mkdir(parents=True, exist_ok=True)
            (args.csv_dir / f"table{name}.csv").write_text(table.to_csv())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
