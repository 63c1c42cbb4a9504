"""TAIMR measurements: the retrieval ablation grid, query latency and GAT training steps.

    python bench/bench_taimr.py quality [--data pq2h pq3h ...] [--split val|test] [--limit N]
        [--experiment lokg|paper] [--attention uniform gat] [--budget 2048]
        [--override KEY=VALUE ...]
    python bench/bench_taimr.py latency [--data pql3h] [--split val|test] [--limit N]
        [--experiment lokg|paper] [--override KEY=VALUE ...] [--synthetic-queries 200]
        [--synthetic-triples 1000000]
    python bench/bench_taimr.py train [--n 20] [--synthetic-triples 1000000] [--model walk gat]

Data come only from the package (``bench/_data.py``): the dataset's config, reader and
split (``data.split_group_by``). Settings are chosen on ``--split val`` (the default);
``--split test`` reports a chosen configuration once. ``$LOKG_ROOT`` (else the working
directory) holds the artifacts, as for ``train.py`` and ``evaluate.py``.

``quality`` runs ``evaluate.py``'s job (``lokg.evaluate.run``) with the extractive reader (no
LLM: Hits@1 is the retriever's top answer) for every cell of the grid attention
(``retriever.attention``: uniform | gat) x relation linking (``retriever.relation_linking``:
chain | off) x mu (``retriever.lambda_topo``: 1 | 0), on top of ``experiment=<--experiment>``,
plus the semantic "w/o TAIMR" retriever (``retriever=semantic``) as a reference. Per dataset it
prints retriever-only Hits@1, answer coverage (a gold answer is in the evidence sent) and
the mean evidence tokens per question (T_after), and marks the cell with the attention,
linking and mu of ``experiment=paper``'s (or ``experiment=lokg``'s) retriever, naming the
config keys in which the cell still differs from it (with ``--override retriever=taimr_linked``:
its beam width and K_top unit). The GAT cells need the dataset's trained
artifacts (``python train.py experiment=train_transe data=<d>`` then ``experiment=train_gat
data=<d>``); every cell needs the SCOS artifacts (the first command) unless ``--override
scos=off`` is given. The query-conditioned GAT (``model.query_conditioning=true``) has no route
from the config to the retriever yet, so its rows are not in this grid.

``latency`` times ``Retriever.retrieve`` on the dataset's questions (the retriever built by
the config's factory over the dataset's graph after SCOS, with its attention) and on the
package's synthetic 1M-triple graph (``lokg.data.synthetic``, uniform attention, a
hash-random encoder so that only the search is timed; with ``retriever=learned``, the default
of ``experiment=lokg``, the walk model ``evaluate.py`` would use on the dataset, applied to the
synthetic graph as to an unseen KG with the encoders it was trained with, so "cold" includes
encoding the question). "cold": a fresh retriever whose path
cache holds only the entries of one untimed warm-up question about another topic (which also
loads the relation linker, as a service's first request would), asked a question new to the
in-memory encoder (entity names are embedded beforehand, as in the paper's construction
phase); "warm": the same question again. p50/p95 in ms, with the number of questions that
got a candidate answer, peak RSS and the machine's load average (timings move with it).

``train`` times one optimizer step (batch of 32 synthetic questions, no Trainer) on the
synthetic 1M-triple graph, for the default walk model (``experiment=train_walk``'s
``model=walk``, with its fine-tuned question encoder; the graph's node features and
relation-name embeddings random, TransE's e_r random) and for the paper's query-independent
GAT (``model=gat``). For the walk model it also times finding a question's supervised paths
(once per question per run: cached across epochs) and prints the peak RSS before the model
is built and after the steps, so what training adds on top of the graph is visible.

Everything printed is measured in the run.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings
import zlib
from collections.abc import Callable, Sequence

import hydra
import numpy as np
from _data import add_data_arguments, compose, load_datamodule, split_questions

from lokg.artifacts import latest
from lokg.assemble import artifacts_of, graph_artifacts, retriever_plan, services_of
from lokg.data.synthetic import make_synthetic_kg
from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.retrieval import Retriever
from lokg.typing import Question

EXPERIMENTS = ("lokg", "paper")
ATTENTION = ("uniform", "gat")
LINKING = ("chain", "off")
LAMBDA_TOPO = (1.0, 0.0)  # mu on (Eq. (16)) / off


# ---------------------------------------------------------------------------- quality
def _cell(attention: str, linking: str, lambda_topo: float) -> list[str]:
    return [
        f"retriever.attention={attention}",
        f"retriever.relation_linking={linking}",
        f"retriever.lambda_topo={lambda_topo}",
    ]


def _named_cells(data: str, base: Sequence[str]) -> dict[tuple[str, str, float], str]:
    """Grid cell -> the experiments whose retriever it is (from the composed configs).

    A cell is "the retriever of experiment=X" only when its whole composed retriever config
    equals X's; a cell that shares X's (attention, linking, mu) but differs elsewhere (the
    base's beam width or K_top unit, say) is marked with the keys that differ, so that the
    grid never calls a cell the paper's when it is not.
    """
    from omegaconf import OmegaConf

    names: dict[tuple[str, str, float], str] = {}
    for exp in EXPERIMENTS:
        r = compose(data, [f"experiment={exp}"]).retriever
        if "attention" not in r:
            continue
        key = (str(r.attention), str(r.relation_linking), float(r.lambda_topo))
        cell = compose(data, [*base, *_cell(*key)]).retriever
        ours, theirs = OmegaConf.to_container(cell), OmegaConf.to_container(r)
        diff = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
        mark = f"experiment={exp}" + (
            f" except {', '.join(f'{k}={ours.get(k)} (not {theirs.get(k)})' for k in diff)}"
            if diff
            else ""
        )
        names[key] = " + ".join(filter(None, [names.get(key), mark]))
    return names


def quality(args: argparse.Namespace) -> None:
    from lokg.evaluate import run

    for name in args.data:
        base = [
            f"experiment={args.experiment}",
            "llm=extractive",
            "~logger",
            f"split={args.split}",
            f"budget={args.budget}",
            *([f"limit={args.limit}"] if args.limit else []),
            *args.override,
        ]
        if "gat" in args.attention:
            dm = load_datamodule(compose(name, base))
            if latest(dm.artifact_dir, "gat") is None:
                raise SystemExit(
                    f"{dm.name}: no trained GAT under {dm.artifact_dir}; run `python train.py "
                    f"experiment=train_gat data={name}` first, or pass --attention uniform"
                )
        named = _named_cells(name, base)
        grid = [(a, k, lt) for a in args.attention for k in LINKING for lt in LAMBDA_TOPO]
        cells = [
            (
                f"attention={a:<7} linking={k:<5} mu={'on' if lt else 'off'}",
                _cell(a, k, lt),
                (a, k, lt),
            )
            for a, k, lt in grid
        ]
        cells.append(("semantic (retriever=semantic, w/o TAIMR)", ["retriever=semantic"], None))
        rows = []
        for label, overrides, key in cells:
            out = run(compose(name, [*base, *overrides]))
            m = out["metrics"]
            rows.append((label, named.get(key, ""), m, len(out["records"])))
        tag = f"{name}/{args.split}"
        print(
            f"\n{tag}: TAIMR grid on experiment={args.experiment}, B={args.budget}, "
            f"extractive reader (retriever-only), n={rows[0][3]}"
        )
        print(f"{tag:<10} {'configuration':<38} {'hits@1':>7} {'coverage':>9} {'evid tok/q':>11}")
        for label, mark, m, _ in rows:
            print(
                f"{tag:<10} {label:<38} {m['hits@1']:>7.3f} {m['coverage']:>9.3f} "
                f"{m['evidence_tok/q']:>11.1f}" + (f"  <- retriever of {mark}" if mark else ""),
                flush=True,
            )


# ---------------------------------------------------------------------------- latency
class RandomEncoder(SentenceEncoder):
    """Hash-seeded random unit vectors: the latency of the search, not of a transformer."""

    def _embed_batch(self, texts):
        out = np.stack(
            [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(32) for t in texts]
        ).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _other_topic(pool: Sequence[Question], q: Question) -> Question:
    """The first question of ``pool`` none of whose topic entities is one of ``q``'s."""
    for p in pool:
        if p.topic_entities and not set(p.topic_entities) & set(q.topic_entities):
            return p
    raise ValueError(f"{q.id}: no warm-up question about another topic")


def _latency(
    make: Callable[[], Retriever], questions: Sequence[Question], warmups: Sequence[Question]
) -> tuple[dict[str, float], int]:
    """p50/p95 (ms) of a fresh retriever's first call on a question (cold) and its repeat,
    and the number of questions for which it found a candidate answer."""
    cold, warm = [], []
    found = 0
    for q in questions:
        retriever = make()  # fresh: empty (head, relation) path cache
        retriever.retrieve(_other_topic(warmups, q))  # untimed: loads the linker's prototypes
        t0 = time.perf_counter()
        found += bool(retriever.retrieve(q).answers)
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        retriever.retrieve(q)
        warm.append(time.perf_counter() - t0)
    pct = lambda xs, p: float(np.percentile(xs, p) * 1e3)  # noqa: E731
    return {
        "cold_p50": pct(cold, 50),
        "cold_p95": pct(cold, 95),
        "warm_p50": pct(warm, 50),
        "warm_p95": pct(warm, 95),
    }, found


def _fmt(stats: dict[str, float]) -> str:
    return "  ".join(f"{k}={v:.2f}ms" for k, v in stats.items())


def _retriever_settings(cfg, **replaced) -> str:
    r = {**cfg.retriever, **replaced}
    keys = [k for k in ("attention", "relation_linking", "lambda_topo") if k in r]
    return f"{r['_target_'].rsplit('.', 1)[-1]}(" + ", ".join(f"{k}={r[k]}" for k in keys) + ")"


def synthetic_graph(num_triples: int, seed: int = 0) -> KnowledgeGraph:
    """The package's synthetic power-law KG: 200k entities, 50 relations (5 planted synonyms)."""
    return make_synthetic_kg(
        num_entities=200_000,
        num_triples=num_triples,
        num_relations=50,
        num_synonyms=5,
        alpha=0.9,
        seed=seed,
        name=f"synthetic-{num_triples}",
    ).kg


def synthetic_questions(kg: KnowledgeGraph, n: int, rng: np.random.Generator) -> list[Question]:
    """``n`` questions along a random walk of up to 2 hops from a topic drawn by out-degree.

    The text names the walked relations (as PathQuestion's do) and the answer is the walk's
    end, so a question has a path to follow whatever the generator's relation domains are.
    """
    triples = kg.triples_np
    out = []
    for i, first in enumerate(rng.integers(0, kg.num_triples, n).tolist()):
        topic, r1, mid = (int(x) for x in triples[first])
        rels, end = [kg.relations.label(r1)], mid
        nxt = kg.out_triples(mid)
        if len(nxt):
            _, r2, end = (int(x) for x in triples[rng.choice(nxt)])
            rels.append(kg.relations.label(r2))
        label = kg.entities.label(topic)
        text = f"what is the {' of the '.join(reversed(rels))} of {label} ?"
        out.append(Question(f"synthetic-{i}", text, (kg.entities.label(end),), (label,)))
    return out


def latency(args: argparse.Namespace) -> None:
    cfg = compose(args.data, [f"experiment={args.experiment}", *args.override])
    dm = load_datamodule(cfg)
    questions = split_questions(dm, args.split, args.limit)
    # as evaluate.py builds it (lokg.assemble): the artifacts its builder declares (the GAT's
    # attention, the walk model retriever=learned uses and TransE's e_r)
    plan = retriever_plan(cfg.retriever)
    art = graph_artifacts(cfg, dm, plan)
    need_walk = "model_dir" in plan.needs
    # in memory only, so the questions are new to it; entity names embedded beforehand
    embedder = hydra.utils.instantiate(cfg.embedder, cache_dir=None)
    names = [art.kg.entity_name(e) for e in range(art.kg.num_entities)]
    embedder.encode(names, kind="passage", desc="embedding entity names (construction)")
    given = services_of(plan, embedder=embedder, datamodule=dm, reader=None)
    given.update(artifacts_of(plan, art))
    train = dm.questions["train"]

    def make() -> Retriever:
        return plan.make(art.kg, **given)

    stats, found = _latency(make, questions, train)
    print(
        f"{dm.name}/{args.split} ({art.kg.num_triples} triples, experiment={args.experiment}, "
        f"{_retriever_settings(cfg)}, {embedder.model_id}, n={len(questions)}, answers found "
        f"for {found}): {_fmt(stats)}",
        flush=True,
    )
    if args.synthetic_queries:
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        big = synthetic_graph(args.synthetic_triples)
        build = time.perf_counter() - t0
        # no GAT is trained on the synthetic graph: uniform attention there; the walk model
        # of this dataset applies to it as to any unseen KG (through relation names, no
        # TransE e_r), with the embedder it was trained with; otherwise a hash-random embedder,
        # so that the search is timed and not a transformer
        uniform = {"attention": "uniform"} if "attention" in cfg.retriever else {}
        big_walk = {"model_dir": art.walk_dir} if need_walk else {}
        big_embedder = embedder if need_walk else RandomEncoder(model_id="bench/random")
        big_factory = hydra.utils.instantiate(cfg.retriever, **uniform)
        qs = synthetic_questions(big, args.synthetic_queries, rng)
        others = synthetic_questions(big, 16, rng)
        stats, found = _latency(
            lambda: big_factory(kg=big, embedder=big_embedder, **big_walk), qs, others
        )
        print(
            f"{big.name} ({big.num_triples} triples, {_retriever_settings(cfg, **uniform)}, "
            f"{big_embedder.model_id} encoder, n={len(qs)}, answers found for {found}, "
            f"graph built in {build:.1f}s): {_fmt(stats)}",
            flush=True,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load = os.getloadavg()[0]
    print(f"peak RSS {peak:.0f} MiB; 1-min load average {load:.1f} on {os.cpu_count()} CPUs")


# ---------------------------------------------------------------------------- train
def train_step(args: argparse.Namespace) -> None:
    """Training step time and peak memory on the synthetic graph, per ``--model``."""
    # training_step is called without a Trainer on purpose: its self.log calls are no-ops
    warnings.filterwarnings("ignore", message=r".*`self\.trainer` reference is not registered")
    kg = synthetic_graph(args.synthetic_triples)
    print(f"{kg.name}: {kg.num_triples} triples, peak RSS {_peak_mib():.0f} MiB", flush=True)
    for model in args.model:
        {"walk": _walk_train_step, "gat": _gat_train_step}[model](kg, args.n)


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _optimizer_steps(module, opt, batches) -> list[float]:
    times = []
    module.train()
    for b, batch in enumerate(batches):
        t0 = time.perf_counter()
        loss = module.training_step(batch, b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return times


def _walk_train_step(kg: KnowledgeGraph, n: int) -> None:
    """The default walk model (``experiment=train_walk``) on ``kg``: supervision, then steps."""
    import torch

    from lokg.config import compose_config
    from lokg.nn.question_encoder import QuestionLM

    cfg = compose_config("train", ["experiment=train_walk", "data=pq2h"], os.getcwd())
    embedder = hydra.utils.instantiate(cfg.embedder, cache_dir=None)
    d = embedder.output_dim
    module = hydra.utils.instantiate(cfg.model, num_relations=kg.num_relations)
    g = torch.Generator().manual_seed(0)
    lm = None
    if module.hparams.question_encoder == "finetune":
        lm = QuestionLM.from_embedder(embedder, module.hparams.encoder_trainable_layers)
    module.set_graph(
        kg,
        torch.randn(kg.num_entities, d, generator=g),
        torch.randn(kg.num_relations, module.hparams.transe_dim, generator=g),
        torch.randn(kg.num_relations, d, generator=g),
        lambda texts: torch.as_tensor(embedder.encode(list(texts), kind="query")),
        lambda texts: [torch.from_numpy(t) for t in embedder.encode_tokens(texts, kind="query")],
        lm,
    )
    opt = module.configure_optimizers()
    questions = synthetic_questions(kg, n * 32, np.random.default_rng(0))
    t0 = time.perf_counter()
    items = [module.supervise(q) for q in questions]
    supervise_ms = (time.perf_counter() - t0) / len(questions) * 1e3
    steps = [s.graph.num_steps for s in items if s is not None]
    batches = [questions[b * 32 : (b + 1) * 32] for b in range(n)]
    times = _optimizer_steps(module, opt, batches)
    hp = module.hparams
    print(
        f"walk model train step on {kg.name} ({kg.num_triples} triples, batch 32 questions, "
        f"normalization={hp.normalization}, question_encoder={hp.question_encoder}, "
        f"name_match={hp.name_match}, n={n}): p50={np.median(times) * 1e3:.0f}ms "
        f"p95={np.percentile(times, 95) * 1e3:.0f}ms; supervised paths {supervise_ms:.1f} ms "
        f"per question (once, cached), median kept steps per question {int(np.median(steps))}; "
        f"peak RSS {_peak_mib():.0f} MiB",
        flush=True,
    )


def _gat_train_step(kg: KnowledgeGraph, n: int) -> None:
    """The paper's query-independent GAT (``model=gat``) on ``kg``."""
    import torch

    from lokg.models.gat_module import GATModule

    feats = torch.randn(kg.num_entities, 384, generator=torch.Generator().manual_seed(0))
    module = GATModule(kg.num_entities, kg.num_relations, node_dim=384)
    module.set_graph(kg, feats)
    opt = module.configure_optimizers()
    questions = synthetic_questions(kg, n * 32, np.random.default_rng(0))
    batches = [questions[b * 32 : (b + 1) * 32] for b in range(n)]
    times = _optimizer_steps(module, opt, batches)
    edges = [len(module._batch(batch)["edge_type"]) for batch in batches]
    print(
        f"GAT train step on {kg.name} ({kg.num_triples} triples, batch 32 questions, "
        f"max_fanout={module.hparams.max_fanout}, n={n}): "
        f"p50={np.median(times) * 1e3:.0f}ms p95={np.percentile(times, 95) * 1e3:.0f}ms, "
        f"median subgraph edges {int(np.median(edges))}, peak RSS {_peak_mib():.0f} MiB",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("quality", help="the attention x linking x mu grid via evaluate")
    add_data_arguments(q, default=("pq2h", "pq3h"))
    q.add_argument("--experiment", default="lokg", choices=EXPERIMENTS, help="the grid's base")
    q.add_argument("--attention", nargs="+", default=list(ATTENTION), choices=ATTENTION)
    q.add_argument("--budget", type=int, default=2048, help="token budget B")
    q.add_argument("--override", nargs="*", default=[], help="more evaluate overrides")
    lat = sub.add_parser("latency", help="cold/warm retrieval latency")
    add_data_arguments(lat, default=("pql3h",), many=False)
    lat.add_argument("--experiment", default="lokg", choices=EXPERIMENTS)
    lat.add_argument(
        "--override", nargs="*", default=[], help="more config overrides, e.g. scos=off"
    )
    lat.add_argument(
        "--synthetic-queries", type=int, default=200, help="0 skips the synthetic graph"
    )
    lat.add_argument("--synthetic-triples", type=int, default=1_000_000)
    tr = sub.add_parser("train", help="training steps on the synthetic graph")
    tr.add_argument("--n", type=int, default=20, help="batches timed")
    tr.add_argument("--synthetic-triples", type=int, default=1_000_000)
    tr.add_argument("--model", nargs="+", default=["walk", "gat"], choices=("walk", "gat"))
    args = parser.parse_args()
    {"quality": quality, "latency": latency, "train": train_step}[args.cmd](args)


if __name__ == "__main__":
    main()
