"""Grouped rendering: candidates sharing a subject and a relation stated in one line (beyond the
paper, issue 28 §4; ``encoder.group_objects``, off by default).

ITTC writes every candidate triple on a line of its own at one of the K granularities, and the
MCKP of Eq. (11) picks one granularity per triple.  With grouping on, the m ≥ 2 candidates
(s, r, o_1) .. (s, r, o_m) that share a subject and a relation may instead be written as one
line, s and r once and the objects listed in the object's slot of the order σ*
(:meth:`lokg.ittc.render.TripleRenderer.grouped_line`), for instance in order ``sro``::

    Keanu Reeves | acted in | The Matrix; Speed; John Wick

**How a group becomes an MCKP item (the decision).**  The grouped line and its members' own
lines state the same facts, so exactly one of the two may be placed.  Eq. (11) has one
constraint besides B, one choice per class, and that constraint can say "exactly one of
these" only among the options of *one* class.  So a group and its members are one class
(:class:`UnitClass`) whose options are

- the grouped line at each granularity k: cost c_G(k) = the tokens of that exact line with its
  newline, counted by the tokenizer that counts every other line; value Σ_j v(t_j, k) of
  Eq. (9).  The same facts at the same detail are worth what they are worth one per line:
  grouping changes their cost, not their value;
- every way of writing the members one per line, as ITTC without grouping may: each member at
  its own granularity.  Of these K^m assignments only the Pareto-efficient ones can be in an
  optimum; :func:`member_frontier` finds them exactly (a DP over the members, the MCKP of the
  members alone at every total cost).

An option dominated by another option of its class (cost ≥, value ≤) is removed; that is exact
(a solution using it does as well with its dominator) and leaves few options in practice, since
a grouped line at k is cheaper than its members' lines at k and worth the same.  A triple that
shares (s, r) with no other candidate is a class of its own with its K renderings, as in the
paper.  Two alternatives were set aside: an item per group made mutually exclusive with its
members' items (a second constraint, which neither the DP nor the greedy of Eq. (11) can
state), and a class of "grouped at k" plus "all members at k" (it loses the mixed
granularities ITTC may give a group's members, so turning grouping on could lower the
optimum).  With the classes above the exact optimum with grouping is never below the optimum
without it on the same candidates, and candidates that share no (s, r) are encoded exactly as
without grouping (both tested).

Classes of different sizes are padded to one ``[C, K_max]`` array by repeating a class's first
option: a copy never wins a tie against its original (the solvers prefer the lower index) and
is never an upgrade of it, so the solvers of :mod:`lokg.ittc.mckp` run unchanged.

The infeasible case (every class at its cheapest option still exceeds B) drops triples in the
encoder's drop order, as without grouping, but counts each group at its cheapest option, so a
group that fits as one line is not cut for the length of its members' separate lines.  A
dropped member leaves its group; the group's lines are rendered again from the members left.

Shapes:
    - ``triples``: ``[N, 3]`` distinct (s, r, o) ids, in rank order
    - ``costs``, ``values``: ``[N, K]`` c(t, k) and v(t, k) of each triple's own lines
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lokg.ittc.render import GRANULARITIES, TripleRenderer
from lokg.kg.graph import KnowledgeGraph
from lokg.tokens import Tokenizer

__all__ = [
    "Frontier",
    "Grouping",
    "Layout",
    "UnitClass",
    "find_groups",
    "member_frontier",
    "pack",
]


def find_groups(triples: np.ndarray) -> list[np.ndarray]:
    """Indices of the triples ``[N, 3]`` that share (subject, relation) with another one: one
    ``[m]`` array per (s, r) with m ≥ 2, members in rank order, groups by their first member."""
    triples = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
    by_key: dict[tuple[int, int], list[int]] = {}
    for i, (s, r, _) in enumerate(triples.tolist()):
        by_key.setdefault((s, r), []).append(i)
    return [np.asarray(m, dtype=np.int64) for m in by_key.values() if len(m) > 1]


@dataclass(frozen=True)
class Frontier:
    """The Pareto-efficient ways to write m triples one per line.

    Attributes:
        costs: ``[F]`` total tokens, ascending.
        values: ``[F]`` total v(t, k) of Eq. (9), strictly ascending.
        granularity: ``[F, m]`` granularity index of each member.
    """

    costs: np.ndarray
    values: np.ndarray
    granularity: np.ndarray


def member_frontier(costs: np.ndarray, values: np.ndarray) -> Frontier:
    """Every Pareto-efficient assignment of granularities to m triples written one per line.

    A DP over the members: ``best[c]`` is the largest Σ_j v(t_j, k_j) whose Σ_j c(t_j, k_j)
    is exactly Σ_j min_k c(t_j, k) + c; a total is kept when it is worth more than every
    cheaper one.  Ties go to the lower granularity index, as in :mod:`lokg.ittc.mckp`.

    Args:
        costs: ``[m, K]`` non-negative integer c(t_j, k).
        values: ``[m, K]`` v(t_j, k).
    """
    costs = np.asarray(costs, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    m, k_count = costs.shape
    base = costs.min(axis=1)  # [m]
    span = int((costs.max(axis=1) - base).sum())
    best = np.full(span + 1, -np.inf)  # [span + 1]
    best[0] = 0.0
    table = np.zeros((m, span + 1), dtype=np.int64)  # the k that reached each total
    for j in range(m):
        new = np.full(span + 1, -np.inf)
        for k in range(k_count):
            shift = int(costs[j, k] - base[j])
            cand = np.full(span + 1, -np.inf)
            cand[shift:] = best[: span + 1 - shift] + values[j, k]
            better = cand > new
            new[better] = cand[better]
            table[j, better] = k
        best = new
    kept = np.flatnonzero(best > np.maximum.accumulate(np.r_[-np.inf, best[:-1]]))  # [F]
    granularity = np.empty((len(kept), m), dtype=np.int64)
    for f, total in enumerate(kept.tolist()):
        for j in range(m - 1, -1, -1):
            k = int(table[j, total])
            granularity[f, j] = k
            total -= int(costs[j, k] - base[j])
    return Frontier(int(base.sum()) + kept, best[kept], granularity)


@dataclass(frozen=True)
class UnitClass:
    """One class of the MCKP of Eq. (11): the candidates it covers and its options, of which
    exactly one is placed.

    Attributes:
        members: ``[m]`` indices of the candidates it covers, in rank order (m = 1: a triple
            alone, with its K renderings).
        costs: ``[C]`` tokens of each option (the lines it places, newlines included).
        values: ``[C]`` Σ v(t, k) of Eq. (9) over the members, per option.
        granularity: ``[C, m]`` granularity index of each member in each option.
        grouped: ``[C]`` whether the option is the one grouped line (else a line per member).
    """

    members: np.ndarray
    costs: np.ndarray
    values: np.ndarray
    granularity: np.ndarray
    grouped: np.ndarray


def _undominated(costs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``[C]`` bool: no other option is as cheap and as valuable and better in one of the two
    (or, exactly equal, earlier)."""
    c, v = costs[:, None], values[:, None]  # option i against every j: [C, C]
    as_good = (costs[None, :] <= c) & (values[None, :] >= v)
    better = (costs[None, :] < c) | (values[None, :] > v) | np.tri(len(costs), k=-1, dtype=bool)
    return ~(as_good & better).any(axis=1)


def pack(classes: Sequence[UnitClass]) -> tuple[np.ndarray, np.ndarray]:
    """The classes as the ``[C, K_max]`` costs and values of :func:`lokg.ittc.mckp.solve`, a
    shorter class padded with copies of its first option (never chosen over it)."""
    width = max((len(c.costs) for c in classes), default=1)
    costs = np.empty((len(classes), width), dtype=np.int64)
    values = np.empty((len(classes), width), dtype=np.float64)
    for row, cls in enumerate(classes):
        pad = width - len(cls.costs)
        costs[row] = np.r_[cls.costs, np.repeat(cls.costs[:1], pad)]
        values[row] = np.r_[cls.values, np.repeat(cls.values[:1], pad)]
    return costs, values


@dataclass(frozen=True)
class Layout:
    """What the MCKP chose, as lines of text.

    Attributes:
        granularity: ``[N]`` granularity index of each candidate, -1 when dropped.
        line: ``[N]`` index of the line that states each candidate, -1 when dropped (one index
            for all members of a grouped line).
        lines: the lines in text order, each ending in ``"\\n"``.
        line_cost: ``[L]`` tokens of each line, newline included (the costs the MCKP weighed).
    """

    granularity: np.ndarray
    line: np.ndarray
    lines: tuple[str, ...]
    line_cost: np.ndarray

    @property
    def text(self) -> str:
        """The evidence block: the lines without the final newline."""
        return "".join(self.lines).removesuffix("\n")


class Grouping:
    """The groups of one candidate set, their grouped lines and the classes of the MCKP.

    Args:
        kg: the graph the ids refer to.
        triples: ``[N, 3]`` distinct candidates, rank order.
        renderer, tokenizer, order: how lines are written and counted (the encoder's).
        costs, values: ``[N, K]`` c(t, k) and v(t, k) of each triple's own lines.
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        triples: np.ndarray,
        renderer: TripleRenderer,
        tokenizer: Tokenizer,
        order: str,
        costs: np.ndarray,
        values: np.ndarray,
    ):
        self.kg, self.triples, self.order = kg, triples, order
        self.renderer, self.tokenizer = renderer, tokenizer
        self.costs, self.values = costs, values
        self.groups = find_groups(triples)
        self.group_of = np.full(len(triples), -1, dtype=np.int64)  # [N] -1: shares no (s, r)
        for g, members in enumerate(self.groups):
            self.group_of[members] = g
        self._lines: dict[tuple[int, ...], tuple[list[str], np.ndarray]] = {}

    def grouped(self, members: np.ndarray) -> tuple[list[str], np.ndarray]:
        """The grouped line of ``members`` (sharing (s, r)) at each granularity, and its
        ``[K]`` token costs, newline included."""
        key = tuple(int(i) for i in members)
        if key not in self._lines:
            s, r = (int(x) for x in self.triples[key[0], :2])
            objects = self.triples[list(key), 2]
            lines = [
                self.renderer.grouped_line(self.kg, s, r, objects, self.order, g)
                for g in GRANULARITIES[: self.costs.shape[1]]
            ]
            self._lines[key] = (lines, self.tokenizer.count_many(lines))
        return self._lines[key]

    def min_cost(self, members: np.ndarray) -> int:
        """Tokens of the cheapest option of the class of ``members`` (0 for none)."""
        own = int(self.costs[members].min(axis=1).sum())
        if len(members) < 2:
            return own
        return min(own, int(self.grouped(members)[1].min()))

    def drop_until_fits(self, drop_order: np.ndarray, budget: int) -> np.ndarray:
        """``[N]`` bool, the triples kept: in ``drop_order``, drop until every class at its
        cheapest option fits in ``budget`` (a dropped member leaves its group)."""
        alive = np.ones(len(self.triples), dtype=bool)
        total = sum(self.min_cost(self._alive_of(i, alive)) for i in self._heads(alive))
        for i in drop_order.tolist():
            if total <= budget:
                break
            members = self._alive_of(i, alive)
            before = self.min_cost(members)
            alive[i] = False
            total += self.min_cost(members[members != i]) - before
        return alive

    def _alive_of(self, i: int, alive: np.ndarray) -> np.ndarray:
        """The kept members of the class of triple ``i`` (``[i]`` when it is in no group)."""
        g = self.group_of[i]
        if g < 0:
            return np.asarray([i], dtype=np.int64)
        members = self.groups[g]
        return members[alive[members]]

    def _heads(self, alive: np.ndarray) -> list[int]:
        """The first kept member of every class, in rank order."""
        heads = []
        for i in np.flatnonzero(alive).tolist():
            if self._alive_of(i, alive)[0] == i:
                heads.append(i)
        return heads

    def classes(self, alive: np.ndarray) -> list[UnitClass]:
        """The MCKP classes of the kept triples ``alive [N]``, by their first member's rank."""
        out = []
        for head in self._heads(alive):
            members = self._alive_of(head, alive)
            out.append(self._group_class(members) if len(members) > 1 else self._own(head))
        return out

    def _own(self, i: int) -> UnitClass:
        k_count = self.costs.shape[1]
        return UnitClass(
            members=np.asarray([i], dtype=np.int64),
            costs=self.costs[i].astype(np.int64),
            values=self.values[i].astype(np.float64),
            granularity=np.arange(k_count, dtype=np.int64)[:, None],
            grouped=np.zeros(k_count, dtype=bool),
        )

    def _group_class(self, members: np.ndarray) -> UnitClass:
        """Members one per line (the Pareto frontier) or grouped at each k; undominated only."""
        front = member_frontier(self.costs[members], self.values[members])
        k_count = self.costs.shape[1]
        costs = np.r_[front.costs, self.grouped(members)[1]].astype(np.int64)
        values = np.r_[front.values, self.values[members].sum(axis=0)]
        at_k = np.repeat(np.arange(k_count, dtype=np.int64)[:, None], len(members), axis=1)
        granularity = np.concatenate([front.granularity, at_k])  # [F + K, m]
        grouped = np.r_[np.zeros(len(front.costs), bool), np.ones(k_count, bool)]
        keep = _undominated(costs, values)
        return UnitClass(members, costs[keep], values[keep], granularity[keep], grouped[keep])

    def layout(self, classes: Sequence[UnitClass], choice: np.ndarray, lines) -> Layout:
        """The lines of the options ``choice [C]`` of ``classes``, in rank order (a grouped line
        where its first member ranks); ``lines[k][i]`` is triple i's own line at k."""
        n = len(self.triples)
        granularity = np.full(n, -1, dtype=np.int64)
        grouped_at: dict[int, tuple[str, int, np.ndarray]] = {}
        for cls, o in zip(classes, choice.tolist(), strict=True):
            o = o if o < len(cls.costs) else 0  # a padding copy of option 0 (see pack)
            granularity[cls.members] = cls.granularity[o]
            if cls.grouped[o]:
                k = int(cls.granularity[o, 0])
                grouped_at[int(cls.members[0])] = (
                    self.grouped(cls.members)[0][k],
                    int(cls.costs[o]),
                    cls.members,
                )
        line = np.full(n, -1, dtype=np.int64)
        text: list[str] = []
        cost: list[int] = []
        for i in np.flatnonzero(granularity >= 0).tolist():
            if line[i] >= 0:  # a later member of a grouped line already written
                continue
            if i in grouped_at:
                row, c, members = grouped_at[i]
                line[members] = len(text)
            else:
                k = int(granularity[i])
                row, c = lines[k][i], int(self.costs[i, k])
                line[i] = len(text)
            text.append(row)
            cost.append(c)
        return Layout(granularity, line, tuple(text), np.asarray(cost, dtype=np.int64))
