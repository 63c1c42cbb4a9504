"""Added inverse edges (``data.source.inverse``): every retriever reaches both ends of a fact.

A KG that holds only ``movie -> person`` edges leaves a retriever that follows out-edges (the
paper's TAIMR, the rules' linked TAIMR, KAPING) nothing to walk from a person.  Adding, for a
relation ``r``, the relation ``r (inverse)`` with one triple ``(t, r (inverse), h)`` per
distinct triple ``(h, r, t)`` of the KG (``h != t``: a self-loop reversed is itself) makes
every fact reachable from both of its ends.

Modes (:data:`INVERSE_MODES`):

- ``never`` — the KG as given (the paper's setting);
- ``always`` — an inverse for every relation;
- ``auto`` — an inverse for every relation that has no inverse *of its own* in the KG
  (:func:`mirrored_share`): a relation ``r`` has one when at least
  :data:`OWN_INVERSE_SHARE` (one half) of its distinct ``(h, t)`` pairs with ``h != t``
  appear reversed, as ``(t, h)``, under some relation of the KG (``r`` itself included: a
  symmetric relation such as ``spouse`` is its own inverse).  Then most of its facts can
  already be walked backwards, and an added copy would mostly duplicate them; below one half
  most of its facts could not.  The test is one sort and one search over the triples.

The added relations and their triples come after the KG's own (``KnowledgeGraph.inverse_of``),
so the KG as given is a prefix of the augmented graph (``KnowledgeGraph.own_part``). The
graph is augmented last, after SCOS (SCOS compresses the KG's own schema; an added relation
is no synonym candidate), by :func:`lokg.artifacts.load_graph_artifacts`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph, Vocabulary
from lokg.typing import IdArray

__all__ = [
    "INVERSE_MODES",
    "INVERSE_SUFFIX",
    "OWN_INVERSE_SHARE",
    "add_inverse_edges",
    "check_inverse_mode",
    "extend_relation_embeddings",
    "mirrored_share",
    "relations_to_invert",
]

INVERSE_MODES = ("auto", "always", "never")
#: the label of the inverse added for relation ``r``: ``f"{r}{INVERSE_SUFFIX}"``
INVERSE_SUFFIX = " (inverse)"
#: ``auto``: a relation has an inverse of its own when at least this share of its pairs
#: appear reversed in the KG
OWN_INVERSE_SHARE = 0.5


def check_inverse_mode(mode: object) -> str:
    """``mode`` as one of :data:`INVERSE_MODES`, or an :class:`InputError` naming the key."""
    if mode not in INVERSE_MODES:
        raise InputError(f"data.source.inverse={mode!r}; expected one of {list(INVERSE_MODES)}")
    return str(mode)


def mirrored_share(kg: KnowledgeGraph) -> np.ndarray:
    """``[R]`` per relation, the share of its distinct ``(h, t)`` pairs (``h != t``) whose
    reverse ``(t, h)`` is a pair of some relation of ``kg``; 1.0 for a relation with no such
    pair (nothing to reverse)."""
    num_rel, num_ent = kg.num_relations, kg.num_entities
    tri = kg.unique_triples()
    tri = tri[tri[:, 0] != tri[:, 2]]
    if not len(tri):
        return np.ones(num_rel)
    pairs = np.unique(tri[:, 0] * num_ent + tri[:, 2])  # [P] every (h, t) of any relation
    reversed_ = tri[:, 2] * num_ent + tri[:, 0]  # [T'] (t, h) of each triple
    pos = np.minimum(np.searchsorted(pairs, reversed_), len(pairs) - 1)
    found = pairs[pos] == reversed_
    # a distinct triple (h, r, t) is one distinct pair (h, t) of r: counting triples counts pairs
    total = np.bincount(tri[:, 1], minlength=num_rel).astype(np.float64)
    hit = np.bincount(tri[:, 1], weights=found, minlength=num_rel)
    return np.divide(hit, total, out=np.ones(num_rel), where=total > 0)


def relations_to_invert(
    kg: KnowledgeGraph, mode: str, threshold: float = OWN_INVERSE_SHARE
) -> IdArray:
    """The relations of ``kg`` that get an added inverse under ``mode``, sorted.

    ``never``: none; ``always``: every relation with a triple ``h != t``; ``auto``: those
    whose :func:`mirrored_share` is below ``threshold`` (module docstring).
    """
    mode = check_inverse_mode(mode)
    if kg.has_added_inverses:
        raise ValueError("relations_to_invert: the graph already holds added inverse edges")
    if mode == "never":
        return np.zeros(0, dtype=np.int64)
    tri = kg.triples_np
    loops_only = np.ones(kg.num_relations, dtype=bool)
    loops_only[np.unique(tri[tri[:, 0] != tri[:, 2], 1])] = False
    if mode == "always":
        return np.flatnonzero(~loops_only).astype(np.int64)
    return np.flatnonzero(~loops_only & (mirrored_share(kg) < threshold)).astype(np.int64)


def add_inverse_edges(kg: KnowledgeGraph, relations: Iterable[int]) -> KnowledgeGraph:
    """``kg`` with ``r (inverse)`` added for each relation id in ``relations``.

    Each distinct triple ``(h, r, t)`` of those relations with ``h != t`` gets one triple
    ``(t, r (inverse), h)``; the added relations follow the KG's own in the order of their
    source, the added triples follow the KG's own in the order of their source triple.
    Entity ids, relation ids and triple ids of ``kg`` are unchanged. ``kg`` itself (not a
    copy) when ``relations`` is empty.

    Raises:
        InputError: the KG already has a relation labelled ``r (inverse)``.
    """
    rels = np.unique(np.fromiter((int(r) for r in relations), dtype=np.int64))
    if not len(rels):
        return kg
    if kg.has_added_inverses:
        raise ValueError("add_inverse_edges: the graph already holds added inverse edges")
    if rels[0] < 0 or rels[-1] >= kg.num_relations:
        raise ValueError(f"add_inverse_edges: relation ids must be in [0, {kg.num_relations})")
    num_rel = kg.num_relations
    labels = [kg.relations.label(int(r)) + INVERSE_SUFFIX for r in rels]
    clash = next((label for label in labels if label in kg.relations), None)
    if clash is not None:
        raise InputError(
            f"{kg.name}: the KG already has a relation {clash!r}, the label an added inverse "
            "would take; set data.source.inverse=never"
        )
    added_id = np.full(num_rel, -1, dtype=np.int64)
    added_id[rels] = num_rel + np.arange(len(rels))
    tri = np.asarray(kg.triples_np)
    keep = (added_id[tri[:, 1]] >= 0) & (tri[:, 0] != tri[:, 2])
    src = tri[keep]
    if len(src):
        _, first = np.unique(src, axis=0, return_index=True)  # distinct, in source order
        src = src[np.sort(first)]
    new = np.stack([src[:, 2], added_id[src[:, 1]], src[:, 0]], 1).reshape(-1, 3)
    inverse_of = np.concatenate([np.full(num_rel, -1, dtype=np.int64), rels])
    return KnowledgeGraph(
        kg.entities,
        Vocabulary([*kg.relations.labels, *labels]),
        np.concatenate([tri, new.astype(np.int64)]),
        kg.attributes,
        kg.name,
        inverse_of=inverse_of,
    )


def extend_relation_embeddings(embeddings: np.ndarray, kg: KnowledgeGraph) -> np.ndarray:
    """``[R, d]`` relation embeddings of the augmented ``kg`` from those of its own relations
    ``[R_own, d]``: an added ``r (inverse)`` gets ``-e_r`` (TransE's ``h + r ~ t`` read
    backwards is ``t - r ~ h``, as the walk model's inverse steps read it)."""
    embeddings = np.asarray(embeddings)
    own = kg.num_own_relations
    if embeddings.shape[0] != own:
        raise ValueError(
            f"relation embeddings have {embeddings.shape[0]} rows, the KG {own} own relations"
        )
    if not kg.has_added_inverses:
        return embeddings
    assert kg.inverse_of is not None
    return np.concatenate([embeddings, -embeddings[kg.inverse_of[own:]]]).astype(embeddings.dtype)
