"""The headline curve: answer coverage and retriever-only Hits@1 against the token budget.

    python bench/bench_budget_curve.py --data pq3h --split val [--budgets 32 64 ... 4096]
        [--methods paper lokg bfs bfs_out semantic kaping taimr_llmlingua oracle] [--limit N]
        [--csv out.csv]
        [--variant NAME=OVERRIDE,OVERRIDE ...] [--plot-dir bench/figures]
        [--rerun-test "<reason>"]

For every method and budget it runs ``evaluate.py``'s job (the package's dataset and split,
the extractive reader: no LLM, so Hits@1 is the retriever's top answer) and prints

- coverage: share of questions whose gold answer survives in the injected context,
- hits@1: the retriever's first answer (BFS ranks none, so it has none),
- tokens: mean injected evidence tokens (T_after) and the maximum, never above B,
- empty: questions whose context came out empty.

Choose settings on ``--split val``; report ``--split test`` once per configuration: each
method's curve on the test split is one line of the test ledger (``bench/test_ledger.jsonl``,
:mod:`lokg.eval.ledger`; the budgets are one configuration), and a method already there is
refused before anything runs unless ``--rerun-test "<reason>"``.
``paper`` is ``experiment=paper`` (the paper as written), ``lokg`` the project default
(``experiment=lokg``, its departures in docs/DESIGN.md). Needs the offline artifacts of the
dataset (``python train.py experiment=train_transe data=<d>`` and ``experiment=train_gat
data=<d>``). Results are cached by configuration, so a rerun only computes what is new.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import TEST_LEDGER, add_rerun_test_argument

from lokg.config import compose_config
from lokg.errors import InputError
from lokg.eval.ledger import LedgerEntry, TestLedger
from lokg.evaluate import ledger_key, run

LEDGER = TEST_LEDGER  # module attribute, so a test can point it elsewhere

METHODS = {
    # the paper as written: TAIMR (trained GAT, mu, lambda_topo = lambda_q = 1) + ITTC
    "paper": ["experiment=paper"],
    # the project default (ours): its departures are listed in docs/DESIGN.md
    "lokg": ["experiment=lokg"],
    # naive floor: the undirected BFS neighbourhood serialised and cut at B
    "bfs": ["retriever=bfs", "encoder=truncate", "method=BFS+truncate", "configuration=bfs"],
    # the same following edge direction only
    "bfs_out": ["retriever=bfs", "retriever.direction=out", "encoder=truncate",
                "method=BFS-out+truncate", "configuration=bfs_out"],
    # semantic top-K triples within L hops (the "w/o TAIMR" retriever) cut at B
    "semantic": ["retriever=semantic", "encoder=truncate", "method=semantic+truncate",
                 "configuration=semantic"],
    # KAPING's retrieval (Table 4: 1 hop, top-20 of a 200-triple pool) cut at B
    "kaping": ["retriever=kaping", "encoder=truncate", "method=KAPING-retrieval+truncate",
               "configuration=kaping"],
    # Table 5's TAIMR+LLMLingua: TAIMR's candidates, naive text, LLMLingua to B, B enforced
    "taimr_llmlingua": ["baseline=taimr_llmlingua"],
    # the gold path's triples only, cut at B: the information-per-token ceiling (reference)
    "oracle": ["baseline=oracle"],
}  # fmt: skip
#: methods that rank no answers (their Hits@1 is not reported)
UNRANKED = ("bfs", "bfs_out")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="pq3h")
    ap.add_argument(
        "--budgets", type=int, nargs="+", default=[32, 64, 128, 256, 512, 1024, 2048, 4096]
    )
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--split", default="val", choices=["val", "test"])
    ap.add_argument("--csv", default=None)
    ap.add_argument(
        "--plot-dir",
        default=None,
        help="also draw <dir>/budget_curve_<data>_<split>.png (coverage and Hits@1 against the "
        "tokens actually injected, coverage per 1k tokens against B; with --limit N, "
        "..._first<N>.png)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=OVERRIDE,OVERRIDE",
        help="an extra configuration to measure, e.g. "
        "linked_gat=experiment=lokg,retriever.attention=gat (repeatable; for choosing on val)",
    )
    add_rerun_test_argument(ap)
    args = ap.parse_args()
    methods = dict(METHODS)
    for spec in args.variant:
        name, sep, overrides = spec.partition("=")
        if not sep or not name or not overrides:
            ap.error(f"--variant {spec!r}: expected NAME=OVERRIDE[,OVERRIDE...]")
        methods[name] = [*overrides.split(","), f"method={name}", f"configuration={name}"]
        args.methods.append(name)
    root = os.environ.get("LOKG_ROOT", os.getcwd())

    def config(method: str, budget: int):
        overrides = [
            f"data={args.data}",
            "llm=extractive",
            f"budget={budget}",
            f"split={args.split}",
            "~logger",
            *methods[method],
        ]
        if args.limit:
            overrides.append(f"limit={args.limit}")
        return compose_config("evaluate", overrides, root)

    ledger = TestLedger(LEDGER)
    keys = {m: ledger_key(config(m, args.budgets[0]), ignore=("budget",)) for m in args.methods}
    if args.split == "test":  # refuse before measuring anything
        for method, key in keys.items():
            ledger.check(key, f"{method} on {args.data}", args.rerun_test)
    rows = []
    for method in args.methods:
        for budget in args.budgets:
            out = run(config(method, budget))
            m, recs = out["metrics"], out["records"]
            t = [r.t_after or 0 for r in recs]
            rows.append(
                {
                    "data": args.data,
                    "split": args.split,
                    "method": method,
                    "budget": budget,
                    "coverage": m["coverage"],
                    "hits@1": float("nan") if method in UNRANKED else m["hits@1"],
                    "mean_tokens": m["evidence_tok/q"],
                    "max_tokens": max(t),
                    "empty": int(m["empty_contexts"]),
                    "over_budget": sum(x > budget for x in t),
                    "n": len(recs),
                }
            )
    cited = {}
    if args.split == "test":
        for method in args.methods:
            curve = [r for r in rows if r["method"] == method]
            cited[method] = ledger.append(
                LedgerEntry(
                    bench="bench_budget_curve",
                    configuration=method,
                    dataset=args.data,
                    config_hash=keys[method].hash,
                    numbers={
                        str(r["budget"]): {k: r[k] for k in ("coverage", "hits@1", "mean_tokens")}
                        for r in curve
                    }
                    | {"n": curve[0]["n"]},
                    settings={"budgets": list(args.budgets), "limit": args.limit},
                    rerun_reason=args.rerun_test,
                )
            )
    print(f"\n{args.data}/{args.split}: coverage and retriever-only Hits@1 vs budget B")
    print(
        f"{'method':<10} {'B':>5} {'coverage':>9} {'hits@1':>7} {'tok mean':>9} {'tok max':>8} "
        f"{'empty':>6} {'n':>5}"
    )
    for r in rows:
        print(
            f"{r['method']:<10} {r['budget']:>5} {r['coverage']:>9.3f} {r['hits@1']:>7.3f} "
            f"{r['mean_tokens']:>9.1f} {r['max_tokens']:>8} {r['empty']:>6} {r['n']:>5}"
            + ("" if r["over_budget"] == 0 else f" OVER BUDGET x{r['over_budget']}")
        )
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if args.plot_dir:
        from lokg.eval.plots import plot_budget_curves

        subset = f"_first{args.limit}" if args.limit else ""  # never overwrites the full split's
        png = Path(args.plot_dir) / f"budget_curve_{args.data}_{args.split}{subset}.png"
        scope = f"{args.split}, first {args.limit} questions" if args.limit else args.split
        plot_budget_curves(rows, png, title=f"{args.data} / {scope} (retriever-only)")
        print(f"figure: {png}")
    for method, line in cited.items():
        print(f"ledger: {method} on {args.data}/test -> {LEDGER.name}:{line}")
    return 1 if any(r["over_budget"] for r in rows) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InputError as exc:  # a refused rerun, a bad ledger line: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
