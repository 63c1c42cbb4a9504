"""Per-question subgraphs: the L-hop out-ball of a topic entity (GAT training batches and
query-conditioned attention at retrieval)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np

from lokg.kg.graph import KnowledgeGraph

__all__ = ["question_subgraph"]


def question_subgraph(
    kg: KnowledgeGraph,
    topic: int,
    answers: Sequence[int],
    max_hops: int,
    max_fanout: int | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``max_hops`` out-ball of ``topic`` and the shortest-path positives.

    Returns ``(nodes [n], triple_ids [m], positive [m] bool)``: every out-edge of every node
    at distance < ``max_hops``; ``positive`` marks edges on a shortest topic -> answer path.
    With ``max_fanout``, a node with more out-edges keeps a uniform sample of that many
    (neighbour sampling, seeded by ``seed`` and the node), so hubs of a large graph do not
    pull the whole graph into one question's subgraph.
    """
    dist = {topic: 0}
    order = [topic]
    queue = deque([topic])
    tids: list[int] = []
    while queue:
        u = queue.popleft()
        if dist[u] >= max_hops:
            continue
        out = kg.out_triples(u)
        if max_fanout is not None and len(out) > max_fanout:
            rng = np.random.default_rng((seed, u))
            out = np.sort(rng.choice(out, max_fanout, replace=False))
        for t in out.tolist():
            tids.append(t)
            v = int(kg.triples_np[t, 2])
            if v not in dist:
                dist[v] = dist[u] + 1
                order.append(v)
                queue.append(v)
    tid_arr = np.asarray(tids, dtype=np.int64)
    positive = np.zeros(len(tid_arr), dtype=bool)
    # walk back from reached answers along edges with dist[v] = dist[u] + 1
    on_path = {a for a in answers if a in dist and a != topic}
    for level in range(max_hops, 0, -1):
        new = set()
        for i, t in enumerate(tids):
            u, v = int(kg.triples_np[t, 0]), int(kg.triples_np[t, 2])
            if v in on_path and dist[v] == level and dist.get(u) == level - 1:
                positive[i] = True
                new.add(u)
        on_path |= new
    return np.asarray(order, dtype=np.int64), tid_arr, positive
