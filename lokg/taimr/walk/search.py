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

from dataclasses import dataclass

import numpy as np

from lokg.kg.graph import KnowledgeGraph, StepIndex
from lokg.taimr.beam import BeamPath, Steps, StepSource, search_paths
from lokg.taimr.walk.graph import WalkGraph, _fanout_sample, _walks_back

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
    beam_width: int | None,
) -> list[Walk]:
    """Kept paths of 1..``max_hops`` steps, best first, scored by log P(p | q) (module doc):
    :func:`~lokg.taimr.beam.search_paths` over the steps of a built walk graph.

    Args:
        step_logp: ``[m, L]`` log alpha_t of each step at each hop.
        stop_logp: ``[n, L]`` log alpha_t(stop) of each node (column 0 unused).
        beam_width: paths kept per hop (``None``: all).
    """
    source = _GraphSteps(graph, step_logp, stop_logp)
    walks = search_paths(source, BeamPath(0.0, 0), max_hops=max_hops, width=beam_width)
    return _best_first(walks)


def _best_first(walks: list[Walk]) -> list[Walk]:
    """``walks`` sorted best first, in place; a stable sort: ties keep the order they
    finished in."""
    walks.sort(key=lambda w: -w.log_prob)
    return walks


class _WalkSteps(StepSource[BeamPath, Walk]):
    """What the walk's two step sources share: a finished path is a :class:`Walk`."""

    def finish(self, path: BeamPath, score: float) -> Walk:
        return Walk(path.steps, score)


class _GraphSteps(_WalkSteps):
    """The walk's steps on a built graph: those leaving a local node (0 = the topic) in step
    order, but the one walking straight back along the path's last step; a path's score is
    its log P(p | q) so far, and it may stop at every hop ``t >= 1`` with
    ``log alpha_t(stop)`` of its node.

    Args:
        graph: the walk graph.  step_logp, stop_logp: as for :func:`beam_search`.
    """

    def __init__(self, graph: WalkGraph, step_logp: np.ndarray, stop_logp: np.ndarray):
        self.graph = graph
        self.out = graph.out_steps()
        self.back = _reverse_steps(graph)
        self.dst = graph.dst
        self.step_logp = step_logp
        self.stop_logp = stop_logp
        self._hop, self._column = -1, step_logp[:, :0]

    def column(self, hop: int) -> np.ndarray:
        """``[m]`` log alpha_hop of every step (one contiguous copy per hop)."""
        if hop != self._hop:
            self._hop, self._column = hop, np.ascontiguousarray(self.step_logp[:, hop])
        return self._column

    def expand(self, path: BeamPath, hop: int, width: int | None) -> Steps | None:
        out = self.out[path.node]
        if path.steps:  # no step straight back along the last one
            prev = path.steps[-1]
            if self.back is None:
                out = out[~_walks_back(self.graph, prev, out)]
            elif self.back[prev] >= 0:
                out = out[out != self.back[prev]]
        if not len(out):
            return None
        return Steps(np.float64(path.score) + self.column(hop)[out], out, self.dst[out])

    def stop(self, path: BeamPath, hop: int) -> float:
        return float(self.stop_logp[path.node, hop])


def _reverse_steps(graph: WalkGraph) -> list[int] | None:
    """Per step, the one step that walks its triple the other way and so may not follow it
    (:func:`~lokg.taimr.walk.graph._backtracks`; ``-1``: none, or the step is a self-loop).
    ``None`` when there is no step, or when a triple is walked twice in one direction (the
    rule is then checked on each path's steps)."""
    key = graph.triple_ids * 2 + graph.inverse  # [m] the triple and the direction
    order = np.argsort(key, kind="stable")
    ranked = key[order]
    if not len(ranked) or (ranked[1:] == ranked[:-1]).any():
        return None
    other = key ^ 1  # the same triple, the other way
    at = np.minimum(np.searchsorted(ranked, other), len(ranked) - 1)
    found = (ranked[at] == other) & (graph.src != graph.dst)
    return np.where(found, order[at], -1).tolist()


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
    beam_width: int | None,
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
    :func:`beam_search`; :func:`~lokg.taimr.beam.search_paths`) and only the kept ones are
    built.  Returns the graph of the kept steps (what :func:`answers_of` and the retriever
    read; ``depth`` is the hop at which a node was first reached by one) and the same walks,
    in the same order, as ``beam_search(walk_graph(...), vocabulary_log_probs(...))``.

    Args:
        hop_logp: ``[L, 2R]`` log P_t(r | q), columns the step relations (``r``, ``r + R``;
            :func:`~lokg.taimr.walk.net.widen_to_step_relations`).
        hop_stop: ``[L]`` log P_t(stop | q) (entry 0 unused).
        beam_width: paths kept per hop (``None``: all).
        step_cache: entity id -> its grouped steps, kept across calls by the caller (the
            steps of a node depend only on the graph and the walk settings, not on the
            question); ``None``: none kept.
    """
    source = _LazySteps(
        kg, topic, hop_logp, hop_stop, both_directions, max_fanout, seed, step_cache
    )
    walks = search_paths(source, BeamPath(0.0, 0), max_hops=max_hops, width=beam_width)
    return source.graph(), _best_first(walks)


class _LazySteps(_WalkSteps):
    """:func:`beam_walk`'s steps: a node's steps read from the graph's step index when the
    beam first reaches it, scored per step relation, and built into the walk graph only when
    the beam keeps them.  Nodes are local (0 = ``topic``, then in the order kept steps reach
    them), steps the indices of the graph being built; arguments as for :func:`beam_walk`.
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        topic: int,
        hop_logp: np.ndarray,
        hop_stop: np.ndarray,
        both_directions: bool,
        max_fanout: int | None,
        seed: int,
        step_cache: dict[int, _NodeSteps] | None,
    ):
        self.hop_logp = hop_logp
        self.stop_at: list[float] = hop_stop.tolist()
        self.max_fanout = max_fanout
        self.seed = seed
        self.index = kg.steps_by_relation(both_directions)
        self.nodes, self.local, self.depth = [topic], {topic: 0}, [0]
        self.src: list[int] = []
        self.dst: list[int] = []
        self.tids: list[int] = []
        self.inv: list[bool] = []
        self.rels: list[int] = []
        # `mine` holds this call's own references, so a caller clearing the shared cache
        # (another thread's question) cannot pull a node's steps from under a running walk
        self.shared = {} if step_cache is None else step_cache
        self.mine: dict[int, _NodeSteps] = {}  # local node -> its steps
        self.made: dict[tuple[int, int], int] = {}  # (local node, step position) -> step index

    def node_steps(self, u: int) -> _NodeSteps:
        if u not in self.mine:
            x = int(self.nodes[u])
            if x not in self.shared:
                self.shared[x] = _NodeSteps.of(self.index, x, self.max_fanout, self.seed)
            self.mine[u] = self.shared[x]
        return self.mine[u]

    def expand(self, path: BeamPath, hop: int, width: int | None) -> Steps | None:
        """The node's best ``width`` steps (its listing positions) by their group's score."""
        steps = self.node_steps(path.node)
        group_lp = self.hop_logp[hop, steps.relation] + steps.neg_log_deg  # [G]
        # + 1: one of them may be the straight-back step
        need = len(steps.triple) if width is None else width + 1
        pos, lp = steps.best(group_lp, need)
        if path.steps:  # no step straight back along the previous one (a self-loop may repeat)
            p = path.steps[-1]
            if self.src[p] != self.dst[p]:
                back = (steps.triple[pos] == self.tids[p]) & (steps.inverse[pos] != self.inv[p])
                pos, lp = pos[~back], lp[~back]
        if not len(pos):
            return None
        return Steps(path.score + lp[:width], pos[:width])  # lp is float64

    def stop(self, path: BeamPath, hop: int) -> float:
        return self.stop_at[hop]

    def take(self, path: BeamPath, steps: Steps, i: int) -> BeamPath:
        """``path`` extended by the step at position ``steps.steps[i]`` of its node, added to
        the graph being built on first use."""
        u, j = path.node, steps.steps.item(i)
        e = self.made.get((u, j))
        if e is None:
            node = self.mine[u]
            v = int(node.far[j])
            if v not in self.local:
                self.local[v] = len(self.nodes)
                self.nodes.append(v)
                self.depth.append(self.depth[u] + 1)
            e = self.made[(u, j)] = len(self.src)
            self.src.append(u)
            self.dst.append(self.local[v])
            self.tids.append(int(node.triple[j]))
            self.inv.append(bool(node.inverse[j]))
            self.rels.append(int(node.step_relation[j]))
        return BeamPath(steps.scores.item(i), self.dst[e], (*path.steps, e))

    def graph(self) -> WalkGraph:
        """The walk graph of the steps built so far."""
        return WalkGraph(
            nodes=np.asarray(self.nodes, dtype=np.int64),
            src=np.asarray(self.src, dtype=np.int64),
            dst=np.asarray(self.dst, dtype=np.int64),
            triple_ids=np.asarray(self.tids, dtype=np.int64),
            inverse=np.asarray(self.inv, dtype=bool),
            step_relation=np.asarray(self.rels, dtype=np.int64),
            depth=np.asarray(self.depth, dtype=np.int64),
        )


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
