"""ITTC on PathQuestion candidate sets: order σ*, TCR, tokens and triples per granularity.

Until TAIMR provides candidates, a question's candidate set is its gold path followed by the
1-hop neighbourhood of the path's entities (every KB triple whose head or tail is on the
path, in KB order), duplicates removed.  E_query = the topic entity; E_cand is empty (it is
TAIMR's coarse-filter answer set, and the gold answer must not leak into Eq. (10)).

    .venv/bin/python bench/bench_ittc_pathquestion.py [--questions 200] [--seed 0]

Reads the in-repo copy ``lokg/resources/data/pathquestion``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from lokg.ittc import GRANULARITIES, ITTCEncoder, mckp
from lokg.ittc.value import triple_values
from lokg.kg.graph import KnowledgeGraph

DATA = Path(__file__).resolve().parents[1] / "lokg" / "resources" / "data" / "pathquestion"
DATASETS = {  # name: (questions file, KB file)
    "PQ-2H": ("PQ-2H.txt", "2H-kb.txt"),
    "PQ-3H": ("PQ-3H.txt", "3H-kb.txt"),
    "PQL-2H": ("PQL-2H.txt", "PQL2-KB.txt"),
    "PQL-3H": ("PQL-3H.txt", "PQL3-KB.txt"),
}
BUDGETS = (128, 256, 512, 1024, 2048)


def read_kb(path: Path) -> KnowledgeGraph:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            parts = line.strip().split("\t")
            if len(parts) != 3:
                raise ValueError(f"{path}:{n}: expected subject<TAB>relation<TAB>object")
            rows.append(tuple(parts))
    return KnowledgeGraph.from_labeled_triples(rows, name=path.stem)


def read_paths(path: Path) -> list[list[tuple[str, str, str]]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        hops = line.rstrip("\n").split("\t")[2].strip().split("#")
        if "<end>" in hops:
            hops = hops[: hops.index("<end>")]
        out.append([(hops[i], hops[i + 1], hops[i + 2]) for i in range(0, len(hops) - 2, 2)])
    return out


def candidates(kg: KnowledgeGraph, gold: list[tuple[str, str, str]]) -> np.ndarray:
    ids = [(kg.entities[h], kg.relations[r], kg.entities[t]) for h, r, t in gold]
    ents = sorted({e for h, _, t in ids for e in (h, t)})
    hood = np.concatenate([np.concatenate([kg.out_triples(e), kg.in_triples(e)]) for e in ents])
    rows = np.concatenate([np.asarray(ids, dtype=np.int64), kg.triples_np[np.unique(hood)]])
    _, first = np.unique(rows, axis=0, return_index=True)
    return rows[np.sort(first)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200, help="sampled per dataset")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    enc = ITTCEncoder()
    for name, (qfile, kbfile) in DATASETS.items():
        kg = read_kb(DATA / kbfile)
        paths = read_paths(DATA / qfile)
        pick = rng.choice(len(paths), size=min(args.questions, len(paths)), replace=False)
        sigma = enc.encoding_order(kg)
        u = ", ".join(f"{o}={v:.3f}" for o, v in sigma.prefix_uncertainty.items())
        h = ", ".join(f"H({c})={v:.3f}" for c, v in sigma.marginal_entropy.items())
        print(f"\n== {name}: {kg!r}\n   sigma* = {sigma.arrow()}   U: {u}\n   {h}")
        cands = [candidates(kg, paths[i]) for i in pick]
        topics = [paths[i][0][0] for i in pick]
        sizes = np.array([len(c) for c in cands])
        print(
            f"   {len(pick)} questions, candidates/question mean {sizes.mean():.1f}, "
            f"median {np.median(sizes):.0f}, max {sizes.max()}"
        )
        print(
            f"   {'B':>5} {'T_naive':>8} {'tokens':>7} {'TCR':>6} {'MCKP%':>6} "
            + " ".join(f"{g:>8}" for g in GRANULARITIES)
            + f" {'dropped':>8} {'ms/q':>6} {'greedy/DP':>9}"
        )
        for b in BUDGETS:
            t0 = time.perf_counter()
            ctxs = [
                enc.encode(kg, c, budget=b, query_entities=[t])
                for c, t in zip(cands, topics, strict=True)
            ]
            ms = (time.perf_counter() - t0) / len(ctxs) * 1e3
            assert all(c.num_tokens <= b for c in ctxs)
            counts = {
                k: np.mean([c.granularity_counts()[k] for c in ctxs])
                for k in (*GRANULARITIES, "naive", "dropped")
            }
            gaps = []
            for c, t, ctx in zip(cands, topics, ctxs, strict=True):
                if ctx.solver != "dp" or len(ctx.dropped):
                    continue
                _, _, costs = enc.renderings(kg, c)
                vals = triple_values(kg, c, {kg.entities[t]}, enc.betas, enc.lambda_boost)
                dp, gr = mckp.solve_dp(costs, vals, b), mckp.solve_greedy(costs, vals, b)
                if dp is not None and dp.value > 0:
                    gaps.append(gr.value / dp.value)
            gap = f"{np.mean(gaps):.4f}" if gaps else "n/a"
            print(
                f"   {b:>5} {np.mean([c.naive_tokens for c in ctxs]):>8.1f} "
                f"{np.mean([c.num_tokens for c in ctxs]):>7.1f} "
                f"{np.mean([c.tcr for c in ctxs]):>6.3f} "
                f"{100 * np.mean([c.solver in ('dp', 'greedy') for c in ctxs]):>5.0f}% "
                + " ".join(f"{counts[g]:>8.1f}" for g in GRANULARITIES)
                + f" {counts['dropped']:>8.1f} {ms:>6.1f} {gap:>9}"
                + (f"  (naive {counts['naive']:.1f})" if counts["naive"] else "")
            )


if __name__ == "__main__":
    main()
