"""Entity types for the NMI term of Eq. (3) (``scos.entity_types``).

The paper computes NMI over the (head type, tail type) distribution of a relation and
assumes typed entities.  Sources (``entity_types=auto`` tries them in this order, see
:func:`entity_types`):

* ``attributes``: ``kg.attributes.types`` (entities with ``None`` share the type "unknown");
* ``relation``: the tail of the entity's ``type_relation`` triple (e.g. Freebase
  ``__common__topic__notable_types``; the lexicographically smallest tail when several);
  entities without one fall back to their signature type;
* ``domain``: the domain part of Freebase-style relation names (:func:`domain_types`),
  coarse enough that two names of one relation share their entities' types;
* ``transe``: k-means on TransE entity embeddings (:func:`kmeans_types`), for plain names;
* ``signature``: an entity is typed by the *set of relations it has as head*, its domain
  signature; an entity with no outgoing triple (a value such as ``male``) by the set of
  relations it is the tail of, marked as a range signature; an isolated entity has the empty
  type.  Sets are hashed (a random 64-bit key per relation, summed modulo 2**64).  Nearly
  unique per entity and split by a synonym, so NMI misses synonyms: kept as an option;
* ``none``: one type for every entity (the NMI term is then 1 for every pair).
"""

from __future__ import annotations

import numpy as np

from lokg.kg.graph import KnowledgeGraph

__all__ = [
    "ENTITY_TYPES",
    "domain_types",
    "entity_types",
    "kmeans_types",
    "relation_domain",
    "resolve_entity_types",
    "signature_types",
]

#: Values of ``scos.entity_types`` (the order ``auto`` tries them is in :func:`entity_types`).
ENTITY_TYPES = ("auto", "attributes", "relation", "domain", "transe", "signature", "none")


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


def relation_domain(label: str) -> str | None:
    """The domain part of a Freebase-style relation name, or ``None`` for a plain name.

    ``people.person.nationality`` and ``__people__person__nationality`` (PathQuestion's
    spelling) both give ``people.person``: the type of the relation's subject.  A name with
    fewer than three parts (``nationality``, ``r012``) has no domain.
    """
    parts = label.split(".") if "." in label else [p for p in label.split("__") if p]
    return ".".join(parts[:-1]) if len(parts) >= 3 else None


def _vote(entity: np.ndarray, label: np.ndarray, num: int, width: int) -> np.ndarray:
    """``[num]`` most frequent ``label`` per entity (ties: smallest label), -1 when none."""
    out = np.full(num, -1, dtype=np.int64)
    if len(entity) == 0:
        return out
    key, counts = np.unique(entity * width + label, return_counts=True)
    ent, lab = key // width, key % width
    order = np.lexsort((lab, -counts, ent))  # per entity: most votes first, then smallest
    ent, lab = ent[order], lab[order]
    first = np.concatenate([[True], ent[1:] != ent[:-1]])
    out[ent[first]] = lab[first]
    return out


def domain_types(kg: KnowledgeGraph) -> np.ndarray | None:
    """``[E]`` types from the domain part of Freebase-style relation names (``None`` if no
    relation name has one).

    An entity's type is the domain most of its outgoing triples name (a person's triples are
    mostly ``people.person.*``); an entity with no such outgoing triple (a value such as
    ``male``, a country only ever pointed at) gets "range of D", D the domain most of its
    incoming triples name; the rest share one "unknown" type.  Two relations that are
    synonyms name the same domain and connect the same kinds of entity, so they share
    (head type, tail type) pairs, which the NMI term of Eq. (3) measures.
    """
    domains = [relation_domain(label) for label in kg.relations.labels]
    names = sorted({d for d in domains if d is not None})
    if not names:
        return None
    index = {d: i for i, d in enumerate(names)}
    rel_domain = np.array([index[d] if d is not None else -1 for d in domains], dtype=np.int64)
    tr = kg.triples_np
    dom = rel_domain[tr[:, 1]] if len(tr) else np.zeros(0, dtype=np.int64)
    ok = dom >= 0
    D = len(names)
    head = _vote(tr[ok, 0], dom[ok], kg.num_entities, D)
    tail = _vote(tr[ok, 2], dom[ok], kg.num_entities, D)
    return np.where(head >= 0, head, np.where(tail >= 0, D + tail, 2 * D)).astype(np.int64)


def kmeans_types(
    embeddings: np.ndarray, num_types: int, seed: int = 0, iterations: int = 25
) -> np.ndarray:
    """``[E]`` types by k-means (Lloyd, k-means++ seeding) on TransE entity embeddings.

    Entities that play the same role sit close in TransE's space (``h + r ~ t`` for the
    same r), so clusters are learned types; used when neither types nor Freebase-style
    names are available.
    """
    X = np.asarray(embeddings, dtype=np.float64)
    n = len(X)
    k = max(1, min(num_types, n))
    rng = np.random.default_rng(seed)
    sq = (X**2).sum(1)
    centers = [X[rng.integers(n)]]
    d2 = ((X - centers[0]) ** 2).sum(1)
    for _ in range(1, k):
        total = d2.sum()
        pick = rng.choice(n, p=d2 / total) if total > 0 else rng.integers(n)
        centers.append(X[pick])
        d2 = np.minimum(d2, ((X - X[pick]) ** 2).sum(1))
    C = np.stack(centers)  # [k, d]
    assign = np.zeros(n, dtype=np.int64)
    for _ in range(iterations):
        dist = sq[:, None] - 2.0 * X @ C.T + (C**2).sum(1)[None, :]  # [E, k]
        new = dist.argmin(1)
        if _ > 0 and np.array_equal(new, assign):
            break
        assign = new
        counts = np.bincount(assign, minlength=k)
        sums = np.zeros_like(C)
        np.add.at(sums, assign, X)
        keep = counts > 0
        C[keep] = sums[keep] / counts[keep, None]
    _, type_ids = np.unique(assign, return_inverse=True)
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


def _domain_coverage(kg: KnowledgeGraph) -> float:
    """Share of triples whose relation name has a Freebase-style domain."""
    if kg.num_triples == 0:
        return 0.0
    has = np.array([relation_domain(label) is not None for label in kg.relations.labels])
    return float(has[kg.triples_np[:, 1]].mean())


def resolve_entity_types(
    kg: KnowledgeGraph, type_relation: str | None = None, has_embeddings: bool = False
) -> str:
    """The source ``entity_types=auto`` uses on ``kg`` (see :func:`entity_types`)."""
    if _attribute_types(kg) is not None:
        return "attributes"
    if type_relation:
        return "relation"
    if _domain_coverage(kg) >= 0.5:
        return "domain"
    return "transe" if has_embeddings else "signature"


def entity_types(
    kg: KnowledgeGraph,
    source: str = "auto",
    type_relation: str | None = None,
    entity_embeddings: np.ndarray | None = None,
    num_types: int = 32,
) -> np.ndarray:
    """``[E]`` int64 contiguous type ids for the NMI term of Eq. (3).

    Args:
        kg: the graph.
        source: one of :data:`ENTITY_TYPES`:
            ``attributes`` (given types), ``relation`` (tail of ``type_relation``),
            ``domain`` (:func:`domain_types`), ``transe`` (:func:`kmeans_types` on
            ``entity_embeddings``), ``signature`` (:func:`signature_types`), ``none`` (one
            type: the NMI term is 1 for every pair).  ``auto`` takes the first that applies:
            given types, ``type_relation`` when set, ``domain`` when at least half the
            triples have Freebase-style relation names, ``transe`` when entity embeddings
            are given, else ``signature``.
        type_relation: relation label used by ``relation`` (and by ``auto`` when set).
        entity_embeddings: ``[E, d]`` TransE entity embeddings (``transe``).
        num_types: k of ``transe``.
    """
    if source == "attributes":
        types = _attribute_types(kg)
        if types is None:
            raise ValueError(
                f"scos.entity_types=attributes but graph {kg.name!r} has no entity types"
            )
        return types
    if source == "relation":
        if not type_relation:
            raise ValueError("scos.entity_types=relation needs scos.type_relation")
        return _relation_types(kg, type_relation)
    if source == "domain":
        types = domain_types(kg)
        if types is None:
            raise ValueError(
                f"scos.entity_types=domain but no relation of graph {kg.name!r} has a "
                "Freebase-style name (domain.type.property)"
            )
        return types
    if source == "transe":
        if entity_embeddings is None:
            raise ValueError("scos.entity_types=transe needs TransE entity embeddings [E, d]")
        if len(entity_embeddings) != kg.num_entities:
            raise ValueError(
                f"entity embeddings have {len(entity_embeddings)} rows for "
                f"{kg.num_entities} entities of graph {kg.name!r}"
            )
        return kmeans_types(entity_embeddings, num_types)
    if source == "signature":
        return signature_types(kg)
    if source == "none":
        return np.zeros(kg.num_entities, dtype=np.int64)
    if source == "auto":
        chosen = resolve_entity_types(kg, type_relation, entity_embeddings is not None)
        return entity_types(kg, chosen, type_relation, entity_embeddings, num_types)
    raise ValueError(f"scos.entity_types={source!r} is not one of {list(ENTITY_TYPES)}")
