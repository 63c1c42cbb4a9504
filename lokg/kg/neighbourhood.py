"""Breadth-first neighbourhoods of a set of entities, as triple ids."""

from __future__ import annotations

from collections.abc import Sequence

from lokg.kg.graph import KnowledgeGraph

DIRECTIONS = ("both", "out")


def bfs_triples(
    kg: KnowledgeGraph,
    topics: Sequence[int],
    max_hops: int,
    max_triples: int | None = None,
    direction: str = "out",
) -> list[int]:
    """Triple ids within ``max_hops`` hops of ``topics``, breadth first.

    The edges of the topics come first, then those of their new neighbours, and so on; each
    node is expanded once and each triple listed once (a node's out-edges before its
    in-edges with ``direction="both"``). Stops after ``max_triples`` triples when given.

    ``direction="both"`` reads the KG's own triples only
    (:meth:`~lokg.kg.graph.KnowledgeGraph.own_part`, same ids): walking in-edges already
    reaches what an added inverse edge would, and the copy would take a second place in the
    list. ``"out"`` follows every edge, the added ones included.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"retriever.direction={direction!r}; expected one of {DIRECTIONS}")
    if direction == "both":
        kg = kg.own_part()
    seen_nodes = set(topics)
    seen_triples: set[int] = set()
    frontier = list(topics)
    out: list[int] = []
    for _ in range(max_hops):
        nxt: list[int] = []
        for v in frontier:
            edges = [(t, 2) for t in kg.out_triples(v).tolist()]
            if direction == "both":
                edges += [(t, 0) for t in kg.in_triples(v).tolist()]
            for t, other in edges:
                if t in seen_triples:
                    continue
                if max_triples is not None and len(out) >= max_triples:
                    return out
                seen_triples.add(t)
                out.append(t)
                node = int(kg.triples_np[t, other])
                if node not in seen_nodes:
                    seen_nodes.add(node)
                    nxt.append(node)
        frontier = nxt
    return out
