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
from lokg.kg.neighbourhood import DIRECTIONS, bfs_triples
from lokg.retrieval import RetrievalResult, Retriever, check_counts, resolve_topics
from lokg.typing import Question

__all__ = ["BFSRetriever", "build_bfs"]


class BFSRetriever(Retriever):
    """Triples reachable from the topic entities in at most ``max_hops`` hops, in BFS order.

    Args:
        kg: the graph.
        max_hops: depth L (3, as TAIMR's).
        max_triples: stop after this many triples (``None``: the whole neighbourhood).
        direction: ``both`` (out- and in-edges) or ``out``.
    """

    name = "bfs"

    def __init__(
        self,
        kg: KnowledgeGraph,
        max_hops: int = 3,
        max_triples: int | None = None,
        direction: str = "both",
    ):
        if direction not in DIRECTIONS:
            raise ValueError(f"retriever.direction={direction!r}; expected one of {DIRECTIONS}")
        check_counts(max_hops=max_hops)
        if max_triples is not None and max_triples < 1:
            raise ValueError(f"retriever.max_triples must be >= 1 or null, got {max_triples}")
        self.kg = kg
        self.max_hops = max_hops
        self.max_triples = max_triples
        self.direction = direction

    def neighbourhood(self, topics: Sequence[int]) -> list[int]:
        """Triple ids in BFS order (:func:`lokg.kg.neighbourhood.bfs_triples`)."""
        return bfs_triples(self.kg, topics, self.max_hops, self.max_triples, self.direction)

    def retrieve(self, question: Question) -> RetrievalResult:
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        triples = self.neighbourhood([t.entity for t in topics])
        return RetrievalResult(self.kg, triples, topics=topics, unknown_topics=unknown)


#: ``retriever=bfs``: the class itself (the name is configs/retriever/bfs.yaml's ``_target_``,
#: which run keys hash)
build_bfs = BFSRetriever
