"""Scale: build time, peak memory and query latency of LOKG's retrieval on a synthetic KG.

    python bench/bench_scale.py [--triples 10000000] [--entities N] [--queries 50] [--json F]

One size per process, so the peak RSS printed is that size's (``make bench`` runs 1M and 10M
in separate processes). The graph is the package's synthetic power-law KG
(:func:`lokg.data.synthetic.make_synthetic_kg`, |E| = triples / 10 unless given, 50 relations).

- ``generate``: drawing the synthetic triples (not part of a real build: a reader would parse
  files instead), reported apart.
- ``build``: from the ``[T, 3]`` id array to a query-ready graph: ``KnowledgeGraph`` (CSR in
  and out), Eq. (4)'s tail entropy H(r), in-degrees and in-relation diversity, and the first
  TAIMR retriever (the paper's, ``retriever=taimr``, with uniform attention: no GAT is
  trained on a synthetic graph), searched with a beam of 64 paths per hop (the rules'
  width): ``experiment=paper`` prunes nothing (``retriever.beam_width: null``, issue 26), and
  its unpruned 3-hop search over a 1M-triple graph with hubs did not finish 50 questions
  within the bench's 600 s (``make bench``, 2026-12-02); on 100k triples it reads p50 / p95
  cold 121 / 1,408 ms for 5 questions.
- ``query``: TAIMR's ``retrieve`` on questions along random 1-2 hop walks, with a hash-random
  sentence encoder (so the search is timed, not a transformer): "cold" is a fresh retriever
  (empty path cache) asked a question after one untimed warm-up about another topic, "warm"
  the same question again (bench/bench_taimr.py's protocol). p50 / p95 in ms.
- ``learned`` (``--walk-model pq2h`` or a ``qgat-*`` directory): the same questions through
  ``retriever=learned``, the walk model trained on that dataset's KB applied to the synthetic
  graph as to any unseen KG (inductive through relation names; no TransE e_r for it), with
  the real MiniLM encoder and the model's fine-tuned question encoder, so "cold" includes
  encoding the question. Its answers mean nothing on this graph; its latency is the default
  retriever's. The walk's per-graph index (``KnowledgeGraph.steps_by_relation``: every
  node's steps grouped by relation) is built once before the queries and its time printed
  apart. The beam walk is lazy
  (``normalization=vocabulary``): its cost grows with the beam and the fan-out of the nodes
  it expands, not with the L-hop ball.
- ``peak RSS``: ``ru_maxrss`` of this process at the end, GiB (with ``--walk-model``: after
  the encoders are loaded too).

Goals at 10M (issue 12): build ≤ 120 s, RSS ≤ 8 GiB, cold p50 ≤ 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import hydra
import numpy as np
from bench_taimr import RandomEncoder, _latency, _retriever_settings, synthetic_questions

from lokg.config import compose_config
from lokg.data.synthetic import make_synthetic_kg
from lokg.kg import KnowledgeGraph


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def learned_latency(kg: KnowledgeGraph, walk_model: str, qs, others) -> dict | None:
    """Cold / warm p50 and p95 (ms) of ``retriever=learned`` with ``walk_model`` on ``kg``
    (module doc), plus the model directory's name and the answers found; ``None`` (with a
    note) when ``walk_model`` names a dataset that has no trained walk model."""
    from _data import compose, load_datamodule

    from lokg.artifacts import default_walk_model

    model_dir = Path(walk_model)
    if not model_dir.is_dir():  # a dataset name: the model retriever=learned would use there
        root = load_datamodule(compose(walk_model)).artifact_dir
        found = default_walk_model(root)
        if found is None:
            print(
                f"note: retriever=learned not timed: no walk model for {walk_model} (run "
                f"`python train.py experiment=train_walk data={walk_model}`)",
                flush=True,
            )
            return None
        model_dir = found
    cfg = compose_config("evaluate", ["retriever=learned"], os.getcwd())
    factory = hydra.utils.instantiate(cfg.retriever)
    embedder = hydra.utils.instantiate(cfg.embedder)
    t0 = time.perf_counter()
    kg.steps_by_relation(True)  # built once per graph on the first walk: timed apart
    index_s = time.perf_counter() - t0
    stats, found = _latency(
        lambda: factory(kg=kg, embedder=embedder, model_dir=model_dir), qs, others
    )
    return {
        "model": model_dir.name,
        "answers_found": found,
        "step_index_s": index_s,
        **{f"{k}_ms": v for k, v in stats.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=10_000_000)
    ap.add_argument("--entities", type=int, default=None, help="default: triples / 10")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument(
        "--walk-model",
        default=None,
        help="also time retriever=learned with this walk model: a qgat-* directory, or a "
        "dataset name (its default-settings model, as retriever=learned picks it)",
    )
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

    # the paper's TAIMR (experiment=paper's retriever, configs/retriever/taimr.yaml) as
    # evaluate.py builds it; uniform attention: no GAT is trained on a synthetic graph; a
    # beam of 64 (module doc: the paper's unpruned search does not finish at this scale)
    cfg = compose_config(
        "evaluate",
        ["retriever=taimr", "retriever.attention=uniform", "retriever.beam_width=64"],
        os.getcwd(),
    )
    factory = hydra.utils.instantiate(cfg.retriever)
    embedder = RandomEncoder(model_id="bench/random")
    t0 = time.perf_counter()
    kg = KnowledgeGraph(ents, rels, ids, name=f"synthetic-{args.triples}")
    t_graph = time.perf_counter() - t0
    _ = (kg.relation_tail_entropy, kg.in_degree, kg.in_relation_diversity)
    t_stats = time.perf_counter() - t0 - t_graph
    factory(kg=kg, embedder=embedder)
    build_s = time.perf_counter() - t0
    t_retriever = build_s - t_graph - t_stats

    rng = np.random.default_rng(0)
    qs = synthetic_questions(kg, args.queries, rng)
    others = synthetic_questions(kg, 16, rng)
    stats, found = _latency(lambda: factory(kg=kg, embedder=embedder), qs, others)
    learned = learned_latency(kg, args.walk_model, qs, others) if args.walk_model else None
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
        **({f"learned_{k}": v for k, v in learned.items()} if learned else {}),
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
        + (
            f"\n  query (retriever=learned, {learned['model']}, MiniLM, n={len(qs)}, answers "
            f"found {learned['answers_found']}; the graph's steps_by_relation built once "
            f"in {learned['step_index_s']:.2f} s): "
            + "  ".join(f"{k[:-3]}={learned[k]:.1f}ms" for k in learned if k.endswith("_ms"))
            if learned
            else ""
        )
        + f"\n  peak RSS {out['peak_rss_gib']:.2f} GiB (after generating: {rss_gen:.2f} GiB); "
        f"1-min load average {out['load_avg_1min']:.1f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
