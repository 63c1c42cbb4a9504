"""Every node's steps grouped by step relation (:class:`StepIndex`): the per-graph index the
learned walk reads (:func:`lokg.taimr.walk.search.beam_walk`, :mod:`lokg.taimr.walk.anchors`).

Built once per graph and direction setting in one pass over the CSR arrays
(:func:`build_steps`, Numba: a stable sort of each node's steps by relation, O(S log d) time
and no memory beyond the index itself), or read back memory-mapped from the directory the
graph was saved in (:meth:`StepIndex.save`, :meth:`StepIndex.load`): a second process opens
a built index in the time of reading its headers. Ids are int32 where they fit (triple ids,
far ends, relations, listing order), pointers int64.

Format: one ``.npy`` per field and ``steps.json`` (format version, direction setting, sizes,
the graph's fingerprint), in a directory written atomically with its manifest. ``.npy``
rather than Arrow/Parquet: the fields are flat fixed-width integer columns that numpy
memory-maps zero-copy with no dependency beyond numpy (the graph's own arrays are stored
the same way); Parquet is compressed and cannot be mapped, and an Arrow IPC file would map
the same bytes through pyarrow, which the package does not otherwise need.

:func:`build_steps_reference` is the earlier pure-numpy build (one stable argsort of all
steps by (node, relation) key, int64): the tests check the two agree.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

import numba
import numpy as np

from lokg.atomic_io import atomic_directory, read_versioned_json
from lokg.manifest import check_directory
from lokg.typing import IdArray

__all__ = ["StepIndex", "build_steps", "build_steps_reference"]

_FORMAT_VERSION = 1
_META = "steps.json"
_INT32_MAX = np.iinfo(np.int32).max


class Graph(Protocol):
    """What a build reads of a :class:`~lokg.kg.graph.KnowledgeGraph` (which imports this
    module, so it is not imported here): sizes, ``[T, 3]`` triples and both CSR arrays."""

    num_entities: int
    num_relations: int
    num_triples: int
    triples_np: np.ndarray
    out_ptr: np.ndarray
    out_idx: np.ndarray
    in_ptr: np.ndarray
    in_idx: np.ndarray


@dataclass(frozen=True)
class StepIndex:
    """The steps leaving every node, grouped by step relation.

    A *step* walks triple ``(h, r, t)`` forward from ``h`` (step relation ``r``) or, with
    ``both_directions``, backward from ``t`` (step relation ``r + R``). Node ``u``'s steps
    are ``ptr[u]:ptr[u + 1]``, sorted by step relation and, within one relation, in
    ``order``: the step's index in the plain listing of ``u``'s steps (its out-edges in CSR
    order, then its in-edges), which is what ties are broken by. Its groups (one per step
    relation at ``u``) are ``group_ptr[u]:group_ptr[u + 1]``; group ``g`` holds the steps
    ``group_start[g]:group_start[g + 1]``, all of relation ``group_relation[g]``.

    Shapes (S = T, or 2T with both directions; G = distinct (node, step relation) pairs):
        - ``ptr``, ``group_ptr``: ``[E + 1]`` int64
        - ``triple``, ``relation``, ``far``, ``order``: ``[S]`` int32 (int64 on a graph
          whose ids do not fit); ``inverse``: ``[S]`` bool
        - ``group_start``: ``[G + 1]`` int64; ``group_relation``: ``[G]`` as ``relation``
    """

    ptr: IdArray
    triple: IdArray
    inverse: np.ndarray
    relation: IdArray
    far: IdArray
    order: IdArray
    group_ptr: IdArray
    group_start: IdArray
    group_relation: IdArray

    @classmethod
    def build(cls, kg: Graph, both_directions: bool = True) -> StepIndex:
        """``kg``'s index (:func:`build_steps`)."""
        return build_steps(kg, both_directions)

    @property
    def num_steps(self) -> int:
        return len(self.triple)

    def equals(self, other: StepIndex) -> bool:
        """Whether every field holds the same values (dtypes may differ)."""
        return all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
        )

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | os.PathLike, both_directions: bool, fingerprint: str) -> Path:
        """Write one ``.npy`` per field and ``steps.json`` atomically (with its manifest);
        ``fingerprint`` names the graph (:meth:`KnowledgeGraph.fingerprint`)."""
        directory = Path(directory)
        with atomic_directory(directory) as tmp:
            for f in fields(self):
                np.save(tmp / f"{f.name}.npy", np.ascontiguousarray(getattr(self, f.name)))
            meta = {
                "format_version": _FORMAT_VERSION,
                "both_directions": bool(both_directions),
                "fingerprint": fingerprint,
                "num_nodes": len(self.ptr) - 1,
                "num_steps": self.num_steps,
            }
            (tmp / _META).write_text(json.dumps(meta), encoding="utf-8")
        return directory

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike,
        both_directions: bool,
        fingerprint: str,
        mmap: bool = True,
    ) -> StepIndex | None:
        """The index saved in ``directory`` for this direction setting and graph, memory-mapped
        (``mmap``); ``None`` when there is none or it was built for another graph or setting.
        A file that fails its manifest check raises :class:`lokg.errors.CorruptArtifact`."""
        directory = Path(directory)
        if not (directory / _META).is_file():
            return None
        check_directory(directory)
        meta = read_versioned_json(
            directory / _META, _FORMAT_VERSION, "step index", "it is rebuilt when removed"
        )
        if meta.get("fingerprint") != fingerprint or meta.get("both_directions") != bool(
            both_directions
        ):
            return None
        mode = "r" if mmap else None
        arrays = {f.name: np.load(directory / f"{f.name}.npy", mmap_mode=mode) for f in fields(cls)}
        index = cls(**arrays)
        if len(index.ptr) - 1 != meta.get("num_nodes") or index.num_steps != meta.get("num_steps"):
            return None
        return index


def _id_dtype(kg: Graph, ptr: np.ndarray) -> type:
    """int32 when every triple id, entity id, step relation and node degree (``ptr``'s
    steps) fits, else int64."""
    degree = int(np.diff(ptr).max()) if len(ptr) > 1 else 0
    widest = max(kg.num_triples, kg.num_entities, 2 * kg.num_relations, degree)
    return np.int32 if widest <= _INT32_MAX else np.int64


def build_steps(kg: Graph, both_directions: bool = True) -> StepIndex:
    """``kg``'s :class:`StepIndex`: each node's steps listed from the CSR arrays (out-edges,
    then in-edges walked backwards) and stably sorted by step relation, one node at a time
    (Numba); then the groups read off the sorted relations. The same index as
    :func:`build_steps_reference`, in int32 ids and without its ``[S]`` int64 sort keys."""
    tri = np.asarray(kg.triples_np)
    out_ptr, out_idx = np.asarray(kg.out_ptr), np.asarray(kg.out_idx)
    in_ptr, in_idx = np.asarray(kg.in_ptr), np.asarray(kg.in_idx)
    n, r = kg.num_entities, kg.num_relations
    ptr = (out_ptr + in_ptr) if both_directions else out_ptr.copy()
    s = int(ptr[-1]) if n else 0
    dtype = _id_dtype(kg, ptr)
    triple, relation = np.empty(s, dtype), np.empty(s, dtype)
    far, order = np.empty(s, dtype), np.empty(s, dtype)
    inverse = np.empty(s, np.bool_)
    _fill_steps(
        tri, out_ptr, out_idx, in_ptr, in_idx, ptr, r, both_directions,
        triple, inverse, relation, far, order,
    )  # fmt: skip
    group_ptr = np.zeros(n + 1, np.int64)
    _count_groups(ptr, relation, group_ptr[1:])
    np.cumsum(group_ptr, out=group_ptr)
    g = int(group_ptr[-1])
    group_start, group_relation = np.empty(g + 1, np.int64), np.empty(g, dtype)
    _fill_groups(ptr, relation, group_start, group_relation)
    group_start[g] = s
    return StepIndex(
        ptr, triple, inverse, relation, far, order, group_ptr, group_start, group_relation
    )


@numba.njit(cache=True)
def _fill_steps(tri, out_ptr, out_idx, in_ptr, in_idx, ptr, r, both, triple, inverse, relation,
                far, order):  # fmt: skip
    """Write each node's steps at ``ptr[u]:ptr[u + 1]``, stably sorted by step relation."""
    for u in range(len(ptr) - 1):
        a, b = out_ptr[u], out_ptr[u + 1]
        d_out = b - a
        d = d_out + ((in_ptr[u + 1] - in_ptr[u]) if both else 0)
        if d == 0:
            continue
        tid = np.empty(d, np.int64)  # the node's steps in listing order
        rel = np.empty(d, np.int64)
        for i in range(d_out):
            tid[i] = out_idx[a + i]
            rel[i] = tri[tid[i], 1]
        if both:
            c = in_ptr[u]
            for i in range(d - d_out):
                tid[d_out + i] = in_idx[c + i]
                rel[d_out + i] = tri[tid[d_out + i], 1] + r
        perm = np.argsort(rel, kind="mergesort")  # stable: a relation keeps listing order
        base = ptr[u]
        for k in range(d):
            i = perm[k]
            back = i >= d_out
            triple[base + k] = tid[i]
            inverse[base + k] = back
            relation[base + k] = rel[i]
            far[base + k] = tri[tid[i], 0] if back else tri[tid[i], 2]
            order[base + k] = i


@numba.njit(cache=True)
def _count_groups(ptr, relation, counts):
    """``counts[u]``: distinct step relations among node ``u``'s (sorted) steps."""
    for u in range(len(ptr) - 1):
        c = 0
        for s in range(ptr[u], ptr[u + 1]):
            if s == ptr[u] or relation[s] != relation[s - 1]:
                c += 1
        counts[u] = c


@numba.njit(cache=True)
def _fill_groups(ptr, relation, group_start, group_relation):
    """Each group's first step and relation, nodes in order (the last bound is set after)."""
    g = 0
    for u in range(len(ptr) - 1):
        for s in range(ptr[u], ptr[u + 1]):
            if s == ptr[u] or relation[s] != relation[s - 1]:
                group_start[g] = s
                group_relation[g] = relation[s]
                g += 1


def build_steps_reference(kg: Graph, both_directions: bool = True) -> StepIndex:
    """The reference build (int64): ``kg``'s steps listed from the CSR arrays, then one
    stable sort by (node, step relation). O(S log S) time, ~10 ``[S]`` int64 temporaries."""
    t, n, r = np.asarray(kg.triples_np), kg.num_entities, kg.num_relations
    out_deg = np.diff(kg.out_ptr)
    # (CSR ptr, triple ids, far-end column, relation offset, index of the node's first step)
    parts = [(kg.out_ptr, kg.out_idx, 2, 0, 0)]
    if both_directions:  # in-edges, walked backwards, listed after the node's out-edges
        parts.append((kg.in_ptr, kg.in_idx, 0, r, out_deg))
    node, triple, inverse, relation, far, order = [], [], [], [], [], []
    for i, (ptr, idx, far_col, offset, first) in enumerate(parts):
        owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        node.append(owner)
        triple.append(idx)
        inverse.append(np.full(len(idx), i == 1))
        relation.append(t[idx, 1] + offset)
        far.append(t[idx, far_col])
        step = np.arange(len(idx), dtype=np.int64) - ptr[owner]
        order.append(step + first[owner] if i else step)
    node, relation = np.concatenate(node), np.concatenate(relation)
    key = node * max(2 * r, 1) + relation
    perm = np.argsort(key, kind="stable")  # one relation's steps keep their listing order
    key = key[perm]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else key[:0]
    relation = relation[perm]
    return StepIndex(
        ptr=kg.out_ptr + kg.in_ptr if both_directions else kg.out_ptr.copy(),
        triple=np.concatenate(triple)[perm],
        inverse=np.concatenate(inverse)[perm],
        relation=relation,
        far=np.concatenate(far)[perm],
        order=np.concatenate(order)[perm],
        group_ptr=np.searchsorted(node[perm][starts], np.arange(n + 1)),
        group_start=np.r_[starts, len(key)].astype(np.int64),
        group_relation=relation[starts],
    )
