"""The two reference rows of Table 5 (ours, not the paper's): what the reader does with the
best possible evidence, and with none.

- :class:`OracleRetriever` (``baseline=oracle``): the question's gold path, its triples only,
  in path order: the information-per-token ceiling. Only for datasets that annotate gold
  paths (PathQuestion); a question without one is a one-line input error.
- :class:`NoEvidenceRetriever` (``baseline=none``): no evidence at all; the baseline config sets
  ``answer_without_evidence: true`` so the reader is asked the question alone (what it knows
  by itself).
"""

from __future__ import annotations

from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.retrieval import RankedAnswer, RetrievalResult, RetrievedPath, Retriever, resolve_topics
from lokg.typing import Question

__all__ = ["NoEvidenceRetriever", "OracleRetriever", "build_none", "build_oracle"]


class OracleRetriever(Retriever):
    """The gold path's triples (see the module docstring).

    Args:
        kg: the graph the gold path's labelled triples are looked up in.
    """

    name = "oracle"

    def __init__(self, kg: KnowledgeGraph):
        self.kg = kg
        self._ids: dict[tuple[int, int, int], int] = {}
        for i, row in enumerate(kg.triples_np.tolist()):
            self._ids.setdefault((int(row[0]), int(row[1]), int(row[2])), i)

    def triple_id(self, head: str, relation: str, tail: str) -> int | None:
        """The id of the labelled triple in ``kg``, or None when the graph lacks it."""
        h, r, t = kg_ids = (
            self.kg.entities.get(head),
            self.kg.relations.get(relation),
            self.kg.entities.get(tail),
        )
        if None in kg_ids:
            return None
        return self._ids.get((h, r, t))

    def retrieve(self, question: Question) -> RetrievalResult:
        if not question.gold_path:
            raise InputError(
                f"question {question.id}: baseline=oracle needs the gold path of every question; "
                "this dataset has none (use a dataset with gold paths, e.g. PathQuestion)"
            )
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        ids = [self.triple_id(*t) for t in question.gold_path]
        found = [i for i in ids if i is not None]
        answers, paths = [], []
        if found and len(found) == len(ids):
            rows = [self.kg.triples_np[i] for i in found]
            entities = (int(rows[0][0]), *(int(r[2]) for r in rows))
            path = RetrievedPath(entities, tuple(found), tuple(int(r[1]) for r in rows), 0.0)
            paths = [path]
            end = entities[-1]
            answers = [RankedAnswer(end, self.kg.entities.label(end), 1.0, path)]
        return RetrievalResult(
            self.kg,
            found,
            answers,
            paths,
            topics,
            unknown,
            extra={"gold_triples": len(ids), "gold_triples_in_kg": len(found)},
        )


#: ``retriever=oracle``: the class itself (the name is the config's ``_target_``, which run keys
#: hash)
build_oracle = OracleRetriever


class NoEvidenceRetriever(Retriever):
    """No evidence: the topic entities are resolved (for the record) and nothing is retrieved."""

    name = "none"

    def __init__(self, kg: KnowledgeGraph):
        self.kg = kg

    def retrieve(self, question: Question) -> RetrievalResult:
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        return RetrievalResult(self.kg, topics=topics, unknown_topics=unknown)


#: ``retriever=none``: the class itself (the name is the config's ``_target_``)
build_none = NoEvidenceRetriever
