"""Shared names for the types that cross module boundaries.

Ids are shared across splits (one vocabulary, PyKEEN style) and triples are always
ordered (head, relation, tail).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch

EntityId = int
RelationId = int
TripleId = int

#: ``[T, 3]`` int64 tensor of (head, relation, tail) ids.
MappedTriples = torch.LongTensor
#: A (head, relation, tail) triple of labels, as read from a file.
LabeledTriple = tuple[str, str, str]
#: 1-D int64 numpy array.
IdArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Question:
    """One KGQA question.

    Attributes:
        id: unique within its dataset (and stable across runs: results are keyed by it).
        text: the natural-language question.
        answers: gold answer labels (entity labels of the KG where the answer is an entity);
            empty for a question without gold answers (asked for answering only: it is
            answered and recorded, and no answer metric is computed for it).
        topic_entities: labels of the question's topic entities (given, as in the paper).
        gold_path: the annotated reasoning path as labelled triples, when the dataset has one.
    """

    id: str
    text: str
    answers: tuple[str, ...]
    topic_entities: tuple[str, ...]
    gold_path: tuple[LabeledTriple, ...] = field(default=())

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "question": self.text,
            "answers": list(self.answers),
            "topic_entities": list(self.topic_entities),
            "gold_path": [list(t) for t in self.gold_path],
        }
