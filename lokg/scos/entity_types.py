"""Entity types for the NMI term of Eq. (3).

The paper computes NMI over the (head type, tail type) distribution of a relation and
assumes typed entities.  Sources, in the order ``type_source=auto`` tries them:

* ``attributes``: ``kg.attributes.types`` (entities with ``None`` share the type "unknown");
* ``relation``: the tail of the entity's ``type_relation`` triple (e.g. Freebase
  ``__common__topic__notable_types``; the lexicographically smallest tail when several);
  entities without one fall back to their signature type;
* ``signature`` (PathQuestion and PQL have no types): an entity is typed by the *set of
  relations it has as head*, its domain signature ("entities that have a gender, parents
  and a nationality"); an entity with no outgoing triple (a value such as ``male`` or a
  country) is typed by the set of relations it is the tail of, marked as a range signature;
  an isolated entity has the empty type.  Sets are hashed (a random 64-bit key per relation,
  summed modulo 2**64) so typing is one vectorised pass over the triples.
"""

from __future__ import annotations

import numpy as np

from lokg.kg.graph import KnowledgeGraph

__all__ = ["entity_types", "signature_types"]


def _set_hash(entity: np.ndarray, item: np.ndarray, keys: np.ndarray, num: int) -> np.ndarray:
    """``[num]`` uint64 hash of the set ``{item : (entity, item)}`` per entity (0 if empty)."""
    pairs = np.unique(entity * (len(keys)) + item)
    out = np.zeros(num, dtype=np.uint64)
    np.add.at(out, pairs // len(keys), keys[pairs % len(keys)])
    return out


def signature_types(kg: KnowledgeGraph, seed: int = 0) -> np.ndarray:
    """``[E]`` int64 type ids from relation signatures (see module docstring)."""
    triples = kg.triples_np
    num_rel = max(kg.num_relations, 1)
    rng = np.random.default_rng(seed)
    keys = rng.integers(1, np.iinfo(np.int64).max, size=2 * num_rel, dtype=np.int64)
    keys = keys.astype(np.uint64)
    out_hash = _set_hash(triples[:, 0], triples[:, 1], keys[:num_rel], kg.num_entities)
    in_hash = _set_hash(triples[:, 2], triples[:, 1], keys[num_rel:], kg.num_entities)
    has_out = kg.out_degree > 0
    sig = np.where(has_out, out_hash, in_hash)  # range keys differ from domain keys
    _, type_ids = np.unique(sig, return_inverse=True)
    return type_ids.astype(np.int64)


def _attribute_types(kg: KnowledgeGraph) -> np.ndarray | None:
    attrs = kg.attributes
    if attrs is None or attrs.types is None or all(t is None for t in attrs.types):
        return None
    labels = ["\0unknown" if t is None else str(t) for t in attrs.types]
    _, type_ids = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return type_ids.astype(np.int64)


def _relation_types(kg: KnowledgeGraph, type_relation: str) -> np.ndarray:
    if type_relation not in kg.relations:
        raise ValueError(
            f"scos.type_relation={type_relation!r} is not a relation of graph {kg.name!r}"
        )
    rid = kg.relations[type_relation]
    sel = kg.triples_np[kg.triples_np[:, 1] == rid]
    fallback = signature_types(kg)
    types = fallback.copy()
    if len(sel):
        order = np.lexsort((sel[:, 2], sel[:, 0]))  # by head, then smallest tail first
        sel = sel[order]
        heads, first = np.unique(sel[:, 0], return_index=True)
        # type relation tails get ids after the signature ids so the two never collide
        types[heads] = fallback.max(initial=-1) + 1 + sel[first, 2]
    _, type_ids = np.unique(types, return_inverse=True)
    return type_ids.astype(np.int64)


def entity_types(
    kg: KnowledgeGraph, source: str = "auto", type_relation: str | None = None
) -> np.ndarray:
    """``[E]`` int64 contiguous type ids for the NMI term of Eq. (3).

    Args:
        kg: the graph.
        source: ``auto``, ``attributes``, ``relation`` or ``signature`` (module docstring).
        type_relation: relation label used by ``relation`` (and by ``auto`` when set).
    """
    if source == "attributes":
        types = _attribute_types(kg)
        if types is None:
            raise ValueError(
                f"scos.type_source=attributes but graph {kg.name!r} has no entity types"
            )
        return types
    if source == "relation":
        if not type_relation:
            raise ValueError("scos.type_source=relation needs scos.type_relation")
        return _relation_types(kg, type_relation)
    if source == "signature":
        return signature_types(kg)
    if source == "auto":
        types = _attribute_types(kg)
        if types is not None:
            return types
        if type_relation:
            return _relation_types(kg, type_relation)
        return signature_types(kg)
    raise ValueError(
        f"scos.type_source={source!r} is not one of ['auto', 'attributes', 'relation', 'signature']"
    )
