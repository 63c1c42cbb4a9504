"""The walk's supervision: the paths a training question is trained to follow
(:func:`supervised_paths`), found in its answer graph without the L-hop ball
(:func:`answer_graph`), the part of the graph they walk (:func:`keep_steps`) and each step's
relation degree in the KG (:func:`relation_degrees`, the vocabulary-normalised walk's
``log deg_r(u)``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.walk.graph import WalkGraph, _backtracks, walk_graph

__all__ = ["answer_graph", "keep_steps", "relation_degrees", "supervised_paths"]


def answer_graph(
    kg: KnowledgeGraph,
    topic: int,
    answers: Sequence[int],
    max_hops: int,
    max_fanout: int | None = None,
    both_directions: bool = True,
    seed: int = 0,
) -> WalkGraph:
    """The steps of ``topic``'s walk graph that a path of at most ``max_hops`` steps to an
    answer can use, without the ``max_hops`` ball: the ``max_hops - 1`` ball
    (:func:`walk_graph`, with its sampling), plus the steps from that ball's outermost nodes
    into an answer, read from the answers' side (an answer's own steps, reversed).  The last
    hop of the ball is by far its largest (``max_fanout ** L`` steps against
    ``max_fanout ** (L-1)``); this graph never holds it, so finding a training question's
    supervised paths (:func:`supervised_paths`) costs the same on a 1M-triple graph as on
    PathQuestion.  Steps into an answer from a hub keep every triple (no sampling there).
    """
    g = walk_graph(kg, topic, max_hops - 1, max_fanout, both_directions, seed)
    answer_ids = np.unique(np.asarray(list(answers), dtype=np.int64))
    rim = g.nodes[g.depth == max_hops - 1]  # nodes whose steps walk_graph did not take
    if not len(answer_ids) or not len(rim):
        return g
    # a step u -> a forward walks a triple (u, r, a): an answer's in-triples; backward, a
    # triple (a, r, u): an answer's out-triples
    into = [kg.in_triples(int(a)) for a in answer_ids]
    t_fwd = np.concatenate(into) if into else np.zeros(0, np.int64)
    starts = [kg.triples_np[t_fwd, 0]]
    t_ids, flags = [t_fwd], [np.zeros(len(t_fwd), dtype=bool)]
    if both_directions:
        outof = [kg.out_triples(int(a)) for a in answer_ids]
        t_bwd = np.concatenate(outof) if outof else np.zeros(0, np.int64)
        starts.append(kg.triples_np[t_bwd, 2])
        t_ids.append(t_bwd)
        flags.append(np.ones(len(t_bwd), dtype=bool))
    start, tid, flag = np.concatenate(starts), np.concatenate(t_ids), np.concatenate(flags)
    keep = np.isin(start, rim)
    start, tid, flag = start[keep], tid[keep], flag[keep]
    if not len(tid):
        return g
    tri = kg.triples_np[tid]
    end = np.where(flag, tri[:, 0], tri[:, 2])
    local = {int(v): i for i, v in enumerate(g.nodes.tolist())}
    nodes, depth = g.nodes.tolist(), g.depth.tolist()
    for v in end.tolist():
        if v not in local:
            local[v] = len(nodes)
            nodes.append(v)
            depth.append(max_hops)
    rel = tri[:, 1] + kg.num_relations * flag.astype(np.int64)
    return WalkGraph(
        nodes=np.asarray(nodes, dtype=np.int64),
        src=np.concatenate([g.src, [local[u] for u in start.tolist()]]).astype(np.int64),
        dst=np.concatenate([g.dst, [local[v] for v in end.tolist()]]).astype(np.int64),
        triple_ids=np.concatenate([g.triple_ids, tid]).astype(np.int64),
        inverse=np.concatenate([g.inverse, flag]),
        step_relation=np.concatenate([g.step_relation, rel]).astype(np.int64),
        depth=np.asarray(depth, dtype=np.int64),
    )


def keep_steps(
    graph: WalkGraph, paths: Sequence[tuple[int, ...]]
) -> tuple[WalkGraph, list[tuple[int, ...]]]:
    """The part of ``graph`` that ``paths`` walk (the topic stays local node 0), and the
    paths renumbered into it: what training keeps per question."""
    steps = sorted({e for p in paths for e in p})
    step_at = {e: i for i, e in enumerate(steps)}
    used = sorted({0, *graph.src[steps].tolist(), *graph.dst[steps].tolist()})
    node_at = {u: i for i, u in enumerate(used)}
    idx = np.asarray(steps, dtype=np.int64)
    small = WalkGraph(
        nodes=graph.nodes[used],
        src=np.asarray([node_at[u] for u in graph.src[idx].tolist()], dtype=np.int64),
        dst=np.asarray([node_at[v] for v in graph.dst[idx].tolist()], dtype=np.int64),
        triple_ids=graph.triple_ids[idx],
        inverse=graph.inverse[idx],
        step_relation=graph.step_relation[idx],
        depth=graph.depth[used],
    )
    return small, [tuple(step_at[e] for e in p) for p in paths]


def relation_degrees(kg: KnowledgeGraph, graph: WalkGraph) -> np.ndarray:
    """``[m]`` deg_r(u) of each step ``u -r-> v`` in ``kg`` itself: how many steps of that
    relation (and direction) leave ``u``, all of them, as :func:`beam_walk` counts at
    retrieval (a sampled graph may hold fewer)."""
    out = np.empty(graph.num_steps, dtype=np.int64)
    seen: dict[tuple[int, int], int] = {}
    num_rel = kg.num_relations
    for e, (u, r) in enumerate(
        zip(graph.nodes[graph.src].tolist(), graph.step_relation.tolist(), strict=True)
    ):
        if (u, r) not in seen:
            t_ids = kg.out_triples(u) if r < num_rel else kg.in_triples(u)
            seen[u, r] = int(np.count_nonzero(kg.triples_np[t_ids, 1] == r % num_rel))
        out[e] = seen[u, r]
    return out


def supervised_paths(
    kg: KnowledgeGraph,
    graph: WalkGraph,
    answers: Sequence[int],
    length: int | None = None,
    relations: Sequence[str] = (),
    max_paths: int = 32,
    max_hops: int | None = None,
) -> list[tuple[int, ...]]:
    """Paths (tuples of step indices) the walk model is trained to follow.

    Paths run from the topic to a gold answer, never straight back along the triple just
    walked (:func:`_backtracks`), with ``length``
    steps when the dataset annotates a gold path of that length, else the shortest length
    reaching an answer, up to ``max_hops`` (``None``: the graph's depth).  When ``relations``
    (the gold path's relation labels) are given and some paths follow them, only those are
    kept.  At most ``max_paths`` (the first found).
    """
    answer_set = {int(a) for a in answers}
    targets = {i for i, g in enumerate(graph.nodes.tolist()) if g in answer_set}
    if not targets:
        return []
    out = graph.out_steps()
    max_len = length or max_hops or int(graph.depth.max())
    # distance to the nearest target along steps (backward BFS), to prune the DFS
    into: dict[int, list[int]] = {}
    for e, v in enumerate(graph.dst.tolist()):
        into.setdefault(v, []).append(e)
    dist = {t: 0 for t in targets}
    queue = deque(targets)
    while queue:
        v = queue.popleft()
        for e in into.get(v, []):
            u = int(graph.src[e])
            if u not in dist:
                dist[u] = dist[v] + 1
                queue.append(u)
    if 0 not in dist or dist[0] > max_len:
        return []
    found: list[tuple[int, ...]] = []

    def dfs(u: int, path: tuple[int, ...], want: int) -> None:
        if len(found) >= 4 * max_paths:
            return
        if len(path) == want:
            if u in targets:
                found.append(path)
            return
        for e in out[u].tolist():
            v = int(graph.dst[e])
            if (path and _backtracks(graph, path[-1], e)) or dist.get(v, want + 1) > want - len(
                path
            ) - 1:
                continue
            dfs(v, (*path, e), want)

    lengths = [length] if length is not None else range(max(dist[0], 1), max_len + 1)
    for want in lengths:
        dfs(0, (), want)
        if found:
            break
    if relations and found:
        labels = [_step_label(kg, graph, e) for e in range(graph.num_steps)]
        matching = [p for p in found if tuple(labels[e] for e in p) == tuple(relations)]
        found = matching or found
    return found[:max_paths]


def _step_label(kg: KnowledgeGraph, graph: WalkGraph, e: int) -> str:
    label = kg.relations.label(int(kg.triples_np[graph.triple_ids[e], 1]))
    return f"{label}^-1" if graph.inverse[e] else label
