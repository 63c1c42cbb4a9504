"""Greedy hierarchical relation merging of Section 2.3 with the information loss of Eq. (6).

Each round merges the admissible pair (sim >= theta, Eq. (3) and Eq. (5)) of highest
similarity.  The new cluster inherits the triples of both (its distinct (head, tail) pairs
are the union), the mean of the two TransE embeddings, and gets fresh similarities to every
remaining cluster.  The loop stops when no pair qualifies.

Cost: the initial pairwise similarities are computed in row chunks (a sparse product for the
entity-set intersections, a dense product for cosines) and the NMI term only for the pairs
whose upper bound ``w1 * 1 + w2 * Jaccard + w3 * cos`` reaches their threshold (NMI <= 1, so
the pruning is exact).  Admissible pairs live in a heap with lazy invalidation (a version
counter per cluster), so a run costs O(|R0|^2 d + P log P) with P <= |R0|^2 admissible pairs,
plus O(|R0| + incidences of the merged cluster) per merge.

Three guards beyond the paper (all off with its settings; ``scos=lokg`` turns them on,
docs/design/scos.md "Guards" and "Contradiction"): ``min_support`` keeps relations with fewer
distinct (head, tail) pairs out of every merge (with one triple, NMI is trivially 1 and
Jaccard one of {0, 1/3, 1/2, 1}: the signals of Eq. (3) say nothing), ``max_split_z`` refuses
a pair whose heads (or tails) hold different values in both relations far more often than
one relation split at random under two names would (:meth:`_Clusters.split_excess`): two
roles of one event (a trade's ``exported_to`` and ``imported_from``) or two attributes of one
entity, not one relation under two names; and ``max_contradiction`` refuses a pair whose
contradiction rate (:mod:`lokg.scos.contradiction`: the share of shared heads with other
tails, between relations that state some fact in common) exceeds it: ``directed_by`` and
``written_by``.  A fourth, ``min_name_cosine`` (:mod:`lokg.scos.names`), refuses a pair whose
relation names mean different things (the sentence-encoder cosine of their property words
below it, for some pair of members): ``religion.religion.beliefs`` and ``holidays``, which
no graph signal tells from a split synonym.

Whatever the settings, every merge records its contradiction (rate and counts) and up to
three heads that carry both sides with their tails, so a merge can be audited from the
report alone.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from lokg.kg.graph import KnowledgeGraph
from lokg.scos.contradiction import Contradiction, CountedRecord, contradiction, named_examples
from lokg.scos.names import is_code, name_cosine
from lokg.scos.similarity import (
    adaptive_threshold,
    cosine_similarity,
    fused_similarity,
    jaccard,
    pair_keys_entropy,
    type_nmi_similarity,
    type_pair_distribution,
)

__all__ = [
    "MergeOutcome",
    "MergeRecord",
    "PairSignals",
    "RefusedPair",
    "greedy_merge",
    "pair_signals",
]

#: Tolerance of the test ``sim >= theta`` (similarities are sums of rounded floats).
_TOL = 1e-12
#: Entries of one dense chunk of the initial pairwise computation.
_CHUNK_ENTRIES = 1 << 22


@dataclass
class MergeRecord(CountedRecord):
    """One merge of the greedy loop (a line of the merge report).

    The contradiction fields (:mod:`lokg.scos.contradiction`) are recorded whatever the
    settings; a report written before they existed loads with their defaults (zeros, no
    example).  ``examples``: heads carrying both sides with their tails
    (:func:`lokg.scos.contradiction.named_examples`).  ``name_cosine``: the smallest name
    cosine across the two sides (:func:`lokg.scos.names.name_cosine`) when relation names were
    given (``scos.min_name_cosine``), else ``None``.
    """

    step: int
    left: list[str]
    right: list[str]
    similarity: float
    threshold: float
    nmi: float
    jaccard: float
    cosine: float
    entropy_left: float
    entropy_right: float
    loss: float
    contradiction: float = 0.0
    shared_heads: int = 0
    differing_heads: int = 0
    common_facts: int = 0
    examples: list[dict] = field(default_factory=list)
    name_cosine: float | None = None


@dataclass
class RefusedPair(CountedRecord):
    """A pair whose similarity reached its threshold and that a guard refused (a line of the
    merge report, so a user sees what the guards kept apart).

    ``reason``: ``split_z`` (``max_split_z``'s test), ``contradiction``
    (``max_contradiction``'s) or ``name`` (``min_name_cosine``'s); ``split_z`` and
    ``name_cosine`` are ``None`` when their test is off.
    """

    left: list[str]
    right: list[str]
    similarity: float
    threshold: float
    split_z: float | None
    contradiction: float | None = None
    reason: str = "split_z"
    shared_heads: int = 0
    differing_heads: int = 0
    common_facts: int = 0
    name_cosine: float | None = None


@dataclass
class MergeOutcome:
    """Result of :func:`greedy_merge`.

    Attributes:
        labels: ``[R0]`` cluster id of every original relation (the surviving cluster's
            smallest original relation id).
        merges: the merges in order.
        total_entropy: ``sum_r H(r)`` over R0 (Eq. (4)), the normaliser of L_info.
        refused: the admissible pairs a guard (``max_split_z``, ``max_contradiction``,
            ``min_name_cosine``) refused, in the order they were scored.
        below_support: relations kept out of every merge by ``min_support``.
    """

    labels: np.ndarray
    merges: list[MergeRecord]
    total_entropy: float
    refused: list[RefusedPair] = field(default_factory=list)
    below_support: int = 0


def _gather(
    ptr: np.ndarray, cols: np.ndarray, vals: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flatten CSR rows ``rows``: returns (owner position in ``rows``, column, value)."""
    starts = ptr[rows]
    lens = ptr[rows + 1] - starts
    owner = np.repeat(np.arange(len(rows)), lens)
    pos = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(starts, lens)
    return owner, cols[pos], vals[pos]


def _nmi_pairs(
    ptr: np.ndarray, cols: np.ndarray, vals: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray
) -> np.ndarray:
    """Vectorised NMI term of Eq. (3) (see ``type_nmi_similarity``) for row pairs ``[n]``."""
    n = len(rows_a)
    if n == 0:
        return np.zeros(0)
    width = int(cols.max(initial=0)) + 1
    oa, ca, va = _gather(ptr, cols, vals, rows_a)
    ob, cb, vb = _gather(ptr, cols, vals, rows_b)
    _, ia, ib = np.intersect1d(
        oa * width + ca, ob * width + cb, assume_unique=True, return_indices=True
    )
    p, q = va[ia], vb[ib]
    s = p + q
    terms = (p * np.log(s / p) + q * np.log(s / q)) / np.log(2.0)
    return np.minimum(0.5 * np.bincount(oa[ia], weights=terms, minlength=n), 1.0)


class _Clusters:
    """Mutable state of the greedy loop (one slot per original relation id)."""

    def __init__(self, kg: KnowledgeGraph, embeddings: np.ndarray, types: np.ndarray):
        self.E = kg.num_entities
        self.R = kg.num_relations
        uniq = kg.unique_triples()  # sorted by (head, relation, tail)
        order = np.argsort(uniq[:, 1], kind="stable")
        uniq = uniq[order]
        bounds = np.searchsorted(uniq[:, 1], np.arange(self.R + 1))
        allkeys = uniq[:, 0] * self.E + uniq[:, 2]
        self.keys = [np.sort(allkeys[bounds[r] : bounds[r + 1]]) for r in range(self.R)]
        self.types = types
        self.num_types = int(types.max(initial=-1)) + 1
        self.entropy = np.array([pair_keys_entropy(k, self.E) for k in self.keys])
        self.dists = [type_pair_distribution(k, self.E, types, self.num_types) for k in self.keys]
        # Entity incidence (relation x entity) for the Jaccard term.
        ent = np.concatenate([uniq[:, 0], uniq[:, 2]])
        rel = np.concatenate([uniq[:, 1], uniq[:, 1]])
        pairs = np.unique(rel * self.E + ent)
        data = np.ones(len(pairs), dtype=np.float64)
        self.X = sp.csr_matrix(
            (data, (pairs // self.E, pairs % self.E)), shape=(self.R, self.E)
        )  # [R, E]
        self.XT = self.X.T.tocsr()  # [E, R]
        self.sizes = np.diff(self.X.indptr).astype(np.float64)  # [R] |head ∪ tail set|
        self.ents = [self.X.indices[self.X.indptr[r] : self.X.indptr[r + 1]] for r in range(self.R)]
        self.emb = np.array(embeddings, dtype=np.float64, copy=True)  # [R, d]
        self.label = np.arange(self.R)
        self.active = np.ones(self.R, dtype=bool)
        self.version = np.zeros(self.R, dtype=np.int64)
        self.members = [[r] for r in range(self.R)]

    def dist_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Type-pair distributions of all slots as CSR (ptr, compact columns, values)."""
        lens = np.array([len(d[0]) for d in self.dists], dtype=np.int64)
        ptr = np.concatenate([[0], np.cumsum(lens)])
        cols = np.concatenate([d[0] for d in self.dists]) if len(ptr) > 1 else np.zeros(0)
        vals = np.concatenate([d[1] for d in self.dists]) if len(ptr) > 1 else np.zeros(0)
        _, compact = np.unique(cols, return_inverse=True)
        return ptr, compact.astype(np.int64), vals.astype(np.float64)

    def merge(self, a: int, b: int) -> None:
        """Merge slot ``b`` into slot ``a``."""
        self.keys[a] = np.union1d(self.keys[a], self.keys[b])
        self.ents[a] = np.union1d(self.ents[a], self.ents[b])
        self.sizes[a] = len(self.ents[a])
        self.entropy[a] = pair_keys_entropy(self.keys[a], self.E)
        self.emb[a] = 0.5 * (self.emb[a] + self.emb[b])
        self.dists[a] = type_pair_distribution(self.keys[a], self.E, self.types, self.num_types)
        self.label[self.label == b] = a
        self.members[a] = sorted(self.members[a] + self.members[b])
        self.active[b] = False
        self.version[a] += 1
        self.keys[b] = self.ents[b] = None  # type: ignore[call-overload]

    def split_excess(self, a: int, b: int) -> float:
        """How far two slots share more keys with different values than one relation split at
        random under two names would: a z-score, the larger of the head and the tail side.

        With the union's pairs, ``s = |P_a| / (|P_a| + |P_b|)`` and ``m_k`` distinct values of
        key ``k`` in the union, a random split puts ``k`` in both halves (with different
        values: a split never repeats a pair) with probability
        ``p_k = 1 - s^m_k - (1 - s)^m_k``.  ``O`` counts the keys in both slots whose value
        sets differ; ``z = (O - sum p_k) / sqrt(sum p_k (1 - p_k))`` (0 when the variance is
        0 and ``O`` is not above the mean).  Two roles of one event (each trade has one
        ``exported_to`` and one ``imported_from``) have ``O`` = every key against an
        expectation of about half: z grows as sqrt(keys); a split stays near 0; a relation
        duplicated under two names (same pairs) has ``O`` = 0.
        """
        n_a, n_b = len(self.keys[a]), len(self.keys[b])
        share = n_a / (n_a + n_b)
        union = np.union1d(self.keys[a], self.keys[b])
        worst = 0.0
        for key, value in ((self._head, self._tail), (self._tail, self._head)):
            _, m = np.unique(key(union), return_counts=True)  # m_k per key of the union
            p = 1.0 - share**m - (1.0 - share) ** m  # [K] P(key in both halves)
            ka, kb = key(self.keys[a]), key(self.keys[b])
            shared = np.intersect1d(ka, kb)
            pa = (ka * self.E + value(self.keys[a]))[np.isin(ka, shared)]
            pb = (kb * self.E + value(self.keys[b]))[np.isin(kb, shared)]
            observed = len(np.unique(np.setxor1d(pa, pb) // self.E))  # shared, values differ
            mean, var = float(p.sum()), float((p * (1.0 - p)).sum())
            if var > 0:
                worst = max(worst, (observed - mean) / np.sqrt(var))
            elif observed > mean:
                worst = np.inf
        return worst

    def contradiction(self, a: int, b: int) -> Contradiction:
        """:func:`lokg.scos.contradiction.contradiction` of two slots (clusters merge as
        their relations point, so heads are heads on both sides)."""
        return contradiction(self.keys[a], self.keys[b], self.E)

    def _head(self, keys: np.ndarray) -> np.ndarray:
        return keys // self.E

    def _tail(self, keys: np.ndarray) -> np.ndarray:
        return keys % self.E

    def intersections(self, a: int) -> np.ndarray:
        """``[R]`` |S_a ∩ S_x| for every slot x (indexed by slot id)."""
        rows = self.XT[self.ents[a]]
        owner = np.repeat(np.arange(len(self.ents[a])), np.diff(rows.indptr))
        pairs = np.unique(owner * self.R + self.label[rows.indices])
        return np.bincount(pairs % self.R, minlength=self.R).astype(np.float64)


class _Pair(NamedTuple):
    """An admissible pair on the greedy loop's heap, as it was scored: the heap pops the
    highest similarity first (ties: smaller slot ids, then older versions).  ``left <
    right`` are slot ids; their versions tell a pair scored before one side merged again."""

    neg_similarity: float
    left: int
    right: int
    left_version: int
    right_version: int
    nmi: float
    jaccard: float
    cosine: float
    threshold: float


@dataclass(frozen=True)
class _Scoring:
    """Eq. (3)'s weights and Eq. (5)'s settings."""

    weights: tuple[float, float, float]
    theta_base: float
    epsilon: float

    def upper_bound(self, jac: np.ndarray, cos: np.ndarray) -> np.ndarray:
        """Eq. (3) with NMI at its maximum, 1: a pair below its threshold here never
        reaches it, so its NMI is not computed."""
        w1, w2, w3 = self.weights
        return w1 + w2 * jac + w3 * cos

    def similarity(self, nmi: np.ndarray, jac: np.ndarray, cos: np.ndarray) -> np.ndarray:
        """Eq. (3)."""
        return fused_similarity(nmi, jac, cos, self.weights)

    def threshold(self, h_a: np.ndarray, h_b: np.ndarray) -> np.ndarray:
        """Eq. (5)."""
        return adaptive_threshold(h_a, h_b, self.theta_base, self.epsilon)


@dataclass
class _Guards:
    """The guards beyond the paper (module doc) over the clusters ``st``: each test is off
    when its setting is ``None``; every refusal is recorded in ``refused``.  ``names``:
    ``[R0, d]`` unit rows of the relation names' embeddings (or ``None``); ``coded``: ``[R0]``
    whether a relation's label is a code (:func:`lokg.scos.names.is_code`)."""

    kg: KnowledgeGraph
    st: _Clusters
    max_split_z: float | None
    max_contradiction: float | None
    min_name_cosine: float | None
    names: np.ndarray | None
    coded: np.ndarray
    refused: list[RefusedPair] = field(default_factory=list)

    def name_cosine(self, a: int, b: int) -> float | None:
        """The name cosine of two slots (None without names, or when a side is all codes)."""
        if self.names is None:
            return None
        return name_cosine(self.names, self.coded, self.st.members[a], self.st.members[b])

    def allow(self, a: int, b: int, sim: float, theta: float) -> bool:
        """The guards' tests of an admissible pair (split z, contradiction, then names); a
        refusal is recorded."""
        if (
            self.max_split_z is None
            and self.max_contradiction is None
            and self.min_name_cosine is None
        ):
            return True
        z = None if self.max_split_z is None else float(self.st.split_excess(a, b))
        c = None if self.max_contradiction is None else self.st.contradiction(a, b)
        n = None if self.min_name_cosine is None else self.name_cosine(a, b)
        if z is not None and z > self.max_split_z:
            reason = "split_z"
        elif c is not None and c.rate > self.max_contradiction:
            reason = "contradiction"
        elif n is not None and n < self.min_name_cosine:
            reason = "name"
        else:
            return True
        labels = self.kg.relations.labels
        self.refused.append(
            RefusedPair(
                left=[labels[r] for r in self.st.members[a]],
                right=[labels[r] for r in self.st.members[b]],
                similarity=sim,
                threshold=theta,
                split_z=z,
                contradiction=None if c is None else c.rate,
                reason=reason,
                shared_heads=0 if c is None else c.shared_heads,
                differing_heads=0 if c is None else c.differing_heads,
                common_facts=0 if c is None else c.common_facts,
                name_cosine=n,
            )
        )
        return False


def _check_inputs(
    kg: KnowledgeGraph,
    embeddings: np.ndarray,
    types: np.ndarray,
    names: np.ndarray | None,
    min_name_cosine: float | None,
) -> None:
    """One line naming the input whose shape does not fit ``kg`` (or is missing)."""
    if embeddings.ndim != 2 or embeddings.shape[0] != kg.num_relations:
        raise ValueError(
            f"relation embeddings must have shape [{kg.num_relations}, d] for graph "
            f"{kg.name!r}, got {list(embeddings.shape)}"
        )
    if types.shape != (kg.num_entities,):
        raise ValueError(f"entity types must have shape [{kg.num_entities}], got {types.shape}")
    if min_name_cosine is not None and names is None:
        raise ValueError("scos.min_name_cosine needs the relation names' embeddings (names=)")
    if names is not None and (names.ndim != 2 or names.shape[0] != kg.num_relations):
        raise ValueError(
            f"relation name embeddings must have shape [{kg.num_relations}, d], "
            f"got {list(names.shape)}"
        )


def _unit_rows(names: np.ndarray | None) -> np.ndarray | None:
    """``names`` with every nonzero row scaled to norm 1, so that a dot product is the cosine."""
    if names is None:
        return None
    norms = np.linalg.norm(names, axis=1, keepdims=True)
    return names / np.where(norms > 0, norms, 1.0)


def _initial_pairs(
    st: _Clusters, eligible: np.ndarray, scoring: _Scoring, guards: _Guards
) -> list[_Pair]:
    """The admissible pairs of the original relations that the guards allow, scored in row
    chunks (module doc: Cost)."""
    R = st.R
    ptr, cols, vals = st.dist_csr()
    chunk = max(1, _CHUNK_ENTRIES // max(R, 1))
    XtT = st.X.T.tocsc()
    pairs: list[_Pair] = []
    for a0 in range(0, R, chunk):
        a1 = min(R, a0 + chunk)
        inter = (st.X[a0:a1] @ XtT).toarray()  # [c, R]
        jac = jaccard(inter, st.sizes[a0:a1, None], st.sizes[None, :])
        cos = cosine_similarity(st.emb[a0:a1], st.emb)  # [c, R]
        theta = scoring.threshold(st.entropy[a0:a1, None], st.entropy[None, :])
        bound = scoring.upper_bound(jac, cos)
        upper = np.arange(a0, a1)[:, None] < np.arange(R)[None, :]
        upper &= eligible[a0:a1, None] & eligible[None, :]
        ii, jj = np.nonzero((bound >= theta - _TOL) & upper)
        nmi = _nmi_pairs(ptr, cols, vals, ii + a0, jj)
        sim = scoring.similarity(nmi, jac[ii, jj], cos[ii, jj])
        ok = sim >= theta[ii, jj] - _TOL
        for i, j, s, n, jc, c, t in zip(
            ii[ok] + a0,
            jj[ok],
            sim[ok],
            nmi[ok],
            jac[ii, jj][ok],
            cos[ii, jj][ok],
            theta[ii, jj][ok],
            strict=True,
        ):
            if guards.allow(int(i), int(j), float(s), float(t)):
                pairs.append(
                    _Pair(-float(s), int(i), int(j), 0, 0, float(n), float(jc), float(c), float(t))
                )
    return pairs


def _pairs_with(
    st: _Clusters, a: int, others: np.ndarray, scoring: _Scoring, guards: _Guards
) -> list[_Pair]:
    """The admissible pairs of the new cluster ``a`` with the clusters ``others`` that the
    guards allow, in the order of ``others``."""
    inter = st.intersections(a)[others]
    jac_o = jaccard(inter, st.sizes[a], st.sizes[others])
    cos_o = cosine_similarity(st.emb[a : a + 1], st.emb[others])[0]
    theta_o = scoring.threshold(st.entropy[a], st.entropy[others])
    cand = np.flatnonzero(scoring.upper_bound(jac_o, cos_o) >= theta_o - _TOL)
    if len(cand) == 0:
        return []
    sub = [a, *others[cand].tolist()]
    sptr = np.concatenate([[0], np.cumsum([len(st.dists[x][0]) for x in sub])])
    scols = np.concatenate([st.dists[x][0] for x in sub])
    svals = np.concatenate([st.dists[x][1] for x in sub])
    nmi_o = _nmi_pairs(
        sptr, scols, svals, np.zeros(len(cand), dtype=np.int64), np.arange(1, len(sub))
    )
    sim_o = scoring.similarity(nmi_o, jac_o[cand], cos_o[cand])
    pairs: list[_Pair] = []
    for k in np.flatnonzero(sim_o >= theta_o[cand] - _TOL):
        x = int(others[cand[k]])
        if not guards.allow(a, x, float(sim_o[k]), float(theta_o[cand[k]])):
            continue
        p, q = min(a, x), max(a, x)
        pairs.append(
            _Pair(
                -float(sim_o[k]),
                p,
                q,
                int(st.version[p]),
                int(st.version[q]),
                float(nmi_o[k]),
                float(jac_o[cand[k]]),
                float(cos_o[cand[k]]),
                float(theta_o[cand[k]]),
            )
        )
    return pairs


def _merge_record(
    kg: KnowledgeGraph, st: _Clusters, pair: _Pair, step: int, name_cos: float | None
) -> MergeRecord:
    """The report line of merging ``pair`` (before it merges), with Eq. (6)'s per-merge loss
    and the contradiction, recorded whatever the settings: the audit trail."""
    i, j, sim = pair.left, pair.right, -pair.neg_similarity
    hi, hj = float(st.entropy[i]), float(st.entropy[j])
    counts = st.contradiction(i, j)
    labels = kg.relations.labels
    return MergeRecord(
        step=step,
        left=[labels[r] for r in st.members[i]],
        right=[labels[r] for r in st.members[j]],
        similarity=sim,
        threshold=pair.threshold,
        nmi=pair.nmi,
        jaccard=pair.jaccard,
        cosine=pair.cosine,
        entropy_left=hi,
        entropy_right=hj,
        loss=(1.0 - sim) * min(hi, hj),  # Eq. (6) per-merge loss
        contradiction=counts.rate,
        shared_heads=counts.shared_heads,
        differing_heads=counts.differing_heads,
        common_facts=counts.common_facts,
        examples=named_examples(kg, st.keys[i], st.keys[j]),
        name_cosine=name_cos,
    )


def greedy_merge(
    kg: KnowledgeGraph,
    embeddings: np.ndarray,
    types: np.ndarray,
    *,
    weights: tuple[float, float, float] = (0.40, 0.30, 0.30),
    theta_base: float = 0.75,
    epsilon: float = 0.15,
    min_support: int = 1,
    max_split_z: float | None = None,
    max_contradiction: float | None = None,
    names: np.ndarray | None = None,
    min_name_cosine: float | None = None,
) -> MergeOutcome:
    """Greedy hierarchical merging (Section 2.3) under Eq. (3) similarity, Eq. (5) threshold.

    Args:
        kg: the original graph G = (E, R0, T).
        embeddings: ``[R0, d]`` TransE relation embeddings.
        types: ``[E]`` entity type ids (:func:`lokg.scos.entity_types.entity_types`).
        weights, theta_base, epsilon: Eq. (3) and Eq. (5) hyper-parameters.
        min_support: relations with fewer distinct (head, tail) pairs never merge (1: the
            paper; module doc).
        max_split_z: refuse a pair whose :meth:`_Clusters.split_excess` exceeds this (None:
            the paper; module doc).
        max_contradiction: refuse a pair whose contradiction rate
            (:func:`lokg.scos.contradiction.contradiction`) exceeds this (None: the paper;
            module doc).
        names: ``[R0, d]`` sentence embeddings of the relation names
            (:func:`lokg.scos.names.name_embeddings`); needed by ``min_name_cosine``, and
            recorded per merge when given.
        min_name_cosine: refuse a pair whose :func:`lokg.scos.names.name_cosine` is below
            this (None: the paper; module doc).
    """
    embeddings = np.asarray(embeddings)
    _check_inputs(kg, embeddings, types, names, min_name_cosine)
    coded = np.array([is_code(label) for label in kg.relations.labels], dtype=bool)
    scoring = _Scoring(weights, theta_base, epsilon)
    st = _Clusters(kg, embeddings, types)
    # [R] may merge at all; a cluster formed of eligible members stays eligible
    eligible = np.array([len(k) >= min_support for k in st.keys], dtype=bool)
    guards = _Guards(
        kg, st, max_split_z, max_contradiction, min_name_cosine, _unit_rows(names), coded
    )
    total_entropy = float(st.entropy.sum())  # sum over R0, before any merge
    heap = _initial_pairs(st, eligible, scoring, guards)
    heapq.heapify(heap)
    merges: list[MergeRecord] = []
    while heap:
        pair = heapq.heappop(heap)
        i, j = pair.left, pair.right
        if (
            not (st.active[i] and st.active[j])
            or st.version[i] != pair.left_version
            or st.version[j] != pair.right_version
        ):
            continue  # stale: one side has merged since this pair was scored
        merges.append(_merge_record(kg, st, pair, len(merges) + 1, guards.name_cosine(i, j)))
        a, b = min(i, j), max(i, j)
        st.merge(a, b)
        others = np.flatnonzero(st.active & eligible)
        others = others[others != a]
        if len(others) == 0:
            break
        for new in _pairs_with(st, a, others, scoring, guards):
            heapq.heappush(heap, new)
    return MergeOutcome(
        labels=st.label.copy(),
        merges=merges,
        total_entropy=total_entropy,
        refused=guards.refused,
        below_support=int((~eligible).sum()),
    )


@dataclass
class PairSignals:
    """The three signals of Eq. (3), the fused similarity, the Eq. (5) threshold and the
    contradiction counts of one pair of original relations (for reports of pairs that did
    *not* merge)."""

    nmi: float
    jaccard: float
    cosine: float
    similarity: float
    threshold: float
    entropy_left: float
    entropy_right: float
    contradiction: Contradiction


def pair_signals(
    kg: KnowledgeGraph,
    left: int,
    right: int,
    embeddings: np.ndarray,
    types: np.ndarray,
    *,
    weights: tuple[float, float, float] = (0.40, 0.30, 0.30),
    theta_base: float = 0.75,
    epsilon: float = 0.15,
) -> PairSignals:
    """Eq. (3)-(5) and the contradiction (:mod:`lokg.scos.contradiction`) for relations
    ``left`` and ``right`` of ``kg``, computed directly."""
    E = kg.num_entities
    num_types = int(types.max(initial=-1)) + 1
    tr = kg.unique_triples()
    keys = [tr[tr[:, 1] == r][:, 0] * E + tr[tr[:, 1] == r][:, 2] for r in (left, right)]
    ents = [np.union1d(k // E, k % E) for k in keys]
    inter = len(np.intersect1d(ents[0], ents[1]))
    jac = float(jaccard(np.array(inter), np.array(len(ents[0])), np.array(len(ents[1]))))
    nmi = type_nmi_similarity(
        type_pair_distribution(keys[0], E, types, num_types),
        type_pair_distribution(keys[1], E, types, num_types),
    )
    emb = np.asarray(embeddings, dtype=np.float64)
    cos = float(cosine_similarity(emb[[left]], emb[[right]])[0, 0])
    h = [pair_keys_entropy(k, E) for k in keys]
    return PairSignals(
        nmi=nmi,
        jaccard=jac,
        cosine=cos,
        similarity=float(fused_similarity(nmi, jac, cos, weights)),
        threshold=float(adaptive_threshold(h[0], h[1], theta_base, epsilon)),
        entropy_left=h[0],
        entropy_right=h[1],
        contradiction=contradiction(np.sort(keys[0]), np.sort(keys[1]), E),
    )
