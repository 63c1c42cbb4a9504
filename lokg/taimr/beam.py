"""One beam search over paths in a graph, shared by every path search of the method.

A *step source* (:class:`StepSource`) says, for a path on the beam at hop ``t``, which steps
may extend it, the score of the path each step makes and the node it reaches (numpy arrays,
one entry per step, in the source's step order), and whether the path may stop there and at
what log-score.  :func:`search_paths` runs the one loop over it, from the topic entity:

1. every path on the beam that has taken a step and may stop at hop ``t`` finishes, with its
   score plus the stop's log-score (the source makes the record: :meth:`StepSource.finish`);
2. every path is expanded, and all the candidates of the hop are ranked by score in ONE
   stable sort, so ties keep beam order, then the source's step order;
3. the best ``width`` (``None``: all) are kept, built by the source (:meth:`StepSource.take`);
4. after ``max_hops`` hops, or as soon as no path has a step, the paths left on the beam
   finish with their own score (a forced stop at L).

The callers and their rules:

* :meth:`lokg.taimr.retriever.TAIMRRetriever.search`, the paper's topology beam search
  (Eq. (16)): a step walks a cached segment, every kept path of every depth is a result
  (stopping is free), and a path never walks a fact straight back;
* :func:`lokg.taimr.walk.search.beam_search` and :func:`~lokg.taimr.walk.search.beam_walk`,
  the learned walk: log-probabilities of a stopping random walk, no stop at ``t = 0``;
* :class:`lokg.models.gat_module.GATModule`'s validation: S_topo on a question's subgraph
  (:class:`EdgeSteps`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

import numpy as np

__all__ = ["BeamPath", "EdgeSteps", "StepSource", "Steps", "search_paths"]


@dataclass(frozen=True, slots=True)
class BeamPath:
    """A path on the beam, or a finished one.  A source whose paths carry more (TAIMR's
    S_topo and linking sum: :class:`~lokg.taimr.retriever.TopoPath`) subclasses it.

    Attributes:
        score: what the beam ranks by (for a finished path: with its stop's log-score).
        node: the node the path ends at (the source's numbering).
        steps: the steps taken, first first (the source's step ids).
    """

    score: float
    node: int
    steps: tuple[int, ...] = ()


P = TypeVar("P", bound=BeamPath)  # a source's paths
F = TypeVar("F")  # the record of a finished path


@dataclass(slots=True)
class Steps:
    """The candidate steps of one path at one hop, in the source's step order.

    Attributes:
        scores: ``[k]`` float64, the score of the path extended by each step.
        steps: ``[k]`` the steps' ids (what :meth:`StepSource.take` reads).
        ends: ``[k]`` the node each step reaches (``None`` when the source's own
            :meth:`StepSource.take` finds it, e.g. for a step built only when kept).
        extra: the source's own per-step data for :meth:`StepSource.take` (``None``: none).
    """

    scores: np.ndarray
    steps: np.ndarray
    ends: np.ndarray | None = None
    extra: object = None


class StepSource(Protocol[P, F]):
    """What :func:`search_paths` asks of a graph and its scores (``P``: its paths, ``F``: the
    record of a finished path).

    A source that subclasses this Protocol inherits the defaults of :meth:`stop` (no stop
    option), :meth:`finish` (the path itself, or a copy with its new score) and :meth:`take`
    (a plain :class:`BeamPath` from the step id and far end given by :meth:`expand`).
    """

    def expand(self, path: P, hop: int, width: int | None) -> Steps | None:
        """The steps that may extend ``path`` at hop ``hop`` (``None`` when none: never an
        empty :class:`Steps`).  The source may leave out steps that cannot be among the
        hop's ``width`` best (``None``: keep all) given those it returns, e.g. all but the
        ``width`` best of this path's steps."""
        ...

    def stop(self, path: P, hop: int) -> float | None:
        """The log-score of stopping ``path`` (which has taken ``hop`` >= 1 steps) here:
        it then finishes with ``path.score`` plus it; ``None``: it may not stop here (it
        still finishes if it is on the beam after the last hop)."""
        return None

    def finish(self, path: P, score: float) -> F:
        """The record of ``path`` finished with the score ``score``."""
        return path if score == path.score else replace(path, score=score)  # type: ignore

    def take(self, path: P, steps: Steps, i: int) -> P:
        """``path`` extended by its candidate ``i`` of ``steps`` (one the beam keeps)."""
        assert steps.ends is not None  # a source without far ends takes its own steps
        return BeamPath(  # type: ignore[return-value]
            steps.scores.item(i), steps.ends.item(i), (*path.steps, steps.steps.item(i))
        )


def search_paths(
    source: StepSource[P, F], start: P, *, max_hops: int, width: int | None
) -> list[F]:
    """The beam search of the module docstring from the path ``start`` (no steps taken).

    Args:
        source: the steps and their scores.
        start: the path of no steps at the topic entity (its score, and what a subclass
            carries, start the sums).
        max_hops: L, the most steps a path takes.
        width: paths kept per hop (``None``: all).

    Returns:
        The finished paths (:meth:`StepSource.finish`) in the order they finished: by
        length, then beam order (each hop's beam is best first); a caller wanting them best
        first sorts them stably.
    """
    expand, stop, finish, take = source.expand, source.stop, source.finish, source.take
    beam = [start]
    finished: list[F] = []
    for hop in range(max_hops):
        found: list[Steps] = []
        owner: list[int] = []  # the beam index of each entry of `found`
        for b, path in enumerate(beam):
            if path.steps and (s := stop(path, hop)) is not None:
                finished.append(finish(path, path.score + s))
            steps = expand(path, hop, width)
            if steps is not None:
                found.append(steps)
                owner.append(b)
        if not found:
            beam = []
            break
        beam = [take(beam[owner[f]], found[f], i) for f, i in _best(found, width)]
    finished.extend([finish(path, path.score) for path in beam])  # forced stop at L
    return finished


def _best(found: Sequence[Steps], width: int | None) -> list[tuple[int, int]]:
    """(entry of ``found``, candidate within it) of the ``width`` best candidates, best
    first, by ONE stable sort of them all (ties: earlier entry, then earlier candidate)."""
    if len(found) == 1:
        keep = np.argsort(-found[0].scores, kind="stable")[:width]
        return [(0, i) for i in keep.tolist()]
    sizes = [len(s.scores) for s in found]
    keep = np.argsort(-np.concatenate([s.scores for s in found]), kind="stable")[:width]
    entry = np.repeat(np.arange(len(found)), sizes)[keep]
    first = np.cumsum([0, *sizes[:-1]])[entry]
    return list(zip(entry.tolist(), (keep - first).tolist(), strict=True))


class EdgeSteps(StepSource[BeamPath, BeamPath]):
    """A fixed edge list with one score per edge: a step walks an edge out of the path's
    node, the path's score is the sum of its edges' scores, and every kept path of every
    length is a result (stopping is free).  The GAT's validation walks S_topo (Eq. (16))
    this way on a question's subgraph.

    Args:
        src, dst: ``[m]`` each edge's start and end node.
        score: ``[m]`` each edge's score.
    """

    def __init__(self, src: np.ndarray, dst: np.ndarray, score: np.ndarray):
        order = np.argsort(src, kind="stable")  # each node's edges together, in edge order
        self._ptr = np.searchsorted(src[order], np.arange(int(src.max(initial=-1)) + 2)).tolist()
        self._edges = order
        self._dst = np.asarray(dst)[order]
        self._score = np.asarray(score, dtype=np.float64)[order]

    def expand(self, path: BeamPath, hop: int, width: int | None) -> Steps | None:
        u = path.node
        if u + 1 >= len(self._ptr) or self._ptr[u] == self._ptr[u + 1]:
            return None
        a, b = self._ptr[u], self._ptr[u + 1]
        return Steps(path.score + self._score[a:b], self._edges[a:b], self._dst[a:b])

    def stop(self, path: BeamPath, hop: int) -> float:
        return 0.0
