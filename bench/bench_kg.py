"""How long building the KnowledgeGraph and its statistics takes at 1M triples / 100k entities.

    python bench/bench_kg.py [--triples 1000000] [--entities 100000]

Prints seconds for each step measured in this run, and the ratio of building from string
labels (what a reader does) to building from ids.  Goal (issue 2): seconds, not minutes.
"""

import argparse
import tempfile
import time

from lokg.data.synthetic import make_synthetic_kg
from lokg.kg import KnowledgeGraph


def timed(label: str, fn):
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    print(f"{label:<44s} {dt:8.2f} s")
    return out, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=1_000_000)
    ap.add_argument("--entities", type=int, default=100_000)
    args = ap.parse_args()
    syn, _ = timed(
        f"synthetic graph ({args.triples:,} triples)",
        lambda: make_synthetic_kg(num_entities=args.entities, num_triples=args.triples),
    )
    kg = syn.kg
    _, t_ids = timed(
        "KnowledgeGraph from ids (CSR in+out)",
        lambda: KnowledgeGraph(kg.entities, kg.relations, kg.triples_np),
    )
    labeled = [kg.labeled(i) for i in range(kg.num_triples)]
    built, t_labels = timed(
        "KnowledgeGraph from string labels", lambda: KnowledgeGraph.from_labeled_triples(labeled)
    )
    timed(
        "H(r) Eq. (4) + in-degree + div(v)",
        lambda: (built.relation_tail_entropy, built.in_degree, built.in_relation_diversity),
    )
    with tempfile.TemporaryDirectory() as d:
        timed("save", lambda: built.save(f"{d}/kg"))
        loaded, _ = timed("load (mmap)", lambda: KnowledgeGraph.load(f"{d}/kg", mmap=True))
        timed("loaded: first out_triples lookup", lambda: loaded.out_triples(0))
    print(f"ratio labels/ids: {t_labels / t_ids:.1f}x")


if __name__ == "__main__":
    main()
