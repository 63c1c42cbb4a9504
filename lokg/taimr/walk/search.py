"""The beam searches of the learned walk (:mod:`lokg.taimr.walk`): over a built walk graph
(:func:`beam_search`) and, for the vocabulary-normalised walk, building only the steps it
keeps (:func:`beam_walk`); answers by :func:`answers_of`.

The walk model (:class:`~lokg.taimr.walk.net.WalkNet`) gives, for each
hop ``t = 0..L-1``, a distribution over the steps leaving a node plus a *stop* option
(no stop at ``t = 0``; at ``t = L`` the walk must stop).  A path ``p = (e_0, ..., e_{k-1})``
then has the probability of a stopping random walk,

    log P(p | q) = sum_{t<k} log alpha_t(e_t | q) + [k < L] log alpha_k(stop at v_k | q),

so paths of different lengths are compared without the length bias of a plain sum of log
probabilities (a longer path is not penalised for its extra factor: the shorter one pays
for its stop).  An answer's score is ``log P(a | q) = logsumexp`` over the kept paths that
end at ``a`` (:func:`beam_search`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from lokg.kg.graph import KnowledgeGraph, StepIndex
from lokg.taimr.walk.graph import WalkGraph, _backtracks, _fanout_sample

__all__ = ["Walk", "answers_of", "beam_search", "beam_walk"]


@dataclass(frozen=True)
class Walk:
    """One path found by :func:`beam_search`: local step indices and its log P(p | q)."""

    steps: tuple[int, ...]
    log_prob: float


def beam_search(
    graph: WalkGraph,
    step_logp: np.ndarray,
    stop_logp: np.ndarray,
    max_hops: int,
    beam_width: int,
) -> list[Walk]:
    """Kept paths of 1..``max_hops`` steps, best first, scored by log P(p | q) (module doc).

    Args:
        step_logp: ``[m, L]`` log alpha_t of each step at each hop.
        stop_logp: ``[n, L]`` log alpha_t(stop) of each node (column 0 unused).
    """
    out = graph.out_steps()
    return _beam(
        max_hops,
        beam_width,
        lambda u: out[u].tolist(),
        lambda e, t: float(step_logp[e, t]),
        lambda u, t: float(stop_logp[u, t]),
        lambda e: int(graph.dst[e]),
        lambda prev, e: _backtracks(graph, prev, e),
    )


def _beam(
    max_hops: int,
    beam_width: int,
    steps_of: Callable[[int], Iterable[int]],
    step_logp: Callable[[int, int], float],
    stop_logp: Callable[[int, int], float],
    end_of: Callable[[int], int],
    backtracks: Callable[[int, int], bool],
) -> list[Walk]:
    """The stopping walk's beam search over local nodes (0 = the topic) and step indices:
    ``steps_of(u)`` the steps leaving ``u`` in order, ``step_logp(e, t)``,
    ``stop_logp(u, t)``, ``end_of(e)`` the node a step reaches, ``backtracks(prev, e)``
    whether ``e`` walks straight back along ``prev`` (barred).  Shared by
    :func:`beam_search` (a built graph) and :func:`beam_walk` (built as it expands)."""
    beam: list[tuple[float, int, tuple[int, ...]]] = [(0.0, 0, ())]
    ended: list[Walk] = []
    for t in range(max_hops):
        cand: list[tuple[float, int, tuple[int, ...]]] = []
        for score, u, steps in beam:
            if t > 0:
                ended.append(Walk(steps, score + stop_logp(u, t)))
            for e in steps_of(u):
                if steps and backtracks(steps[-1], e):  # no step straight back
                    continue
                cand.append((score + step_logp(e, t), end_of(e), (*steps, e)))
        if not cand:
            beam = []
            break
        cand.sort(key=lambda c: -c[0])
        beam = cand[:beam_width]
    ended.extend(Walk(steps, score) for score, _, steps in beam)  # forced stop at L
    ended.sort(key=lambda w: -w.log_prob)
    return ended


@dataclass(frozen=True)
class _NodeSteps:
    """One node's steps grouped by step relation, as :class:`~lokg.kg.graph.StepIndex`
    lists them (``[d]`` arrays: triple ids, inverse flags, step relations, far ends, listing
    order); group ``g`` is the steps ``start[g]:start[g] + count[g]`` of relation
    ``relation[g]``, scored alike by the vocabulary-normalised walk, whose ``-log deg_r(u)``
    is ``neg_log_deg[g]``."""

    triple: np.ndarray
    inverse: np.ndarray
    step_relation: np.ndarray
    far: np.ndarray
    order: np.ndarray
    relation: np.ndarray
    start: np.ndarray
    count: np.ndarray
    neg_log_deg: np.ndarray

    @classmethod
    def of(cls, index: StepIndex, u: int, max_fanout: int | None, seed: int) -> _NodeSteps:
        """``u``'s steps: slices of ``index``, or, when ``max_fanout`` samples them, the
        same seeded sample as :func:`_sampled_steps` (``deg_r(u)`` then counts the sample)."""
        a, b = index.ptr[u], index.ptr[u + 1]
        arrays = (index.triple, index.inverse, index.relation, index.far, index.order)
        keep = _fanout_sample(int(b - a), u, max_fanout, seed)  # listing-order indices
        if keep is None:
            g0, g1 = index.group_ptr[u], index.group_ptr[u + 1]
            bounds = index.group_start[g0 : g1 + 1] - a
            relation = index.group_relation[g0:g1]
            steps = tuple(x[a:b] for x in arrays)
        else:
            at = np.empty(b - a, dtype=np.int64)
            at[index.order[a:b]] = np.arange(b - a)  # listing order -> grouped position
            picked = a + np.sort(at[keep])  # still grouped, in listing order within a group
            steps = tuple(x[picked] for x in arrays)
            rel = steps[2]
            bounds = np.r_[np.flatnonzero(np.r_[True, rel[1:] != rel[:-1]]), len(rel)]
            relation = rel[bounds[:-1]]
        count = np.diff(bounds)
        return cls(*steps, relation, bounds[:-1], count, -np.log(count.astype(np.float64)))

    def best(self, group_scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best steps given each group's score (``[G]``): their positions and
        scores, best first, ties in listing order (the prefix of a stable sort of all the
        node's steps), without touching the steps of groups that cannot be among them."""
        rank = np.argsort(-group_scores, kind="stable")
        picked, scores, need, i = [], [], k, 0
        while need > 0 and i < len(rank):
            j = i + 1  # groups tied with rank[i]
            while j < len(rank) and group_scores[rank[j]] == group_scores[rank[i]]:
                j += 1
            if j == i + 1:  # one group: its first steps, already in listing order
                g = rank[i]
                pos = np.arange(self.start[g], self.start[g] + min(need, self.count[g]))
            else:  # tied groups: their steps merged in listing order
                pos = np.concatenate(
                    [np.arange(self.start[g], self.start[g] + self.count[g]) for g in rank[i:j]]
                )
                pos = pos[np.argsort(self.order[pos], kind="stable")][:need]
            picked.append(pos)
            scores.append(np.full(len(pos), group_scores[rank[i]]))
            need -= len(pos)
            i = j
        if not picked:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(picked), np.concatenate(scores)


def beam_walk(
    kg: KnowledgeGraph,
    topic: int,
    hop_logp: np.ndarray,
    hop_stop: np.ndarray,
    max_hops: int,
    beam_width: int,
    both_directions: bool = True,
    max_fanout: int | None = None,
    seed: int = 0,
    step_cache: dict[int, _NodeSteps] | None = None,
) -> tuple[WalkGraph, list[Walk]]:
    """:func:`beam_search` for the vocabulary-normalised walk, building only the steps it
    keeps.  A step's log-probability there is ``hop_logp[t, r] - log deg_r(u)``
    (:func:`~lokg.taimr.walk.net.vocabulary_log_probs`): it needs the step's
    relation and its node's steps, not the L-hop ball, so a hub three hops out costs nothing
    unless the beam reaches it.  Steps of one relation at one node score alike, so a node
    the beam reaches is scored once per step relation it has
    (:meth:`~lokg.kg.graph.KnowledgeGraph.steps_by_relation` groups its steps), whatever
    its degree, and only its ``beam_width`` best steps are read and become candidates (the
    hop keeps ``beam_width`` in all, so no other step of that node could be kept); the hop's
    candidates are ranked in one stable sort (ties in beam, then step order, as in
    :func:`beam_search`) and only the kept ones are built.  Returns the graph of the kept
    steps (what :func:`answers_of` and the retriever read; ``depth`` is the hop at which a
    node was first reached by one) and the same walks, in the same order, as
    ``beam_search(walk_graph(...), vocabulary_log_probs(...))``.

    Args:
        hop_logp: ``[L, 2R]`` log P_t(r | q), columns the step relations (``r``, ``r + R``;
            :func:`~lokg.taimr.walk.net.widen_to_step_relations`).
        hop_stop: ``[L]`` log P_t(stop | q) (entry 0 unused).
        step_cache: entity id -> its grouped steps, kept across calls by the caller (the
            steps of a node depend only on the graph and the walk settings, not on the
            question); ``None``: none kept.
    """
    nodes, local, depth = [topic], {topic: 0}, [0]
    src: list[int] = []
    dst: list[int] = []
    tids: list[int] = []
    inv: list[bool] = []
    rels: list[int] = []
    index = kg.steps_by_relation(both_directions)
    # `mine` holds this call's own references, so a caller clearing the shared cache (another
    # thread's question) cannot pull a node's steps from under a running walk
    shared = {} if step_cache is None else step_cache
    mine: dict[int, _NodeSteps] = {}  # local node -> its steps
    made: dict[tuple[int, int], int] = {}  # (local node, its step's position) -> step index

    def node_steps(u: int) -> _NodeSteps:
        if u not in mine:
            x = int(nodes[u])
            if x not in shared:
                shared[x] = _NodeSteps.of(index, x, max_fanout, seed)
            mine[u] = shared[x]
        return mine[u]

    def step(u: int, j: int) -> int:
        """Index of ``u``'s step at position ``j`` in the graph being built (added on first
        use)."""
        e = made.get((u, j))
        if e is None:
            steps = mine[u]
            v = int(steps.far[j])
            if v not in local:
                local[v] = len(nodes)
                nodes.append(v)
                depth.append(depth[u] + 1)
            e = made[(u, j)] = len(src)
            src.append(u)
            dst.append(local[v])
            tids.append(int(steps.triple[j]))
            inv.append(bool(steps.inverse[j]))
            rels.append(int(steps.step_relation[j]))
        return e

    beam: list[tuple[float, int, tuple[int, ...]]] = [(0.0, 0, ())]
    ended: list[Walk] = []
    for t in range(max_hops):
        # per beam entry, its node's best steps: (entry, step position) and the new score
        scores, entry, which = [], [], []
        for b, (score, u, path) in enumerate(beam):
            if t > 0:
                ended.append(Walk(path, score + float(hop_stop[t])))
            steps = node_steps(u)
            group_lp = hop_logp[t, steps.relation] + steps.neg_log_deg  # [G]
            # + 1: one of them may be the straight-back step
            pos, lp = steps.best(group_lp, beam_width + 1)
            if path:  # no step straight back along the previous one (a self-loop may repeat)
                p = path[-1]
                if src[p] != dst[p]:
                    back = (steps.triple[pos] == tids[p]) & (steps.inverse[pos] != inv[p])
                    pos, lp = pos[~back], lp[~back]
            if not len(pos):
                continue
            scores.append(score + lp[:beam_width])
            entry.append(np.full(len(scores[-1]), b))
            which.append(pos[:beam_width])
        if not scores:
            beam = []
            break
        # the hop's best beam_width candidates; stable, so ties keep beam then step order
        all_scores = np.concatenate(scores)
        keep = np.argsort(-all_scores, kind="stable")[:beam_width]
        all_entry, all_which = np.concatenate(entry), np.concatenate(which)
        new_beam = []
        for k in keep.tolist():
            _, u, path = beam[int(all_entry[k])]
            e = step(u, int(all_which[k]))
            new_beam.append((float(all_scores[k]), dst[e], (*path, e)))
        beam = new_beam
    ended.extend(Walk(path, score) for score, _, path in beam)  # forced stop at L
    ended.sort(key=lambda w: -w.log_prob)
    graph = WalkGraph(
        nodes=np.asarray(nodes, dtype=np.int64),
        src=np.asarray(src, dtype=np.int64),
        dst=np.asarray(dst, dtype=np.int64),
        triple_ids=np.asarray(tids, dtype=np.int64),
        inverse=np.asarray(inv, dtype=bool),
        step_relation=np.asarray(rels, dtype=np.int64),
        depth=np.asarray(depth, dtype=np.int64),
    )
    return graph, ended


def answers_of(graph: WalkGraph, walks: list[Walk]) -> dict[int, tuple[float, Walk]]:
    """Each answer (global id) of ``walks`` (best first, as :func:`beam_search` returns them):
    ``log P(a | q)``, the logsumexp of its kept paths, and its best path."""
    out: dict[int, tuple[float, Walk]] = {}
    for w in walks:
        a = int(graph.nodes[graph.dst[w.steps[-1]]])
        out[a] = (
            (float(np.logaddexp(out[a][0], w.log_prob)), out[a][1])
            if a in out
            else (
                w.log_prob,
                w,
            )
        )
    return out
