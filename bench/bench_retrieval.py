"""Learned retrieval against the paper's TAIMR and today's rules, retriever-only (issue 14).

    python bench/bench_retrieval.py [--data pq2h pq3h pql2h pql3h] [--split val|test]
        [--budget 128] [--limit N] [--latency-n 50] [--rows paper rules learned ...]
        [--group-by question|template] [--rerun-test "<reason>"]

Rows (each one configuration, built from the package's configs):

- ``paper``: ``experiment=paper`` (query-independent trained GAT, mu, Eq. (16)/(18));
- ``uniform+rules``: TAIMR with uniform attention and the rule-based relation linker
  (``retriever=taimr_linked``, the configuration before the learned walk);
- ``learned``: ``retriever=learned`` with the walk model trained by
  ``experiment=train_walk`` as ``configs/model/walk.yaml`` sets it (fine-tuned question
  encoder, token pointer, TransE's e_r, no node states, each hop normalised over the
  relation vocabulary);
- ``learned, no name match``: ``model.name_match=false`` (no cosine between the hop's
  question context and the relation's name);
- ``learned, free relation table``: the same with ``model.relation_source=learned``;
- ``learned, no question in attention``: ``model.question_in_attention=false`` (and so no
  pointer, no encoder to fine-tune and no name matching, which all read the question);
- ``learned, frozen question encoder``: ``model.question_encoder=frozen``;
- ``learned, node-normalised walk``: ``model.normalization=node`` (each node's steps and stop
  soft-maxed together, the walk model before the vocabulary normalisation).

Each walk-model row uses, among the dataset's ``qgat-*`` artifacts trained with the default
``model`` config (``configs/model/walk.yaml``, training settings included) with the row's
switch changed, the one with the best recorded ``val/hits@1`` (one-line error naming the
training command when none has been trained).
Columns: retriever-only Hits@1 (extractive reader: the retriever's top answer), answer
coverage at B, mean injected evidence tokens, and the warm retrieval p50 in ms (each
question retrieved twice, the second timed).  Choose on ``--split val``; report
``--split test`` once: each test row is appended to the test ledger
(``bench/test_ledger.jsonl``, :mod:`lokg.eval.ledger`) and a configuration already there is
refused unless ``--rerun-test "<reason>"``.  Beside each dataset the share of the measured
questions whose relation chain (the template, topic masked) is a training question's chain
is printed.  ``--group-by template`` measures on the held-out-template split
(``data.split_group_by=template``: no test chain occurs in training; its walk models are
trained with the same override).  Last line:
``learned_minus_rules_hits1 <min over datasets of Hits@1(learned) - Hits@1(uniform+rules)>``,
and with ``--group-by template`` then ``template_heldout_min_hits1 <min over datasets of the
learned row's Hits@1>``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import (
    DATASETS,
    TEST_LEDGER,
    add_rerun_test_argument,
    bench_root,
    compose,
    load_datamodule,
    split_questions,
)

from lokg.cli import report
from lokg.data.splits import GROUP_BY, template_seen_share
from lokg.eval.ledger import LedgerEntry, TestLedger
from lokg.evaluate import ledger_key, run
from lokg.pipeline import LOKG
from lokg.taimr.walk.artifact import PRETRAINED_DIR, walk_models
from lokg.taimr.walk.rerank import rerank_models
from lokg.typing import Question

_LEARNED = ["experiment=lokg", "retriever=learned"]
LEDGER = TEST_LEDGER  # module attribute, so a test can point it elsewhere

#: row -> (overrides, the change to the default ``model=walk`` config its walk model was
#: trained with, or None for rows without a walk model)
ROWS: dict[str, tuple[list[str], dict | None]] = {
    "paper": (["experiment=paper"], None),
    "uniform+rules": (["experiment=lokg", "retriever=taimr_linked"], None),
    "learned": (_LEARNED, {}),
    "learned, no name match": (_LEARNED, {"name_match": False}),
    "learned, free relation table": (_LEARNED, {"relation_source": "learned"}),
    "learned, no question in attention": (
        _LEARNED,
        {
            "question_in_attention": False,
            "question_tokens": False,
            "question_encoder": "frozen",
            "name_match": False,
        },
    ),
    "learned, frozen question encoder": (
        _LEARNED,
        {"question_encoder": "frozen"},
    ),
    "learned, node-normalised walk": (_LEARNED, {"normalization": "node"}),
    # ITTC's fourth rendering (issue 28 §4): candidates sharing (subject, relation) on one line
    "learned, grouped rendering": ([*_LEARNED, "encoder=ittc_grouped"], {}),
    # TAIMR's relation-aware GAT (question in its attention) over the walk graph, its node
    # states in the step and stop logits (issue 28 §3; needs the node-normalised walk)
    "learned, GAT node states in the step logits": (
        _LEARNED,
        {"graph_context": True, "normalization": "node"},
    ),
    # the same with each hop's question matched against W_r e_r + W h_v, Eq. (13)'s key, in
    # place of W_r e_r alone (docs/design/taimr.md "Learned walk", item 3)
    "learned, GAT node states, question keyed on relation and node": (
        _LEARNED,
        {"graph_context": True, "normalization": "node", "question_key": "relation_node"},
    ),
    # the GAT split (issue 28 §3): the default walk's relation and stop distributions, the
    # GAT's node states sharing a relation's probability among a node's steps (in place of
    # 1/deg_r(u)), so the anchors' exact join still applies
    "learned, GAT split": (_LEARNED, {"graph_context": True}),
    # the GAT split with a free relation table in place of TransE's e_r (its W_r e_r attention
    # and the walk's hop keys read the free table: the "no TransE e_r" ablation of the split)
    "learned, GAT split, free relation table": (
        _LEARNED,
        {"graph_context": True, "relation_source": "learned"},
    ),
    # several topic entities (issue 28): every topic walks with the whole question and the
    # answers are merged by logsumexp, the walk's retrieval before the anchors' join
    "learned, anchors union": ([*_LEARNED, "+retriever.anchors=union"], {}),
    # the walk shipped in the package, with no training on the set (day one on a new KG:
    # no TransE, so no SCOS either); trained on the bundled sets' train splits, so on those
    # sets it is in-family, not zero-shot (docs/design/taimr.md, "Pretrained walk")
    "pretrained walk": ([*_LEARNED, "scos=off", f"retriever.model_dir={PRETRAINED_DIR}"], None),
}
#: rows that re-score a walk's candidates with the answer GAT (issue 28 §3): row -> (the
#: change to the default ``model=rerank`` config it was trained with, omega); the walk is the
#: default one unless the row is also in :data:`RERANK_WALKS`
RERANK_ROWS: dict[str, tuple[dict, float]] = {
    "learned + answer GAT": ({}, 1.0),
    "learned + answer GAT, omega 0.5": ({}, 0.5),
    "learned + answer GAT, omega 4": ({}, 4.0),
    "learned + answer GAT, no message passing": ({"layers": 0}, 1.0),
    "learned + answer GAT, no TransE e_r": ({"use_transe": False}, 1.0),
    "learned + answer GAT, no question in attention": ({"question_in_attention": False}, 1.0),
    "learned, GAT split + answer GAT": ({}, 1.0),
}
#: rerank row -> the change to the default ``model=walk`` config of the walk it re-scores
RERANK_WALKS: dict[str, dict] = {"learned, GAT split + answer GAT": {"graph_context": True}}
ROWS.update({row: (_LEARNED, RERANK_WALKS.get(row, {})) for row in RERANK_ROWS})


def _train_flags(change: dict) -> str:
    """``change`` as the ``model.<key>=<value>`` overrides of the training command."""
    return " ".join(f"model.{k}={str(v).lower()}" for k, v in change.items())


def rerank_model_dir(dataset_dir: Path, walk_dir: Path, change: dict) -> Path:
    """The dataset's ``rerank-*`` artifact trained on ``walk_dir``'s candidates with the
    default ``model=rerank`` config and ``change`` (:func:`rerank_models`)."""
    found = rerank_models(dataset_dir, walk_dir, change)
    if not found:
        flags = _train_flags(change)
        raise SystemExit(
            f"error: no answer GAT trained on {walk_dir.name} with the default model=rerank "
            f"config {flags} under {dataset_dir}; run `python train.py experiment=train_rerank "
            f"data={dataset_dir.name.split('-')[0]} {flags}`"
        )
    return found[0]


def walk_model_dir(dataset_dir: Path, change: dict) -> Path:
    """The dataset's ``qgat-*`` artifact with the best recorded ``val/hits@1`` among those
    trained with the default ``model`` config (every key of ``configs/model/walk.yaml``:
    architecture and training settings alike) with ``change`` applied, so a model trained
    under older settings never stands for a row (selection on validation only)."""
    found = walk_models(dataset_dir, change)
    if not found:
        flags = _train_flags(change)
        raise SystemExit(
            f"error: no walk model trained with the default model config{' and ' if flags else ''}"
            f"{flags} under {dataset_dir}; run `python train.py experiment=train_walk "
            f"data={dataset_dir.name.split('-')[0]} {flags}` (with the split's "
            "data.split_group_by)"
        )
    return found[0]


def row_config(
    data: str,
    row: str,
    split: str,
    budget: int,
    limit: int | None = None,
    tag: str = "",
    walk_dir: Path | None = None,
    group_by: str = "question",
) -> DictConfig:
    """The evaluate config of one table row on ``data`` (extractive reader, no logger).

    ``tag`` is appended to the recorded configuration label (``bench:<row><tag>``), so runs
    on other questions (``bench/bench_question_style.py``) are recorded apart.  ``walk_dir``
    pins a walk-model row's ``qgat-*`` artifact (default: :func:`walk_model_dir`) or, on the
    ``pretrained walk`` row, takes the shipped walk's place (``bench/bench_zeroshot.py``'s
    leave-one-out walks); ``group_by`` is the split's ``data.split_group_by``.
    """
    return compose(data, row_overrides(data, row, split, budget, limit, tag, walk_dir, group_by))


def row_overrides(
    data: str,
    row: str,
    split: str,
    budget: int,
    limit: int | None = None,
    tag: str = "",
    walk_dir: Path | str | None = None,
    group_by: str = "question",
) -> list[str]:
    """:func:`row_config`'s overrides after ``data=<data>``: ``python evaluate.py
    data=<data> <these>`` answers the same configuration."""
    overrides, want = ROWS[row]
    split_data = [f"data.split_group_by={group_by}"]
    base = [f"data={data}", *split_data, "llm=extractive", f"budget={budget}", "~logger"]
    extra = []
    if want is None and walk_dir is not None:
        if not any(o.startswith("retriever.model_dir=") for o in overrides):
            raise ValueError(f"row {row!r} uses no walk model; walk_dir={walk_dir} is not for it")
        overrides = [o for o in overrides if not o.startswith("retriever.model_dir=")]
        extra = [f"retriever.model_dir={walk_dir}"]
    if want is not None:
        if walk_dir is None:
            dm = load_datamodule(compose(data, split_data))
            walk_dir = walk_model_dir(dm.artifact_dir, want)
        extra = [f"retriever.model_dir={walk_dir}"]
        if row in RERANK_ROWS:
            change, omega = RERANK_ROWS[row]
            root = Path(walk_dir).resolve().parent
            rerank = rerank_model_dir(root, Path(walk_dir), change)
            extra += [f"+retriever.rerank={rerank}", f"+retriever.rerank_weight={omega}"]
    ov = [*base, *overrides, *extra, f"split={split}", *row_label(row, tag)]
    if limit:
        ov.append(f"limit={limit}")
    return ov[1:]


def row_label(row: str, tag: str = "") -> list[str]:
    """The overrides naming ``row``'s runs: ``method=<row>``, ``configuration=bench:<slug>``."""
    slug = row.replace(" ", "_").replace(",", "")
    return [f"method='{row}'", f"configuration=bench:{slug}{tag}"]


def measure_row(cfg: DictConfig, questions: Sequence[Question] | None = None) -> dict:
    """Run ``cfg`` (on ``questions`` when given, else its split) through ``lokg.evaluate.run``
    and return its row: Hits@1, coverage at B, evidence tokens, empty contexts, n, and the
    per-question ``records`` (for breakdowns)."""
    out = run(cfg, questions)
    m = out["metrics"]
    return {
        "hits@1": m["hits@1"],
        "coverage": m["coverage"],
        "tokens": m["evidence_tok/q"],
        "empty": int(m["empty_contexts"]),
        "n": len(out["records"]),
        "records": out["records"],
    }


def warm_p50_ms(cfg, dm, questions) -> float:
    """Median time of a second retrieval of the same question (caches warm), in ms."""
    from lokg.llm import build_reader

    pipe = LOKG.from_config(cfg, dm, reader=build_reader(cfg.llm))
    times = []
    for q in questions:
        pipe.retrieve(q)
        t0 = time.perf_counter()
        pipe.retrieve(q)
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1000)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=list(DATASETS))
    ap.add_argument("--split", default="val", choices=["val", "test"])
    ap.add_argument("--budget", type=int, default=128)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--latency-n", type=int, default=50)
    ap.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    ap.add_argument("--group-by", default="question", choices=list(GROUP_BY))
    add_rerun_test_argument(ap)
    args = ap.parse_args()
    root = bench_root()
    os.environ.setdefault("LOKG_ROOT", root)
    ledger = TestLedger(LEDGER)
    cfgs = {
        (data, row): row_config(
            data, row, args.split, args.budget, args.limit, group_by=args.group_by
        )
        for data in args.data
        for row in args.rows
    }
    if args.split == "test":  # refuse before measuring anything
        for (data, row), cfg in cfgs.items():
            ledger.check(ledger_key(cfg), f"{row} on {data}", args.rerun_test)
    table, seen = [], {}
    for (data, row), cfg in cfgs.items():
        result = measure_row(cfg)
        dm = load_datamodule(cfg)
        measured = split_questions(dm, args.split, args.limit)
        seen[data] = template_seen_share(dm.questions["train"], measured)
        qs = split_questions(dm, args.split, args.latency_n)
        p50 = warm_p50_ms(cfg, dm, qs)
        line = None
        if args.split == "test":
            line = ledger.append(
                LedgerEntry(
                    bench="bench_retrieval",
                    configuration=row,
                    dataset=data,
                    config_hash=ledger_key(cfg).hash,
                    numbers={k: result[k] for k in ("hits@1", "coverage", "tokens", "n")},
                    settings={"budget": args.budget, "group_by": args.group_by},
                    rerun_reason=args.rerun_test,
                )
            )
        table.append({"data": data, "row": row, **result, "p50_ms": p50, "ledger": line})
    print(
        f"\nretriever-only, split={args.split} (group_by={args.group_by}), B={args.budget} "
        "(extractive reader: no LLM)"
    )
    print(
        f"{'data':<6} {'row':<36} {'hits@1':>7} {'cov@B':>7} {'tok':>6} {'p50 ms':>7} "
        f"{'empty':>6} {'n':>5}" + ("  ledger" if args.split == "test" else "")
    )
    for r in table:
        cite = f"  {LEDGER.name}:{r['ledger']}" if r["ledger"] else ""
        print(
            f"{r['data']:<6} {r['row']:<36} {r['hits@1']:>7.3f} {r['coverage']:>7.3f} "
            f"{r['tokens']:>6.1f} {r['p50_ms']:>7.1f} {r['empty']:>6} {r['n']:>5}{cite}"
        )
    for data, share in seen.items():
        shown = "n/a" if share is None else f"{share:.3f}"
        print(f"template_seen_in_train {data} {shown}")
    diffs = []
    for data in args.data:
        h = {r["row"]: r["hits@1"] for r in table if r["data"] == data}
        if "learned" in h and "uniform+rules" in h:
            diffs.append(h["learned"] - h["uniform+rules"])
    if diffs:
        print(f"learned_minus_rules_hits1 {min(diffs):+.3f}")
    if args.group_by == "template":
        learned = [r["hits@1"] for r in table if r["row"] == "learned"]
        if learned:
            print(f"template_heldout_min_hits1 {min(learned):.3f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # a missing artifact is one line naming the command, a bug a traceback
        report(exc)
