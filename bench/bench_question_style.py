"""Retrieval on a second question style: transfer to unseen phrasing or direction (issue 14).

    python bench/bench_question_style.py [--data pql2h pql3h pq2h pq3h] [--split val|test]
        --style paraphrase|reverse|lexicon|original [--limit N] [--budget 128] [--seed 0]
        [--max-answers 20] [--walk-model DATA=qgat-DIR ...]

The split's questions (the package's split, ``bench/_data.py``; the first ``--limit``) are
restyled by :func:`lokg.data.restyle.restyle` from their gold paths alone:

- ``paraphrase``: the same paths asked with templates PathQuestion never uses;
- ``reverse``: each path asked from its answer end (answers: every entity whose relation
  chain reaches it, on the graph; questions with more than ``--max-answers`` are skipped and
  counted);
- ``lexicon``: the same paths reworded by :mod:`lokg.data.paraphrase`'s hand-written lexicon
  (no word of the relation's KB label, clauses in five orders; topic names as the KB spells
  them, so only the relation wording changes): paraphrases that are paraphrases;
- ``original``: the questions unchanged (the reference, measured the same way).

The rows ``uniform+rules`` and ``learned`` are built and run exactly as in
``bench/bench_retrieval.py`` (:func:`row_config`, :func:`measure_row`); the models, the
linker's prototypes and its chain prior come from the original training questions only, so
this measures transfer.  ``--walk-model pq3h=qgat-...`` pins a dataset's walk model (e.g. to
compare styles on one model while new ones are trained; the table names the one used).
Retriever-only (extractive reader): Hits@1, answer coverage at B and mean evidence tokens,
one row per (dataset, row), then Hits@1 per template pooled over the datasets.  Runs are
recorded like any evaluation (configuration ``bench:<row>:<style>``; a digest of the restyled
questions is in the run key).
Last line: ``style=<style> min_learned_hits1=<x> min_rules_hits1=<y>`` (minimum over datasets).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import add_data_arguments, bench_root, compose, load_datamodule, split_questions
from bench_retrieval import ROWS, measure_row, row_config

from lokg.cli import report
from lokg.data.paraphrase import paraphrase_with_report
from lokg.data.restyle import (
    MAX_REVERSE_ANSWERS,
    PARAPHRASE_TEMPLATES,
    REVERSE_TEMPLATES,
    STYLES,
    restyle,
)
from lokg.eval.metrics import aggregate

#: the rows compared (bench_retrieval.ROWS names)
STYLE_ROWS = ("uniform+rules", "learned")
DEFAULT_DATA = ("pql2h", "pql3h", "pq2h", "pq3h")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(ap, DEFAULT_DATA)
    ap.add_argument("--style", required=True, choices=[*STYLES, "lexicon", "original"])
    ap.add_argument("--budget", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0, help="seeds each question's template draw")
    ap.add_argument("--max-answers", type=int, default=MAX_REVERSE_ANSWERS)
    ap.add_argument(
        "--walk-model",
        nargs="+",
        default=[],
        metavar="DATA=QGAT_DIR",
        help="pin the learned row's walk model of a dataset (a qgat-* directory name or path)",
    )
    args = ap.parse_args()
    pinned = dict(item.split("=", 1) for item in args.walk_model)
    unknown = sorted(set(pinned) - set(args.data))
    if unknown:
        ap.error(f"--walk-model for {unknown}, not among --data {args.data}")
    os.environ.setdefault("LOKG_ROOT", bench_root())
    table = []
    template_of: dict[str, int] = {}  # restyled id -> template index
    for data in args.data:
        dm = load_datamodule(compose(data))
        questions = split_questions(dm, args.split, args.limit)
        if args.style == "original":
            styled, note = questions, f"original: {len(questions)} questions"
        elif args.style == "lexicon":
            styled, lex = paraphrase_with_report(questions, dm.kg, seed=args.seed, names="label")
            note = f"lexicon paraphrases: {lex.kept} kept, {lex.skipped} skipped"
        else:
            styled, report = restyle(
                questions, dm.kg, args.style, seed=args.seed, max_answers=args.max_answers
            )
            note = str(report)
            template_of.update(report.templates)
        print(f"{data}/{args.split}: {note}", flush=True)
        for q in styled[:3]:
            print(f"  {q.id}: {q.text}  ->  {' | '.join(q.answers[:5])}", flush=True)
        if not styled:
            raise SystemExit(f"error: {data}: no question could be restyled ({note})")
        for row in STYLE_ROWS:
            t0 = time.perf_counter()
            walk_dir = None
            if data in pinned and ROWS[row][1] is not None:
                walk_dir = dm.artifact_dir / pinned[data]  # an absolute path stays as given
            cfg = row_config(
                data, row, args.split, args.budget, tag=f":{args.style}", walk_dir=walk_dir
            )
            result = measure_row(cfg, styled)
            secs = time.perf_counter() - t0
            model = Path(cfg.retriever.model_dir).name if ROWS[row][1] is not None else ""
            table.append({"data": data, "row": row, **result, "secs": secs, "model": model})
    print(
        f"\nretriever-only, split={args.split}, style={args.style}, B={args.budget} "
        "(extractive reader: no LLM)"
    )
    print(
        f"{'data':<6} {'row':<14} {'hits@1':>7} {'cov@B':>7} {'tok':>6} {'empty':>6} "
        f"{'n':>5} {'s':>6}  walk model"
    )
    for r in table:
        print(
            f"{r['data']:<6} {r['row']:<14} {r['hits@1']:>7.3f} {r['coverage']:>7.3f} "
            f"{r['tokens']:>6.1f} {r['empty']:>6} {r['n']:>5} {r['secs']:>6.0f}  {r['model']}"
        )

    if template_of:
        print_by_template(table, template_of, args.style)

    def lowest(row: str) -> float:
        return min(r["hits@1"] for r in table if r["row"] == row)

    print(
        f"style={args.style} min_learned_hits1={lowest('learned'):.3f} "
        f"min_rules_hits1={lowest('uniform+rules'):.3f}"
    )
    return 0


def print_by_template(table: list[dict], template_of: dict[str, int], style: str) -> None:
    """Hits@1 of each row per template, pooled over the datasets (which phrasing breaks what)."""
    templates = PARAPHRASE_TEMPLATES if style == "paraphrase" else REVERSE_TEMPLATES
    topic = "<topic>" if style == "paraphrase" else "<answer>"
    print(f"\nhits@1 by template (pooled over datasets; {topic}, <r1>, <r2> from the path)")
    print(f"{'#':>2} " + " ".join(f"{row:>14}" for row in STYLE_ROWS) + f" {'n':>5}  template")
    for i, template in enumerate(templates):
        cells, n = [], 0
        for row in STYLE_ROWS:
            records = [
                r
                for t in table
                if t["row"] == row
                for r in t["records"]
                if template_of.get(r.id) == i
            ]
            n = len(records)
            cells.append(
                f"{aggregate(r.score() for r in records)['hits@1']:>14.3f}" if n else f"{'—':>14}"
            )
        print(f"{i:>2} " + " ".join(cells) + f" {n:>5}  {template(topic, ['<r1>', '<r2>'])}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # a missing artifact is one line naming the command, a bug a traceback
        report(exc)
