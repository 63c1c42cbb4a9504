"""ITTC on PathQuestion candidate sets: order σ*, TCR, tokens and triples per granularity.

    python bench/bench_ittc_pathquestion.py [--data pq2h pq3h pql2h pql3h] [--split val|test]
        [--limit N] [--budgets 128 256 512 1024 2048] [--encoder ittc|ittc_rank]
        [--override key=value ...]

Questions and graph (the dataset's whole KB, without SCOS) come from the package
(``configs/data/<name>.yaml`` and its split; see ``bench/_data.py``):
``--split val`` (the default) to choose settings, ``--split test`` to report a chosen one
once; ``--limit N`` takes the split's first N questions. The encoder is the ``encoder=``
config group's (default ``ittc``, the paper's), called with the budget per call.

A question's candidate set is its gold path followed by the 1-hop neighbourhood of the
path's entities (``lokg.kg.neighbourhood.bfs_triples``, both directions: each entity's
out-edges then in-edges, entities in path order), duplicates removed. E_query = the topic
entity; E_cand is empty (it is TAIMR's coarse-filter answer set, and the gold answer must not
leak into Eq. (10)).

Per budget B it prints the means over the questions of T_naive, the tokens sent (T_after),
TCR, the share of questions where the MCKP ran, the triples per granularity and dropped,
the encoding time per question, and greedy/DP (the greedy solver's value over the exact DP's,
on questions where the DP ran without drops). Everything printed is measured in the run.
"""

from __future__ import annotations

import argparse
import time

import hydra
import numpy as np
from _data import DATASETS, add_data_arguments, compose, load_datamodule, split_questions

from lokg.ittc import GRANULARITIES, ITTCEncoder, mckp
from lokg.ittc.value import triple_values
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.neighbourhood import bfs_triples
from lokg.typing import Question

BUDGETS = (128, 256, 512, 1024, 2048)


def candidates(kg: KnowledgeGraph, question: Question) -> np.ndarray:
    """``[N, 3]`` id triples: the gold path, then the 1-hop neighbourhood of its entities."""
    if not question.gold_path:
        raise ValueError(f"{question.id}: no gold path; this bench needs PathQuestion's paths")
    gold = np.array(
        [(kg.entities[h], kg.relations[r], kg.entities[t]) for h, r, t in question.gold_path],
        dtype=np.int64,
    ).reshape(-1, 3)
    path_entities = list(dict.fromkeys(int(e) for e in gold[:, [0, 2]].reshape(-1)))
    hood = kg.triples_np[bfs_triples(kg, path_entities, 1, None, "both")]
    rows = np.concatenate([gold, hood.reshape(-1, 3)])
    _, first = np.unique(rows, axis=0, return_index=True)
    return rows[np.sort(first)]


def greedy_over_dp(
    enc: ITTCEncoder, kg: KnowledgeGraph, cands: np.ndarray, topic: str, budget: int
) -> float | None:
    """Value of the greedy MCKP solution over the exact DP's on ``cands`` (None: no DP value)."""
    _, _, costs = enc.renderings(kg, cands)
    vals = triple_values(kg, cands, {kg.entities[topic]}, enc.betas, enc.lambda_boost)
    dp, gr = mckp.solve_dp(costs, vals, budget), mckp.solve_greedy(costs, vals, budget)
    if dp is None or gr is None or dp.value <= 0:
        return None
    return gr.value / dp.value


def bench_dataset(name: str, args: argparse.Namespace) -> None:
    cfg = compose(name, [f"encoder={args.encoder}", *args.override])
    enc = hydra.utils.instantiate(cfg.encoder)
    if not isinstance(enc, ITTCEncoder):
        raise ValueError(f"encoder={args.encoder} builds {type(enc).__name__}, not ITTCEncoder")
    dm = load_datamodule(cfg)
    kg = dm.kg
    questions = split_questions(dm, args.split, args.limit)
    tag = f"{dm.name}/{args.split}"
    sigma = enc.encoding_order(kg)
    u = ", ".join(f"{o}={v:.3f}" for o, v in sigma.prefix_uncertainty.items())
    h = ", ".join(f"H({c})={v:.3f}" for c, v in sigma.marginal_entropy.items())
    print(f"\n== {tag}: {kg!r}\n   {tag}: sigma* = {sigma.arrow()}   U: {u}\n   {tag}: {h}")
    cands = [candidates(kg, q) for q in questions]
    topics = [q.topic_entities[0] for q in questions]
    sizes = np.array([len(c) for c in cands])
    print(
        f"   {tag}: {len(questions)} questions, candidates/question mean {sizes.mean():.1f}, "
        f"median {np.median(sizes):.0f}, max {sizes.max()}; {enc!r}"
    )
    print(
        f"   {tag:<10} {'B':>5} {'T_naive':>8} {'tokens':>7} {'TCR':>6} {'MCKP%':>6} "
        + " ".join(f"{g:>8}" for g in GRANULARITIES)
        + f" {'dropped':>8} {'ms/q':>6} {'greedy/DP':>9}"
    )
    pairs = list(zip(cands, topics, strict=True))
    mckp.solve_dp(np.ones((1, 3), np.int64), np.ones((1, 3)), 1)  # compile the DP before timing
    for b in args.budgets:
        t0 = time.perf_counter()
        ctxs = [enc.encode(kg, c, budget=b, query_entities=[t]) for c, t in pairs]
        ms = (time.perf_counter() - t0) / len(ctxs) * 1e3
        over = sum(c.num_tokens > b for c in ctxs)
        counts = {
            k: np.mean([c.granularity_counts()[k] for c in ctxs])
            for k in (*GRANULARITIES, "naive", "dropped")
        }
        gaps = [
            g
            for (c, t), ctx in zip(pairs, ctxs, strict=True)
            if ctx.solver == "dp" and not len(ctx.dropped)
            for g in [greedy_over_dp(enc, kg, c, t, b)]
            if g is not None
        ]
        gap = f"{np.mean(gaps):.4f}" if gaps else "n/a"
        print(
            f"   {tag:<10} {b:>5} {np.mean([c.naive_tokens for c in ctxs]):>8.1f} "
            f"{np.mean([c.num_tokens for c in ctxs]):>7.1f} "
            f"{np.mean([c.tcr for c in ctxs]):>6.3f} "
            f"{100 * np.mean([c.solver in ('dp', 'greedy') for c in ctxs]):>5.0f}% "
            + " ".join(f"{counts[g]:>8.1f}" for g in GRANULARITIES)
            + f" {counts['dropped']:>8.1f} {ms:>6.1f} {gap:>9}"
            + (f"  (naive {counts['naive']:.1f})" if counts["naive"] else "")
            + (f"  OVER BUDGET x{over}" if over else ""),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(parser, default=DATASETS)
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument(
        "--encoder", default="ittc", help="an ITTC config of configs/encoder/ (ittc, ittc_rank)"
    )
    parser.add_argument(
        "--override",
        nargs="*",
        default=[],
        help="further config overrides, e.g. data.source.inverse=never (the KB as given)",
    )
    args = parser.parse_args()
    for name in args.data:
        bench_dataset(name, args)


if __name__ == "__main__":
    main()
