"""Context encoders: ITTC (Sec. 2.4), the naive uniform template ("w/o ITTC"), truncation.

All three share one interface, :meth:`Encoder.encode`, and return an :class:`EncodedContext`
whose ``text`` is exactly what is placed in the prompt and whose ``num_tokens`` is the token
count of that text (:mod:`lokg.tokens`).  The context also carries :class:`EncodedUnits`: every
distinct candidate with the rendering chosen for it (or ``"dropped"``), its line, and the costs
c(t, k) and values v(t, k) the encoder weighed, so a view of the decision
(``evaluate.py show=<id>``, :mod:`lokg.show`) renders these numbers and never recomputes them.
Each encoder is built from ``configs/encoder/<name>.yaml`` through ``_target_``.

ITTC, per question:

1. candidates -> distinct ``[N, 3]`` (s, r, o) id triples, in the given (ranked) order;
2. T_naive = tokens of the naive encoding of all N triples (the denominator of TCR);
   if T_naive ≤ ``activation_ratio`` · B the naive encoding is returned as is (Sec. 2.4);
3. otherwise: order σ* of Eq. (8), three renderings per triple with their real token costs
   c(t, k), values v(t, k) of Eqs. (9)-(10), and the MCKP of Eq. (11) (DP for B ≤
   ``dp_max_budget``, value-density greedy above);
4. infeasible case (every triple compact still exceeds B, which Eq. (11) does not allow):
   triples are dropped lowest compact value first (ties: lower retrieval score, then later
   rank) until the all-compact encoding fits, then the MCKP runs on the rest;
5. the text is assembled and counted; if the count ever exceeds B (a tokenizer whose counts
   are not additive over lines), triples are set to compact and then dropped in the order of
   step 4 until it fits.  The returned context never exceeds B.

With ``group_objects=True`` (beyond the paper, issue 28 §4; off by default) candidates sharing
(subject, relation) may also be written as one grouped line, one more option of the MCKP in
steps 3-4 (:mod:`lokg.ittc.group`, where the choice of MCKP classes is argued); a candidate
set in which no two triples share (s, r) is encoded exactly as without it.  Step 5 writes every
kept triple on its own line again before shrinking (it never runs with cl100k).  The record
says which triples each line states (``EncodedUnits.line_index``,
:meth:`EncodedContext.line_triples`), so every object of a grouped line counts as placed.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from lokg.ittc.group import Grouping, Layout, find_groups, pack
from lokg.ittc.mckp import solve
from lokg.ittc.order import ORDERS, EncodingOrder, select_order
from lokg.ittc.render import GRANULARITIES, OBJECT_JOINER, TripleRenderer
from lokg.ittc.value import query_boost, triple_values
from lokg.kg.graph import KnowledgeGraph
from lokg.tokens import DEFAULT_TOKENIZER, Tokenizer, check_budget, get_tokenizer

__all__ = [
    "DROPPED",
    "EncodedContext",
    "EncodedUnits",
    "Encoder",
    "ITTCEncoder",
    "NaiveEncoder",
    "TruncateEncoder",
    "join_lines",
]

#: Values of ``ITTCEncoder(order=...)``: Eq. (8)'s argmin, or one fixed order (ablation).
ORDER_OPTIONS = ("entropy", *ORDERS)
#: Values of ``ITTCEncoder(drop_policy=...)`` for the infeasible case.
DROP_POLICIES = ("value", "rank")


#: the rendering of a candidate left out of the text
DROPPED = "dropped"


@dataclass(frozen=True)
class EncodedUnits:
    """What an encoder made of each unit it was given: one row per distinct candidate triple,
    in the given (ranked) order.

    Attributes:
        triples: ``[N, 3]`` (s, r, o) ids of the distinct candidates.
        rendering: per unit, the granularity chosen (``"compact"``/``"balanced"``/
            ``"verbose"``), ``"naive"`` for the uniform template, or ``"dropped"``.
        lines: per unit, its line as placed in the text (no newline); ``""`` when dropped.
            The members of a grouped line (``group_objects``) share that line.
        cost: ``[N]`` tokens of the unit's line, newline included (the chosen c(t, k), or the
            uniform template's); 0 when dropped.  A grouped line's tokens are carried by its
            first unit and its other units carry 0, so the costs of the kept units add up to
            the tokens of the lines.
        value: ``[N]`` v(t, k) of Eq. (9) of the chosen rendering (a uniform-template line
            scores as ``verbose``, as ITTC's objective counts it); 0 when dropped; NaN for
            encoders that compute no values.
        costs: ``[N, K]`` c(t, k) for every granularity of :data:`GRANULARITIES`, or ``None``
            (encoders without granularities).
        values: ``[N, K]`` v(t, k) of Eq. (9) for every granularity, or ``None``.
        boosted: ``[N]`` whether α(t) = λ_boost of Eq. (10) applies, or ``None`` (encoders
            without values).
        line_index: ``[N]`` int64, the index in ``text.split("\\n")`` of the line that states
            the unit, -1 when dropped; the members of a grouped line share one index.  ``None``
            only in a record built by hand.
    """

    triples: np.ndarray
    rendering: tuple[str, ...]
    lines: tuple[str, ...]
    cost: np.ndarray
    value: np.ndarray
    costs: np.ndarray | None = None
    values: np.ndarray | None = None
    boosted: np.ndarray | None = None
    line_index: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.rendering)

    @property
    def grouped(self) -> np.ndarray:
        """``[N]`` bool: the unit shares its line with another unit (a grouped line)."""
        if self.line_index is None:
            return np.zeros(len(self), dtype=bool)
        placed = self.line_index >= 0
        counts = np.bincount(self.line_index[placed], minlength=1)
        return placed & (counts[np.where(placed, self.line_index, 0)] > 1)

    @property
    def kept(self) -> np.ndarray:
        """``[N]`` bool: the unit is in the text."""
        return np.array([g != DROPPED for g in self.rendering], dtype=bool)

    @property
    def min_total(self) -> int | None:
        """Σ_t min_k c(t, k): every unit at its cheapest rendering (``None`` without costs)."""
        return None if self.costs is None else int(self.costs.min(axis=1).sum())

    @classmethod
    def none_placed(cls, triples: np.ndarray) -> EncodedUnits:
        """``triples`` of which none is in the text (evidence that is not triples)."""
        triples = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
        n = len(triples)
        return cls(
            triples,
            (DROPPED,) * n,
            ("",) * n,
            np.zeros(n, np.int64),
            np.zeros(n, np.float64),
            line_index=np.full(n, -1, dtype=np.int64),
        )


def _units(
    tokenizer: Tokenizer,
    *,
    candidates: np.ndarray,
    text: str,
    kept: np.ndarray,
    granularity: Sequence[str],
    costs: np.ndarray | None,
    values: np.ndarray | None,
    boosted: np.ndarray | None,
    naive_costs: np.ndarray | None,
    line_of: np.ndarray | None = None,
    line_costs: np.ndarray | None = None,
) -> EncodedUnits:
    """The :class:`EncodedUnits` of a context: ``kept [M, 3]`` (text order) and their
    ``granularity`` matched to the distinct ``candidates [N, 3]``; the costs and values are
    those the encoder computed (a uniform-template line's cost is ``naive_costs``, or its
    count when the encoder did not need one).  ``line_of [M]`` is the text line of each kept
    triple (default: one line each, in order) and ``line_costs [L]`` the tokens of each line,
    read for the lines that state several triples (grouped lines)."""
    kept_at = {tuple(int(x) for x in row): m for m, row in enumerate(kept)}
    text_lines = text.split("\n") if text else []
    line_of = np.arange(len(kept)) if line_of is None else np.asarray(line_of, dtype=np.int64)
    shared = np.bincount(line_of, minlength=len(text_lines)) > 1  # [L] a grouped line
    n = len(candidates)
    rendering, lines = [DROPPED] * n, [""] * n
    cost, value = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.float64)
    line_index, charged = np.full(n, -1, dtype=np.int64), set()
    for i, row in enumerate(candidates):
        m = kept_at.get(tuple(int(x) for x in row))
        if m is None:
            continue
        g, at = granularity[m], int(line_of[m])
        rendering[i], line_index[i] = g, at
        lines[i] = text_lines[at] if at < len(text_lines) else ""
        if shared[at]:  # a grouped line: its tokens on its first unit, each unit its v(t, k)
            cost[i] = 0 if at in charged else line_costs[at]
            value[i] = values[i, GRANULARITIES.index(g)]
            charged.add(at)
            continue
        if costs is not None and g in GRANULARITIES:
            k = GRANULARITIES.index(g)
            cost[i], value[i] = costs[i, k], values[i, k]
            continue
        # the uniform template: its line's cost; ITTC's naive case scores it verbose
        cost[i] = naive_costs[i] if naive_costs is not None else tokenizer.count(lines[i] + "\n")
        value[i] = values[i, -1] if values is not None else float("nan")
    return EncodedUnits(
        triples=np.asarray(candidates, dtype=np.int64).reshape(-1, 3),
        rendering=tuple(rendering),
        lines=tuple(lines),
        cost=cost,
        value=value,
        costs=costs,
        values=values,
        boosted=boosted,
        line_index=line_index,
    )


@dataclass(frozen=True)
class EncodedContext:
    """The knowledge part of a prompt and how it was built.

    Attributes:
        text: the exact string to place in the prompt.
        num_tokens: token count of ``text``.
        budget: the token budget B it was built for.
        naive_tokens: T_naive, tokens of the naive encoding of all candidates (TCR's denominator).
        triples: ``[M, 3]`` (s, r, o) ids of the triples in ``text``, in text order (the
            members of a grouped line together, in rank order).
        granularity: per triple of ``triples``: ``"compact"``/``"balanced"``/``"verbose"``, or
            ``"naive"`` for the uniform template.
        dropped: ``[D, 3]`` candidate triples not in ``text``.
        solver: ``"naive"``, ``"dp"``, ``"greedy"``, ``"truncate"``, or ``"empty"``.
        order: component order of the lines (``"sro"`` for the naive template).
        value: Σ v(t, k) of Eq. (9) over the encoded triples (ITTC's MCKP objective; NaN for
            encoders that do not compute values).
        repaired: True when step 5 of ITTC had to shrink the solution (never with cl100k).
        report: encoder-specific facts worth recording (JSON-able; e.g. a compressor's target
            and achieved tokens); empty for the templates, and for ITTC unless it wrote grouped
            lines (then ``grouped_lines`` and ``grouped_triples``).
        units: every distinct candidate with its rendering, line, costs and values
            (:class:`EncodedUnits`); ``None`` for evidence that is not triples (text passages).
    """

    text: str
    num_tokens: int
    budget: int
    naive_tokens: int
    triples: np.ndarray
    granularity: tuple[str, ...]
    dropped: np.ndarray
    solver: str
    order: str
    value: float = float("nan")
    repaired: bool = False
    encoding_order: EncodingOrder | None = field(default=None, repr=False)
    report: dict = field(default_factory=dict)
    units: EncodedUnits | None = field(default=None, repr=False)

    @property
    def tcr(self) -> float:
        """TCR = T_after / T_naive (Sec. 4 metrics); 1.0 for an empty candidate set."""
        return self.num_tokens / self.naive_tokens if self.naive_tokens else 1.0

    @property
    def over_budget(self) -> bool:
        return self.num_tokens > self.budget

    def line_triples(self) -> tuple[np.ndarray, ...]:
        """Per line of ``text`` (``text.split("\\n")``), the ``[m, 3]`` (s, r, o) triples it
        states, in rank order: one for a triple's own line, m ≥ 2 for a grouped line, whose
        every object is placed.  ``()`` when ``text`` is empty or the evidence is not triples."""
        units = self.units
        if not self.text or units is None or units.line_index is None:
            return ()
        num_lines = self.text.count("\n") + 1
        return tuple(units.triples[units.line_index == at] for at in range(num_lines))

    def granularity_counts(self) -> dict[str, int]:
        """Number of encoded triples per granularity (plus ``"dropped"``)."""
        out = {g: 0 for g in (*GRANULARITIES, "naive")}
        for g in self.granularity:
            out[g] += 1
        out["dropped"] = len(self.dropped)
        return out


def _candidate_array(kg: KnowledgeGraph, candidates) -> np.ndarray:
    """Candidates -> ``[N, 3]`` int64 id triples, order and duplicates kept, ids checked."""
    if isinstance(candidates, torch.Tensor):
        candidates = candidates.detach().cpu().numpy()
    if isinstance(candidates, np.ndarray):
        arr = candidates
    else:
        items = list(candidates)
        first = items[0] if items else None
        if isinstance(first, tuple | list) and first and isinstance(first[0], str):
            rows = []
            for t in items:
                if len(t) != 3:
                    raise ValueError(f"labelled candidate {t!r} is not a (head, relation, tail)")
                try:
                    rows.append((kg.entities[t[0]], kg.relations[t[1]], kg.entities[t[2]]))
                except KeyError as err:
                    raise ValueError(f"labelled candidate {tuple(t)!r}: {err.args[0]}") from None
            arr = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
        else:
            arr = np.asarray(items)
    if arr.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"candidates must be integer ids or labelled triples, got {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.ndim == 1:
        if arr.min() < 0 or arr.max() >= kg.num_triples:
            raise ValueError(
                f"candidate triple ids must be in [0, {kg.num_triples}), got "
                f"[{arr.min()}, {arr.max()}]"
            )
        return kg.triples_np[arr]
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(
            f"candidates must be triple ids [N], id triples [N, 3] or labelled triples, "
            f"got shape {list(arr.shape)}"
        )
    ents, rels = arr[:, [0, 2]], arr[:, 1]
    if ents.min() < 0 or ents.max() >= kg.num_entities or rels.min() < 0:
        raise ValueError(f"candidate id triples: entity ids must be in [0, {kg.num_entities})")
    if rels.max() >= kg.num_relations:
        raise ValueError(f"candidate id triples: relation ids must be in [0, {kg.num_relations})")
    return arr


def _distinct(arr: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of each distinct row, in input order."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(arr, axis=0, return_index=True)
    return np.sort(first)


def _entity_ids(kg: KnowledgeGraph, entities: Iterable[int | str], what: str) -> set[int]:
    out: set[int] = set()
    for e in entities:
        if isinstance(e, str):
            idx = kg.entities.get(e)
            if idx is None:
                raise ValueError(f"{what}: unknown entity label {e!r}")
            out.add(idx)
        else:
            idx = int(e)
            if not 0 <= idx < kg.num_entities:
                raise ValueError(f"{what}: entity id {idx} not in [0, {kg.num_entities})")
            out.add(idx)
    return out


def join_lines(lines: Iterable[str]) -> str:
    """The evidence block: rendered lines (each ending in ``"\\n"``) without the final newline.

    This string is placed in the prompt as is, so T_after and T_naive are both counted on
    exactly this form (TCR of the naive encoding is then 1.0 by construction).
    """
    return "".join(lines).removesuffix("\n")


class Encoder(ABC):
    """Shared interface: ``encode(kg, candidates, budget, ...) -> EncodedContext``.

    The budget B is not an encoder setting: it is given to every ``encode`` call (its one
    config key is the top-level ``budget``).

    Args:
        tokenizer: tokenizer name for :func:`lokg.tokens.get_tokenizer`.
        tokenizer_backend: ``"tiktoken"`` or ``"huggingface"``.
        separator: string between the components of a line.
    """

    name = "encoder"
    #: whether ``text`` is guaranteed to fit the budget (the pipeline checks it when True)
    respects_budget = True

    def __init__(
        self,
        tokenizer: str = DEFAULT_TOKENIZER,
        tokenizer_backend: str = "tiktoken",
        separator: str = " | ",
    ):
        self.tokenizer: Tokenizer = get_tokenizer(tokenizer, tokenizer_backend)
        self.renderer = TripleRenderer(separator=separator)

    def encode(
        self,
        kg: KnowledgeGraph,
        candidates,
        budget: int,
        query_entities: Iterable[int | str] = (),
        candidate_entities: Iterable[int | str] = (),
        scores: Sequence[float] | None = None,
    ) -> EncodedContext:
        """Encode ``candidates`` for one question.

        Args:
            kg: the (possibly SCOS-compressed) graph the candidates' ids refer to.
            candidates: triple ids ``[N]`` into ``kg``, id triples ``[N, 3]``, or labelled
                triples; ranked best first. Duplicates are encoded once.
            budget: token budget B for ``text`` (a positive int).
            query_entities: E_query of Eq. (10), ids or labels.
            candidate_entities: E_cand of Eq. (10) (TAIMR's coarse-filter answers), ids or labels.
            scores: optional retrieval score per candidate (aligned with ``candidates``); used
                to break ties when triples must be dropped.
        """
        b = check_budget(budget)
        full = _candidate_array(kg, candidates)  # [N_all, 3]
        first = _distinct(full)
        triples = np.ascontiguousarray(full[first])  # [N, 3]
        if scores is None:
            rank_scores = np.zeros(len(triples))
        else:
            scores = np.asarray(scores, dtype=np.float64).reshape(-1)
            if len(scores) != len(full):
                raise ValueError(
                    f"scores has {len(scores)} entries, expected one per candidate ({len(full)})"
                )
            rank_scores = scores[first]
        eq = _entity_ids(kg, query_entities, "query_entities") | _entity_ids(
            kg, candidate_entities, "candidate_entities"
        )
        naive = self.renderer.naive_lines(kg, triples)
        naive_text = join_lines(naive)
        t_naive = self.tokenizer.count(naive_text)
        return self._encode(kg, triples, b, eq, rank_scores, naive, naive_text, t_naive)

    @abstractmethod
    def _encode(self, kg, triples, budget, eq, scores, naive, naive_text, t_naive):
        """Build the context from distinct ``triples [N, 3]`` (see :meth:`encode`)."""

    def _context(
        self,
        text,
        budget,
        t_naive,
        triples,
        gran,
        dropped,
        solver,
        order,
        *,
        candidates,
        costs=None,
        values=None,
        boosted=None,
        naive_costs=None,
        line_of=None,
        line_costs=None,
        **kw,
    ):
        """The :class:`EncodedContext` of ``text`` built from the distinct ``candidates``:
        ``triples``/``gran`` in the text, ``dropped`` left out, and the costs and values the
        encoder computed on the way (carried in ``units``, never recomputed)."""
        kept = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
        return EncodedContext(
            text=text,
            num_tokens=self.tokenizer.count(text),
            budget=budget,
            naive_tokens=t_naive,
            triples=kept,
            granularity=tuple(gran),
            dropped=np.asarray(dropped, dtype=np.int64).reshape(-1, 3),
            solver=solver,
            order=order,
            units=_units(
                self.tokenizer,
                candidates=candidates,
                text=text,
                kept=kept,
                granularity=gran,
                costs=costs,
                values=values,
                boosted=boosted,
                naive_costs=naive_costs,
                line_of=line_of,
                line_costs=line_costs,
            ),
            **kw,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(tokenizer={self.tokenizer.name!r})"


class NaiveEncoder(Encoder):
    """The "w/o ITTC" ablation: every candidate in the uniform template, no budget control.

    As in the paper's Table 6 (w/o ITTC, CWQ: 2 174 tok/q at B = 2048) the naive encoding is
    not cut to the budget; ``EncodedContext.over_budget`` says when it exceeds B.  Its TCR is
    1.0 by construction.
    """

    name = "naive"
    respects_budget = False

    def _encode(self, kg, triples, budget, eq, scores, naive, naive_text, t_naive):
        return self._context(
            naive_text,
            budget,
            t_naive,
            triples,
            ["naive"] * len(triples),
            [],
            "naive",
            "sro",
            candidates=triples,
        )


class TruncateEncoder(Encoder):
    """The naive template cut to the budget at a line boundary (the baselines' serialisation).

    Lines are kept in rank order (highest ``scores`` first when given) while the running total
    fits in B; the first line that does not fit and all after it are dropped.
    """

    name = "truncate"

    def _encode(self, kg, triples, budget, eq, scores, naive, naive_text, t_naive):
        rank = np.argsort(-scores, kind="stable")
        costs = self.tokenizer.count_many(naive)
        keep = rank[: int(np.searchsorted(np.cumsum(costs[rank]), budget, side="right"))]
        while True:
            text = join_lines(naive[i] for i in keep)
            if self.tokenizer.count(text) <= budget or len(keep) == 0:
                break
            keep = keep[:-1]
        dropped = np.setdiff1d(np.arange(len(triples)), keep)
        return self._context(
            text,
            budget,
            t_naive,
            triples[keep],
            ["naive"] * len(keep),
            triples[dropped],
            "truncate",
            "sro",
            candidates=triples,
            naive_costs=costs,
        )


class ITTCEncoder(Encoder):
    """ITTC (Sec. 2.4): σ* order, three granularities, MCKP under the token budget.

    Args:
        betas: β_1..β_3 of Eq. (9) for compact/balanced/verbose (Table 3: 0.5, 0.8, 1.0).
        lambda_boost: λ_boost of Eq. (10) (Table 3: 3.0).
        activation_ratio: the MCKP runs only when T_naive > activation_ratio · B (0.7).
        dp_max_budget: exact DP up to this B, value-density greedy above (4096).
        order: ``"entropy"`` for Eq. (8), or a fixed order from ``ORDERS`` (ablation).
        drop_policy: which triples go first when even all-compact exceeds B (a case Eq. (11)
            does not allow): ``"value"`` — lowest compact value of Eq. (9) first (ties: lower
            score, later rank); ``"rank"`` — latest retrieval rank first, so the retriever's
            best paths survive tight budgets (beyond the paper).
        group_objects: also offer the MCKP one grouped line per set of candidates sharing
            (subject, relation), ``s | r | o_1; o_2; ...`` (beyond the paper, issue 28 §4;
            :mod:`lokg.ittc.group`); default False, the paper's one line per triple.
        tokenizer, tokenizer_backend, separator: see :class:`Encoder`.
    """

    name = "ittc"

    def __init__(
        self,
        betas: Sequence[float] = (0.5, 0.8, 1.0),
        lambda_boost: float = 3.0,
        activation_ratio: float = 0.7,
        dp_max_budget: int = 4096,
        order: str = "entropy",
        tokenizer: str = DEFAULT_TOKENIZER,
        tokenizer_backend: str = "tiktoken",
        separator: str = " | ",
        drop_policy: str = "value",
        group_objects: bool = False,
    ):
        super().__init__(tokenizer, tokenizer_backend, separator)
        if drop_policy not in DROP_POLICIES:
            raise ValueError(f"drop_policy {drop_policy!r} is not one of {list(DROP_POLICIES)}")
        self.drop_policy = drop_policy
        if not isinstance(group_objects, bool):
            raise ValueError(f"encoder.group_objects={group_objects!r}; expected true or false")
        if group_objects and separator.strip() and separator.strip() in OBJECT_JOINER:
            raise ValueError(
                f"encoder.group_objects=true lists objects with {OBJECT_JOINER!r}, which holds "
                f"the separator {separator!r}; expected another separator (' | ', ' -> ', tabs)"
            )
        self.group_objects = group_objects
        betas = tuple(float(b) for b in betas)
        if len(betas) != len(GRANULARITIES):
            raise ValueError(
                f"betas must have {len(GRANULARITIES)} entries (one per {list(GRANULARITIES)}), "
                f"got {list(betas)}"
            )
        if lambda_boost < 1:
            raise ValueError(f"lambda_boost must be >= 1 (Eq. (10)), got {lambda_boost}")
        if not 0 <= activation_ratio <= 1:
            raise ValueError(f"activation_ratio must be in [0, 1], got {activation_ratio}")
        if order not in ORDER_OPTIONS:
            raise ValueError(f"order {order!r} is not one of {list(ORDER_OPTIONS)}")
        self.betas = betas
        self.lambda_boost = float(lambda_boost)
        self.activation_ratio = float(activation_ratio)
        if (
            isinstance(dp_max_budget, bool)
            or int(dp_max_budget) != dp_max_budget
            or dp_max_budget < 0
        ):
            raise ValueError(
                f"encoder.dp_max_budget={dp_max_budget!r}; expected a whole number >= 0 "
                "(0: always the greedy solver)"
            )
        self.dp_max_budget = int(dp_max_budget)
        self.order = order
        self._orders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def encoding_order(self, kg: KnowledgeGraph) -> EncodingOrder:
        """σ* of Eq. (8) for ``kg`` (computed once per graph object)."""
        cached = self._orders.get(kg)
        if cached is None:
            cached = select_order(kg, fixed=None if self.order == "entropy" else self.order)
            self._orders[kg] = cached
        return cached

    def renderings(
        self, kg: KnowledgeGraph, triples: np.ndarray
    ) -> tuple[EncodingOrder, list[list[str]], np.ndarray]:
        """σ*, the K renderings ``lines[k][i]`` of each triple and their costs ``[N, K]``.

        ``costs[i, k]`` = c(t_i, k) of Eq. (9): tokens of the line, newline included.
        """
        sigma = self.encoding_order(kg)
        lines = [self.renderer.lines(kg, triples, sigma.order, g) for g in GRANULARITIES]
        costs = np.stack([self.tokenizer.count_many(col) for col in lines], axis=1)  # [N, K]
        return sigma, lines, costs

    def _encode(self, kg, triples, budget, eq, scores, naive, naive_text, t_naive):
        n = len(triples)
        if n == 0:
            return self._context(
                "", budget, t_naive, triples, [], [], "empty", "sro", candidates=triples, value=0.0
            )
        values = triple_values(kg, triples, eq, self.betas, self.lambda_boost)  # [N, K]
        boosted = query_boost(triples, eq, self.lambda_boost) > 1.0  # [N] α(t) of Eq. (10)
        # c(t, k) of every rendering: the MCKP's weights, and what the context reports
        sigma, lines, costs = self.renderings(kg, triples)  # costs: [N, K]
        if t_naive <= self.activation_ratio * budget:
            return self._context(
                naive_text,
                budget,
                t_naive,
                triples,
                ["naive"] * n,
                [],
                "naive",
                "sro",
                candidates=triples,
                costs=costs,
                values=values,
                boosted=boosted,
                value=float(values[:, -1].sum()),
            )
        drop_order = self._drop_order(scores, values)
        if self.group_objects and find_groups(triples):
            grouping = Grouping(
                kg, triples, self.renderer, self.tokenizer, sigma.order, costs, values
            )
            return self._encode_grouped(
                grouping, budget, t_naive, lines, boosted, drop_order, sigma
            )
        alive = np.ones(n, dtype=bool)
        min_cost = costs.min(axis=1)
        total_min = int(min_cost.sum())
        for i in drop_order:
            if total_min <= budget:
                break
            alive[i] = False
            total_min -= int(min_cost[i])
        idx = np.flatnonzero(alive)
        sol = solve(costs[idx], values[idx], budget, self.dp_max_budget)
        if sol is None:  # unreachable: the loop above made the all-cheapest encoding fit
            raise RuntimeError("ITTC: MCKP infeasible after dropping; this is a bug")
        choice = np.full(n, -1, dtype=np.int64)
        choice[idx] = sol.choice
        solver, repaired = sol.solver, False
        text = self._assemble(lines, choice)
        if self.tokenizer.count(text) > budget:
            repaired = True
            choice, text = self._repair(lines, costs, choice, drop_order, budget)
        kept = np.flatnonzero(choice >= 0)
        return self._solved_context(
            text, choice, kept, budget=budget, t_naive=t_naive, triples=triples, solver=solver,
            sigma=sigma, costs=costs, values=values, boosted=boosted, repaired=repaired,
        )  # fmt: skip

    def _solved_context(
        self, text, choice, kept, *, budget, t_naive, triples, solver, sigma, costs, values,
        boosted, repaired, **kw,
    ):  # fmt: skip
        """The context of an MCKP solution: ``choice [N]`` the granularity of each candidate
        (-1: dropped), ``kept`` the kept candidates in text order, ``text`` their lines;
        its value is Eq. (11)'s objective, the sum of the chosen v(t, k)."""
        return self._context(
            text,
            budget,
            t_naive,
            triples[kept],
            [GRANULARITIES[k] for k in choice[kept]],
            triples[choice < 0],
            solver,
            sigma.order,
            candidates=triples,
            costs=costs,
            values=values,
            boosted=boosted,
            value=float(values[kept, choice[kept]].sum()),
            repaired=repaired,
            encoding_order=sigma,
            **kw,
        )

    def _drop_order(self, scores: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``[N]`` the order in which triples go when even the cheapest encoding exceeds B."""
        n = len(values)
        if self.drop_policy == "rank":  # latest retrieval rank first
            return np.arange(n)[::-1]
        # lowest compact value first, then lowest score, then latest rank
        return np.lexsort((-np.arange(n), scores, values[:, 0]))

    def _encode_grouped(self, grouping, budget, t_naive, lines, boosted, drop_order, sigma):
        """Steps 3-5 with grouped lines (:mod:`lokg.ittc.group`): drop until the cheapest
        options fit, the MCKP over the classes, the lines written and counted; a count above B
        falls back to one line per triple and step 5's repair."""
        triples, costs, values = grouping.triples, grouping.costs, grouping.values
        classes = grouping.classes(grouping.drop_until_fits(drop_order, budget))
        sol = solve(*pack(classes), budget, self.dp_max_budget)
        if sol is None:  # unreachable: the drops made every class's cheapest option fit
            raise RuntimeError("ITTC: grouped MCKP infeasible after dropping; this is a bug")
        layout: Layout | None = grouping.layout(classes, sol.choice, lines)
        choice, text = layout.granularity, layout.text
        repaired = self.tokenizer.count(text) > budget
        if repaired:
            choice, text = self._repair(lines, costs, choice, drop_order, budget)
            layout = None
        kept = np.flatnonzero(choice >= 0)
        line_of = None
        if layout is not None:
            kept = kept[np.argsort(layout.line[kept], kind="stable")]  # text order
            line_of = layout.line[kept]
        return self._solved_context(
            text, choice, kept, budget=budget, t_naive=t_naive, triples=triples,
            solver=sol.solver, sigma=sigma, costs=costs, values=values, boosted=boosted,
            repaired=repaired, line_of=line_of,
            line_costs=None if layout is None else layout.line_cost,
            report={} if layout is None else _group_report(layout),
        )  # fmt: skip

    @staticmethod
    def _assemble(lines: list[list[str]], choice: np.ndarray) -> str:
        return join_lines(lines[k][i] for i, k in enumerate(choice.tolist()) if k >= 0)

    def _repair(self, lines, costs, choice, drop_order, budget):
        """Shrink until the real count fits: all kept triples to cheapest, then drop."""
        choice = choice.copy()
        kept = choice >= 0
        choice[kept] = costs[kept].argmin(axis=1)
        text = self._assemble(lines, choice)
        for i in drop_order:
            if self.tokenizer.count(text) <= budget:
                break
            if choice[i] >= 0:
                choice[i] = -1
                text = self._assemble(lines, choice)
        return choice, text

    def __repr__(self) -> str:
        grouped = ", group_objects=True" if self.group_objects else ""
        return (
            f"ITTCEncoder(betas={self.betas}, "
            f"lambda_boost={self.lambda_boost}, activation_ratio={self.activation_ratio}, "
            f"order={self.order!r}{grouped})"
        )


def _group_report(layout: Layout) -> dict:
    """What an ITTC context with grouped lines records: how many lines state two triples or
    more, and how many triples they state (nothing when no line is grouped)."""
    per_line = np.bincount(layout.line[layout.line >= 0], minlength=1)  # [L] triples per line
    if not (per_line > 1).any():
        return {}
    return {
        "grouped_lines": int((per_line > 1).sum()),
        "grouped_triples": int(per_line[per_line > 1].sum()),
    }
