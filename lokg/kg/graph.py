"""The knowledge graph every module of the method shares.

A :class:`KnowledgeGraph` holds one entity and one relation vocabulary (label <-> id), the
triples as an int64 ``[T, 3]`` array ordered (head, relation, tail), CSR adjacency for out-
and in-edges, optional per-entity attributes, and the graph statistics the paper uses
(Eq. (4) tail entropy H(r), in-degree, incoming relation diversity of Eq. (12)).

Direction and parallel edges are preserved: two triples (h, r1, t) and (h, r2, t) are two
edges, and (h, r, t) never implies (t, r, h).  Everything is numpy so that a saved graph can
be memory-mapped (:meth:`KnowledgeGraph.load` with ``mmap=True``).

A graph may carry *added inverse edges* (``data.source.inverse``,
:mod:`lokg.kg.inverse_edges`): relations ``r (inverse)`` whose triples ``(t, r (inverse), h)``
reverse the KG's own ``(h, r, t)``.  ``inverse_of [R]`` says which relation each added one
reverses (-1 for the KG's own); the added relations and their triples come after the KG's
own, so :meth:`KnowledgeGraph.own_part` (the KG as given) shares every id with the whole.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from lokg.atomic_io import atomic_directory, read_versioned_json
from lokg.kg.steps import StepIndex
from lokg.manifest import check_directory
from lokg.typing import IdArray, LabeledTriple

__all__ = ["EntityAttributes", "KnowledgeGraph", "StepIndex", "Vocabulary", "label_as_words"]

log = logging.getLogger(__name__)

_FORMAT_VERSION = 1


def label_as_words(label: str) -> str:
    """An entity or relation label as words: underscores become spaces, the ends are stripped
    (``"__people__person__place_of_birth"`` -> ``"people  person  place of birth"``).

    The relation word of KAPING's, ToG's and GraphRAG's triple lines and of the semantic
    retriever's verbalisations (:meth:`KnowledgeGraph.relation_text`), and an entity's name
    when it has none (:meth:`KnowledgeGraph.entity_name`).  ITTC's renderer splits labels into
    hierarchy segments instead (``lokg.ittc.render.relation_segments``).
    """
    return label.replace("_", " ").strip()


class Vocabulary:
    """A bijection between string labels and contiguous ids ``0..n-1``.

    Args:
        labels: the labels in id order; must be unique.
    """

    def __init__(self, labels: Sequence[str]):
        self.labels: list[str] = list(labels)
        self.index: dict[str, int] = {label: i for i, label in enumerate(self.labels)}
        if len(self.index) != len(self.labels):
            seen: set[str] = set()
            dup = next(lab for lab in self.labels if lab in seen or seen.add(lab))
            raise ValueError(f"Vocabulary labels must be unique; {dup!r} appears twice")

    @classmethod
    def from_labels(cls, labels: Iterable[str]) -> Vocabulary:
        """Sorted, de-duplicated vocabulary: ids do not depend on the order of the input file."""
        return cls(sorted(set(labels)))

    def __len__(self) -> int:
        return len(self.labels)

    def __contains__(self, label: object) -> bool:
        return label in self.index

    def __getitem__(self, label: str) -> int:
        try:
            return self.index[label]
        except KeyError:
            raise KeyError(f"unknown label {label!r} (vocabulary of {len(self)} labels)") from None

    def get(self, label: str, default: int | None = None) -> int | None:
        return self.index.get(label, default)

    def label(self, idx: int) -> str:
        return self.labels[idx]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.labels == other.labels

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)})"


@dataclass
class EntityAttributes:
    """Optional per-entity attributes used by ITTC's balanced and verbose renderings.

    Every list, when present, has one entry per entity id.  ``None`` entries mean unknown.
    Where a KG has no names, :meth:`name` falls back to the label with underscores as spaces.
    """

    names: list[str | None] | None = None
    aliases: list[list[str]] | None = None
    types: list[str | None] | None = None
    descriptions: list[str | None] | None = None
    extra: dict[str, list[str | None]] = field(default_factory=dict)

    def check(self, num_entities: int) -> None:
        for key in ("names", "aliases", "types", "descriptions"):
            values = getattr(self, key)
            if values is not None and len(values) != num_entities:
                raise ValueError(
                    f"EntityAttributes.{key} has {len(values)} entries, expected {num_entities}"
                )
        for key, values in self.extra.items():
            if len(values) != num_entities:
                raise ValueError(
                    f"EntityAttributes.extra[{key!r}] has {len(values)} entries, "
                    f"expected {num_entities}"
                )

    def to_json(self) -> dict:
        return {
            "names": self.names,
            "aliases": self.aliases,
            "types": self.types,
            "descriptions": self.descriptions,
            "extra": self.extra,
        }

    @classmethod
    def from_json(cls, data: dict) -> EntityAttributes:
        return cls(
            names=data.get("names"),
            aliases=data.get("aliases"),
            types=data.get("types"),
            descriptions=data.get("descriptions"),
            extra=data.get("extra") or {},
        )


def _csr(keys: np.ndarray, num_nodes: int) -> tuple[IdArray, IdArray]:
    """CSR of triple ids grouped by ``keys`` (stable: ties keep triple order).

    Returns ``ptr [num_nodes + 1]`` and ``idx [T]`` such that the triples whose key is ``v``
    are ``idx[ptr[v]:ptr[v + 1]]``.
    """
    order = np.argsort(keys, kind="stable").astype(np.int64, copy=False)
    counts = np.bincount(keys, minlength=num_nodes)
    ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, order


def _check_inverse_of(
    inverse_of: np.ndarray | None, triples: np.ndarray, num_relations: int
) -> IdArray | None:
    """``inverse_of`` as int64 after checking its layout (added relations and triples last)."""
    if inverse_of is None:
        return None
    inv = np.asarray(inverse_of, dtype=np.int64)
    if inv.shape != (num_relations,):
        raise ValueError(f"inverse_of must have shape [{num_relations}], got {list(inv.shape)}")
    own = int(np.count_nonzero(inv < 0))
    if (inv[:own] >= 0).any() or (inv[own:] >= own).any() or (inv[own:] < 0).any():
        raise ValueError(
            "inverse_of: the KG's own relations (-1) must come first and every added relation "
            "must reverse one of them"
        )
    if len(triples):
        added = triples[:, 1] >= own
        first = int(np.argmax(added)) if added.any() else len(triples)
        if added[first:].size and not added[first:].all():
            raise ValueError("inverse_of: the added inverse triples must follow the KG's own")
    return inv


def _distinct(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)`` for int64 keys, by one sort (numpy 2.4's ``np.unique`` of int64 is
    ~100x slower than its ``np.sort`` at 10^6 keys)."""
    keys = np.sort(keys)
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def _steps_dir(prefix: str, both_directions: bool) -> str:
    """The directory beside a saved graph holding its step index (``prefix`` ``"own-"``: its
    own part's, :meth:`KnowledgeGraph.own_part`)."""
    return f"{prefix}steps-{'both' if both_directions else 'out'}"


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """``[N]`` one opaque, sortable key per int64 row of ``rows [N, 3]`` (its bytes)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    return rows.view(np.dtype((np.void, rows.itemsize * 3))).ravel()


class KnowledgeGraph:
    """A directed multi-relational graph with a shared vocabulary.

    Args:
        entities: entity vocabulary (id ``i`` is ``entities.labels[i]``).
        relations: relation vocabulary.
        triples: ``[T, 3]`` int64 (head, relation, tail) ids; a numpy array or a tensor.
        attributes: optional per-entity attributes.
        name: a short name used in reports.
        inverse_of: ``[R]`` for each relation, the relation it is the added inverse of, or
            -1 for the KG's own relations (``None``: no added inverse edges).  The added
            relations must follow the KG's own, and their triples the KG's own triples.

    Shapes:
        - ``triples``: ``[T, 3]`` (a ``torch.LongTensor`` sharing memory with ``triples_np``)
        - ``out_ptr``, ``in_ptr``: ``[E + 1]``; ``out_idx``, ``in_idx``: ``[T]`` triple ids
        - ``edge_index``: ``[2, T]`` (head -> tail); ``edge_type``: ``[T]``
    """

    def __init__(
        self,
        entities: Vocabulary,
        relations: Vocabulary,
        triples: np.ndarray | torch.Tensor,
        attributes: EntityAttributes | None = None,
        name: str = "kg",
        *,
        inverse_of: np.ndarray | None = None,
        _csr_arrays: dict[str, np.ndarray] | None = None,
    ):
        if isinstance(triples, torch.Tensor):
            triples = triples.detach().cpu().numpy()
        triples = np.asanyarray(triples)  # keeps np.memmap
        if triples.ndim != 2 or triples.shape[1] != 3:
            raise ValueError(f"triples must have shape [T, 3], got {list(triples.shape)}")
        if triples.dtype != np.int64:
            triples = triples.astype(np.int64)
        if len(triples):
            lo, hi = int(triples.min()), int(triples[:, [0, 2]].max())
            rmax = int(triples[:, 1].max())
            if lo < 0 or hi >= len(entities) or rmax >= len(relations):
                raise ValueError(
                    f"triple ids out of range: entities [0, {len(entities)}), relations "
                    f"[0, {len(relations)}), got min {lo}, max entity {hi}, max relation {rmax}"
                )
        if attributes is not None:
            attributes.check(len(entities))
        self.entities = entities
        self.relations = relations
        self.triples_np: np.ndarray = triples
        self.attributes = attributes
        self.name = name
        self.inverse_of: IdArray | None = _check_inverse_of(inverse_of, triples, len(relations))
        if _csr_arrays is None:
            self.out_ptr, self.out_idx = _csr(triples[:, 0], len(entities))
            self.in_ptr, self.in_idx = _csr(triples[:, 2], len(entities))
        else:
            self.out_ptr = _csr_arrays["out_ptr"]
            self.out_idx = _csr_arrays["out_idx"]
            self.in_ptr = _csr_arrays["in_ptr"]
            self.in_idx = _csr_arrays["in_idx"]

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_labeled_triples(
        cls,
        triples: Iterable[LabeledTriple],
        name: str = "kg",
        extra_entities: Iterable[str] = (),
    ) -> KnowledgeGraph:
        """Build a graph from (head, relation, tail) labels; vocabularies are sorted labels.

        ``extra_entities`` adds isolated entities (e.g. answers that appear in no triple).
        """
        ent_first: dict[str, int] = {}
        rel_first: dict[str, int] = {}
        rows: list[tuple[int, int, int]] = []
        for h, r, t in triples:
            rows.append(
                (
                    ent_first.setdefault(h, len(ent_first)),
                    rel_first.setdefault(r, len(rel_first)),
                    ent_first.setdefault(t, len(ent_first)),
                )
            )
        for e in extra_entities:
            ent_first.setdefault(e, len(ent_first))
        ent_labels = sorted(ent_first)
        rel_labels = sorted(rel_first)
        ent_perm = np.empty(len(ent_first), dtype=np.int64)
        ent_perm[[ent_first[label] for label in ent_labels]] = np.arange(len(ent_labels))
        rel_perm = np.empty(len(rel_first), dtype=np.int64)
        rel_perm[[rel_first[label] for label in rel_labels]] = np.arange(len(rel_labels))
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        if len(arr):
            arr = np.stack([ent_perm[arr[:, 0]], rel_perm[arr[:, 1]], ent_perm[arr[:, 2]]], 1)
        return cls(Vocabulary(ent_labels), Vocabulary(rel_labels), arr, name=name)

    @classmethod
    def from_ids(
        cls,
        triples: np.ndarray,
        num_entities: int,
        num_relations: int,
        *,
        name: str = "kg",
        entity_prefix: str = "e",
        relation_prefix: str = "r",
    ) -> KnowledgeGraph:
        """A graph over integer ids with generated labels ``e0, e1, ...`` / ``r0, r1, ...``."""
        width_e = len(str(max(num_entities - 1, 0)))
        width_r = len(str(max(num_relations - 1, 0)))
        ents = Vocabulary([f"{entity_prefix}{i:0{width_e}d}" for i in range(num_entities)])
        rels = Vocabulary([f"{relation_prefix}{i:0{width_r}d}" for i in range(num_relations)])
        return cls(ents, rels, triples, name=name)

    # ------------------------------------------------------------------ sizes and views
    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_relations(self) -> int:
        return len(self.relations)

    @property
    def num_triples(self) -> int:
        return len(self.triples_np)

    @cached_property
    def triples(self) -> torch.LongTensor:
        """``[T, 3]`` int64 tensor (shares memory with ``triples_np`` when writable)."""
        arr = self.triples_np
        if not arr.flags.writeable:
            arr = np.array(arr)
        return torch.from_numpy(arr)

    @property
    def edge_index(self) -> torch.LongTensor:
        """``[2, T]`` head -> tail, one column per triple (parallel edges kept)."""
        return self.triples[:, [0, 2]].t().contiguous()

    @property
    def edge_type(self) -> torch.LongTensor:
        """``[T]`` relation id of each edge of :attr:`edge_index`."""
        return self.triples[:, 1].contiguous()

    def out_triples(self, entity: int) -> IdArray:
        """Ids of the triples whose head is ``entity`` (in triple order)."""
        return self.out_idx[self.out_ptr[entity] : self.out_ptr[entity + 1]]

    def in_triples(self, entity: int) -> IdArray:
        """Ids of the triples whose tail is ``entity`` (in triple order)."""
        return self.in_idx[self.in_ptr[entity] : self.in_ptr[entity + 1]]

    def labeled(self, triple_id: int) -> LabeledTriple:
        h, r, t = self.triples_np[triple_id]
        return (
            self.entities.label(int(h)),
            self.relations.label(int(r)),
            self.entities.label(int(t)),
        )

    # ------------------------------------------------------------------ added inverse edges
    @property
    def has_added_inverses(self) -> bool:
        """Whether the graph holds added inverse edges (``data.source.inverse``)."""
        return self.inverse_of is not None and self.num_own_relations < self.num_relations

    @cached_property
    def num_own_relations(self) -> int:
        """Relations of the KG itself (the first ids); the rest are added inverses."""
        if self.inverse_of is None:
            return self.num_relations
        return int(np.count_nonzero(self.inverse_of < 0))

    @cached_property
    def num_own_triples(self) -> int:
        """Triples of the KG itself (the first ids); the rest are added inverse edges."""
        if not self.has_added_inverses:
            return self.num_triples
        return int(np.count_nonzero(self.triples_np[:, 1] < self.num_own_relations))

    @cached_property
    def inverse_partner(self) -> IdArray:
        """``[R]`` an own relation's added inverse, an added relation's own one, else -1."""
        partner = np.full(self.num_relations, -1, dtype=np.int64)
        if self.inverse_of is not None:
            added = np.flatnonzero(self.inverse_of >= 0)
            partner[added] = self.inverse_of[added]
            partner[self.inverse_of[added]] = added
        return partner

    def own_part(self) -> KnowledgeGraph:
        """The KG as given: its own relations and triples, without the added inverse edges.

        Every id is the same as in ``self`` (the added ones come last), so a triple id found
        in the own part is valid in the whole.  Retrievers that walk both directions by
        themselves (the learned walk, BFS/KAPING with ``direction=both``, GraphRAG, ToG) read
        this part, so an added edge is never a second copy of a step they already take.
        ``self`` when nothing was added; built once and kept.
        """
        if not self.has_added_inverses:
            return self
        cached = self.__dict__.get("_own_part")
        if cached is None:
            cached = KnowledgeGraph(
                self.entities,
                Vocabulary(self.relations.labels[: self.num_own_relations]),
                self.triples_np[: self.num_own_triples],
                self.attributes,
                self.name,
            )
            home = self.__dict__.get("_step_home")
            if home is not None:  # its step index beside the whole graph's
                cached.__dict__["_step_home"] = (home[0], home[1], "own-")
            self.__dict__["_own_part"] = cached
        return cached

    @cached_property
    def statement_ids(self) -> IdArray:
        """``[T]`` the id of the KG's own triple that states each triple: itself for the
        KG's own, and for an added ``(t, r (inverse), h)`` the ``(h, r, t)`` it reverses (the
        first, if the KG repeats it). Two steps over one fact share their statement id."""
        ids = np.arange(self.num_triples, dtype=np.int64)
        own = self.num_own_triples
        if own == self.num_triples:
            return ids
        assert self.inverse_of is not None
        tri = np.asarray(self.triples_np)
        added = tri[own:]
        wanted = np.stack([added[:, 2], self.inverse_of[added[:, 1]], added[:, 0]], 1)
        missing = ValueError("an added inverse triple reverses no triple of the KG")
        if own == 0:
            raise missing
        keys = _row_keys(tri[:own])  # [T_own] one opaque key per (h, r, t)
        order = np.argsort(keys, kind="stable")  # equal rows keep id order: the first wins
        pos = np.searchsorted(keys[order], _row_keys(wanted))
        found = order[np.minimum(pos, own - 1)]
        if not np.array_equal(tri[found], wanted):
            raise missing
        ids[own:] = found
        return ids

    def stated(self, triple_ids: Iterable[int]) -> list[int]:
        """``triple_ids`` as the KG states them, distinct, in order: an added inverse edge
        ``(t, r (inverse), h)`` becomes the KG's own triple ``(h, r, t)`` it reverses (what
        the encoder renders, so the context never shows a relation read backwards)."""
        out: dict[int, None] = {}
        statement = self.statement_ids
        for t in triple_ids:
            out.setdefault(int(statement[int(t)]), None)
        return list(out)

    def entity_name(self, entity: int) -> str:
        """Display name: the ``names`` attribute when known, else the label with spaces."""
        if self.attributes is not None and self.attributes.names is not None:
            name = self.attributes.names[entity]
            if name:
                return name
        return label_as_words(self.entities.label(entity))

    def relation_text(self, relation: int) -> str:
        """The label of ``relation`` as words (:func:`label_as_words`)."""
        return label_as_words(self.relations.label(int(relation)))

    # ------------------------------------------------------------------ statistics
    def steps_by_relation(self, both_directions: bool = True) -> StepIndex:
        """Every node's steps grouped by step relation (:class:`StepIndex`), built on first
        use and kept (one per direction setting): the index
        :func:`lokg.taimr.walk.search.beam_walk` reads, where a step's score depends only on its
        relation and its node."""
        cache = self.__dict__.setdefault("_steps_by_relation", {})
        if both_directions not in cache:
            cache[both_directions] = self._saved_steps(both_directions)
        return cache[both_directions]

    def _saved_steps(self, both_directions: bool) -> StepIndex:
        """The step index saved beside this graph (memory-mapped), else built, and saved
        there when the graph was read from a directory (:meth:`load`; not after :meth:`save`,
        whose directory may be a temporary one renamed since): the next process opens it
        instead of building it. A saved index that fails its check is rebuilt with one
        warning; a directory gone or refusing the write keeps it in memory."""
        home = self.__dict__.get("_step_home")
        if home is None:
            return StepIndex.build(self, both_directions)
        directory, fingerprint, prefix = home
        path = Path(directory) / _steps_dir(prefix, both_directions)
        try:
            index = StepIndex.load(path, both_directions, fingerprint)
        except ValueError as err:  # lokg.errors.CorruptArtifact among them
            log.warning("%s: %s; the step index is rebuilt", path, err)
            index = None
        if index is None:
            index = StepIndex.build(self, both_directions)
            try:
                if not Path(directory).is_dir():
                    raise FileNotFoundError(f"{directory}: the graph's directory is gone")
                index.save(path, both_directions, fingerprint)
            except OSError as err:
                log.warning("step index not saved beside the graph (%s); kept in memory", err)
        return index

    @cached_property
    def in_degree(self) -> IdArray:
        """``[E]`` number of incoming edges (parallel edges counted)."""
        return np.diff(self.in_ptr)

    @cached_property
    def out_degree(self) -> IdArray:
        """``[E]`` number of outgoing edges (parallel edges counted)."""
        return np.diff(self.out_ptr)

    @cached_property
    def in_relation_count(self) -> IdArray:
        """``[E]`` number of distinct relations on incoming edges, |{r : (u, r, v) in T}|."""
        pairs = _distinct(self.triples_np[:, 2] * self.num_relations + self.triples_np[:, 1])
        return np.bincount(pairs // max(self.num_relations, 1), minlength=self.num_entities)

    @cached_property
    def in_relation_diversity(self) -> np.ndarray:
        """``[E]`` div(v) of Eq. (12): distinct incoming relations / |R|, in [0, 1]."""
        return self.in_relation_count / max(self.num_relations, 1)

    @cached_property
    def relation_counts(self) -> IdArray:
        """``[R]`` number of triples per relation."""
        return np.bincount(self.triples_np[:, 1], minlength=self.num_relations)

    @cached_property
    def relation_tail_entropy(self) -> np.ndarray:
        """``[R]`` H(r) of Eq. (4), in nats.

        p(o | r) = |{s : (s, r, o) in T}| / |{(s, o) : (s, r, o) in T}|: duplicate triples
        are counted once.  A relation with no triples has H = 0.
        """
        ro, n_ro = self._distinct_subjects()  # [(r, o) pairs], their distinct subjects
        rel = ro // self.num_entities
        n_r = np.bincount(rel, weights=n_ro, minlength=self.num_relations)
        p = n_ro / n_r[rel]
        return np.bincount(rel, weights=-p * np.log(p), minlength=self.num_relations)

    def _distinct_subjects(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct ``(r, o)`` pairs as keys ``r * E + o`` (sorted) and the number of
        distinct subjects of each: through one int64 key per triple, ``(r * E + o) * E + s``,
        where it fits (one sort of 8 bytes a triple; the rows' ``np.unique(axis=0)``, the
        fallback, copies and sorts ``[T, 3]`` rows)."""
        n_e, n_r = max(self.num_entities, 1), max(self.num_relations, 1)
        tri = np.asarray(self.triples_np)
        if not len(tri):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        if n_e * n_e * n_r < 2**62:
            key = _distinct((tri[:, 1] * n_e + tri[:, 2]) * n_e + tri[:, 0]) // n_e  # (r, o)
            first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])  # runs of one (r, o)
            return key[first], np.diff(np.r_[first, len(key)])
        uniq = self.unique_triples()
        return np.unique(uniq[:, 1] * n_e + uniq[:, 2], return_counts=True)

    def unique_triples(self) -> np.ndarray:
        """``[T', 3]`` the distinct triples, sorted (set semantics of T)."""
        return np.unique(self.triples_np, axis=0) if len(self.triples_np) else self.triples_np

    def statistics(self) -> dict[str, float | int]:
        """Summary numbers for reports (``make demo`` prints them)."""
        return {
            "entities": self.num_entities,
            "relations": self.num_relations,
            "triples": self.num_triples,
            "distinct_triples": len(self.unique_triples()),
            "mean_out_degree": float(self.out_degree.mean()) if self.num_entities else 0.0,
            "max_in_degree": int(self.in_degree.max()) if self.num_entities else 0,
            "mean_tail_entropy": float(self.relation_tail_entropy.mean())
            if self.num_relations
            else 0.0,
        }

    # ------------------------------------------------------------------ transforms
    def with_relations(
        self, mapping: np.ndarray, relations: Vocabulary, deduplicate: bool = True
    ) -> KnowledgeGraph:
        """Relabel relations through ``mapping [R0] -> new ids`` (SCOS's phi).

        Entity ids are unchanged.  With ``deduplicate`` triples that become identical are
        kept once (first occurrence order is preserved).
        """
        if self.has_added_inverses:
            raise ValueError(
                "with_relations: relabel the KG's own graph before adding inverse edges "
                "(lokg.kg.inverse_edges.add_inverse_edges comes last)"
            )
        mapping = np.asarray(mapping, dtype=np.int64)
        if mapping.shape != (self.num_relations,):
            raise ValueError(f"mapping must have shape [{self.num_relations}], got {mapping.shape}")
        new = self.triples_np.copy()
        new[:, 1] = mapping[new[:, 1]]
        if deduplicate and len(new):
            _, first = np.unique(new, axis=0, return_index=True)
            new = new[np.sort(first)]
        return KnowledgeGraph(self.entities, relations, new, self.attributes, self.name)

    def fingerprint(self) -> str:
        """A content hash of vocabularies and triples (artifact cache keys)."""
        h = hashlib.sha256()
        h.update("\n".join(self.entities.labels).encode())
        h.update(b"\0")
        h.update("\n".join(self.relations.labels).encode())
        h.update(b"\0")
        h.update(np.ascontiguousarray(self.triples_np))  # its buffer: no [T, 3] bytes copy
        if self.inverse_of is not None:  # which relations are added ones
            h.update(b"\0inverse_of\0")
            h.update(np.ascontiguousarray(self.inverse_of).tobytes())
        return h.hexdigest()[:16]

    # ------------------------------------------------------------------ persistence
    _ARRAYS = ("triples", "out_ptr", "out_idx", "in_ptr", "in_idx")

    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``vocab.json`` and one ``.npy`` per array, atomically (temp dir + rename);
        then the step indexes already built (:meth:`steps_by_relation`) beside them, each in
        its own directory outside the graph's manifest (:meth:`load` reads them back)."""
        directory = Path(directory)
        with atomic_directory(directory) as tmp:
            arrays = {
                "triples": self.triples_np,
                "out_ptr": self.out_ptr,
                "out_idx": self.out_idx,
                "in_ptr": self.in_ptr,
                "in_idx": self.in_idx,
            }
            for key, arr in arrays.items():
                np.save(tmp / f"{key}.npy", np.ascontiguousarray(arr))
            meta = {
                "format_version": _FORMAT_VERSION,
                "name": self.name,
                "entities": self.entities.labels,
                "relations": self.relations.labels,
                "attributes": None if self.attributes is None else self.attributes.to_json(),
                "inverse_of": None if self.inverse_of is None else self.inverse_of.tolist(),
                "fingerprint": self.fingerprint(),
            }
            (tmp / "vocab.json").write_text(json.dumps(meta), encoding="utf-8")
        for both, index in self.__dict__.get("_steps_by_relation", {}).items():
            index.save(directory / _steps_dir("", both), both, meta["fingerprint"])
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike, mmap: bool = False) -> KnowledgeGraph:
        """Load a graph written by :meth:`save`; ``mmap=True`` memory-maps the arrays. Its
        files are checked against the manifest first (:func:`lokg.manifest.check_directory`:
        a truncated or changed file is one line naming it)."""
        directory = Path(directory)
        check_directory(directory)
        meta = read_versioned_json(
            directory / "vocab.json", _FORMAT_VERSION, "KnowledgeGraph", "re-run data preparation"
        )
        mode = "r" if mmap else None
        arrays = {k: np.load(directory / f"{k}.npy", mmap_mode=mode) for k in cls._ARRAYS}
        attrs = meta.get("attributes")
        kg = cls(
            Vocabulary(meta["entities"]),
            Vocabulary(meta["relations"]),
            arrays.pop("triples"),
            EntityAttributes.from_json(attrs) if attrs else None,
            meta.get("name", "kg"),
            inverse_of=None if meta.get("inverse_of") is None else np.asarray(meta["inverse_of"]),
            _csr_arrays=arrays,
        )
        if meta.get("fingerprint"):  # its step index is kept beside it (steps_by_relation)
            kg.__dict__["_step_home"] = (directory, meta["fingerprint"], "")
        return kg

    def __repr__(self) -> str:
        return (
            f"KnowledgeGraph(name={self.name!r}, entities={self.num_entities}, "
            f"relations={self.num_relations}, triples={self.num_triples})"
        )
