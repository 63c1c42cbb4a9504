"""Several anchors (issue 28 §2, beyond the paper): every topic entity walks with its own view
of the question, and an answer's score joins what every anchor says about it.

A question that names two entities ("which is the son of A and also the son of B ?") asks for
the answers both anchors' walks support.  The walk model gives each anchor k its own hop
distributions, read from the question with k's mention marked (:func:`anchor_view`: the
token pointer learns which words belong to the marked anchor), so that each anchor walks
its own arm.  Over the candidates any anchor's beam found, each anchor's support is

    log P_k(a | q) = logsumexp over paths p: k -> a of log P(p | q)          (the walk's own)

summed exactly over every path of at most L steps (:func:`anchor_support`; no beam: a
constraint anchor such as a gender value has hundreds of steps of one relation, which tie
and would be cut at any width).  The join is the product of the anchors' distributions
(a product of experts, "a and b"):

    score(a) = sum_k log P_k(a | q)   over the anchors that reach some candidate,

with ``log P_k(a) = -inf`` where anchor k has no path to ``a``, taken in its limit: an answer
supported by more anchors ranks first, then by the sum over its supporting anchors
(:func:`join`).  An anchor that reaches no candidate at all says nothing about any (a topic
the question does not constrain the answer by) and is left out.

With one anchor nothing changes: its view is the question as it is and its score is the
walk's ``log P(a | q)``.
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.walk.graph import WalkGraph
from lokg.taimr.walk.search import answers_of, beam_search

__all__ = [
    "ANCHOR_ANSWERS",
    "ANCHOR_MARK",
    "ANCHOR_MODES",
    "UNSUPPORTED_LOG_PROB",
    "AnchorPath",
    "Joined",
    "anchor_arm",
    "anchor_support",
    "anchor_view",
    "graph_support",
    "join",
    "rank_jointly",
    "rank_jointly_on_graphs",
]

#: ``log P_k(a | q)`` of an anchor with no path to ``a``, in a score that must be one number
#: (the retriever's S_final): the product's limit ``log eps``, low enough that an answer one
#: more anchor supports always ranks above (a path's log-probability stays far above it)
UNSUPPORTED_LOG_PROB = -1000.0

#: ``retriever.anchors``: the join of this module, or the walk before it (every topic entity
#: walks with the whole question; answers merged by logsumexp over the topics)
ANCHOR_MODES = ("join", "union")

#: ``retriever.anchor_answers``: in the join, an answer that is one of the anchors ranks
#: ``last`` (after every other) or as ``scored`` (by its joined score, as before 2026-12-07)
ANCHOR_ANSWERS = ("last", "scored")

#: what replaces the walked anchor's mention in its view of the question (a token the
#: sentence encoder's tokenizer keeps whole)
ANCHOR_MARK = "[MASK]"


def _mention_pattern(label: str) -> re.Pattern:
    """The label as the question may write it: case-folded, ``_`` and spaces alike."""
    words = [re.escape(w) for w in re.split(r"[\s_]+", label.strip()) if w]
    return re.compile(r"(?<!\w)" + r"[\s_]+".join(words) + r"(?!\w)", re.IGNORECASE)


def anchor_view(text: str, anchor: str, anchors: Sequence[str]) -> str:
    """The question as anchor ``anchor``'s walk reads it.

    With one anchor, the question as it is (single-anchor questions keep every behaviour).
    With several, ``anchor``'s first mention is replaced by :data:`ANCHOR_MARK`; a mention
    the text does not contain leaves it unchanged.
    """
    if len(anchors) < 2 or not re.sub(r"[\s_]+", "", anchor):
        return text  # one anchor, or a label with nothing to find
    marked, n = _mention_pattern(anchor).subn(ANCHOR_MARK, text, count=1)
    return marked if n else text


def anchor_arm(
    gold_path: Sequence[tuple[str, str, str]], anchor: str, answers: Sequence[str]
) -> tuple[str, ...] | None:
    """The step labels of ``anchor``'s arm of a gold path: the shortest walk over the gold
    path's triples (either direction; ``r^-1`` for a triple walked tail -> head, as the walk
    labels its steps) from ``anchor`` to the first answer the path names; ``None`` when the
    path does not join them.

    A chain ``A -r1-> m -r2-> a`` gives ``(r1, r2)``; a conjunction ``[(A, r1, x), (B, r2,
    x)]`` gives ``(r1,)`` for A and ``(r2,)`` for B; a constraint ``[(A, r1, x), (x, rc, v)]``
    gives ``(rc^-1,)`` for the value v.
    """
    names = {n for h, _, t in gold_path for n in (h, t)}
    goal = next((a for a in answers if a in names), None)
    if goal is None or anchor not in names:
        return None
    steps: dict[str, list[tuple[str, str]]] = {}
    for h, r, t in gold_path:
        steps.setdefault(h, []).append((r, t))
        steps.setdefault(t, []).append((f"{r}^-1", h))
    arm: dict[str, tuple[str, ...]] = {anchor: ()}
    queue = deque([anchor])
    while queue:
        u = queue.popleft()
        if u == goal and arm[u]:
            return arm[u]
        for label, v in steps.get(u, []):
            if v not in arm:
                arm[v] = (*arm[u], label)
                queue.append(v)
    return None


@dataclass(frozen=True)
class AnchorPath:
    """One anchor's best path to a candidate: global entity ids (``anchor`` first) and the
    triple ids walked, with its ``log P(p | q)``."""

    entities: tuple[int, ...]
    triple_ids: tuple[int, ...]
    log_prob: float


def _distances(kg: KnowledgeGraph, targets: Sequence[int], depth: int, both: bool) -> dict:
    """Hop distance to the nearest target for every node within ``depth`` steps of one
    (steps walked backwards: a node ``u`` with a step ``u -> v``)."""
    dist = {int(t): 0 for t in targets}
    frontier = deque(dist)
    while frontier:
        v = frontier.popleft()
        if dist[v] >= depth:
            continue
        # u -> v forward walks (u, r, v): v's in-triples; backward walks (v, r, u): v's out
        tri = kg.triples_np[kg.in_triples(v)][:, 0]
        if both:
            tri = np.concatenate([tri, kg.triples_np[kg.out_triples(v)][:, 2]])
        for u in tri.tolist():
            if u not in dist:
                dist[u] = dist[v] + 1
                frontier.append(u)
    return dist


def anchor_support(
    kg: KnowledgeGraph,
    anchor: int,
    candidates: Sequence[int],
    hop_logp: np.ndarray,
    hop_stop: np.ndarray,
    max_hops: int,
    both_directions: bool = True,
) -> dict[int, tuple[float, AnchorPath]]:
    """``log P_anchor(a | q)`` for every candidate ``a`` the anchor reaches within
    ``max_hops`` steps, and its best path.

    Every path counts (no beam), scored as the vocabulary-normalised walk scores it
    (:func:`~lokg.taimr.walk.search.beam_walk`): ``sum_t [hop_logp[t, r_t] - log deg_{r_t}(u_t)]
    + [k < L] hop_stop[k]``, never straight back along the triple just walked (a self-loop
    may repeat).  Only nodes within the remaining hops of a candidate are expanded, so a hub
    anchor costs its steps into the candidates' neighbourhoods.

    Args:
        hop_logp: ``[L, 2R]`` log P_t(r | q) over step relations (``r``, ``r + R``).
        hop_stop: ``[L]`` log P_t(stop | q) (entry 0 unused).
    """
    targets = {int(a) for a in candidates}
    if not targets:
        return {}
    dist = _distances(kg, sorted(targets), max_hops, both_directions)
    if dist.get(int(anchor), max_hops + 1) > max_hops:
        return {}
    index = kg.steps_by_relation(both_directions)
    found: dict[int, list[tuple[float, tuple[int, ...], tuple[int, ...]]]] = {}

    def walk(u: int, t: int, score: float, nodes: tuple, tids: tuple, prev) -> None:
        if t > 0 and u in targets:
            stop = score + (float(hop_stop[t]) if t < max_hops else 0.0)
            found.setdefault(u, []).append((stop, nodes, tids))
        if t == max_hops:
            return
        a, b = index.ptr[u], index.ptr[u + 1]
        rel, far = index.relation[a:b], index.far[a:b]
        keep = np.flatnonzero([dist.get(int(v), max_hops + 1) <= max_hops - t - 1 for v in far])
        if not len(keep):
            return
        _, first, count = np.unique(rel, return_index=True, return_counts=True)
        log_deg = dict(zip(rel[first].tolist(), np.log(count).tolist(), strict=True))
        for j in keep.tolist():
            s = a + j
            triple, inverse = int(index.triple[s]), bool(index.inverse[s])
            if prev is not None and prev[0] == triple and prev[1] != inverse and not prev[2]:
                continue  # straight back along the triple just walked
            r, v = int(rel[j]), int(far[j])
            step = float(hop_logp[t, r]) - log_deg[r]
            walk(v, t + 1, score + step, (*nodes, v), (*tids, triple), (triple, inverse, u == v))

    walk(int(anchor), 0, 0.0, (int(anchor),), (), None)
    out = {}
    for a, paths in found.items():
        scores = np.array([p[0] for p in paths])
        best = paths[int(np.argmax(scores))]
        total = float(np.logaddexp.reduce(scores))
        out[a] = (total, AnchorPath(best[1], best[2], float(best[0])))
    return out


@dataclass(frozen=True)
class Joined:
    """One candidate's joined score: how many of the ``anchors`` that reach some candidate
    support it, the sum of their ``log P_k(a | q)``, and each supporting anchor's best path
    (anchor order)."""

    entity: int
    supported_by: int
    log_prob: float
    paths: tuple[AnchorPath, ...]
    anchors: int

    @property
    def score(self) -> float:
        """``sum_k log P_k(a | q)`` over the anchors that reach some candidate, an anchor
        without a path to this one counting :data:`UNSUPPORTED_LOG_PROB` (one number for the
        retriever's S_final)."""
        return self.log_prob + (self.anchors - self.supported_by) * UNSUPPORTED_LOG_PROB


def join(per_anchor: Sequence[dict[int, tuple[float, AnchorPath]]]) -> list[Joined]:
    """The product-of-experts join of the anchors' supports (module doc), best first (ties
    by entity id).  Anchors that support no candidate are left out."""
    active = [s for s in per_anchor if s]
    entities = sorted({a for s in active for a in s})
    out = []
    for a in entities:
        mine = [s[a] for s in active if a in s]
        log_prob = float(sum(lp for lp, _ in mine))
        out.append(Joined(a, len(mine), log_prob, tuple(p for _, p in mine), len(active)))
    out.sort(key=lambda j: (-j.supported_by, -j.log_prob, j.entity))
    return out


def rank_jointly(
    kg: KnowledgeGraph,
    walks: Sequence[tuple[int, np.ndarray, np.ndarray]],
    candidates: Iterable[int],
    max_hops: int,
    both_directions: bool = True,
) -> list[Joined]:
    """:func:`join` of every anchor's :func:`anchor_support` over ``candidates``: what the
    retriever ranks and what validation scores.  ``walks``: per anchor, ``(entity,
    hop_logp [L, 2R], hop_stop [L])``."""
    order = sorted(set(candidates))
    return join(
        [
            anchor_support(kg, anchor, order, hop_logp, hop_stop, max_hops, both_directions)
            for anchor, hop_logp, hop_stop in walks
        ]
    )


def graph_support(
    graph: WalkGraph,
    step_logp: np.ndarray,
    stop_logp: np.ndarray,
    candidates: Iterable[int],
    max_hops: int,
) -> dict[int, tuple[float, AnchorPath]]:
    """:func:`anchor_support` read from a scored walk graph (the GAT split, whose step
    log-probabilities depend on the nodes): ``log P_anchor(a | q)`` summed over every path of
    at most ``max_hops`` steps in ``graph`` (an unpruned :func:`beam_search`, the same
    straight-back rule), for each candidate (global id) it reaches, with its best path.

    Only steps that can still end at a candidate are searched (as :func:`anchor_support`
    expands only nodes within the remaining hops of one), so a hub anchor costs its steps
    toward the candidates; the scores are the graph's, normalised before.

    Shapes: ``step_logp [m, L]``, ``stop_logp [n, L]`` (:meth:`WalkNet.log_probs`'s)."""
    targets = {int(a) for a in candidates}
    keep = _toward(graph, np.isin(graph.nodes, sorted(targets)), max_hops)
    graph = dataclasses.replace(
        graph, **{f: getattr(graph, f)[keep] for f in _STEP_FIELDS}
    )  # fmt: skip
    walks = beam_search(graph, step_logp[keep], stop_logp, max_hops, None)
    out = {}
    for a, (total, best) in answers_of(graph, walks).items():
        if a not in targets:
            continue
        steps = list(best.steps)
        entities = (int(graph.nodes[0]), *(int(graph.nodes[graph.dst[e]]) for e in steps))
        tids = tuple(int(graph.triple_ids[e]) for e in steps)
        out[a] = (total, AnchorPath(entities, tids, best.log_prob))
    return out


#: the per-step arrays of a :class:`~lokg.taimr.walk.graph.WalkGraph`
_STEP_FIELDS = ("src", "dst", "triple_ids", "inverse", "step_relation")


def _toward(graph: WalkGraph, is_target: np.ndarray, max_hops: int) -> np.ndarray:
    """``[m]`` whether a step can still be on a path of at most ``max_hops`` steps from the
    topic that ends at a target node (``is_target [n]``): a step ``u -> v`` is taken at hop
    ``t >= depth(u)``, so it needs ``dist(v) <= max_hops - 1 - depth(u)``, ``dist`` the fewest
    steps from a node to a target within the graph."""
    dist = np.where(is_target, 0, max_hops + 1)
    for d in range(1, max_hops + 1):
        starts = graph.src[dist[graph.dst] == d - 1]
        dist[starts[dist[starts] > d]] = d
    return dist[graph.dst] <= max_hops - 1 - graph.depth[graph.src]


def rank_jointly_on_graphs(
    scored: Sequence[tuple[WalkGraph, np.ndarray, np.ndarray]],
    candidates: Iterable[int],
    max_hops: int,
) -> list[Joined]:
    """:func:`join` of every anchor's :func:`graph_support` over ``candidates``: what the
    retriever ranks and what validation scores under the GAT split.  ``scored``: per anchor,
    ``(its walk graph, step_logp [m, L], stop_logp [n, L])``."""
    order = sorted(set(candidates))
    return join([graph_support(g, step, stop, order, max_hops) for g, step, stop in scored])
