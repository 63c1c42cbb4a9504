"""A synthetic typed knowledge graph with power-law degrees and planted synonymous relations.

Used to measure SCOS (Section 2.3) where the ground truth is known, and reused by later
benchmarks.  The generator is fully vectorised: a 1M-triple, 100k-entity graph takes a few
seconds.

Model:
    * every entity gets a type ``T0..T{k-1}`` (stored in ``attributes.types``);
    * every *base* relation has a domain type, a range type (a pair no other base relation
      has, while ``num_types ** 2 >= `` base relations) and a range size ``m_r`` (it only
      reaches the ``m_r`` most popular entities of its range type, so base relations differ in
      tail entropy H(r) of Eq. (4), like "gender" versus "related to");
    * relation frequencies follow Zipf's law; heads and tails are drawn inside their type with
      power-law popularity ``(rank + 1) ** -alpha``, so degrees are heavy-tailed;
    * ``num_synonyms`` base relations get a planted synonym: a new relation label that takes
      over a random share (30-70 %) of the base relation's triples.  These ``(base, synonym)``
      id pairs are what SCOS should merge.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
from omegaconf import OmegaConf

from lokg.data.sources import resource_path
from lokg.kg.graph import EntityAttributes, KnowledgeGraph, Vocabulary

__all__ = [
    "CorrelatedKG",
    "PlantedKG",
    "SyntheticKG",
    "make_synthetic_kg",
    "paraphrase_label",
    "plant_correlated",
    "plant_synonyms",
    "synonym_label",
]

_MAX_ROUNDS = 20


@dataclass
class SyntheticKG:
    """The generated graph and its ground truth.

    Attributes:
        kg: the graph (entity types in ``kg.attributes.types``).
        synonym_pairs: ``[S, 2]`` int64 relation ids ``(base, planted synonym)``.
        entity_types: ``[E]`` int64 type id of every entity.
    """

    kg: KnowledgeGraph
    synonym_pairs: np.ndarray
    entity_types: np.ndarray

    def synonym_pair_set(self) -> set[tuple[int, int]]:
        """The planted pairs as unordered ``(min id, max id)`` tuples."""
        return {(int(min(a, b)), int(max(a, b))) for a, b in self.synonym_pairs}


@dataclass
class PlantedKG:
    """A real graph with planted synonymous relations (:func:`plant_synonyms`).

    Attributes:
        kg: the modified graph: the original relations keep their ids, the planted synonyms
            get ids ``R0 .. R0 + k - 1`` (same entity vocabulary and ids).
        synonym_pairs: ``[k, 2]`` int64 relation ids ``(base, planted synonym)``.
        shares: ``[k]`` share of the base relation's triples moved to its synonym.
    """

    kg: KnowledgeGraph
    synonym_pairs: np.ndarray
    shares: np.ndarray

    def synonym_pair_set(self) -> set[tuple[int, int]]:
        """The planted pairs as unordered ``(min id, max id)`` tuples."""
        return {(int(min(a, b)), int(max(a, b))) for a, b in self.synonym_pairs}


#: how :func:`synonym_label` names a planted synonym
NAMINGS = ("alias", "opaque", "paraphrase")

#: the hand-written lexicon of relation-name paraphrases (its header says what it is)
RELATION_NAME_LEXICON = resource_path("paraphrases", "relation_names.yaml")


def synonym_label(
    label: str,
    taken: set[str] | Vocabulary,
    naming: str = "alias",
    index: int = 0,
    seed: int = 0,
) -> str:
    """A new name for a synonym of relation ``label``, not already in ``taken``.

    The domain part of a Freebase-style name is kept and the property is renamed:
    ``alias`` appends to it (``people.person.nationality`` ->
    ``people.person.nationality_alias``), as a second import of the same property would look;
    ``opaque`` replaces it with a code (``people.person.property_7``;
    ``__people__person__property_7`` in PathQuestion's spelling), so nothing in the name
    ties it to ``label`` and only the graph can (the stress test for SCOS: a walk that matches
    question words to relation names cannot follow it by its name); ``paraphrase`` rewrites it
    in other words (``people.person.citizenship``; :func:`paraphrase_label`, drawn with
    ``seed`` and ``index``), as another KG or editor would name the same property.
    """
    if naming not in NAMINGS:
        raise ValueError(f"synonym naming {naming!r}; expected one of {', '.join(NAMINGS)}")
    if naming == "paraphrase":
        return paraphrase_label(label, taken, np.random.default_rng([seed, index]))
    domain, _ = _split_label(label)
    for i in range(1000):
        if naming == "alias":
            name = f"{label}_alias" if i == 0 else f"{label}_alias{i + 1}"
        else:
            name = f"{domain}property_{index}" if i == 0 else f"{domain}property_{index}_{i + 1}"
        if name not in taken:
            return name
    raise ValueError(f"no free synonym name for relation {label!r}")


def _split_label(label: str) -> tuple[str, str]:
    """``(domain part with its separator, property)``: ``people.person.`` + ``nationality``,
    ``__people__person__`` + ``place_of_birth`` (PathQuestion's spelling), ``""`` + ``gender``."""
    sep = "." if "." in label else "__"
    if sep not in label.strip("_"):
        return "", label
    cut = label.rfind(sep) + len(sep)
    return label[:cut], label[cut:]


@functools.cache
def _name_lexicon() -> tuple[dict[tuple[str, ...], list[list[str]]], ...]:
    """:data:`RELATION_NAME_LEXICON` as ``(phrases, words)``: key words -> alternatives' words."""
    raw = OmegaConf.to_container(OmegaConf.load(RELATION_NAME_LEXICON), resolve=False)
    return tuple(
        {tuple(k.split()): [str(a).split() for a in alts] for k, alts in raw[part].items()}
        for part in ("phrases", "words")
    )


def paraphrase_label(label: str, taken: set[str] | Vocabulary, rng: np.random.Generator) -> str:
    """``label`` with its property rewritten in other words, its domain part kept.

    The property's words (``place_of_birth``: place, of, birth) go through one operation drawn
    uniformly from those that apply, and with probability 1/2 a second one on the words the
    first left unchanged: swap ``A of B`` to ``B A`` (once), or replace a phrase or a word of
    the lexicon (:data:`RELATION_NAME_LEXICON`, hand-written) by one of its alternatives.  A
    property none applies to gets ``has`` in front (``r_gender`` -> ``has_r_gender``).  A
    label without a word of two letters is a code (``r012``, ``P31``): its paraphrase is the
    next free code of its form (``r100``), since a code has no words to rewrite.  So
    ``people.person.place_of_birth`` may become ``people.person.birthplace``,
    ``people.person.birth_location`` or ``people.person.born_in``; the domain part stays
    (entity types are read from it, :func:`lokg.scos.entity_types.domain_types`), so a
    planted graph differs from an ``alias`` one in the names of its planted relations alone.
    """
    domain, prop = _split_label(label)
    if not re.search(r"[^\W\d_]{2}", prop):  # a code: no word to paraphrase
        stem = label.rstrip("0123456789")
        width = len(label) - len(stem)
        for n in range(10 ** max(width, 1) * 10):
            name = f"{stem}{n:0{width}d}"
            if name not in taken:
                return name
        raise ValueError(f"no free synonym name for relation {label!r}")
    phrases, words = _name_lexicon()
    toks = [(w, False) for w in prop.split("_") if w]  # (word, written by an operation)
    swapped = False
    for step in range(2):
        ops: list[tuple] = []
        plain = [w.lower() for w, _ in toks]
        of = [i for i in range(1, len(toks) - 1) if plain[i] == "of"]
        if of and not swapped:
            ops.append(("swap", of[0]))
        for table in (phrases, words):
            for key, alts in table.items():
                for i in range(len(toks) - len(key) + 1):
                    span = toks[i : i + len(key)]
                    if tuple(plain[i : i + len(key)]) == key and not any(f for _, f in span):
                        ops.append(("replace", i, len(key), alts))
        if not ops:
            if step == 0:
                toks = [("has", True), *toks]
            break
        op = ops[int(rng.integers(len(ops)))]
        if op[0] == "swap":
            i = op[1]
            toks, swapped = toks[i + 1 :] + toks[:i], True
        else:
            _, i, n, alts = op
            alt = alts[int(rng.integers(len(alts)))]
            toks = toks[:i] + [(w, True) for w in alt] + toks[i + n :]
        if step == 0 and rng.random() >= 0.5:
            break
    base = domain + "_".join(w for w, _ in toks)
    for i in range(1000):
        name = base if i == 0 else f"{base}_{i + 1}"
        if name not in taken and name != label:
            return name
    raise ValueError(f"no free synonym name for relation {label!r}")


def _draw_base_relations(
    kg: KnowledgeGraph,
    n: int,
    min_triples: int,
    rng: np.random.Generator,
    *,
    caller: str,
    n_key: str,
    exclude=None,
    which: str = "relations",
) -> np.ndarray:
    """``n`` distinct relations (sorted ids) drawn from those with ``>= min_triples`` triples
    and not in ``exclude``; a one-line ``ValueError`` naming ``caller`` when too few are."""
    ok = kg.relation_counts >= min_triples
    if exclude is not None:
        ok[np.asarray(exclude, dtype=np.int64)] = False
    eligible = np.flatnonzero(ok)
    if len(eligible) < n:
        raise ValueError(
            f"{caller}: graph {kg.name!r} has {len(eligible)} {which} with >= "
            f"{min_triples} triples, fewer than {n_key}={n}"
        )
    return np.sort(rng.choice(eligible, size=n, replace=False))


def plant_synonyms(
    kg: KnowledgeGraph,
    num_synonyms: int = 30,
    min_triples: int = 20,
    *,
    share: tuple[float, float] = (0.3, 0.7),
    seed: int = 0,
    naming: str = "alias",
    protect: np.ndarray | None = None,
) -> PlantedKG:
    """Plant ``num_synonyms`` synonymous relations in a real graph.

    Picks ``num_synonyms`` relations with at least ``min_triples`` triples uniformly at
    random and moves a random share (uniform in ``share``) of each one's triples to a new
    relation named by :func:`synonym_label` (``naming``: ``alias``, ``opaque`` or
    ``paraphrase``, whose words are drawn with ``seed`` apart from the triples).  Entity
    ids, triple order and every other relation are unchanged, so ``(base, synonym)`` is
    exactly what SCOS should merge.  ``protect`` (``[T]`` bool) marks triples that keep
    their name whatever is drawn (e.g. the training questions' gold-path triples, so that a
    retriever trained on those questions never meets the new name).

    Raises:
        ValueError: when fewer than ``num_synonyms`` relations have ``min_triples`` triples.
    """
    lo, hi = share
    if not 0.0 < lo <= hi < 1.0:
        raise ValueError(f"plant_synonyms: share must satisfy 0 < lo <= hi < 1, got {share}")
    rng = np.random.default_rng(seed)
    base = _draw_base_relations(
        kg, num_synonyms, min_triples, rng, caller="plant_synonyms", n_key="num_synonyms"
    )
    shares = rng.uniform(lo, hi, num_synonyms)
    R0 = kg.num_relations
    syn_of_base = np.full(R0, -1)
    syn_of_base[base] = np.arange(num_synonyms)
    triples = kg.triples_np.copy()
    k = syn_of_base[triples[:, 1]]  # [T] synonym slot of each triple's relation, or -1
    move = (k >= 0) & (rng.random(len(triples)) < shares[np.maximum(k, 0)])
    if protect is not None:
        if protect.shape != (len(triples),):
            raise ValueError(
                f"plant_synonyms: protect must be a [{len(triples)}] mask, got {protect.shape}"
            )
        move &= ~protect.astype(bool)
    triples[move, 1] = R0 + k[move]
    labels = list(kg.relations.labels)
    taken = set(labels)
    for slot, b in enumerate(base.tolist()):
        name = synonym_label(labels[b], taken, naming, index=slot, seed=seed)
        taken.add(name)
        labels.append(name)
    planted = KnowledgeGraph(
        kg.entities, Vocabulary(labels), triples, kg.attributes, name=f"{kg.name}+planted"
    )
    pairs = np.stack([base, R0 + np.arange(num_synonyms)], 1).astype(np.int64)
    return PlantedKG(kg=planted, synonym_pairs=pairs, shares=shares)


@dataclass
class CorrelatedKG:
    """A graph with planted *correlated but distinct* relations (:func:`plant_correlated`).

    Attributes:
        kg: the modified graph: every relation keeps its id and triples, the planted ones get
            ids ``R0 .. R0 + k - 1``.
        pairs: ``[k, 2]`` int64 relation ids ``(base, planted)``: pairs SCOS must not merge.
        agreement: ``[k]`` share of the base's heads on which the planted relation holds the
            same tails.
    """

    kg: KnowledgeGraph
    pairs: np.ndarray
    agreement: np.ndarray

    def pair_set(self) -> set[tuple[int, int]]:
        """The planted pairs as unordered ``(min id, max id)`` tuples."""
        return {(int(min(a, b)), int(max(a, b))) for a, b in self.pairs}


def plant_correlated(
    kg: KnowledgeGraph,
    num_pairs: int = 12,
    agreement: tuple[float, ...] = (0.3, 0.5, 0.7, 0.9),
    min_triples: int = 20,
    *,
    seed: int = 0,
    exclude: np.ndarray | None = None,
) -> CorrelatedKG:
    """Plant ``num_pairs`` relations that are correlated with a base relation, not synonyms.

    Each picked base relation r (>= ``min_triples`` triples, not in ``exclude``) gets a new
    relation ``<r>_corr<p>`` over *all* of r's heads (r keeps every triple): on ``round(p n)``
    of its n heads (drawn at random, p taken in turn from ``agreement``; one head fewer when
    that is all of them and p < 1) it holds r's tails exactly; on the others each tail is
    replaced by another of r's tails (one the head does not have under r; any other entity
    when r has no such tail), as ``written_by`` sits beside ``directed_by``: same films, same
    kind of tail, the same person on some films only.  Its contradiction
    (:mod:`lokg.scos.contradiction`) is then ``1 - round(p n) / n`` when at least one head
    agrees.

    Raises:
        ValueError: when fewer than ``num_pairs`` relations are eligible, or an agreement is
            outside [0, 1].
    """
    if any(not 0.0 <= p <= 1.0 for p in agreement) or not agreement:
        raise ValueError(f"plant_correlated: agreement shares must be in [0, 1], got {agreement}")
    rng = np.random.default_rng(seed)
    base = _draw_base_relations(
        kg, num_pairs, min_triples, rng, caller="plant_correlated", n_key="num_pairs",
        exclude=exclude, which="eligible relations",
    )  # fmt: skip
    shares = np.array([agreement[i % len(agreement)] for i in range(num_pairs)], dtype=float)
    R0, E = kg.num_relations, kg.num_entities
    uniq = kg.unique_triples()
    labels = list(kg.relations.labels)
    taken = set(labels)
    new = []
    for slot, (r, p) in enumerate(zip(base.tolist(), shares.tolist(), strict=True)):
        own = uniq[uniq[:, 1] == r]  # [n, 3] sorted by head
        heads = np.unique(own[:, 0])
        # exactly round(p n) agreeing heads, and one disagreeing at least when p < 1 (else
        # the planted relation could come out a duplicate of r, which no signal can tell)
        n_agree = min(round(p * len(heads)), len(heads) - (p < 1.0))
        agree = rng.choice(heads, size=max(n_agree, 0), replace=False)
        pool = np.unique(own[:, 2])
        out = own.copy()
        out[:, 1] = R0 + slot
        for i in np.flatnonzero(~np.isin(own[:, 0], agree)):
            have = own[own[:, 0] == own[i, 0], 2]
            choices = np.setdiff1d(pool, have)
            if len(choices) == 0:
                choices = np.setdiff1d(np.arange(E), have)
            out[i, 2] = rng.choice(choices)
        new.append(out)
        name = f"{labels[r]}_corr{round(100 * p)}"
        while name in taken:
            name += "_"
        taken.add(name)
        labels.append(name)
    triples = np.concatenate([kg.triples_np, *new]) if new else kg.triples_np
    planted = KnowledgeGraph(
        kg.entities, Vocabulary(labels), triples, kg.attributes, name=f"{kg.name}+correlated"
    )
    pairs = np.stack([base, R0 + np.arange(num_pairs)], 1).astype(np.int64)
    return CorrelatedKG(kg=planted, pairs=pairs, agreement=shares)


def _check_positive(**values: float) -> None:
    for key, value in values.items():
        if value <= 0:
            raise ValueError(f"make_synthetic_kg: {key} must be > 0, got {value}")


def _check_settings(
    num_entities: int,
    num_triples: int,
    num_relations: int,
    num_synonyms: int,
    num_types: int,
    alpha: float,
) -> None:
    """One line naming the setting of :func:`make_synthetic_kg` that cannot be generated."""
    _check_positive(
        num_entities=num_entities,
        num_triples=num_triples,
        num_relations=num_relations,
        num_types=num_types,
        alpha=alpha,
    )
    if num_synonyms < 0 or 2 * num_synonyms > num_relations:
        raise ValueError(
            f"make_synthetic_kg: num_synonyms must be in [0, num_relations / 2], "
            f"got {num_synonyms} with num_relations={num_relations}"
        )
    if num_types > num_entities:
        raise ValueError(
            f"make_synthetic_kg: num_types ({num_types}) exceeds num_entities ({num_entities})"
        )


@dataclass(frozen=True)
class _TypedEntities:
    """Entity types and the power-law popularity inside each type.

    Attributes:
        types: ``[E]`` type id of every entity.
        by_type: ``[E]`` entity ids grouped by type; inside a type, position = popularity rank.
        count, start: ``[k]`` entities of each type and the type's first position in
            ``by_type``.
        local_cdf: ``[E]`` (by position) cumulative popularity inside the type, in (0, 1].
        global_cdf: ``[E]`` ``type id + local_cdf``, so that ``searchsorted(global_cdf, t + u)``
            samples inside type ``t``.
    """

    types: np.ndarray
    by_type: np.ndarray
    count: np.ndarray
    start: np.ndarray
    local_cdf: np.ndarray
    global_cdf: np.ndarray

    def draw(self, u: np.ndarray, types: np.ndarray) -> np.ndarray:
        """``[n]`` entities of the given ``types [n]`` for uniform draws ``u [n]`` in
        [0, 1) (scaled below 1 by a range's mass: only its most popular entities)."""
        pos = np.searchsorted(self.global_cdf, types + u * (1 - 1e-12), side="left")
        return self.by_type[np.minimum(pos, len(self.by_type) - 1)]


def _typed_entities(
    rng: np.random.Generator, num_entities: int, num_types: int, alpha: float
) -> _TypedEntities:
    """Each type gets at least one entity, the rest uniformly; popularity
    ``(rank + 1) ** -alpha`` inside a type."""
    etype = np.concatenate(
        [np.arange(num_types), rng.integers(0, num_types, num_entities - num_types)]
    )
    rng.shuffle(etype)
    by_type = np.argsort(etype, kind="stable")  # [E] entity ids, grouped by type
    type_count = np.bincount(etype, minlength=num_types)
    type_start = np.concatenate([[0], np.cumsum(type_count)[:-1]])
    rank = np.arange(num_entities) - np.repeat(type_start, type_count)  # [E] rank inside type
    weight = (rank + 1.0) ** -alpha
    # Per-type cumulative popularity normalised to (0, 1]; global array offset by type id.
    cum = np.cumsum(weight)
    seg_end = np.repeat(cum[type_start + type_count - 1], type_count)
    seg_begin = np.repeat(np.concatenate([[0.0], cum[type_start[1:] - 1]]), type_count)
    local_cdf = (cum - seg_begin) / (seg_end - seg_begin)  # [E] in (0, 1]
    global_cdf = np.repeat(np.arange(num_types), type_count) + local_cdf
    return _TypedEntities(etype, by_type, type_count, type_start, local_cdf, global_cdf)


@dataclass(frozen=True)
class _BaseRelations:
    """``[n_base]`` domain type, range type and the cdf mass of the range's first ``m_r``
    entities (a relation reaches only the ``m_r`` most popular of its range type)."""

    domain: np.ndarray
    range_type: np.ndarray
    range_mass: np.ndarray


def _base_relations(
    rng: np.random.Generator, n_base: int, num_types: int, ents: _TypedEntities
) -> _BaseRelations:
    """Domain, range and range size m_r (log-uniform in [2, |range type|]) of each base
    relation.  Distinct (domain, range) type pairs while there are enough of them: two base
    relations with the same pair (and range size) would be draws of one distribution,
    synonyms that no signal can tell apart, not planted but merged (issue 10's precision
    would then measure the generator)."""
    if num_types * num_types >= n_base:
        pair = rng.choice(num_types * num_types, size=n_base, replace=False)
    else:
        pair = rng.integers(0, num_types * num_types, n_base)
    dom, rng_type = pair // num_types, pair % num_types
    full = ents.count[rng_type]
    m = np.exp(rng.uniform(np.log(2.0), np.log(np.maximum(full, 2)), n_base))
    m = np.clip(np.round(m).astype(np.int64), 1, full)
    range_mass = ents.local_cdf[ents.start[rng_type] + m - 1]  # [n_base] cdf mass of first m
    return _BaseRelations(dom, rng_type, range_mass)


def _draw_triples(
    rng: np.random.Generator,
    num_triples: int,
    relation_zipf: float,
    base: _BaseRelations,
    ents: _TypedEntities,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(heads, relations, tails)``, each ``[T]``: distinct triples of the base relations,
    relation frequencies by Zipf's law, drawn until ``num_triples`` exist; a graph that
    saturates (tiny types, tiny ranges) stops after a bounded number of rounds."""
    n_base, num_entities = len(base.domain), len(ents.types)
    freq = (np.arange(n_base) + 1.0) ** -relation_zipf
    p_rel = freq / freq.sum()
    keys = np.empty(0, dtype=np.int64)
    for _ in range(_MAX_ROUNDS):
        need = num_triples - len(keys)
        if need <= 0:
            break
        n = int(need * 1.3) + 16
        rel = rng.choice(n_base, size=n, p=p_rel)  # [n]
        u_h = rng.random(n)
        u_t = rng.random(n) * base.range_mass[rel]
        heads = ents.draw(u_h, base.domain[rel])
        tails = ents.draw(u_t, base.range_type[rel])
        new = (heads * n_base + rel) * num_entities + tails
        _, first = np.unique(np.concatenate([keys, new]), return_index=True)
        keys = np.concatenate([keys, new])[np.sort(first)]
    keys = keys[:num_triples]
    tails = keys % num_entities
    rel = (keys // num_entities) % n_base
    heads = keys // (num_entities * n_base)
    return heads, rel, tails


def _move_to_synonyms(
    rng: np.random.Generator, rel: np.ndarray, n_base: int, num_synonyms: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(relations [T], base ids [S], synonym ids [S])``: ``num_synonyms`` base relations,
    among the most frequent half (they keep enough triples to be measurable), each hand a
    random share (30-70 %) of their triples to a new synonym id."""
    candidates = np.arange(max(n_base // 2, num_synonyms))
    base_of_syn = np.sort(rng.choice(candidates, size=num_synonyms, replace=False))
    syn_id = n_base + np.arange(num_synonyms)
    share = rng.uniform(0.3, 0.7, num_synonyms)
    syn_of_base = np.full(n_base, -1)
    syn_of_base[base_of_syn] = np.arange(num_synonyms)
    if num_synonyms:  # with none planted there is nothing to move (and nothing to index)
        k = syn_of_base[rel]
        move = (k >= 0) & (rng.random(len(rel)) < share[np.maximum(k, 0)])
        rel = np.where(move, syn_id[np.maximum(k, 0)], rel)
    return rel, base_of_syn, syn_id


def make_synthetic_kg(
    *,
    num_entities: int = 100_000,
    num_triples: int = 1_000_000,
    num_relations: int = 200,
    num_synonyms: int = 20,
    num_types: int = 20,
    alpha: float = 1.0,
    relation_zipf: float = 0.8,
    seed: int = 0,
    name: str = "synthetic",
) -> SyntheticKG:
    """Generate a typed power-law KG with ``num_synonyms`` planted synonym relations.

    Args:
        num_entities: |E|.
        num_triples: number of distinct triples; a graph too small to hold that many (tiny
            types or ranges) stops short after a bounded number of drawing rounds.
        num_relations: total |R0|, base relations plus planted synonyms.
        num_synonyms: number of planted synonym relations (``< num_relations / 2``).
        num_types: number of entity types.
        alpha: popularity exponent of entities inside a type (degree tail).
        relation_zipf: Zipf exponent of relation frequencies.
        seed: random seed (``0`` is a valid seed).
        name: graph name.

    Returns:
        :class:`SyntheticKG` with the graph, the planted ``(base, synonym)`` pairs and types.
    """
    _check_settings(num_entities, num_triples, num_relations, num_synonyms, num_types, alpha)
    rng = np.random.default_rng(seed)  # one generator, drawn from in the order below
    n_base = num_relations - num_synonyms
    ents = _typed_entities(rng, num_entities, num_types, alpha)
    base = _base_relations(rng, n_base, num_types, ents)
    heads, rel, tails = _draw_triples(rng, num_triples, relation_zipf, base, ents)
    rel, base_of_syn, syn_id = _move_to_synonyms(rng, rel, n_base, num_synonyms)
    triples = np.stack([heads, rel, tails], 1).astype(np.int64)  # distinct by construction

    width_e = len(str(num_entities - 1))
    width_r = len(str(num_relations - 1))
    labels = Vocabulary([f"e{i:0{width_e}d}" for i in range(num_entities)])
    rels = Vocabulary([f"r{i:0{width_r}d}" for i in range(num_relations)])
    type_labels = [f"T{t}" for t in range(num_types)]
    attrs = EntityAttributes(types=[type_labels[t] for t in ents.types.tolist()])
    kg = KnowledgeGraph(labels, rels, triples, attributes=attrs, name=name)
    pairs = np.stack([base_of_syn, syn_id], 1).astype(np.int64).reshape(-1, 2)
    return SyntheticKG(kg=kg, synonym_pairs=pairs, entity_types=ents.types.astype(np.int64))
