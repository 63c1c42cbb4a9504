"""Scale: build time, peak memory and query latency of LOKG's retrieval on a synthetic KG.

    python bench/bench_scale.py --triples N --walk-model pq2h [--queries 50] [--json F]

One size per process, so the peak RSS printed is that size's (``make bench`` runs 1M and 10M
in separate processes; 100M runs only by hand: ``--triples 100000000``, docs/results.md).
The graph is the package's synthetic power-law KG (:func:`lokg.data.synthetic.make_synthetic_kg`,
|E| = triples / 10 unless given, 50 relations).

- ``generate``: drawing the synthetic triples in a child process, which writes the ``[T, 3]``
  ids to a temporary ``.npy`` that this process reads (as a reader would parse a KG's files):
  not part of a real build, so neither its time nor its memory (printed apart) is the build's.
- ``build``: from the ``[T, 3]`` id array to a query-ready graph: ``KnowledgeGraph`` (the
  vocabularies, CSR in and out), Eq. (4)'s tail entropy H(r), in-degrees and in-relation
  diversity, the learned walk's per-graph step index (:class:`lokg.kg.steps.StepIndex`:
  every node's steps grouped by relation, both directions) and the paper's TAIMR retriever.
- ``open``: the graph and its step index saved to a temporary directory, then opened by a
  second process (``KnowledgeGraph.load(mmap=True)`` + ``steps_by_relation``, memory-mapped):
  what every later run on a prepared graph pays instead of the build (``--no-open``: skipped).
- ``learned`` (``--walk-model``, the default retriever): ``retriever=learned`` on questions
  along random 1-2 hop walks, the walk model applied to the synthetic graph as to any unseen
  KG (inductive through relation names; no TransE e_r for it), with the real MiniLM encoder
  and the model's fine-tuned question encoder, so "cold" includes encoding the question.
  "Cold" is a fresh retriever (empty step cache) asked a question after one untimed warm-up
  about another topic, "warm" the same question again (bench/bench_taimr.py's protocol); p50 /
  p95 in ms. Its answers mean nothing on this graph; its latency is the default retriever's.
  ``--walk-model`` is a ``qgat-*`` directory or a dataset name: that dataset's walk trained
  with the default settings (``python train.py experiment=train_walk data=<name>``), else the
  pretrained walk shipped in the package; a walk whose settings need each topic's whole L-hop
  ball (``graph_context`` / ``normalization=node``) is timed only when named by directory.
- ``taimr``: the paper's TAIMR (``retriever=taimr``, uniform attention: no GAT is trained on a
  synthetic graph; a beam of 64: ``experiment=paper``'s unpruned search does not finish at 1M
  triples, issue 26) with a hash-random sentence encoder, so the search is timed.
- ``peak RSS``: this process's peak at the end, GiB (the ids read, the build, the encoders and
  the queries; not the drawing, which its child did).

The last line is ``scale n=<N> build_s=.. rss_gib=.. cold_p50_ms=.. warm_p50_ms=..`` (the
learned walk's latencies). Goals on a 24 GiB machine (issue 41): 10M build <= 120 s, RSS <= 4
GiB; 100M build <= 20 min, RSS <= 16 GiB, cold p50 <= 50 ms, warm <= 10 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import hydra
import numpy as np
from bench_taimr import RandomEncoder, _latency, _retriever_settings, synthetic_questions

from lokg.config import compose_config
from lokg.data.synthetic import make_synthetic_kg
from lokg.kg import KnowledgeGraph

#: the synthetic graph's relations (50, 5 of them planted synonyms)
NUM_RELATIONS = 50


def peak_rss_gib() -> float:
    """This process's peak RSS, GiB: ``VmHWM`` (reset by ``exec``, so a child started by
    this bench counts only itself), else ``ru_maxrss`` (which keeps the parent's peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


class NoWalkModel(Exception):
    """``--walk-model`` names nothing this bench can time (the message says what to run)."""


def resolve_walk_model(walk_model: str) -> tuple[Path, str]:
    """The ``qgat-*`` directory ``--walk-model`` names and how it was found (module doc)."""
    from lokg.taimr.walk import artifact

    path = Path(walk_model)
    if path.is_dir():
        return path, "given"
    from _data import compose, load_datamodule

    root = load_datamodule(compose(walk_model)).artifact_dir
    # trained with the default settings only: "the latest trained" may be an ablation that
    # walks each topic's whole L-hop ball, which no size here is meant to time
    found = artifact.walk_models(root)
    if found:
        return found[0], f"{walk_model}'s default walk"
    shipped = getattr(artifact, "pretrained_walk", lambda: None)()
    if shipped is not None:
        return shipped, f"the pretrained walk (no default walk on {walk_model})"
    raise NoWalkModel(
        f"--walk-model {walk_model}: no walk model trained with the default settings under "
        f"{root} and no pretrained walk in the package; run `python train.py "
        f"experiment=train_transe data={walk_model}` then `python train.py "
        f"experiment=train_walk data={walk_model}`, or pass a qgat-* directory"
    )


def learned_latency(kg: KnowledgeGraph, walk_model: str, qs, others) -> dict:
    """Cold / warm p50 and p95 (ms) of ``retriever=learned`` with ``walk_model`` on ``kg``
    (module doc), plus the model directory's name and the answers found."""
    from lokg.taimr.walk.artifact import load_walk_network

    model_dir, how = resolve_walk_model(walk_model)
    net, _, _ = load_walk_network(model_dir.resolve())
    if not net.steps_only and how != "given":
        raise NoWalkModel(f"{model_dir}: this walk reads each topic's whole L-hop ball")
    cfg = compose_config("evaluate", ["retriever=learned"], os.getcwd())
    factory = hydra.utils.instantiate(cfg.retriever)
    embedder = hydra.utils.instantiate(cfg.embedder)
    stats, found = _latency(
        lambda: factory(kg=kg, embedder=embedder, model_dir=model_dir), qs, others
    )
    return {
        "model": model_dir.name,
        "found_as": how,
        "lazy": bool(net.steps_only),
        "answers_found": found,
        **{f"{k}_ms": v for k, v in stats.items()},
    }


def open_in_second_process(kg: KnowledgeGraph) -> dict:
    """Save ``kg`` and its step index (built) to a temporary directory, then time a second
    process opening both memory-mapped (module doc)."""
    with tempfile.TemporaryDirectory(prefix="lokg-scale-") as tmp:
        t0 = time.perf_counter()
        kg.save(Path(tmp) / "kg")
        save_s = time.perf_counter() - t0
        proc = subprocess.run(
            [sys.executable, __file__, "--open", str(Path(tmp) / "kg")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        child = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"save_s": save_s, **child}


def open_only(directory: str) -> None:
    """``--open DIR`` (the second process): time opening a saved graph and its step index."""
    t0 = time.perf_counter()
    kg = KnowledgeGraph.load(directory, mmap=True)
    graph_s = time.perf_counter() - t0
    index = kg.steps_by_relation(True)
    steps_s = time.perf_counter() - t0 - graph_s
    mapped = isinstance(index.triple, np.memmap)
    print(json.dumps({"open_graph_s": graph_s, "open_steps_s": steps_s, "steps_mapped": mapped,
                      "open_rss_gib": peak_rss_gib()}))  # fmt: skip


def generate_only(path: str, triples: int, entities: int) -> None:
    """``--generate PATH`` (a child process): draw the synthetic graph and write its ``[T, 3]``
    ids to ``PATH``, so the drawing's memory is not this bench's build's."""
    t0 = time.perf_counter()
    syn = make_synthetic_kg(
        num_entities=entities, num_triples=triples, num_relations=NUM_RELATIONS,
        num_synonyms=5, alpha=0.9, seed=0, name=f"synthetic-{triples}",
    )  # fmt: skip
    gen_s = time.perf_counter() - t0
    np.save(path, np.ascontiguousarray(syn.kg.triples_np))
    print(json.dumps({"generate_s": gen_s, "generate_rss_gib": peak_rss_gib()}))


def generate(triples: int, entities: int) -> tuple[np.ndarray, dict]:
    """The synthetic ``[T, 3]`` ids, drawn by a child process (:func:`generate_only`) and read
    here as a reader would read a KG's files; the drawing's seconds and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="lokg-scale-") as tmp:
        path = Path(tmp) / "triples.npy"
        argv = [sys.executable, __file__, "--generate", str(path), "--triples", str(triples),
                "--entities", str(entities)]  # fmt: skip
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"generating the graph failed:\n{proc.stderr[-2000:]}")
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        t0 = time.perf_counter()
        ids = np.load(path)
        info["read_s"] = time.perf_counter() - t0
    return ids, info


def build(ids: np.ndarray, n_ent: int, name: str) -> tuple[KnowledgeGraph, dict, object]:
    """The query-ready graph, the TAIMR retriever factory and each stage's seconds."""
    # the paper's TAIMR (experiment=paper's retriever) as evaluate.py builds it; uniform
    # attention: no GAT is trained on a synthetic graph; a beam of 64 (module doc)
    cfg = compose_config(
        "evaluate",
        ["retriever=taimr", "retriever.attention=uniform", "retriever.beam_width=64"],
        os.getcwd(),
    )
    factory = hydra.utils.instantiate(cfg.retriever)
    times, t0 = {}, time.perf_counter()
    # the generator's labels (e0..., r0...) and ids: the vocabularies are part of the build
    kg = KnowledgeGraph.from_ids(ids, n_ent, NUM_RELATIONS, name=name)
    times["graph_s"] = time.perf_counter() - t0
    _ = (kg.relation_tail_entropy, kg.in_degree, kg.in_relation_diversity)
    times["stats_s"] = time.perf_counter() - t0 - sum(times.values())
    kg.steps_by_relation(True)  # the learned walk's per-graph index, built once
    times["step_index_s"] = time.perf_counter() - t0 - sum(times.values())
    factory(kg=kg, embedder=RandomEncoder(model_id="bench/random"))
    times["taimr_s"] = time.perf_counter() - t0 - sum(times.values())
    return kg, times, (factory, cfg)


def report(out: dict, settings: str) -> str:
    """The lines printed (module doc), the ``scale n=...`` line last."""
    lw = out.get("learned")
    cold, warm = (lw["cold_p50_ms"], lw["warm_p50_ms"]) if lw else (None, None)
    fmt = lambda x: "none" if x is None else f"{x:.1f}"  # noqa: E731
    b = out["build"]
    lines = [
        f"synthetic-{out['triples']}: {out['triples']:,} triples, {out['entities']:,} entities, "
        f"{out['relations']} relations (generated in {out['generate_s']:.1f} s by a child "
        f"process, its peak RSS {out['generate_rss_gib']:.2f} GiB; ids read here in "
        f"{out['read_s']:.1f} s, RSS then {out['peak_rss_after_read_gib']:.2f} GiB)",
        f"  build {out['build_s']:.1f} s = KnowledgeGraph {b['graph_s']:.1f} s + H(r)/degrees "
        f"{b['stats_s']:.1f} s + step index {b['step_index_s']:.2f} s + TAIMR retriever "
        f"{b['taimr_s']:.2f} s (RSS after build {out['peak_rss_after_build_gib']:.2f} GiB)",
    ]
    if "open" in out:
        o = out["open"]
        lines.append(
            f"  open in a second process: graph {o['open_graph_s']:.2f} s + step index "
            f"{o['open_steps_s']:.2f} s (memory-mapped: {o['steps_mapped']}; its RSS "
            f"{o['open_rss_gib']:.2f} GiB; saved once in {o['save_s']:.1f} s)"
        )
    if lw:
        lines.append(
            f"  learned walk (retriever=learned, {lw['model']}: {lw['found_as']}, MiniLM, "
            f"n={out['queries']}, answers found {lw['answers_found']}): "
            + "  ".join(f"{k[:-3]}={lw[k]:.1f}ms" for k in lw if k.endswith("_ms"))
        )
    t = out["taimr"]
    lines += [
        f"  TAIMR ({settings}, random encoder, n={out['queries']}, answers found "
        f"{t['answers_found']}): " + "  ".join(f"{k[:-3]}={t[k]:.1f}ms" for k in t if "ms" in k),
        f"  peak RSS {out['peak_rss_gib']:.2f} GiB; 1-min load average "
        f"{out['load_avg_1min']:.1f} on {os.cpu_count()} CPUs",
        f"scale n={out['triples']} build_s={out['build_s']:.1f} rss_gib={out['peak_rss_gib']:.2f} "
        f"cold_p50_ms={fmt(cold)} warm_p50_ms={fmt(warm)}",
    ]
    return "\n".join(lines)


def measure(args: argparse.Namespace) -> dict:
    """Every figure of one size (module doc)."""
    n_ent = args.entities or max(1000, args.triples // 10)
    ids, gen = generate(args.triples, n_ent)
    rss_read = peak_rss_gib()
    kg, times, (factory, cfg) = build(ids, n_ent, f"synthetic-{args.triples}")
    del ids
    out = {
        "triples": int(kg.num_triples),
        "entities": int(kg.num_entities),
        "relations": int(kg.num_relations),
        "generate_s": gen["generate_s"],
        "generate_rss_gib": gen["generate_rss_gib"],
        "read_s": gen["read_s"],
        "build_s": sum(times.values()),
        "build": times,
        "peak_rss_after_read_gib": rss_read,
        "peak_rss_after_build_gib": peak_rss_gib(),
        "queries": args.queries,
    }
    if args.open:
        out["open"] = open_in_second_process(kg)
    rng = np.random.default_rng(0)
    qs = synthetic_questions(kg, args.queries, rng)
    others = synthetic_questions(kg, 16, rng)
    if args.walk_model:
        out["learned"] = learned_latency(kg, args.walk_model, qs, others)
    embedder = RandomEncoder(model_id="bench/random")
    stats, found = _latency(lambda: factory(kg=kg, embedder=embedder), qs, others)
    out["taimr"] = {"answers_found": found, **{f"{k}_ms": v for k, v in stats.items()}}
    out["taimr_settings"] = _retriever_settings(cfg)
    out["peak_rss_gib"] = peak_rss_gib()
    out["load_avg_1min"] = os.getloadavg()[0]
    return out


def flat(out: dict) -> dict:
    """The JSON ``make bench`` reads (bench/run_all.py): the nested figures flattened, the
    learned walk's as ``learned_*``, TAIMR's under their plain names (as before)."""
    keep = {k: v for k, v in out.items() if not isinstance(v, dict)}
    keep.update({f"build_{k}": v for k, v in out["build"].items()})
    keep.update(out["taimr"])
    keep.update(out.get("open", {}))
    keep.update({f"learned_{k}": v for k, v in out.get("learned", {}).items()})
    return keep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=10_000_000)
    ap.add_argument("--entities", type=int, default=None, help="default: triples / 10")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument(
        "--walk-model",
        default=None,
        help="time retriever=learned with this walk model: a qgat-* directory, or a dataset "
        "name (its default-settings walk, else the package's pretrained walk)",
    )
    ap.add_argument("--no-open", dest="open", action="store_false",
                    help="skip saving the graph and opening it in a second process")  # fmt: skip
    ap.add_argument("--open", dest="open_dir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--generate", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.open_dir:
        return open_only(args.open_dir)
    if args.generate:
        n_ent = args.entities or max(1000, args.triples // 10)
        return generate_only(args.generate, args.triples, n_ent)
    try:
        out = measure(args)
    except NoWalkModel as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(2)
    print(report(out, out["taimr_settings"]), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(flat(out), f, indent=1)


if __name__ == "__main__":
    main()
