"""TAIMR measurements: retrieval quality on PathQuestion and query latency.

    python bench/bench_taimr.py quality --data DIR [--datasets PQ-2H PQ-3H ...]
    python bench/bench_taimr.py latency --data DIR

``quality`` prints, per dataset and configuration, the answer recall of the K_top paths
(a gold answer is among their end entities) and the retriever-only Hits@1 (top of S_final)
on a deterministic 80/10/10 split (seeded permutation, seed 0) of the questions; the whole
KB is the graph.  Everything printed is measured in the run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.linking import RelationLinker
from lokg.taimr.path_cache import PathCache
from lokg.taimr.retriever import SemanticRetriever, TAIMRRetriever
from lokg.taimr.topology import uniform_log_attention
from lokg.typing import Question

KB_OF = {
    "PQ-2H": "2H-kb.txt",
    "PQ-3H": "3H-kb.txt",
    "PQL-2H": "PQL2-KB.txt",
    "PQL-3H": "PQL3-KB.txt",
}


def read_kb(path: Path) -> KnowledgeGraph:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 3:
            rows.append(tuple(p.strip() for p in parts))
    return KnowledgeGraph.from_labeled_triples(rows, name=path.stem)


def read_questions(path: Path) -> list[Question]:
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        parts = line.strip().split("\t")
        if len(parts) != 3:
            continue
        text, ans, path_str = parts
        answers = tuple(a for a in ans[ans.index("(") + 1 : ans.rindex(")")].split("/") if a)
        elems = [e for e in path_str.split("#") if e != "<end>"]
        hops = (len(elems) - 1) // 2
        gold = tuple((elems[2 * k], elems[2 * k + 1], elems[2 * k + 2]) for k in range(hops))
        out.append(Question(f"{path.stem}-{i}", text.strip(), answers, (elems[0],), gold))
    return out


def split(questions: list[Question], seed: int = 0) -> dict[str, list[Question]]:
    perm = np.random.default_rng(seed).permutation(len(questions))
    n_train, n_val = int(0.8 * len(perm)), int(0.1 * len(perm))
    pick = lambda idx: [questions[i] for i in idx]  # noqa: E731
    return {
        "train": pick(perm[:n_train]),
        "val": pick(perm[n_train : n_train + n_val]),
        "test": pick(perm[n_train + n_val :]),
    }


def evaluate(retriever, questions: list[Question]) -> tuple[float, float, float]:
    hits = recall = 0
    times = []
    for q in questions:
        t0 = time.perf_counter()
        res = retriever.retrieve(q.text, q.topic_entities)
        times.append(time.perf_counter() - t0)
        gold = set(q.answers)
        hits += res.top_answer in gold
        recall += any(retriever.kg.entities.label(p.answer) in gold for p in res.paths)
    n = max(len(questions), 1)
    return hits / n, recall / n, float(np.median(times) * 1e3)


def quality(args: argparse.Namespace) -> None:
    encoder = SentenceEncoder(cache_dir=args.cache)
    for name in args.datasets:
        kg = read_kb(args.data / KB_OF[name])
        splits = split(read_questions(args.data / f"{name}.txt"))
        test = splits["test"][: args.limit] if args.limit else splits["test"]
        mu = node_information_gain(kg)
        log_alpha = uniform_log_attention(kg)
        linker = RelationLinker(kg, encoder)
        linker.fit(splits["train"])
        configs = {
            "semantic (retriever=off)": SemanticRetriever(kg, encoder),
            "paper S_topo+S_sem, no linking": TAIMRRetriever(
                kg, encoder, PathCache(kg, log_alpha, mu), relation_linking="off"
            ),
            "linking, uniform alpha, mu": TAIMRRetriever(
                kg, encoder, PathCache(kg, log_alpha, mu), linker
            ),
            "linking, uniform alpha, no mu": TAIMRRetriever(
                kg, encoder, PathCache(kg, log_alpha, mu, lambda_topo=0.0), linker
            ),
        }
        for label, retriever in configs.items():
            h1, rec, p50 = evaluate(retriever, test)
            print(
                f"{name:7s} test n={len(test):4d}  {label:34s} hits@1={h1:.3f} "
                f"paths_recall={rec:.3f}  p50={p50:.1f}ms",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--data", type=Path, required=True)
    q.add_argument("--datasets", nargs="+", default=["PQ-2H", "PQ-3H"])
    q.add_argument("--cache", type=Path, default=None)
    q.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    if args.cmd == "quality":
        quality(args)


if __name__ == "__main__":
    main()
