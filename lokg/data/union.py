"""Several datasets as one: the training data of the pretrained walk (beyond the paper;
docs/design/taimr.md, "Pretrained walk").

:class:`UnionSource` reads its member datasets *through their own DataModules* (each prepared
with the package's split, so a member's val and test questions stay out of the union's
train) and returns one graph and one presplit question set:

- **graph**: the disjoint union of the members' graphs.  Members whose graphs are the same
  (equal fingerprints: ``pq3h`` and ``beyond_pq3h`` share the PQ-3H KB) share one copy.  An
  entity label found in two different members' graphs is renamed ``<member>::<label>`` in
  each, so no edge joins two KGs; every other label is kept as it is, so a question's text
  still mentions its topic entities by their labels.  Relations are shared *by label*: the
  walk trained on the union reads a relation through its name only
  (``model.relation_source=none``), so two KGs' ``born_in`` are one relation to it.
- **questions**: the members' train questions as train, their val questions as val, and no
  test questions (a member's test split is for reporting on that member).  Ids become
  ``<member>:<id>``.

Members are given as DataModule configs (``configs/data/pretrain.yaml`` lists them by the
data configs they are); leave a family out with ``~data.source.members.<name>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from lokg.data.sources import DatasetSource, RawDataset
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph, Vocabulary
from lokg.typing import Question

__all__ = ["NAMESPACE_SEP", "UnionSource"]

#: between a member's name and an entity label that two members' graphs share
NAMESPACE_SEP = "::"


class UnionSource(DatasetSource):
    """The members' graphs and train/val questions as one presplit dataset (module doc).

    Args:
        members: name -> a :class:`~lokg.data.datamodule.KGQADataModule` (instantiated by
            Hydra from the member's data config).
        name: the union's dataset name.
    """

    paper_setting = False
    inverse = "never"  # a pretraining set; retrieval never runs on it

    def __init__(self, members: Mapping[str, object], name: str = "pretrain"):
        if not members:
            raise InputError("data.source.members is empty; name at least one dataset")
        self.members = dict(sorted(members.items()))
        self.name = name

    def files(self) -> list[Path]:
        return [p for dm in self.members.values() for p in dm.source.files()]

    def config(self) -> dict:
        """The members by name and prepared-data fingerprint (their files and splits)."""
        return {
            **super().config(),
            "members": {k: dm.fingerprint() for k, dm in self.members.items()},
        }

    def load(self) -> RawDataset:
        graphs: dict[str, tuple[str, KnowledgeGraph]] = {}  # fingerprint -> (namespace, kg)
        owner: dict[str, str] = {}  # member -> the namespace its graph is read under
        questions: dict[str, list[Question]] = {"train": [], "val": [], "test": []}
        for name, dm in self.members.items():
            dm.prepare_data()
            dm.setup("fit")
            fp = dm.kg.fingerprint()
            graphs.setdefault(fp, (name, dm.kg))
            owner[name] = graphs[fp][0]
        kgs = {ns: kg for ns, kg in graphs.values()}
        rename = _entity_renames(kgs)
        union = _disjoint_union(kgs, rename, self.name)
        for name, dm in self.members.items():
            ns = owner[name]
            for split in ("train", "val"):
                questions[split] += [_renamed(q, name, rename[ns]) for q in dm.questions[split]]
        reports = [
            f"{name}: {len(dm.questions['train'])} train / {len(dm.questions['val'])} val "
            f"questions over {owner[name]}'s graph"
            for name, dm in self.members.items()
        ]
        return RawDataset(union, questions, presplit=True, reports=reports)


def _entity_renames(kgs: Mapping[str, KnowledgeGraph]) -> dict[str, dict[str, str]]:
    """Per namespace, the entity labels renamed ``<namespace>::<label>``: those that appear
    in another namespace's graph too."""
    seen: dict[str, int] = {}
    for kg in kgs.values():
        for label in kg.entities.labels:
            seen[label] = seen.get(label, 0) + 1
    return {
        ns: {lab: f"{ns}{NAMESPACE_SEP}{lab}" for lab in kg.entities.labels if seen[lab] > 1}
        for ns, kg in kgs.items()
    }


def _disjoint_union(
    kgs: Mapping[str, KnowledgeGraph], rename: Mapping[str, Mapping[str, str]], name: str
) -> KnowledgeGraph:
    """One graph: every namespace's entities (renamed where shared) and triples; relations
    merged by label (sorted vocabularies, as :meth:`KnowledgeGraph.from_labeled_triples`)."""
    ent_labels: list[str] = []
    for ns, kg in kgs.items():
        ent_labels += [rename[ns].get(lab, lab) for lab in kg.entities.labels]
    entities = Vocabulary.from_labels(ent_labels)
    relations = Vocabulary.from_labels(lab for kg in kgs.values() for lab in kg.relations.labels)
    blocks = []
    for ns, kg in kgs.items():
        own = kg.own_part()
        e_map = np.array([entities[rename[ns].get(lab, lab)] for lab in own.entities.labels])
        r_map = np.array([relations[lab] for lab in own.relations.labels], dtype=np.int64)
        t = np.asarray(own.triples_np)
        blocks.append(np.stack([e_map[t[:, 0]], r_map[t[:, 1]], e_map[t[:, 2]]], 1))
    triples = np.concatenate(blocks) if blocks else np.zeros((0, 3), dtype=np.int64)
    return KnowledgeGraph(entities, relations, triples, name=name)


def _renamed(q: Question, member: str, rename: Mapping[str, str]) -> Question:
    """``q`` under the union's labels and a ``<member>:<id>`` id."""

    def r(label: str) -> str:
        return rename.get(label, label)

    return dataclasses.replace(
        q,
        id=f"{member}:{q.id}",
        answers=tuple(r(a) for a in q.answers),
        topic_entities=tuple(r(t) for t in q.topic_entities),
        gold_path=tuple((r(h), rel, r(t)) for h, rel, t in q.gold_path),
    )
