"""Walks in both edge directions: a question's L-hop subgraph, its supervised paths, and
the beam search over a learned step distribution (:mod:`lokg.taimr.learned`).

A *step* traverses one triple ``(h, r, t)`` either forward (``h -> t``, relation ``r``) or
backward (``t -> h``, relation ``r^-1``, numbered ``r + R``).  A question whose topic
entity is the tail of the triples it needs is then answered like one whose topic is the
head.  Steps keep the id of the triple they walk, so ITTC still renders every triple in its
true direction.

The walk model (:class:`~lokg.models.components.path_gat.QuestionPathGAT`) gives, for each
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

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from lokg.kg.graph import KnowledgeGraph, StepIndex

__all__ = [
    "Walk",
    "WalkGraph",
    "answer_graph",
    "answers_of",
    "beam_search",
    "beam_walk",
    "keep_steps",
    "relation_degrees",
    "supervised_paths",
    "walk_graph",
]


@dataclass(frozen=True)
class WalkGraph:
    """A topic entity's L-hop neighbourhood with both step directions.

    Attributes:
        nodes: ``[n]`` global entity ids; ``nodes[0]`` is the topic.
        src, dst: ``[m]`` local node indices of each step's start and end.
        triple_ids: ``[m]`` the triple each step walks.
        inverse: ``[m]`` True when the step walks its triple tail -> head.
        step_relation: ``[m]`` ``r`` (forward) or ``r + R`` (backward).
        depth: ``[n]`` hop distance from the topic.
    """

    nodes: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    triple_ids: np.ndarray
    inverse: np.ndarray
    step_relation: np.ndarray
    depth: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def num_steps(self) -> int:
        return len(self.src)

    def out_steps(self) -> list[np.ndarray]:
        """Step indices leaving each local node (``[n]`` arrays, step order)."""
        order = np.argsort(self.src, kind="stable")
        bounds = np.searchsorted(self.src[order], np.arange(self.num_nodes + 1))
        return [order[bounds[i] : bounds[i + 1]] for i in range(self.num_nodes)]


def _steps_of(kg: KnowledgeGraph, u: int, both: bool) -> tuple[np.ndarray, np.ndarray]:
    """(triple ids, inverse flags) of the steps leaving entity ``u``."""
    out = kg.out_triples(u)
    if not both:
        return out, np.zeros(len(out), dtype=bool)
    inn = kg.in_triples(u)
    return np.concatenate([out, inn]), np.concatenate(
        [np.zeros(len(out), dtype=bool), np.ones(len(inn), dtype=bool)]
    )


def _sampled_steps(
    kg: KnowledgeGraph, u: int, both: bool, max_fanout: int | None, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_steps_of`, keeping a seeded uniform sample of ``max_fanout`` for a hub."""
    t_ids, flags = _steps_of(kg, u, both)
    keep = _fanout_sample(len(t_ids), u, max_fanout, seed)
    return (t_ids, flags) if keep is None else (t_ids[keep], flags[keep])


def _fanout_sample(n: int, u: int, max_fanout: int | None, seed: int) -> np.ndarray | None:
    """Sorted indices of the seeded uniform sample of ``max_fanout`` of node ``u``'s ``n``
    steps, or ``None`` when it keeps them all."""
    if max_fanout is None or n <= max_fanout:
        return None
    return np.sort(np.random.default_rng((seed, u)).choice(n, max_fanout, False))


def walk_graph(
    kg: KnowledgeGraph,
    topic: int,
    max_hops: int,
    max_fanout: int | None = None,
    both_directions: bool = True,
    seed: int = 0,
) -> WalkGraph:
    """Every step leaving every node at distance < ``max_hops`` from ``topic``.

    With ``max_fanout``, a node with more steps keeps a seeded uniform sample of that many
    (neighbour sampling: hubs of a large graph do not pull it all into one question).
    A triple walked both ways (a self-loop, or both ends inside the ball) appears as two
    steps, one per direction.
    """
    num_rel = kg.num_relations
    depth = {topic: 0}
    order = [topic]
    queue = deque([topic])
    src: list[int] = []
    tids: list[np.ndarray] = []
    inv: list[np.ndarray] = []
    ends: list[int] = []
    while queue:
        u = queue.popleft()
        if depth[u] >= max_hops:
            continue
        t_ids, flags = _sampled_steps(kg, u, both_directions, max_fanout, seed)
        tri = kg.triples_np[t_ids]
        other = np.where(flags, tri[:, 0], tri[:, 2])
        for v in other.tolist():
            if v not in depth:
                depth[v] = depth[u] + 1
                order.append(v)
                queue.append(v)
        src.extend([u] * len(t_ids))
        tids.append(t_ids)
        inv.append(flags)
        ends.extend(other.tolist())
    local = {g: i for i, g in enumerate(order)}
    t_arr = np.concatenate(tids) if tids else np.zeros(0, np.int64)
    i_arr = np.concatenate(inv) if inv else np.zeros(0, bool)
    rel = kg.triples_np[t_arr, 1] + num_rel * i_arr.astype(np.int64)
    return WalkGraph(
        nodes=np.asarray(order, dtype=np.int64),
        src=np.asarray([local[u] for u in src], dtype=np.int64),
        dst=np.asarray([local[v] for v in ends], dtype=np.int64),
        triple_ids=t_arr.astype(np.int64),
        inverse=i_arr,
        step_relation=rel.astype(np.int64),
        depth=np.asarray([depth[g] for g in order], dtype=np.int64),
    )


def answer_graph(
    kg: KnowledgeGraph,
    topic: int,
    answers: Sequence[int],
    max_hops: int,
    max_fanout: int | None = None,
    both_directions: bool = True,
    seed: int = 0,
) -> WalkGraph:
    """The steps of ``topic``'s walk graph that a path of at most ``max_hops`` steps to an
    answer can use, without the ``max_hops`` ball: the ``max_hops - 1`` ball
    (:func:`walk_graph`, with its sampling), plus the steps from that ball's outermost nodes
    into an answer, read from the answers' side (an answer's own steps, reversed).  The last
    hop of the ball is by far its largest (``max_fanout ** L`` steps against
    ``max_fanout ** (L-1)``); this graph never holds it, so finding a training question's
    supervised paths (:func:`supervised_paths`) costs the same on a 1M-triple graph as on
    PathQuestion.  Steps into an answer from a hub keep every triple (no sampling there).
    """
    g = walk_graph(kg, topic, max_hops - 1, max_fanout, both_directions, seed)
    answer_ids = np.unique(np.asarray(list(answers), dtype=np.int64))
    rim = g.nodes[g.depth == max_hops - 1]  # nodes whose steps walk_graph did not take
    if not len(answer_ids) or not len(rim):
        return g
    # a step u -> a forward walks a triple (u, r, a): an answer's in-triples; backward, a
    # triple (a, r, u): an answer's out-triples
    into = [kg.in_triples(int(a)) for a in answer_ids]
    t_fwd = np.concatenate(into) if into else np.zeros(0, np.int64)
    starts = [kg.triples_np[t_fwd, 0]]
    t_ids, flags = [t_fwd], [np.zeros(len(t_fwd), dtype=bool)]
    if both_directions:
        outof = [kg.out_triples(int(a)) for a in answer_ids]
        t_bwd = np.concatenate(outof) if outof else np.zeros(0, np.int64)
        starts.append(kg.triples_np[t_bwd, 2])
        t_ids.append(t_bwd)
        flags.append(np.ones(len(t_bwd), dtype=bool))
    start, tid, flag = np.concatenate(starts), np.concatenate(t_ids), np.concatenate(flags)
    keep = np.isin(start, rim)
    start, tid, flag = start[keep], tid[keep], flag[keep]
    if not len(tid):
        return g
    tri = kg.triples_np[tid]
    end = np.where(flag, tri[:, 0], tri[:, 2])
    local = {int(v): i for i, v in enumerate(g.nodes.tolist())}
    nodes, depth = g.nodes.tolist(), g.depth.tolist()
    for v in end.tolist():
        if v not in local:
            local[v] = len(nodes)
            nodes.append(v)
            depth.append(max_hops)
    rel = tri[:, 1] + kg.num_relations * flag.astype(np.int64)
    return WalkGraph(
        nodes=np.asarray(nodes, dtype=np.int64),
        src=np.concatenate([g.src, [local[u] for u in start.tolist()]]).astype(np.int64),
        dst=np.concatenate([g.dst, [local[v] for v in end.tolist()]]).astype(np.int64),
        triple_ids=np.concatenate([g.triple_ids, tid]).astype(np.int64),
        inverse=np.concatenate([g.inverse, flag]),
        step_relation=np.concatenate([g.step_relation, rel]).astype(np.int64),
        depth=np.asarray(depth, dtype=np.int64),
    )


def keep_steps(
    graph: WalkGraph, paths: Sequence[tuple[int, ...]]
) -> tuple[WalkGraph, list[tuple[int, ...]]]:
    """The part of ``graph`` that ``paths`` walk (the topic stays local node 0), and the
    paths renumbered into it: what training keeps per question."""
    steps = sorted({e for p in paths for e in p})
    step_at = {e: i for i, e in enumerate(steps)}
    used = sorted({0, *graph.src[steps].tolist(), *graph.dst[steps].tolist()})
    node_at = {u: i for i, u in enumerate(used)}
    idx = np.asarray(steps, dtype=np.int64)
    small = WalkGraph(
        nodes=graph.nodes[used],
        src=np.asarray([node_at[u] for u in graph.src[idx].tolist()], dtype=np.int64),
        dst=np.asarray([node_at[v] for v in graph.dst[idx].tolist()], dtype=np.int64),
        triple_ids=graph.triple_ids[idx],
        inverse=graph.inverse[idx],
        step_relation=graph.step_relation[idx],
        depth=graph.depth[used],
    )
    return small, [tuple(step_at[e] for e in p) for p in paths]


def relation_degrees(kg: KnowledgeGraph, graph: WalkGraph) -> np.ndarray:
    """``[m]`` deg_r(u) of each step ``u -r-> v`` in ``kg`` itself: how many steps of that
    relation (and direction) leave ``u``, all of them, as :func:`beam_walk` counts at
    retrieval (a sampled graph may hold fewer)."""
    out = np.empty(graph.num_steps, dtype=np.int64)
    seen: dict[tuple[int, int], int] = {}
    num_rel = kg.num_relations
    for e, (u, r) in enumerate(
        zip(graph.nodes[graph.src].tolist(), graph.step_relation.tolist(), strict=True)
    ):
        if (u, r) not in seen:
            t_ids = kg.out_triples(u) if r < num_rel else kg.in_triples(u)
            seen[u, r] = int(np.count_nonzero(kg.triples_np[t_ids, 1] == r % num_rel))
        out[e] = seen[u, r]
    return out


def supervised_paths(
    kg: KnowledgeGraph,
    graph: WalkGraph,
    answers: Sequence[int],
    length: int | None = None,
    relations: Sequence[str] = (),
    max_paths: int = 32,
    max_hops: int | None = None,
) -> list[tuple[int, ...]]:
    """Paths (tuples of step indices) the walk model is trained to follow.

    Paths run from the topic to a gold answer, never straight back along the triple just
    walked (:func:`_backtracks`), with ``length``
    steps when the dataset annotates a gold path of that length, else the shortest length
    reaching an answer, up to ``max_hops`` (``None``: the graph's depth).  When ``relations``
    (the gold path's relation labels) are given and some paths follow them, only those are
    kept.  At most ``max_paths`` (the first found).
    """
    answer_set = {int(a) for a in answers}
    targets = {i for i, g in enumerate(graph.nodes.tolist()) if g in answer_set}
    if not targets:
        return []
    out = graph.out_steps()
    max_len = length or max_hops or int(graph.depth.max())
    # distance to the nearest target along steps (backward BFS), to prune the DFS
    into: dict[int, list[int]] = {}
    for e, v in enumerate(graph.dst.tolist()):
        into.setdefault(v, []).append(e)
    dist = {t: 0 for t in targets}
    queue = deque(targets)
    while queue:
        v = queue.popleft()
        for e in into.get(v, []):
            u = int(graph.src[e])
            if u not in dist:
                dist[u] = dist[v] + 1
                queue.append(u)
    if 0 not in dist or dist[0] > max_len:
        return []
    found: list[tuple[int, ...]] = []

    def dfs(u: int, path: tuple[int, ...], want: int) -> None:
        if len(found) >= 4 * max_paths:
            return
        if len(path) == want:
            if u in targets:
                found.append(path)
            return
        for e in out[u].tolist():
            v = int(graph.dst[e])
            if (path and _backtracks(graph, path[-1], e)) or dist.get(v, want + 1) > want - len(
                path
            ) - 1:
                continue
            dfs(v, (*path, e), want)

    lengths = [length] if length is not None else range(max(dist[0], 1), max_len + 1)
    for want in lengths:
        dfs(0, (), want)
        if found:
            break
    if relations and found:
        labels = [_step_label(kg, graph, e) for e in range(graph.num_steps)]
        matching = [p for p in found if tuple(labels[e] for e in p) == tuple(relations)]
        found = matching or found
    return found[:max_paths]


def _backtracks(graph: WalkGraph, prev: int, e: int) -> bool:
    """Step ``e`` walks straight back along the triple step ``prev`` just walked (a self-loop
    never counts: PathQuestion's KBs chain one self-loop several times)."""
    return (
        graph.triple_ids[e] == graph.triple_ids[prev]
        and graph.inverse[e] != graph.inverse[prev]
        and graph.src[prev] != graph.dst[prev]
    )


def _step_label(kg: KnowledgeGraph, graph: WalkGraph, e: int) -> str:
    label = kg.relations.label(int(kg.triples_np[graph.triple_ids[e], 1]))
    return f"{label}^-1" if graph.inverse[e] else label


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
    (:func:`~lokg.models.components.path_gat.vocabulary_log_probs`): it needs the step's
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
            :func:`~lokg.models.components.path_gat.widen_to_step_relations`).
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
