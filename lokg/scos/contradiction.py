"""Contradiction between two relations (beyond the paper; issue 30): do their shared heads
hold the same tails?

Two names of one relation that record the same facts agree on every head they share;
``film.film.directed_by`` and ``film.film.written_by`` hold different persons on most of the
films they share (directors often write their own films, so the paper's Eq. (3) signals all
say "synonym": NMI 0.97, Jaccard 0.56, cos 0.99).  For two relations (or clusters) r_i and
r_j with tail sets ``T_r(h) = {t : (h, r, t) in T}``, shared heads
``H_ij = {h : T_i(h) != {} and T_j(h) != {}}`` and facts ``P_r = {(h, t) : (h, r, t) in T}``:

    c(r_i, r_j) = |{h in H_ij : T_i(h) != T_j(h)}| / |H_ij|   if P_i ∩ P_j != {},
    c(r_i, r_j) = 0                                            otherwise (and if H_ij = {}).

Why the condition: one relation split under two names (each fact recorded once, under one
name, which is how synonyms are planted in ``bench/bench_scos.py``) never states a fact
twice, so every head it puts under both names holds *different* tails there: the share would
be 1 for every split one-to-many relation (21 of 30 planted synonyms on PQL-2H and PQL-3H,
docs/design/scos.md "Contradiction"), with nothing to compare it with.  Once the two names
state some fact in common, they are seen recording the same things side by side, and a
shared head with other tails is a disagreement.  Pairs that share no fact are the split
test's (``scos.max_split_z``, :meth:`lokg.scos.merge._Clusters.split_excess`), which has an
expectation to compare with.

Direction: greedy merging (Section 2.3) merges relations as they point; an inverse merge
(``scos.merge_inverse``, :mod:`lokg.scos.inverse`) stores r' as the inverse of r, so its
contradiction is that of r against flip(r') = {(t, h)} (:func:`flip_keys`): the tails r gives
an entity against the heads r' points to it from.

Every function works on the distinct (head, tail) keys ``head * E + tail`` of a relation or
cluster (``int64``, as :mod:`lokg.scos.similarity`), so one call costs a sort of the two
relations' facts: ``O((n_i + n_j) log(n_i + n_j))``, whatever the size of the graph.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from lokg.kg.graph import KnowledgeGraph

__all__ = [
    "NUM_EXAMPLES",
    "Contradiction",
    "CountedRecord",
    "contradiction",
    "example_heads",
    "flip_keys",
    "named_examples",
]

#: Example heads a report keeps per merge, and tails shown per side of one.
NUM_EXAMPLES = 3
_TAILS_SHOWN = 5


@dataclass(frozen=True)
class Contradiction:
    """The counts behind ``c(r_i, r_j)`` (module doc).

    Attributes:
        shared_heads: ``|H_ij|``, heads that carry both relations.
        differing_heads: those of them whose two tail sets differ.
        common_facts: ``|P_i ∩ P_j|``, (head, tail) pairs stated under both.
    """

    shared_heads: int
    differing_heads: int
    common_facts: int

    @property
    def applies(self) -> bool:
        """Whether the shared heads are evidence: the two state some fact in common."""
        return self.common_facts > 0 and self.shared_heads > 0

    @property
    def rate(self) -> float:
        """``c(r_i, r_j)`` of the module doc, in [0, 1]."""
        return self.differing_heads / self.shared_heads if self.applies else 0.0

    @property
    def raw_share(self) -> float:
        """The share of shared heads with different tails, whatever the facts in common (0
        without shared heads): what ``rate`` would be without its condition."""
        return self.differing_heads / self.shared_heads if self.shared_heads else 0.0

    def describe(self) -> str:
        """``0.75 (3 of 4 shared heads differ, 1 fact in common)``."""
        facts = f"{self.common_facts} fact{'s' if self.common_facts != 1 else ''} in common"
        if not self.shared_heads:
            return f"{self.rate:.2f} (no shared head)"
        why = f"{self.differing_heads} of {self.shared_heads} shared heads differ"
        return f"{self.rate:.2f} ({why}, {facts if self.common_facts else 'no fact in common'})"


class CountedRecord:
    """What the SCOS records carrying contradiction counts share (a merge, a refused pair, an
    inverse merge; each a dataclass with these fields): their JSON form and their
    :class:`Contradiction`."""

    shared_heads: int
    differing_heads: int
    common_facts: int

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def counts(self) -> Contradiction:
        return Contradiction(self.shared_heads, self.differing_heads, self.common_facts)


def flip_keys(keys: np.ndarray, num_entities: int) -> np.ndarray:
    """The keys of the inverse relation, sorted: ``(h, t) -> (t, h)``."""
    keys = np.asarray(keys, dtype=np.int64)
    return np.sort((keys % num_entities) * num_entities + keys // num_entities)


def _shared(
    keys_i: np.ndarray, keys_j: np.ndarray, num_entities: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(shared heads, sorted, [H]; keys of i at them; keys of j at them)``."""
    heads_i, heads_j = keys_i // num_entities, keys_j // num_entities
    shared = np.intersect1d(heads_i, heads_j)  # [H]
    return shared, keys_i[np.isin(heads_i, shared)], keys_j[np.isin(heads_j, shared)]


def contradiction(keys_i: np.ndarray, keys_j: np.ndarray, num_entities: int) -> Contradiction:
    """The counts of ``c(r_i, r_j)`` (module doc) from two relations' distinct keys.

    A shared head's tail sets differ exactly when some (head, tail) key at that head is in
    one relation and not the other: the heads of the symmetric difference of the two key
    sets, restricted to shared heads.
    """
    keys_i = np.asarray(keys_i, dtype=np.int64)
    keys_j = np.asarray(keys_j, dtype=np.int64)
    shared, at_i, at_j = _shared(keys_i, keys_j, num_entities)
    differing = np.unique(np.setxor1d(at_i, at_j) // num_entities)
    common = len(np.intersect1d(at_i, at_j))  # a common fact has a shared head
    return Contradiction(len(shared), len(differing), common)


def example_heads(
    keys_i: np.ndarray, keys_j: np.ndarray, num_entities: int, k: int = NUM_EXAMPLES
) -> list[tuple[int, list[int], list[int]]]:
    """Up to ``k`` heads that carry both relations, each with its tails under each:
    ``[(head, tails_i, tails_j)]``. Heads whose tails differ come first (what an auditor
    looks for), then agreeing ones; smallest head ids first within each."""
    keys_i = np.asarray(keys_i, dtype=np.int64)
    keys_j = np.asarray(keys_j, dtype=np.int64)
    shared, at_i, at_j = _shared(keys_i, keys_j, num_entities)
    differing = np.unique(np.setxor1d(at_i, at_j) // num_entities)
    agreeing = np.setdiff1d(shared, differing, assume_unique=True)
    picked = np.concatenate([differing, agreeing])[:k]
    out = []
    for h in picked.tolist():
        tails_i = (at_i[at_i // num_entities == h] % num_entities).tolist()
        tails_j = (at_j[at_j // num_entities == h] % num_entities).tolist()
        out.append((int(h), tails_i, tails_j))
    return out


def named_examples(
    kg: KnowledgeGraph, keys_i: np.ndarray, keys_j: np.ndarray, k: int = NUM_EXAMPLES
) -> list[dict]:
    """:func:`example_heads` with entity names, for a report: ``[{"head": name, "left":
    [tail names], "right": [tail names]}]`` (at most five tails a side, then ``"... (+n)"``).
    """

    def names(ids: list[int]) -> list[str]:
        shown = [kg.entity_name(e) for e in ids[:_TAILS_SHOWN]]
        return shown + ([f"... (+{len(ids) - _TAILS_SHOWN})"] if len(ids) > _TAILS_SHOWN else [])

    return [
        {"head": kg.entity_name(h), "left": names(left), "right": names(right)}
        for h, left, right in example_heads(keys_i, keys_j, kg.num_entities, k)
    ]
