"""The naive reference: every triple within L hops of the topic entities, breadth first.

``direction="both"`` (default) walks edges either way, the undirected neighbourhood a
serialiser that knows nothing of the question would dump; ``"out"`` follows edge direction
only, which on PathQuestion (whose questions always follow out-edges) is a much smaller and
easier neighbourhood.

With ``encoder=truncate`` this is "serialise the neighbourhood and cut it at B tokens", the
floor the headline budget curve compares against.  It ranks no answers (the extractive
reader gets none), so only answer coverage is meaningful for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.retriever import RetrievalResult

__all__ = ["DIRECTIONS", "BFSRetriever", "build_bfs"]

DIRECTIONS = ("both", "out")


class BFSRetriever:
    """Triples reachable from the topic entities in at most ``max_hops`` hops, in BFS order.

    Args:
        kg: the graph.
        max_hops: depth L (3, as TAIMR's).
        max_triples: stop after this many triples (``None``: the whole neighbourhood).
        direction: ``both`` (out- and in-edges) or ``out``.
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        max_hops: int = 3,
        max_triples: int | None = None,
        direction: str = "both",
    ):
        if direction not in DIRECTIONS:
            raise ValueError(f"retriever.direction={direction!r}; expected one of {DIRECTIONS}")
        if max_hops < 1:
            raise ValueError(f"retriever.max_hops must be >= 1, got {max_hops}")
        if max_triples is not None and max_triples < 1:
            raise ValueError(f"retriever.max_triples must be >= 1 or null, got {max_triples}")
        self.kg = kg
        self.max_hops = max_hops
        self.max_triples = max_triples
        self.direction = direction

    def neighbourhood(self, topics: Sequence[int]) -> list[int]:
        """Triple ids in BFS order: the edges of the topic entities, then of their
        neighbours, ... (each triple once, out-edges of a node before its in-edges)."""
        seen_nodes = set(topics)
        seen_triples: set[int] = set()
        frontier = list(topics)
        out: list[int] = []
        for _ in range(self.max_hops):
            nxt: list[int] = []
            for v in frontier:
                edges = [(t, 2) for t in self.kg.out_triples(v).tolist()]
                if self.direction == "both":
                    edges += [(t, 0) for t in self.kg.in_triples(v).tolist()]
                for t, other in edges:
                    if t in seen_triples:
                        continue
                    seen_triples.add(t)
                    out.append(t)
                    if self.max_triples is not None and len(out) >= self.max_triples:
                        return out
                    node = int(self.kg.triples_np[t, other])
                    if node not in seen_nodes:
                        seen_nodes.add(node)
                        nxt.append(node)
            frontier = nxt
        return out

    def retrieve(self, question: str, topic_entities: Sequence[str]) -> RetrievalResult:
        topics = [i for i in (self.kg.entities.get(t) for t in topic_entities) if i is not None]
        return RetrievalResult(answers=[], paths=[], triple_ids=self.neighbourhood(topics))


def build_bfs(
    kg: KnowledgeGraph,
    max_hops: int = 3,
    max_triples: int | None = None,
    direction: str = "both",
    **_unused: object,
) -> BFSRetriever:
    """``retriever=bfs``; accepts (and ignores) the arguments the TAIMR factory takes."""
    return BFSRetriever(kg, max_hops, max_triples, direction)
