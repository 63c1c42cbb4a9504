"""A question's walk graph: the steps leaving a topic entity's L-hop neighbourhood, in both
edge directions (the learned walk, :mod:`lokg.taimr.walk`).

A *step* traverses one triple ``(h, r, t)`` either forward (``h -> t``, relation ``r``) or
backward (``t -> h``, relation ``r^-1``, numbered ``r + R``).  A question whose topic
entity is the tail of the triples it needs is then answered like one whose topic is the
head.  Steps keep the id of the triple they walk, so ITTC still renders every triple in its
true direction.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from lokg.kg.graph import KnowledgeGraph

__all__ = ["WalkGraph", "walk_graph"]


@dataclass(frozen=True)
class WalkGraph:
    """A topic entity's L-hop neighbourhood with both step directions.

    Attributes:
        nodes: ``[n]`` global entity ids; ``nodes[0]`` is the topic.
        src, dst: ``[m]`` local node indices of each step's start and end.
        triple_ids: ``[m]`` the triple each step walks.
        inverse: ``[m]`` True when the step walks its triple tail -> head.
        step_relation: ``[m]`` ``r`` (forward) or ``r + R`` (backward).
        depth: ``[n]`` hop distance from the topic.
    """

    nodes: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    triple_ids: np.ndarray
    inverse: np.ndarray
    step_relation: np.ndarray
    depth: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_steps(self) -> int:
        return len(self.src)

    def out_steps(self) -> list[np.ndarray]:
        """Step indices leaving each local node (``[n]`` arrays, step order)."""
        order = np.argsort(self.src, kind="stable")
        bounds = np.searchsorted(self.src[order], np.arange(self.num_nodes + 1))
        return [order[bounds[i] : bounds[i + 1]] for i in range(self.num_nodes)]


def _steps_of(kg: KnowledgeGraph, u: int, both: bool) -> tuple[np.ndarray, np.ndarray]:
    """(triple ids, inverse flags) of the steps leaving entity ``u``."""
    out = kg.out_triples(u)
    if not both:
        return out, np.zeros(len(out), dtype=bool)
    inn = kg.in_triples(u)
    return np.concatenate([out, inn]), np.concatenate(
        [np.zeros(len(out), dtype=bool), np.ones(len(inn), dtype=bool)]
    )


def _sampled_steps(
    kg: KnowledgeGraph, u: int, both: bool, max_fanout: int | None, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_steps_of`, keeping a seeded uniform sample of ``max_fanout`` for a hub."""
    t_ids, flags = _steps_of(kg, u, both)
    keep = _fanout_sample(len(t_ids), u, max_fanout, seed)
    return (t_ids, flags) if keep is None else (t_ids[keep], flags[keep])


def _fanout_sample(n: int, u: int, max_fanout: int | None, seed: int) -> np.ndarray | None:
    """Sorted indices of the seeded uniform sample of ``max_fanout`` of node ``u``'s ``n``
    steps, or ``None`` when it keeps them all."""
    if max_fanout is None or n <= max_fanout:
        return None
    return np.sort(np.random.default_rng((seed, u)).choice(n, max_fanout, False))


def walk_graph(
    kg: KnowledgeGraph,
    topic: int,
    max_hops: int,
    max_fanout: int | None = None,
    both_directions: bool = True,
    seed: int = 0,
) -> WalkGraph:
    """Every step leaving every node at distance < ``max_hops`` from ``topic``.

    With ``max_fanout``, a node with more steps keeps a seeded uniform sample of that many
    (neighbour sampling: hubs of a large graph do not pull it all into one question).
    A triple walked both ways (a self-loop, or both ends inside the ball) appears as two
    steps, one per direction.
    """
    num_rel = kg.num_relations
    depth = {topic: 0}
    order = [topic]
    queue = deque([topic])
    src: list[int] = []
    tids: list[np.ndarray] = []
    inv: list[np.ndarray] = []
    ends: list[int] = []
    while queue:
        u = queue.popleft()
        if depth[u] >= max_hops:
            continue
        t_ids, flags = _sampled_steps(kg, u, both_directions, max_fanout, seed)
        tri = kg.triples_np[t_ids]
        other = np.where(flags, tri[:, 0], tri[:, 2])
        for v in other.tolist():
            if v not in depth:
                depth[v] = depth[u] + 1
                order.append(v)
                queue.append(v)
        src.extend([u] * len(t_ids))
        tids.append(t_ids)
        inv.append(flags)
        ends.extend(other.tolist())
    local = {g: i for i, g in enumerate(order)}
    t_arr = np.concatenate(tids) if tids else np.zeros(0, np.int64)
    i_arr = np.concatenate(inv) if inv else np.zeros(0, bool)
    rel = kg.triples_np[t_arr, 1] + num_rel * i_arr.astype(np.int64)
    return WalkGraph(
        nodes=np.asarray(order, dtype=np.int64),
        src=np.asarray([local[u] for u in src], dtype=np.int64),
        dst=np.asarray([local[v] for v in ends], dtype=np.int64),
        triple_ids=t_arr.astype(np.int64),
        inverse=i_arr,
        step_relation=rel.astype(np.int64),
        depth=np.asarray([depth[g] for g in order], dtype=np.int64),
    )


def _backtracks(graph: WalkGraph, prev: int, e: int) -> bool:
    """Step ``e`` walks straight back along the triple step ``prev`` just walked (a self-loop
    never counts: PathQuestion's KBs chain one self-loop several times)."""
    return (
        graph.triple_ids[e] == graph.triple_ids[prev]
        and graph.inverse[e] != graph.inverse[prev]
        and graph.src[prev] != graph.dst[prev]
    )


def _walks_back(graph: WalkGraph, prev: int, steps: np.ndarray) -> np.ndarray:
    """``[k]`` bool: :func:`_backtracks` for each of ``steps`` (``[k]`` step indices)."""
    if graph.src[prev] == graph.dst[prev]:
        return np.zeros(len(steps), dtype=bool)
    tid, inv = graph.triple_ids[prev], graph.inverse[prev]
    return (graph.triple_ids[steps] == tid) & (graph.inverse[steps] != inv)
