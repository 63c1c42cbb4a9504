"""The retrieval contract: one seam between "find evidence" and "encode and answer".

Every retriever — TAIMR, the semantic "w/o TAIMR" retriever, KAPING's retrieval, the BFS
reference and every later baseline — is a :class:`Retriever`: it takes the whole
:class:`~lokg.typing.Question` and returns a :class:`RetrievalResult`, which carries the graph
its triple ids refer to, the candidate triples (ranked, best first), the supporting paths and
the ranked candidate answers. A retriever owns whatever state it keeps between questions (a
path cache, a model) and persists it itself (:meth:`Retriever.load_cache`,
:meth:`Retriever.save_cache`); the pipeline never looks inside one.

    result = retriever.retrieve(question)
    context = encoder.encode(result.kg, result.triple_ids, budget=B, ...)

Two invariants hold for every retriever, because the result enforces them when built:

- the candidate triples are facts as the KG states them: on a graph with added inverse edges
  (``data.source.inverse``) a path may walk ``(t, r (inverse), h)``, and its candidate triple
  is the KG's own ``(h, r, t)`` (:meth:`~lokg.kg.graph.KnowledgeGraph.stated`), so the
  encoder renders it as ITTC renders every fact, in its true direction, and a fact reached
  both ways is listed once;
- the candidate answers are entities, not spellings: answers whose labels differ only in
  case, underscores or whitespace (``Keanu Reeves``, ``keanu_reeves``) are one candidate
  (:func:`merge_spellings`), and ``merged_answers`` counts the merges.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from lokg.kg.graph import KnowledgeGraph
from lokg.normalize import spelling_key
from lokg.typing import EntityId, Question, RelationId, TripleId

__all__ = [
    "PerQuestionRetriever",
    "RankedAnswer",
    "RetrievalResult",
    "RetrievedPath",
    "Retriever",
    "TopicEntity",
    "check_counts",
    "merge_spellings",
    "resolve_topics",
    "triples_of_paths",
]


@dataclass(frozen=True)
class RetrievedPath:
    """One path from a topic entity: ``entities`` has one more element than ``triple_ids``.

    Attributes:
        entities: ``v_0 = topic, v_1, ..., v_k``.
        triple_ids: the k triples walked, into the result's graph.
        relations: their relation ids.
        s_topo: S_topo of Eq. (16) (0 for retrievers without a topology score).
        s_link: the relation-linking score (beyond the paper; 0 when linking is off).
        s_sem: S_sem of Eq. (17) of the path's answer (or the retriever's similarity).
        s_final: S_final of Eq. (18) (or the retriever's ranking score).
    """

    entities: tuple[EntityId, ...]
    triple_ids: tuple[TripleId, ...]
    relations: tuple[RelationId, ...]
    s_topo: float
    s_link: float = 0.0
    s_sem: float = 0.0
    s_final: float = 0.0

    def __post_init__(self) -> None:
        if len(self.entities) != len(self.triple_ids) + 1:
            raise ValueError(
                f"RetrievedPath: {len(self.entities)} entities for {len(self.triple_ids)} "
                "triples; expected one more entity than triples"
            )
        if len(self.relations) != len(self.triple_ids):
            raise ValueError("RetrievedPath: one relation per triple expected")

    @property
    def answer(self) -> EntityId:
        return self.entities[-1]


@dataclass(frozen=True)
class RankedAnswer:
    """A candidate answer, its ranking score and the path that supports it (if any)."""

    entity: EntityId
    label: str
    score: float
    path: RetrievedPath | None = None


def merge_spellings(answers: Sequence[RankedAnswer]) -> tuple[list[RankedAnswer], int]:
    """``answers`` (best first) with those of one spelling merged, and how many were merged.

    Two answers are one candidate when their labels have the same
    :func:`~lokg.normalize.spelling_key` (they differ only in case, underscores or
    whitespace: ``Keanu Reeves``, ``keanu_reeves``, ``keanu  reeves``). Every answer is an
    entity of the KG, so the spelling kept is always one of the KG's own: that of the
    best-ranked member (the first in ``answers``; retrievers that sort by score break ties by
    the smallest entity id), with its entity and path. The merged score is the members'
    maximum (the first one's own in a list sorted by score): scores are not probabilities for
    every retriever (S_final adds a cosine to a log-score), and an entity spelled twice must
    not outrank one spelled once. The kept candidate stays at its first member's rank.
    """
    out: list[RankedAnswer] = []
    at: dict[str, int] = {}
    merged = 0
    for a in answers:
        key = spelling_key(a.label)
        i = at.get(key)
        if i is None:
            at[key] = len(out)
            out.append(a)
            continue
        merged += 1
        if a.score > out[i].score:
            out[i] = replace(out[i], score=a.score)
    return out, merged


@dataclass(frozen=True)
class TopicEntity:
    """A topic entity of the question as given (``label``) and its id in the graph."""

    label: str
    entity: EntityId


@dataclass(frozen=True)
class RetrievalResult:
    """What a retriever found for one question.

    Attributes:
        kg: the graph every id below refers to (SCOS's G*, or the question's own subgraph).
        triple_ids: candidate triples for the encoder, ranked best first, distinct, as the KG
            states them (an added inverse edge is replaced by the triple it reverses).
        answers: candidate answers, best first (empty for retrievers that rank none, e.g. BFS),
            one per spelling (:func:`merge_spellings`).
        paths: the supporting paths, best first (the top K_top for TAIMR).
        topics: the question's topic entities found in ``kg``, in the question's order.
        unknown_topics: topic labels of the question that ``kg`` does not contain.
        extra: retriever-specific facts worth recording (JSON-able).
        passages: ranked text evidence, best first, for methods whose evidence is text rather
            than triples (GraphRAG's community reports); when present the pipeline places
            these under B instead of encoding ``triple_ids``.
        accounting: the LLM calls the retriever itself made for this question (ToG's
            pruning and reasoning prompts, GraphRAG's community reports):
            ``lokg.llm.CallLedger.as_dict()`` keys; the pipeline adds them to the reader's.
        merged_answers: candidate answers merged into another of the same spelling (the
            count given plus those merged when this result was built; recorded per question
            as ``merged_candidates``).
    """

    kg: KnowledgeGraph
    triple_ids: tuple[TripleId, ...] = ()
    answers: tuple[RankedAnswer, ...] = ()
    paths: tuple[RetrievedPath, ...] = ()
    topics: tuple[TopicEntity, ...] = ()
    unknown_topics: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    passages: tuple[str, ...] = ()
    accounting: dict = field(default_factory=dict)
    merged_answers: int = 0

    def __post_init__(self) -> None:
        # accept lists from callers; store tuples so a result is immutable
        for name in ("triple_ids", "answers", "paths", "topics", "unknown_topics", "passages"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.kg.has_added_inverses:
            object.__setattr__(self, "triple_ids", tuple(self.kg.stated(self.triple_ids)))
        answers, merged = merge_spellings(self.answers)
        if merged:
            object.__setattr__(self, "answers", tuple(answers))
            object.__setattr__(self, "merged_answers", self.merged_answers + merged)

    @property
    def top_answer(self) -> str | None:
        return self.answers[0].label if self.answers else None

    @property
    def is_empty(self) -> bool:
        """No candidate triple or passage: the reader would get no evidence."""
        return not self.triple_ids and not self.passages


def resolve_topics(
    kg: KnowledgeGraph, labels: Sequence[str]
) -> tuple[list[TopicEntity], list[str]]:
    """The question's topic labels as (label, id) pairs found in ``kg``, and the unknown labels.

    Each label stays paired with its own id, so an unknown topic among known ones never
    shifts the others.
    """
    found: list[TopicEntity] = []
    unknown: list[str] = []
    for label in labels:
        idx = kg.entities.get(label)
        if idx is None:
            unknown.append(label)
        else:
            found.append(TopicEntity(label, int(idx)))
    return found, unknown


def check_counts(**settings: int) -> None:
    """Refuse a retriever's count setting below 1, the first in the order given
    (``retriever.<key> must be >= 1, got <value>``)."""
    for key, value in settings.items():
        if value < 1:
            raise ValueError(f"retriever.{key} must be >= 1, got {value}")


def triples_of_paths(paths: Sequence[RetrievedPath]) -> list[TripleId]:
    """The distinct triple ids of ``paths``, in path order."""
    seen: dict[int, None] = {}
    for p in paths:
        for t in p.triple_ids:
            seen.setdefault(int(t), None)
    return list(seen)


class Retriever(ABC):
    """The contract every retriever implements.

    Subclasses implement :meth:`retrieve`. One that keeps state worth persisting between
    runs (TAIMR's path cache) overrides :attr:`cache_key`, :meth:`load_cache` and
    :meth:`save_cache`; the defaults say there is none.
    """

    #: short name used in logs and records
    name: str = "retriever"

    @abstractmethod
    def retrieve(self, question: Question) -> RetrievalResult:
        """Evidence for one question (its text and topic entities)."""

    @property
    def cache_key(self) -> str | None:
        """Identity of the persisted state (it enters the results key); ``None``: no state."""
        return None

    def load_cache(self, directory: str | os.PathLike) -> bool:
        """Load persisted state from ``directory`` if present; True when something was loaded."""
        return False

    def save_cache(self, directory: str | os.PathLike) -> Path | None:
        """Persist state computed so far under ``directory``; the file written, if any."""
        return None


class PerQuestionRetriever(Retriever):
    """A retriever for datasets with one subgraph per question (RoG-format WebQSP/CWQ).

    Args:
        graph_of: question -> its graph (after SCOS's φ when SCOS is on).
        build: graph -> the configured retriever over it.
    """

    def __init__(
        self,
        graph_of: Callable[[Question], KnowledgeGraph],
        build: Callable[[KnowledgeGraph], Retriever],
    ) -> None:
        self.graph_of = graph_of
        self.build = build

    @property
    def name(self) -> str:  # type: ignore[override]
        return "per-question"

    def retrieve(self, question: Question) -> RetrievalResult:
        return self.build(self.graph_of(question)).retrieve(question)
