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
from lokg.embed import _text_key as _key
from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.linking import RelationLinker
from lokg.taimr.path_cache import PathCache
from lokg.taimr.retriever import SemanticRetriever, TAIMRRetriever
from lokg.taimr.topology import (
    QueryConditionedAttention,
    gat_log_attention,
    uniform_log_attention,
)
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


def train_gat(kg, encoder, splits, epochs: int, query_conditioning: bool = False):
    """Train GATModule on the train split; returns (module, val/paths_recall, seconds)."""
    import pytorch_lightning as pl
    import torch
    from torch.utils.data import DataLoader

    from lokg.models.gat_module import GATModule

    pl.seed_everything(0, workers=True)
    names = [kg.entity_name(e) for e in range(kg.num_entities)]
    feats = torch.from_numpy(encoder.encode(names, kind="passage"))
    module = GATModule(
        kg.num_entities,
        kg.num_relations,
        node_dim=feats.shape[1],
        query_conditioning=query_conditioning,
        query_dim=feats.shape[1],
        optimizer=lambda params: torch.optim.Adam(params, lr=1e-3),
    )
    qenc = (
        (lambda texts: torch.from_numpy(encoder.encode(texts, kind="query")))
        if (query_conditioning)
        else None
    )
    module.set_graph(kg, feats, query_encoder=qenc)
    trainer = pl.Trainer(
        max_epochs=epochs,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    train = DataLoader(splits["train"], batch_size=32, shuffle=True, collate_fn=list)
    val = DataLoader(splits["val"], batch_size=64, collate_fn=list)
    t0 = time.perf_counter()
    trainer.fit(module, train, val)
    seconds = time.perf_counter() - t0
    m = trainer.callback_metrics
    return module, (float(m["val/paths_recall"]), float(m["val/hits@1"])), seconds, feats


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
        if args.gat_epochs:
            trained = {}
            for qc in (False, True):
                module, val_rec, sec, feats = train_gat(kg, encoder, splits, args.gat_epochs, qc)
                trained[qc] = module
                print(
                    f"{name:7s} GAT query_conditioning={qc}: {args.gat_epochs} epochs in "
                    f"{sec:.0f}s, S_topo only on val: paths_recall={val_rec[0]:.3f} "
                    f"hits@1={val_rec[1]:.3f}",
                    flush=True,
                )
            module = trained[False]
            rel = module.relation_table.weight.detach()
            gat_alpha = gat_log_attention(module.gat, kg, feats, rel)
            configs["paper S_topo+S_sem with GAT, no linking"] = TAIMRRetriever(
                kg, encoder, PathCache(kg, gat_alpha, mu), relation_linking="off"
            )
            configs["linking, GAT alpha, mu"] = TAIMRRetriever(
                kg, encoder, PathCache(kg, gat_alpha, mu), linker
            )
            configs["linking, GAT alpha, no mu"] = TAIMRRetriever(
                kg, encoder, PathCache(kg, gat_alpha, mu, lambda_topo=0.0), linker
            )
            qc = trained[True]
            qa = QueryConditionedAttention(
                qc.gat, kg, feats, qc.relation_table.weight.detach(), encoder
            )
            configs["paper S_topo+S_sem, query-cond. GAT"] = TAIMRRetriever(
                kg, encoder, PathCache(kg, gat_alpha, mu), relation_linking="off",
                query_attention=qa,
            )  # fmt: skip
            configs["linking, query-cond. GAT, no mu"] = TAIMRRetriever(
                kg, encoder, PathCache(kg, gat_alpha, mu, lambda_topo=0.0), linker,
                query_attention=qa,
            )  # fmt: skip
        for label, retriever in configs.items():
            h1, rec, p50 = evaluate(retriever, test)
            print(
                f"{name:7s} test n={len(test):4d}  {label:40s} hits@1={h1:.3f} "
                f"paths_recall={rec:.3f}  p50={p50:.1f}ms",
                flush=True,
            )


class RandomEncoder(SentenceEncoder):
    """Hash-seeded random unit vectors: the latency of the search, not of a transformer."""

    def _embed_batch(self, texts):
        out = np.stack(
            [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(32) for t in texts]
        ).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _latency(make_retriever, queries, encoder) -> dict[str, float]:
    """p50/p95 (ms) with an empty path cache per query (cold) and on a repeat (warm)."""
    cold, warm = [], []
    for text, topic in queries:
        retriever = make_retriever()  # fresh, empty (head, relation) cache
        t0 = time.perf_counter()
        retriever.retrieve(text, [topic])
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        retriever.retrieve(text, [topic])
        warm.append(time.perf_counter() - t0)
    pct = lambda xs, q: float(np.percentile(xs, q) * 1e3)  # noqa: E731
    return {
        "cold_p50": pct(cold, 50),
        "cold_p95": pct(cold, 95),
        "warm_p50": pct(warm, 50),
        "warm_p95": pct(warm, 95),
    }


def latency(args: argparse.Namespace) -> None:
    import resource

    rng = np.random.default_rng(0)
    # PQL-3H with MiniLM: entity-name and relation-prototype embeddings are precomputed
    # offline (as the paper's construction phase does); the test questions are new to the
    # in-memory encoder, so "cold" includes encoding the question (two MiniLM calls: the
    # question and its chain-prior template); "warm" repeats the question.
    encoder = SentenceEncoder()
    disk = SentenceEncoder(cache_dir=args.cache)
    kg = read_kb(args.data / KB_OF["PQL-3H"])
    splits = split(read_questions(args.data / "PQL-3H.txt"))
    names = [kg.entity_name(e) for e in range(kg.num_entities)]
    encoder._memory.update(
        zip([_key(encoder.prefixed(n, "passage")) for n in names],
            disk.encode(names, kind="passage"), strict=True)
    )  # fmt: skip
    mu, log_alpha = node_information_gain(kg), uniform_log_attention(kg)
    linker = RelationLinker(kg, encoder)
    linker.fit(splits["train"])
    linker._prototypes()
    qs = [(q.text, q.topic_entities[0]) for q in splits["test"][: args.n]]
    make = lambda: TAIMRRetriever(kg, encoder, PathCache(kg, log_alpha, mu), linker)  # noqa: E731
    stats = _latency(make, qs, encoder)
    print(f"PQL-3H ({kg.num_triples} triples, MiniLM, n={len(qs)}): "
          + "  ".join(f"{k}={v:.2f}ms" for k, v in stats.items()), flush=True)  # fmt: skip

    t0 = time.perf_counter()
    big, heads = synthetic_graph(rng)
    mu, log_alpha = node_information_gain(big), uniform_log_attention(big)
    build = time.perf_counter() - t0
    renc = RandomEncoder(model_id="bench/random")
    blinker = RelationLinker(big, renc)
    R = big.num_relations
    topics = heads[rng.integers(0, len(heads), args.n)]  # topic entities drawn by degree
    qs = [
        (f"what is the {big.relations.label(int(rng.integers(R)))} of "
         f"{big.entities.label(int(t))} 's {big.relations.label(int(rng.integers(R)))} ?",
         big.entities.label(int(t)))
        for t in topics
    ]  # fmt: skip
    make = lambda: TAIMRRetriever(big, renc, PathCache(big, log_alpha, mu), blinker)  # noqa: E731
    stats = _latency(make, qs, renc)
    print(f"synthetic 1M triples (random encoder, n={len(qs)}, build {build:.1f}s): "
          + "  ".join(f"{k}={v:.2f}ms" for k, v in stats.items()), flush=True)  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB", flush=True)


def synthetic_graph(rng: np.random.Generator, E=200_000, R=50, T=1_000_000):
    """1M triples, 200k entities, 50 relations, degrees ~ rank^-0.9 (hubs)."""
    popularity = 1.0 / np.arange(1, E + 1) ** 0.9
    popularity /= popularity.sum()
    perm = rng.permutation(E)
    heads = perm[rng.choice(E, T, p=popularity)]
    tails = perm[rng.choice(E, T, p=popularity)]
    triples = np.stack([heads, rng.integers(0, R, T), tails], 1)
    return KnowledgeGraph.from_ids(triples, E, R, name="synthetic-1M"), heads


def train_step(args: argparse.Namespace) -> None:
    """GAT training step time and peak memory on the synthetic 1M-triple graph."""
    import resource

    import torch

    from lokg.models.gat_module import GATModule

    rng = np.random.default_rng(0)
    kg, heads = synthetic_graph(rng)
    feats = torch.randn(kg.num_entities, 384)
    module = GATModule(kg.num_entities, kg.num_relations, node_dim=384)
    module.set_graph(kg, feats)
    opt = module.configure_optimizers()
    questions = []
    for i in range(args.n * 32):
        topic = int(heads[rng.integers(0, len(heads))])
        mid = kg.triples_np[rng.choice(kg.out_triples(topic)), 2]
        outs = kg.out_triples(int(mid))
        ans = int(kg.triples_np[rng.choice(outs), 2]) if len(outs) else int(mid)
        questions.append(
            Question(f"s{i}", "?", (kg.entities.label(ans),), (kg.entities.label(topic),))
        )
    times, edges = [], []
    module.train()
    for b in range(args.n):
        batch = questions[b * 32 : (b + 1) * 32]
        t0 = time.perf_counter()
        loss = module.training_step(batch, b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        edges.append(len(module._batch(batch)["edge_type"]))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"GAT train step on synthetic 1M (batch 32 questions, max_fanout=16, n={args.n}): "
        f"p50={np.median(times) * 1e3:.0f}ms p95={np.percentile(times, 95) * 1e3:.0f}ms, "
        f"median subgraph edges {int(np.median(edges))}, peak RSS {peak:.0f} MiB",
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
    q.add_argument("--gat-epochs", type=int, default=0, help="train the GAT (0 = skip)")
    lat = sub.add_parser("latency")
    lat.add_argument("--data", type=Path, required=True)
    lat.add_argument("--cache", type=Path, default=None)
    lat.add_argument("--n", type=int, default=200)
    tr = sub.add_parser("train")
    tr.add_argument("--n", type=int, default=20)
    args = parser.parse_args()
    {"quality": quality, "latency": latency, "train": train_step}[args.cmd](args)


if __name__ == "__main__":
    main()
