"""Questions beyond chains (issue 28): every row per question kind, retriever-only.

    python bench/bench_questions.py [--data beyond_pq3h beyond_pql2h beyond_pql3h
        cwq_evidence_resplit webqsp_evidence_resplit] [--split val|test] [--budget 128]
        [--recall-budget 256] [--rows paper uniform+rules learned ...]
        [--chain-data pq2h pq3h pql2h pql3h] [--limit N] [--rerun-test "<reason>"]

The sets: ``beyond_*`` (conjunctions of two anchors, chains with a constraint, chains with
5-50 answers, generated over a PathQuestion KB: :mod:`lokg.data.question_sets`) and the
WebQSP / CWQ stand-ins split 8:1:1 for training (``*_evidence_resplit``, labelled stand-ins).
The rows are :data:`bench_retrieval.ROWS` (the paper, the rules, today's walk, its
ablations), each a configuration of the package's configs on the dataset's own split; a walk
row needs a walk model trained on the set (``python train.py experiment=train_walk
data=<set>``, after ``experiment=train_transe``).

Per set and row it prints, for all questions and per group, retriever-only Hits@1 (the
extractive reader: the first retriever candidate the packed context names), coverage at B
(a gold answer in the context), ``answer_recall`` at B (the share of all gold answers in the
context), ``coverage_all_constraints`` at B (``all@B``: the packed triples connect a gold
answer to every topic entity) and n. Groups: the kind (``conjunction``, ``conjunction_2hop``,
``constraint``, ``many``; from the ids of a generated set), CWQ's ``compositionality_type``,
and, on the stand-ins, ``reachable`` (the topic entity is in the question's own evidence
pool: elsewhere no retriever can start), ``answer_in_pool`` (reachable, and a gold answer is
somewhere in the pool: its n over reachable's is the ceiling of any retriever's coverage) and
``answerable`` (a gold answer within 3 steps of a topic in the pool). The ``many`` questions
are also measured at ``--recall-budget``.

Choose on ``--split val``; ``--split test`` reports once: each (row, set, budget) is a line of
the test ledger (``bench/test_ledger.jsonl``), refused a second time without
``--rerun-test``. The chain sets' number (``--chain-data``) is the default row on those sets:
on test read from the ledger when that configuration is already there (cited), else measured
and recorded. Last line, for the default row (``learned``; ``nan`` where no set has the kind):
``beyond_chains conjunction_hits1=X constraint_hits1=Y many_answer_recall256=Z
chain_min_hits1=W``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections import defaultdict
from pathlib import Path

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
from bench_retrieval import ROWS, row_config

from lokg.cli import report
from lokg.eval.ledger import LedgerEntry, TestLedger
from lokg.eval.metrics import aggregate
from lokg.evaluate import ledger_key, run
from lokg.normalize import normalize_answer, normalize_set

LEDGER = TEST_LEDGER  # module attribute, so a test can point it elsewhere
SETS = (
    "beyond_pq3h",
    "beyond_pql2h",
    "beyond_pql3h",
    "cwq_evidence_resplit",
    "webqsp_evidence_resplit",
)
DEFAULT_ROWS = ("paper", "uniform+rules", "learned")
#: the row whose numbers the last line reports (the project default)
DEFAULT_ROW = "learned"
#: the metrics reported per group
GROUP_METRICS = ("hits@1", "coverage", "answer_recall", "coverage_all_constraints")


def question_groups(dm, questions) -> dict[str, list[str]]:
    """Group name -> question ids: ``all``, the generated kind, CWQ's type, ``reachable``."""
    groups: dict[str, list[str]] = defaultdict(list)
    types = dm.source.question_types() if hasattr(dm.source, "question_types") else {}
    for q in questions:
        groups["all"].append(q.id)
        if dm.name.startswith("beyond_"):
            groups[q.id.split("-")[1]].append(q.id)
        if q.id in types:
            groups[types[q.id]].append(q.id)
        if dm.has_question_subgraphs and any(
            t in dm.question_graph(q.id).entities for t in q.topic_entities
        ):
            groups["reachable"].append(q.id)
            if answer_in_pool(dm.question_graph(q.id), q):
                groups["answer_in_pool"].append(q.id)
            if answerable(dm.question_graph(q.id), q):
                groups["answerable"].append(q.id)
    return dict(groups)


def answer_in_pool(kg, q) -> bool:
    """Whether a gold answer is an entity of the question's own evidence pool at all, however
    far from the topic: the ceiling of any retriever's coverage, even one that packed the
    whole pool."""
    gold = set(normalize_set(q.answers))
    return any(normalize_answer(kg.entities.label(v)) in gold for v in range(len(kg.entities)))


def answerable(kg, q, max_hops: int = 3) -> bool:
    """Whether a gold answer is within ``max_hops`` steps (either direction) of a topic entity
    in the question's own evidence pool: what any retriever of L = 3 can reach at all."""
    gold = set(normalize_set(q.answers))
    adj: dict[int, set[int]] = defaultdict(set)
    for h, _, t in kg.triples_np.tolist():
        adj[h].add(t)
        adj[t].add(h)
    seen = {kg.entities[t] for t in q.topic_entities if t in kg.entities}
    frontier = set(seen)
    for _ in range(max_hops):
        frontier = {v for u in frontier for v in adj[u]} - seen
        seen |= frontier
        if any(normalize_answer(kg.entities.label(v)) in gold for v in frontier):
            return True
    return False


def group_metrics(records, groups: dict[str, list[str]], answers=None) -> dict[str, dict]:
    """Per group: Hits@1, coverage, answer recall, coverage of all constraints, evidence
    tokens per question, n and, given ``answers`` (question id -> its number of distinct gold
    answers), evidence tokens per recalled gold answer (``tok/answer``)."""
    by_id = {r.id: r for r in records}
    out = {}
    for name, ids in groups.items():
        scores = {i: by_id[i].score() for i in ids if i in by_id}
        if scores:
            m = aggregate(scores.values())
            out[name] = {k: m[k] for k in GROUP_METRICS}
            out[name]["tok/q"] = m["evidence_tok/q"]
            out[name]["n"] = len(scores)
            if answers:
                recalled = sum((s.answer_recall or 0.0) * answers[i] for i, s in scores.items())
                tokens = sum(s.t_after or 0 for s in scores.values())
                out[name]["tok/answer"] = tokens / recalled if recalled else math.nan
    return out


def record_test(ledger, cfg, row, data, numbers, settings, reason) -> int:
    entry = LedgerEntry(
        bench="bench_questions",
        configuration=row,
        dataset=data,
        config_hash=ledger_key(cfg).hash,
        numbers=numbers,
        settings=settings,
        rerun_reason=reason,
    )
    return ledger.append(entry)


def config(data: str, row: str, split: str, budget: int, limit: int | None = None):
    """:func:`bench_retrieval.row_config` on the set's own ``data.split_group_by``."""
    group_by = compose(data).data.split_group_by
    return row_config(data, row, split, budget, limit, group_by=group_by)


def chain_hits1(data, split, budget, ledger, reason) -> tuple[float, str]:
    """The default row's Hits@1 on a chain set: the ledger's when on test and recorded."""
    cfg = config(data, DEFAULT_ROW, split, budget)
    if split == "test":
        found = ledger.find(ledger_key(cfg))
        if found and not reason:
            n, e = found[-1]
            return float(e["numbers"]["hits@1"]), f"{LEDGER.name}:{n}"
    m = run(cfg)["metrics"]
    cite = ""
    if split == "test":
        numbers = {k: m[k] for k in ("hits@1", "coverage")}
        line = record_test(ledger, cfg, DEFAULT_ROW, data, numbers, {"budget": budget}, reason)
        cite = f"{LEDGER.name}:{line}"
    return float(m["hits@1"]), cite


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=list(SETS))
    ap.add_argument("--split", default="val", choices=["val", "test"])
    ap.add_argument("--budget", type=int, default=128)
    ap.add_argument("--recall-budget", type=int, default=256)
    ap.add_argument("--rows", nargs="+", default=list(DEFAULT_ROWS), choices=list(ROWS))
    ap.add_argument("--chain-data", nargs="*", default=list(DATASETS))
    ap.add_argument("--limit", type=int, default=None)
    add_rerun_test_argument(ap)
    args = ap.parse_args()
    os.environ.setdefault("LOKG_ROOT", bench_root())
    ledger = TestLedger(LEDGER)
    cfgs = {
        (d, r): config(d, r, args.split, args.budget, args.limit)
        for d in args.data
        for r in args.rows
    }
    if args.split == "test":  # refuse before measuring anything
        for (d, r), cfg in cfgs.items():
            ledger.check(ledger_key(cfg), f"{r} on {d}", args.rerun_test)
    results: dict[tuple[str, str], dict] = {}
    for (data, row), cfg in cfgs.items():
        dm = load_datamodule(cfg)
        questions = split_questions(dm, args.split, args.limit)
        groups = question_groups(dm, questions)
        out = run(cfg)
        per = group_metrics(out["records"], groups)
        many = [q for q in questions if q.id in set(groups.get("many", []))]
        if many:
            cfg_r = config(data, row, args.split, args.recall_budget, args.limit)
            if args.split == "test":
                ledger.check(ledger_key(cfg_r), f"{row} on {data} at B={args.recall_budget}",
                             args.rerun_test)  # fmt: skip
            n_gold = {q.id: len(normalize_set(q.answers)) for q in many}
            recall = group_metrics(run(cfg_r, many)["records"], {"many": groups["many"]}, n_gold)
            per[f"many@{args.recall_budget}"] = recall["many"]
        cite = ""
        if args.split == "test":
            numbers = {g: m for g, m in per.items()}
            settings = {"budget": args.budget, "recall_budget": args.recall_budget}
            line = record_test(ledger, cfg, row, data, numbers, settings, args.rerun_test)
            cite = f"{LEDGER.name}:{line}"
        results[(data, row)] = {"groups": per, "ledger": cite}
    print(f"\nbeyond chains, split={args.split}, B={args.budget} (extractive reader: no LLM)")
    for data in args.data:
        print(f"\n{data}")
        print(
            f"{'row':<48} {'group':<18} {'hits@1':>7} {'cov@B':>7} {'recall':>7} {'all@B':>7} "
            f"{'tok/q':>7} {'tok/ans':>7} {'n':>5}"
        )
        for row in args.rows:
            res = results[(data, row)]
            for g, m in res["groups"].items():
                print(
                    f"{row:<48} {g:<18} {m['hits@1']:>7.3f} {m['coverage']:>7.3f} "
                    f"{m['answer_recall']:>7.3f} {m['coverage_all_constraints']:>7.3f} "
                    f"{m['tok/q']:>7.1f} {m.get('tok/answer', math.nan):>7.1f} {m['n']:>5}"
                )
            if res["ledger"]:
                print(f"{'':<48} ledger {res['ledger']}")
    chains = {d: chain_hits1(d, args.split, args.budget, ledger, args.rerun_test)
              for d in args.chain_data}  # fmt: skip
    for d, (h, cite) in chains.items():
        print(f"chain {d} {DEFAULT_ROW} hits@1 {h:.3f} {cite}".rstrip())

    def pooled(group: str, key: str) -> float:
        """The default row's ``key`` over every set's ``group``, weighted by n."""
        parts = [
            r["groups"][group]
            for (d, row), r in results.items()
            if row == DEFAULT_ROW and group in r["groups"]
        ]
        n = sum(p["n"] for p in parts)
        return sum(p[key] * p["n"] for p in parts) / n if n else math.nan

    chain_min = min((h for h, _ in chains.values()), default=math.nan)
    print(
        f"beyond_chains conjunction_hits1={pooled('conjunction', 'hits@1'):.3f} "
        f"constraint_hits1={pooled('constraint', 'hits@1'):.3f} "
        f"many_answer_recall{args.recall_budget}="
        f"{pooled(f'many@{args.recall_budget}', 'answer_recall'):.3f} "
        f"chain_min_hits1={chain_min:.3f}"
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # a missing artifact is one line naming the command, a bug a traceback
        report(exc)
