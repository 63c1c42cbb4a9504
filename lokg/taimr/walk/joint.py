"""The joint subgraph of a question's anchors and candidate answers (issue 28 §3, beyond the
paper): what the answer GAT (:class:`~lokg.nn.answer_gat.AnswerGAT`) passes messages over.

Built from any retriever's :class:`~lokg.retrieval.RetrievalResult`, so it is the same object
whatever ranked the candidates.  Nodes, in this order (each once):

1. the anchors (the question's topic entities found in the graph);
2. the retriever's top ``max_candidates`` answers, in its order (an anchor the retriever
   ranks among them is a candidate too, placed once, with the anchors);
3. every entity on a returned path (the walk's support from each anchor);
4. up to ``max_neighbours`` neighbours of each candidate (one per relation first, then by
   triple id): the attributes a constraint reads ("is a film", "in 2010").

Edges: every triple of the graph between two nodes, in both step directions (relation ``r``
for ``h -> t``, ``r + R`` for ``t -> h``, as the walk labels its steps), so a node's state
hears its neighbours whichever way the KG states the fact.

Node structure features (:data:`STRUCTURE_DIM` columns, beside the name embedding the scorer
adds): ``[is anchor, is candidate, d_0 one-hot (0, 1, 2, 3, > 3), d_1 one-hot, share of
anchors within 3 steps]`` where ``d_k`` is the undirected hop distance in the joint subgraph
to anchor ``k`` (``k < 2``; a question with one anchor has ``d_1 > 3`` everywhere).  They say
"which anchors reach this node and how far", which the GAT's two layers alone could not
propagate over a 3-hop chain.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from lokg.kg.graph import KnowledgeGraph
from lokg.retrieval import RetrievalResult

__all__ = ["ANCHOR_SLOTS", "MAX_DISTANCE", "STRUCTURE_DIM", "JointGraph", "joint_graph"]

#: anchors whose distance is a feature (a third anchor still counts in the share)
ANCHOR_SLOTS = 2
#: distances above this are one bucket
MAX_DISTANCE = 3
#: ``[is anchor, is candidate] + ANCHOR_SLOTS x (MAX_DISTANCE + 2) one-hot + [share]``
STRUCTURE_DIM = 2 + ANCHOR_SLOTS * (MAX_DISTANCE + 2) + 1


@dataclass(frozen=True)
class JointGraph:
    """One question's joint subgraph (module doc).

    Attributes:
        nodes: ``[n]`` entity ids of the result's graph, anchors first, then candidates.
        src, dst: ``[m]`` local node indices of each step.
        step_relation: ``[m]`` ``r`` (forward) or ``r + R`` (backward).
        candidates: ``[c]`` local indices of the candidates, the retriever's order (best first).
        structure: ``[n, STRUCTURE_DIM]`` float32 structure features.
    """

    nodes: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    step_relation: np.ndarray
    candidates: np.ndarray
    structure: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def candidate_entities(self) -> np.ndarray:
        """``[c]`` entity ids of the candidates, best first."""
        return self.nodes[self.candidates]


def _neighbours(kg: KnowledgeGraph, entity: int, limit: int) -> list[int]:
    """Up to ``limit`` neighbours of ``entity``: one per relation first (a type, a date and a
    country before a fifth film), then the rest, each group by triple id."""
    tids = np.concatenate([kg.out_triples(entity), kg.in_triples(entity)])
    if not len(tids) or limit <= 0:
        return []
    tri = kg.triples_np[np.sort(tids)]
    far = np.where(tri[:, 0] == entity, tri[:, 2], tri[:, 0])
    _, first = np.unique(tri[:, 1], return_index=True)
    rest = np.setdiff1d(np.arange(len(tri)), first)
    order = np.concatenate([np.sort(first), rest])
    out: list[int] = []
    for v in far[order].tolist():
        if v != entity and v not in out:
            out.append(int(v))
            if len(out) == limit:
                break
    return out


def _steps(kg: KnowledgeGraph, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both step directions of every triple between two of ``nodes`` (local indices)."""
    local = {int(e): i for i, e in enumerate(nodes.tolist())}
    tids = np.unique(np.concatenate([kg.out_triples(int(e)) for e in nodes] or [np.zeros(0, int)]))
    tri = kg.triples_np[tids.astype(np.int64)] if len(tids) else np.zeros((0, 3), np.int64)
    keep = np.array([int(t) in local for t in tri[:, 2]], dtype=bool) if len(tri) else []
    tri = tri[keep] if len(tri) else tri
    h = np.array([local[int(x)] for x in tri[:, 0]], dtype=np.int64)
    t = np.array([local[int(x)] for x in tri[:, 2]], dtype=np.int64)
    r = tri[:, 1].astype(np.int64)
    src = np.concatenate([h, t])
    dst = np.concatenate([t, h])
    return src, dst, np.concatenate([r, r + kg.num_relations])


def _distances(n: int, src: np.ndarray, dst: np.ndarray, start: int) -> np.ndarray:
    """``[n]`` undirected hop distance from local node ``start`` (``MAX_DISTANCE + 1`` beyond)."""
    adj: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(src.tolist(), dst.tolist(), strict=True):
        adj[u].append(v)
    dist = np.full(n, MAX_DISTANCE + 1, dtype=np.int64)
    dist[start] = 0
    queue = deque([start])
    while queue:
        u = queue.popleft()
        if dist[u] >= MAX_DISTANCE:
            continue
        for v in adj[u]:
            if dist[v] > dist[u] + 1:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


def _structure(n: int, src, dst, num_anchors: int, candidates: np.ndarray) -> np.ndarray:
    """``[n, STRUCTURE_DIM]`` (module doc)."""
    feats = np.zeros((n, STRUCTURE_DIM), dtype=np.float32)
    feats[:num_anchors, 0] = 1.0
    feats[candidates, 1] = 1.0
    within = np.zeros(n, dtype=np.float32)
    for k in range(num_anchors):
        dist = _distances(n, src, dst, k)
        within += dist <= MAX_DISTANCE
        if k < ANCHOR_SLOTS:
            feats[np.arange(n), 2 + k * (MAX_DISTANCE + 2) + dist] = 1.0
    for k in range(num_anchors, ANCHOR_SLOTS):  # absent anchor: "farther than L" everywhere
        feats[:, 2 + k * (MAX_DISTANCE + 2) + MAX_DISTANCE + 1] = 1.0
    feats[:, -1] = within / max(num_anchors, 1)
    return feats


def joint_graph(
    result: RetrievalResult, max_candidates: int = 32, max_neighbours: int = 8
) -> JointGraph | None:
    """The joint subgraph of ``result`` (module doc); ``None`` without anchors or answers.
    Its candidates are ``result.answers[:max_candidates]``, in that order."""
    kg = result.kg
    anchors = list(dict.fromkeys(int(t.entity) for t in result.topics))
    cands = [int(a.entity) for a in result.answers[:max_candidates]]
    if not anchors or not cands:
        return None
    if len(set(cands)) != len(cands):
        raise ValueError("joint_graph: a retrieval result ranks one entity twice")
    order: dict[int, None] = dict.fromkeys([*anchors, *cands])
    chosen = set(cands)
    paths = [*result.paths, *(a.path for a in result.answers if a.path and a.entity in chosen)]
    for p in paths:
        order.update(dict.fromkeys(int(e) for e in p.entities))
    for c in cands:
        order.update(dict.fromkeys(_neighbours(kg, c, max_neighbours)))
    nodes = np.fromiter(order, dtype=np.int64)
    src, dst, rel = _steps(kg, nodes)
    where = {e: i for i, e in enumerate(order)}
    local = np.array([where[c] for c in cands], dtype=np.int64)
    structure = _structure(len(nodes), src, dst, len(anchors), local)
    return JointGraph(nodes, src, dst, rel, local, structure)
