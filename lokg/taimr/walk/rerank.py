"""The walk's candidates re-scored by the answer GAT (issue 28 §3, beyond the paper).

The walk ranks answers by ``log P(a | q)`` (the join of its anchors' supports); the answer GAT
(:class:`~lokg.nn.answer_gat.AnswerGAT`) reads the question's joint subgraph
(:mod:`lokg.taimr.walk.joint`: anchors, the top candidates, their support paths and their
neighbours), with TAIMR's ``W_r e_r`` (the walk's own step-relation features) and the question
in its attention.  The two are fused late, as Eq. (18) fuses S_topo and S_sem:

    S(a | q) = log P_walk(a | q) + omega * log softmax_{a' in C} s_GAT(a' | q)

over the walk's top ``max_candidates`` answers ``C``; an answer below them gets the GAT's
floor, ``min_{a' in C} log softmax s_GAT(a' | q)`` (:func:`fused_scores`), so it never passes
a candidate and ``omega = 0`` leaves the walk's ranking as it was.  ``omega``
(``retriever.rerank_weight``) is chosen on validation.  The GAT never sees the
walk's scores: the walk was trained on the same training questions, so its scores there are
more confident than on new ones, and a model fed them would learn to trust them.

Artifact: ``<dataset artifacts>/rerank-<key>/`` with :data:`MODEL_FILE` (the state dict) and
:data:`META_FILE` (architecture, the walk model whose candidates it was trained on);
``<dataset artifacts>/rerank.latest`` names the latest; ``retriever.rerank=default`` reads
the best on val among those trained on the run's walk with the default settings
(:func:`resolve_rerank`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from lokg.embed import SentenceEncoder
from lokg.manifest import check_directory
from lokg.nn.answer_gat import AnswerGAT, candidate_log_softmax
from lokg.retrieval import RankedAnswer, RetrievalResult, triples_of_paths
from lokg.taimr.walk.joint import JointGraph, joint_graph

__all__ = [
    "KIND",
    "META_FILE",
    "MODEL_FILE",
    "JointBatch",
    "JointItem",
    "NodeFeatures",
    "Reranker",
    "batch_items",
    "fused_scores",
    "joint_item",
    "load_answer_gat",
    "reorder",
    "rerank_models",
    "resolve_rerank",
    "save_answer_gat",
    "step_features",
]

KIND = "rerank"
MODEL_FILE = "answer_gat.pt"
META_FILE = "rerank.json"


class NodeFeatures:
    """``x_v = [name(v) || structure(v)]`` of a joint subgraph's nodes, names embedded once
    per label by the frozen sentence encoder (bounded cache)."""

    def __init__(self, embedder: SentenceEncoder, cache_size: int = 200_000):
        self.embedder = embedder
        self.cache_size = cache_size
        self._names: dict[str, np.ndarray] = {}

    def names(self, labels: Sequence[str]) -> np.ndarray:
        missing = [x for x in dict.fromkeys(labels) if x not in self._names]
        if missing:
            if len(self._names) + len(missing) > self.cache_size:
                self._names.clear()
            vecs = self.embedder.encode(missing, kind="passage")
            for label, v in zip(missing, vecs, strict=True):
                self._names[label] = np.asarray(v, np.float32)
        return np.stack([self._names[x] for x in labels])

    def __call__(self, graph: JointGraph, kg) -> np.ndarray:
        """``[n, d_name + STRUCTURE_DIM]``."""
        names = self.names([kg.entity_name(int(e)) for e in graph.nodes])
        return np.concatenate([names, graph.structure], 1).astype(np.float32)


def step_features(rel_feats: Tensor, graph: JointGraph, transe_dim: int, use_transe: bool):
    """``[m, d_r]`` each step's relation features (rows of the walk's ``rel_feats [2R, d_r]``:
    ``[e_r || name(r) || direction]``), TransE's ``e_r`` zeroed without ``use_transe``."""
    feats = rel_feats[torch.from_numpy(graph.step_relation)]
    if not use_transe and transe_dim:
        feats = torch.cat([torch.zeros_like(feats[:, :transe_dim]), feats[:, transe_dim:]], 1)
    return feats


@dataclass(frozen=True)
class JointItem:
    """One question's scorer inputs: node features ``x [n, d_v]``, steps ``edge_index [2, m]``
    with features ``rel [m, d_r]``, the question ``query [d_q]``, the candidates' node
    indices ``candidates [c]``, their walk scores ``walk [c]`` and, for training,
    ``gold [c]`` (bool)."""

    x: Tensor
    edge_index: Tensor
    rel: Tensor
    query: Tensor
    candidates: Tensor
    walk: Tensor
    gold: Tensor | None = None


def joint_item(graph, kg, features: NodeFeatures, rel: Tensor, query, walk, gold=None):
    """A :class:`JointItem` from a :class:`JointGraph` (``rel``: :func:`step_features`)."""
    return JointItem(
        torch.from_numpy(features(graph, kg)),
        torch.from_numpy(np.stack([graph.src, graph.dst])),
        rel,
        torch.as_tensor(query, dtype=torch.float32),
        torch.from_numpy(graph.candidates),
        torch.as_tensor(walk, dtype=torch.float32),
        None if gold is None else torch.as_tensor(gold, dtype=torch.bool),
    )


@dataclass(frozen=True)
class JointBatch:
    """Several :class:`JointItem` as one disjoint graph (node indices offset per question)."""

    x: Tensor
    edge_index: Tensor
    rel: Tensor
    query: Tensor  # [B, d_q]
    edge_owner: Tensor  # [m]
    candidates: Tensor  # [c]
    candidate_owner: Tensor  # [c]
    walk: Tensor  # [c]
    gold: Tensor | None  # [c]

    @property
    def num_questions(self) -> int:
        return self.query.size(0)

    def to(self, device) -> JointBatch:
        return JointBatch(
            **{
                f.name: None if getattr(self, f.name) is None else getattr(self, f.name).to(device)
                for f in dataclasses.fields(self)
            }
        )


def batch_items(items: Sequence[JointItem]) -> JointBatch:
    offsets = np.cumsum([0] + [it.x.size(0) for it in items])
    edges = [it.edge_index + int(o) for it, o in zip(items, offsets, strict=False)]
    cands = [it.candidates + int(o) for it, o in zip(items, offsets, strict=False)]

    def owner(sizes):
        return torch.repeat_interleave(torch.arange(len(items)), torch.tensor(sizes))

    gold = None
    if all(it.gold is not None for it in items):
        gold = torch.cat([it.gold for it in items])
    return JointBatch(
        torch.cat([it.x for it in items]),
        torch.cat(edges, 1),
        torch.cat([it.rel for it in items]),
        torch.stack([it.query for it in items]),
        owner([it.edge_index.size(1) for it in items]),
        torch.cat(cands),
        owner([len(it.candidates) for it in items]),
        torch.cat([it.walk for it in items]),
        gold,
    )


def score_batch(net: AnswerGAT, batch: JointBatch) -> Tensor:
    """``[c]`` log softmax_{a in C} s_GAT(a | q) within each question."""
    logits = net(
        batch.x, batch.edge_index, torch.arange(batch.rel.size(0), device=batch.rel.device),
        batch.rel, batch.query, batch.edge_owner, batch.candidates, batch.candidate_owner,
    )  # fmt: skip
    return candidate_log_softmax(logits, batch.candidate_owner, batch.num_questions)


def reorder(
    result: RetrievalResult, order: Sequence[int], scores: Sequence[float], keep: int
) -> RetrievalResult:
    """``result`` with its answers in ``order`` (a permutation of ``range(len(answers))``)
    and the new ``scores`` (one per answer of ``order``).  The paths are those of the first
    ``keep`` answers (each answer's paths in ``result.paths`` in their old order, else its
    ranked path); the triples the paths'."""
    if sorted(order) != list(range(len(result.answers))):
        raise ValueError("reorder: order must be a permutation of the answers' indices")
    answers: list[RankedAnswer] = [
        dataclasses.replace(result.answers[i], score=float(s))
        for i, s in zip(order, scores, strict=True)
    ]
    by_answer: dict[int, list] = {}
    for p in result.paths:
        by_answer.setdefault(p.entities[-1], []).append(p)
    paths = []
    for a in answers[:keep]:
        paths.extend(by_answer.get(a.entity) or ([a.path] if a.path is not None else []))
    triples = tuple(triples_of_paths(paths))
    return dataclasses.replace(
        result, answers=tuple(answers), paths=tuple(paths), triple_ids=triples
    )


def fused_scores(walk: np.ndarray, gat: np.ndarray, weight: float) -> np.ndarray:
    """``[A]`` the fused score of every answer, best first in the walk's order: the first
    ``C = len(gat)`` (the candidates) ``walk + weight * gat``; the rest ``walk + weight *
    min(gat)`` (the GAT says no more for an answer it did not score than for its worst
    candidate).  The walk's order is best first, so no answer after the candidates can pass
    one of them, and ``weight = 0`` keeps every score."""
    floor = float(gat.min()) if len(gat) else 0.0
    tail = np.full(len(walk) - len(gat), floor)
    return walk + weight * np.concatenate([gat, tail])


class Reranker:
    """The answer GAT applied to a walk's result (module doc).

    Args:
        net: the trained :class:`AnswerGAT` (eval mode).
        embedder: the frozen sentence encoder (names and the question).
        weight: omega.  max_candidates / max_neighbours: the joint subgraph's sizes.
        transe_dim, use_transe: which columns of the walk's relation features are TransE's
            and whether the GAT reads them.
    """

    def __init__(
        self,
        net: AnswerGAT,
        embedder: SentenceEncoder,
        weight: float,
        max_candidates: int,
        max_neighbours: int,
        transe_dim: int,
        use_transe: bool,
    ):
        self.net = net.eval()
        self.embedder, self.weight = embedder, weight
        self.max_candidates, self.max_neighbours = max_candidates, max_neighbours
        self.transe_dim, self.use_transe = transe_dim, use_transe
        self.features = NodeFeatures(embedder)

    @torch.no_grad()
    def rerank(
        self, result: RetrievalResult, question: str, rel_feats: Tensor, keep: int
    ) -> RetrievalResult:
        """``result``'s top candidates re-ranked by the fused score; the paths of the first
        ``keep`` answers (``result`` must carry every candidate's paths: the walk is run with
        at least :attr:`max_candidates` answers' paths)."""
        graph = joint_graph(result, self.max_candidates, self.max_neighbours)
        every = list(range(len(result.answers)))
        walk = np.array([a.score for a in result.answers], dtype=np.float64)
        if graph is None or len(graph.candidates) < 2:
            return reorder(result, every, walk, keep)
        query = self.embedder.encode([question], kind="query")[0]
        rel = step_features(rel_feats, graph, self.transe_dim, self.use_transe)
        c = len(graph.candidates)  # the first c answers (joint_graph)
        item = joint_item(graph, result.kg, self.features, rel, query, walk[:c])
        gat = score_batch(self.net, batch_items([item])).double().numpy()
        fused = fused_scores(walk, gat, self.weight)
        order = np.lexsort((np.arange(len(walk)), -fused))  # best first, ties keep walk order
        return reorder(result, order.tolist(), fused[order], keep)


def save_answer_gat(directory: Path, net: AnswerGAT, architecture: dict, meta: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu() for k, v in net.state_dict().items()}, directory / MODEL_FILE)
    body = {**meta, "architecture": architecture}
    (directory / META_FILE).write_text(json.dumps(body, indent=1), encoding="utf-8")


@functools.lru_cache(maxsize=8)
def load_answer_gat(directory: Path) -> tuple[AnswerGAT, dict]:
    """The network ``train.py experiment=train_rerank`` exported, and its metadata."""
    meta_file = directory / META_FILE
    if not meta_file.is_file():
        raise FileNotFoundError(f"{meta_file}: not a rerank artifact (no {META_FILE})")
    check_directory(directory)
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    a = meta["architecture"]
    net = AnswerGAT(
        a["node_dim"], a["rel_dim"], a["query_dim"], a["hidden"], a["heads"], 0.0, a["layers"],
        a["question_in_attention"],
    )  # fmt: skip
    net.load_state_dict(torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True))
    return net.eval(), meta


#: the answer GAT's default settings (``model=rerank``), beside the package as the configs are
RERANK_CONFIG = Path(__file__).resolve().parents[3] / "configs" / "model" / "rerank.yaml"
#: settings that do not change the network a ``rerank-*`` artifact holds
_NOT_ARCHITECTURE = ("weight", "walk_dir", "optimizer")


def resolve_rerank(model_dir: Path, rerank: str) -> Path:
    """The ``rerank-*`` directory ``retriever.rerank`` names: ``"default"`` (the best on val
    among those trained on ``model_dir``'s candidates with the default ``model=rerank``
    settings, beside it) or a directory; a one-line error when there is none."""
    if rerank != "default":
        return Path(rerank)
    found = rerank_models(Path(model_dir).resolve().parent, Path(model_dir))
    if not found:
        raise FileNotFoundError(
            f"retriever.rerank=default: no answer GAT trained on the walk {Path(model_dir).name}; "
            "run `python train.py experiment=train_rerank data=...` first"
        )
    return found[0]


def rerank_models(root: Path, walk_dir: Path, change: dict | None = None) -> list[Path]:
    """``root``'s ``rerank-*`` artifacts trained on ``walk_dir``'s candidates with the default
    ``model=rerank`` settings and ``change`` applied, the best recorded validation value first,
    then the newest."""
    from omegaconf import OmegaConf

    defaults = OmegaConf.to_container(OmegaConf.load(RERANK_CONFIG).model, resolve=False)
    want = {k: v for k, v in {**defaults, **(change or {})}.items() if k not in _NOT_ARCHITECTURE}
    found = []
    for d in Path(root).glob(f"{KIND}-*"):
        cfg_path, meta_path = d / "config.yaml", d / META_FILE
        if not (cfg_path.is_file() and meta_path.is_file()):
            continue
        check_directory(d, ["config.yaml", META_FILE])
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if Path(meta.get("walk_dir", "")).name != Path(walk_dir).name:
            continue  # by name: the artifacts root may have moved since
        trained = OmegaConf.to_container(OmegaConf.load(cfg_path).model, resolve=True)
        if all(trained.get(k) == v for k, v in want.items()):
            found.append((meta.get("best_value") or 0.0, meta_path.stat().st_mtime_ns, d))
    return [d for *_, d in sorted(found, reverse=True)]
