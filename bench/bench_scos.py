"""Time SCOS for |R| = 100, 400, 1600, 6400 relations on synthetic graphs; measure quality.

Usage:
    ``python bench/bench_scos.py timing [--sizes 100 400 1600 6400] [--triples-per-relation 50]``
    ``python bench/bench_scos.py quality [--kb FILE ...] [--synthetic] [--epochs 100]``

``quality`` trains TransE (the Lightning module, CPU) on each whole KB file, runs SCOS with the
paper's settings and prints |R0| -> |R*|, L_info and rho-hat; with ``--synthetic`` also the
precision / recall of the planted synonym pairs.

Each graph has ``triples_per_relation * |R|`` triples, ``|R| / 10`` planted synonyms and
random relation embeddings whose planted synonyms are noisy copies of their base (timing
only: the embeddings stand in for a trained TransE).  Prints the time per size and the
growth ratio between consecutive sizes next to the ratio |R|^2 log |R| predicts.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

import numpy as np

from lokg.data.synthetic import make_synthetic_kg
from lokg.kg.graph import KnowledgeGraph
from lokg.scos import SCOSResult, compress


def run(num_relations: int, triples_per_relation: int, seed: int) -> tuple[float, int, int]:
    syn = make_synthetic_kg(
        num_entities=max(1000, 20 * num_relations),
        num_triples=triples_per_relation * num_relations,
        num_relations=num_relations,
        num_synonyms=num_relations // 10,
        num_types=20,
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(num_relations, 64))
    base, planted = syn.synonym_pairs[:, 0], syn.synonym_pairs[:, 1]
    emb[planted] = emb[base] + 0.3 * rng.normal(size=(len(planted), 64))
    start = time.perf_counter()
    result = compress(syn.kg, emb)
    return time.perf_counter() - start, len(result.report), syn.kg.num_triples


def train_transe(kg: KnowledgeGraph, epochs: int, seed: int) -> np.ndarray:
    """``[R, 64]`` relation embeddings of a TransE trained on every triple of ``kg``."""
    import pytorch_lightning as pl
    from torch.utils.data import DataLoader

    from lokg.models.transe_module import TransEModule

    pl.seed_everything(seed, workers=True)
    module = TransEModule(kg.num_entities, kg.num_relations)
    module.attach_triples(train_triples=kg.triples, known_triples=kg.triples)
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, DataLoader(kg.triples, batch_size=512, shuffle=True))
    return module.relation_embeddings()


def merged_pairs(result: SCOSResult) -> set[tuple[int, int]]:
    """Unordered pairs of original relation ids that SCOS put in one cluster."""
    pairs = set()
    for c in np.unique(result.mapping):
        members = np.flatnonzero(result.mapping == c).tolist()
        pairs |= {(a, b) for i, a in enumerate(members) for b in members[i + 1 :]}
    return pairs


def describe(name: str, result: SCOSResult, seconds: float) -> None:
    print(
        f"{name}: |R0| = {result.num_original} -> |R*| = {result.num_compressed}, "
        f"merges {len(result.report)}, L_info = {result.info_loss:.4f}, "
        f"rho_hat = {result.rho_hat:.4f}  (SCOS {seconds:.2f} s)"
    )
    for m in result.report[:15]:
        print(
            f"    {'+'.join(m.left)} <- {'+'.join(m.right)}: sim {m.similarity:.3f} "
            f">= {m.threshold:.3f} (NMI {m.nmi:.2f} J {m.jaccard:.2f} cos {m.cosine:.2f})"
        )


def quality(args: argparse.Namespace) -> None:
    from lokg.kg.io import read_kg

    for path in args.kb:
        kg, _ = read_kg(path)
        emb = train_transe(kg, args.epochs, args.seed)
        for source in ("signature",):
            start = time.perf_counter()
            result = compress(kg, emb, type_source=source)
            describe(
                f"{kg.name} [{kg.num_triples} triples, types={source}]",
                result,
                time.perf_counter() - start,
            )
    if args.synthetic:
        syn = make_synthetic_kg(
            num_entities=5000,
            num_triples=50_000,
            num_relations=100,
            num_synonyms=10,
            num_types=10,
            seed=args.seed,
        )
        emb = train_transe(syn.kg, args.epochs, args.seed)
        planted = syn.synonym_pair_set()
        for source in ("attributes", "signature"):
            start = time.perf_counter()
            result = compress(syn.kg, emb, type_source=source)
            seconds = time.perf_counter() - start
            found = merged_pairs(result)
            hit = len(found & planted)
            precision = hit / len(found) if found else 1.0
            describe(f"synthetic [{syn.kg.num_triples} triples, types={source}]", result, seconds)
            print(
                f"    planted pairs {len(planted)}, merged pairs {len(found)}, "
                f"precision {precision:.3f}, recall {hit / len(planted):.3f}"
            )


def timing(args: argparse.Namespace) -> None:
    rows = []
    for r in args.sizes:
        seconds, merges, triples = run(r, args.triples_per_relation, args.seed)
        rows.append((r, seconds))
        print(f"|R| = {r:5d}  triples = {triples:8d}  merges = {merges:4d}  SCOS {seconds:8.3f} s")
    print("growth between consecutive sizes (measured vs |R|^2 log|R| model):")
    for (r0, t0), (r1, t1) in itertools.pairwise(rows):
        model = (r1**2 * math.log(r1)) / (r0**2 * math.log(r0))
        print(f"  {r0:5d} -> {r1:5d}: x{t1 / t0:7.2f}   (model x{model:7.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("timing")
    t.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1600, 6400])
    t.add_argument("--triples-per-relation", type=int, default=50)
    t.add_argument("--seed", type=int, default=0)
    q = sub.add_parser("quality")
    q.add_argument("--kb", nargs="*", default=[])
    q.add_argument("--synthetic", action="store_true")
    q.add_argument("--epochs", type=int, default=100)
    q.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.command == "timing":
        timing(args)
    else:
        quality(args)


if __name__ == "__main__":
    main()
