"""Every method of Table 5 end to end on one dataset, one row per method.

    python bench/bench_methods.py --data pq2h --limit 20 --llm local
        [--split test] [--methods lokg paper kaping graphrag tog taimr_llmlingua oracle none]
        [--budget 2048] [--threads 1] [--csv out.csv]

Each method is ``evaluate.py``'s job with the package's dataset and split (``experiment=lokg``
and ``experiment=paper`` for LOKG, ``baseline=<name>`` for the others), so it shares the
reader, the budget gate, the metrics, the resumable results and the summaries that
``python -m lokg.eval.tables`` reads. ``--llm local`` is the real local LLM (llama.cpp server
with SmolLM2-135M-Instruct, started by the client); ``--llm extractive`` makes no call.

Printed per method: H@1, Hit, F1, answer coverage, TCR, evidence tokens (mean and max), tok/q,
calls/q, P@1K, H@1K, failed questions, wall time, and the method's own facts: ToG's parse
fallbacks per question, GraphRAG's indexing calls and tokens per question (amortised, also
inside calls/q and tok/q), LLMLingua's achieved vs target tokens where it compressed. The last
line is ``methods=<count> max_overshoot_tokens=<max over all questions of (evidence tokens
sent - B), 0 when the budget held>``.

LOKG rows need the dataset's offline artifacts (``python train.py experiment=train_transe
data=<d>`` then ``experiment=train_gat data=<d>``); TAIMR+LLMLingua uses TAIMR's too.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from _data import DATASETS, EVAL_SPLITS, bench_root

from lokg.config import compose_config
from lokg.evaluate import run

#: method name -> evaluate.py overrides
METHODS = {
    "lokg": ["experiment=lokg"],
    "paper": ["experiment=paper"],
    "kaping": ["baseline=kaping"],
    "graphrag": ["baseline=graphrag"],
    "tog": ["baseline=tog"],
    "taimr_llmlingua": ["baseline=taimr_llmlingua"],
    "oracle": ["baseline=oracle"],
    "none": ["baseline=none"],
}
COLUMNS = ("method", "hits@1", "hit", "f1", "coverage", "tcr", "evidence_tok/q", "evidence_max",
           "tok/q", "calls/q", "p@1k", "h@1k", "failed", "wall_s", "notes")  # fmt: skip


def method_notes(records) -> str:
    """The method's own facts from its records (ToG fallbacks, GraphRAG indexing, LLMLingua)."""
    n = max(len(records), 1)
    notes = []
    retrieval = [r.extra.get("retrieval") or {} for r in records]
    fallbacks = [x["fallbacks"] for x in retrieval if "fallbacks" in x]
    if fallbacks:
        total = {k: sum(f[k] for f in fallbacks) for k in fallbacks[0]}
        prompts = [x["prompts"] for x in retrieval if "prompts" in x]
        asked = {k: sum(p[k] for p in prompts) for k in prompts[0]}
        notes.append(
            "fallbacks/q " + " ".join(f"{k}={total[k] / n:.2f}/{asked[k] / n:.2f}" for k in total)
        )
    index = [x["index"] for x in retrieval if "index" in x]
    if index:
        calls = sum(i["calls"] for i in index) / n
        tokens = sum(i["prompt_tokens"] + i["completion_tokens"] for i in index) / n
        written = sum(i["reports_written"] for i in index)
        notes.append(f"index calls/q={calls:.2f} tok/q={tokens:.0f} reports_written={written}")
    enc = [r.extra.get("encoder") or {} for r in records]
    squeezed = [e for e in enc if e.get("compressed")]
    if enc and any("target_tokens" in e for e in enc):
        if squeezed:
            ach = sum(e["achieved_tokens"] for e in squeezed) / len(squeezed)
            tgt = sum(e["target_tokens"] for e in squeezed) / len(squeezed)
            over = max(e["overshoot_tokens"] for e in squeezed)
            notes.append(
                f"llmlingua compressed {len(squeezed)}/{len(enc)}: achieved {ach:.0f} vs "
                f"target {tgt:.0f} tokens (max overshoot {over}, cut to B)"
            )
        else:
            notes.append(f"llmlingua compressed 0/{len(enc)} (every block already <= B)")
    return "; ".join(notes)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=DATASETS, default="pq2h")
    parser.add_argument("--split", choices=EVAL_SPLITS, default="test")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--llm", default="local", help="llm config: local | extractive | ...")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument(
        "--threads", type=int, default=1, help="llama.cpp threads for --llm local (1)"
    )
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args(argv)
    root = bench_root()
    rows, overshoot = [], 0
    for name in args.methods:
        overrides = [*METHODS[name], f"data={args.data}", f"split={args.split}",
                     f"limit={args.limit}", f"llm={args.llm}", f"budget={args.budget}",
                     "logger=csv"]  # fmt: skip
        if args.llm == "local":
            overrides.append(f"llm.client.n_threads={args.threads}")
        cfg = compose_config("evaluate", overrides, root)
        if cfg.retriever.get("uses_llm") and cfg.llm.get("client") is None:
            print(f"{name}: skipped (its retrieval calls the LLM; --llm {args.llm} has none)")
            continue
        t0 = time.perf_counter()
        out = run(cfg)
        wall = time.perf_counter() - t0
        records, m = out["records"], out["metrics"]
        sent = [r.t_after or 0 for r in records if r.status == "ok"]
        over = max([t - args.budget for t in sent] + [0])
        overshoot = max(overshoot, over)
        row = {"method": name, **{k: m.get(k, float("nan")) for k in COLUMNS[1:12]},
               "evidence_max": max(sent, default=0), "failed": m["failed"],
               "wall_s": wall, "notes": method_notes(records)}  # fmt: skip
        rows.append(row)
        print(format_row(row), flush=True)
    print("\n" + " | ".join(COLUMNS))
    for row in rows:
        print(format_row(row))
    if args.csv:
        with args.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
    print(f"methods={len(rows)} max_overshoot_tokens={overshoot}")
    return 0


def format_row(row: dict) -> str:
    def fmt(k, v):
        if isinstance(v, str):
            return v
        if k in ("evidence_tok/q", "tok/q", "wall_s", "evidence_max"):
            return f"{v:,.0f}"
        return f"{v:.3f}"

    return " | ".join(fmt(k, row[k]) for k in COLUMNS)


if __name__ == "__main__":
    sys.exit(main())
