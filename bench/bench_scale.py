"""Scale: build time, peak memory and query latency of LOKG's retrieval on a synthetic KG.

    python bench/bench_scale.py [--triples 10000000] [--entities N] [--queries 50] [--json F]

One size per process, so the peak RSS printed is that size's (``make bench`` runs 1M and 10M
in separate processes). The graph is the package's synthetic power-law KG
(:func:`lokg.data.synthetic.make_synthetic_kg`, |E| = triples / 10 unless given, 50 relations).

- ``generate``: drawing the synthetic triples (not part of a real build: a reader would parse
  files instead), reported apart.
- ``build``: from the ``[T, 3]`` id array to a query-ready graph: ``KnowledgeGraph`` (CSR in
  and out), Eq. (4)'s tail entropy H(r), in-degrees and in-relation diversity, and the first
  TAIMR retriever (uniform attention: no GAT is trained on a synthetic graph).
- ``query``: TAIMR's ``retrieve`` on questions along random 1-2 hop walks, with a hash-random
  sentence encoder (so the search is timed, not a transformer): "cold" is a fresh retriever
  (empty path cache) asked a question after one untimed warm-up about another topic, "warm"
  the same question again (bench/bench_taimr.py's protocol). p50 / p95 in ms.
- ``peak RSS``: ``ru_maxrss`` of this process at the end, GiB.

Goals at 10M (issue 12): build ≤ 120 s, RSS ≤ 8 GiB, cold p50 ≤ 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import hydra
import numpy as np
from bench_taimr import RandomEncoder, _latency, _retriever_settings, synthetic_questions

from lokg.config import compose_config
from lokg.data.synthetic import make_synthetic_kg
from lokg.kg import KnowledgeGraph


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=10_000_000)
    ap.add_argument("--entities", type=int, default=None, help="default: triples / 10")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()
    n_ent = args.entities or max(1000, args.triples // 10)

    t0 = time.perf_counter()
    syn = make_synthetic_kg(
        num_entities=n_ent, num_triples=args.triples, num_relations=50, num_synonyms=5,
        alpha=0.9, seed=0, name=f"synthetic-{args.triples}",
    )  # fmt: skip
    gen_s = time.perf_counter() - t0
    ids = np.ascontiguousarray(syn.kg.triples_np)
    ents, rels = syn.kg.entities, syn.kg.relations
    del syn
    rss_gen = peak_rss_gib()

    # the retriever's factory exactly as evaluate.py builds it (configs/retriever/taimr.yaml)
    cfg = compose_config("evaluate", ["retriever.attention=uniform"], os.getcwd())
    factory = hydra.utils.instantiate(cfg.retriever)
    enc = RandomEncoder(model_id="bench/random")
    t0 = time.perf_counter()
    kg = KnowledgeGraph(ents, rels, ids, name=f"synthetic-{args.triples}")
    t_graph = time.perf_counter() - t0
    _ = (kg.relation_tail_entropy, kg.in_degree, kg.in_relation_diversity)
    t_stats = time.perf_counter() - t0 - t_graph
    factory(kg=kg, encoder=enc)
    build_s = time.perf_counter() - t0
    t_retriever = build_s - t_graph - t_stats

    rng = np.random.default_rng(0)
    qs = synthetic_questions(kg, args.queries, rng)
    others = synthetic_questions(kg, 16, rng)
    stats, found = _latency(lambda: factory(kg=kg, encoder=enc), qs, others)
    out = {
        "triples": int(kg.num_triples),
        "entities": int(kg.num_entities),
        "relations": int(kg.num_relations),
        "generate_s": gen_s,
        "build_s": build_s,
        "build_graph_s": t_graph,
        "build_stats_s": t_stats,
        "build_retriever_s": t_retriever,
        "peak_rss_gib": peak_rss_gib(),
        "peak_rss_after_generate_gib": rss_gen,
        "queries": len(qs),
        "answers_found": found,
        **{f"{k}_ms": v for k, v in stats.items()},
        "load_avg_1min": os.getloadavg()[0],
    }
    print(
        f"{kg.name}: {kg.num_triples:,} triples, {kg.num_entities:,} entities, "
        f"{kg.num_relations} relations (generated in {gen_s:.1f} s)\n"
        f"  build {build_s:.1f} s = KnowledgeGraph {t_graph:.1f} s + H(r)/degrees "
        f"{t_stats:.1f} s + TAIMR retriever {t_retriever:.2f} s\n"
        f"  query ({_retriever_settings(cfg)}, random encoder, n={len(qs)}, answers found "
        f"{found}): "
        + "  ".join(f"{k}={v:.1f}ms" for k, v in stats.items())
        + f"\n  peak RSS {out['peak_rss_gib']:.2f} GiB (after generating: {rss_gen:.2f} GiB); "
        f"1-min load average {out['load_avg_1min']:.1f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
