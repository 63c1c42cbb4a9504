"""The one beam search (lokg.taimr.beam) on hand-drawn graphs, every number by hand: scores,
order, ties (beam order, then step order), the width (``None``: all), stops and the forced stop
at L, and the no-straight-back rule of the learned walk and of TAIMR."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lokg.kg.inverse_edges import add_inverse_edges, relations_to_invert
from lokg.taimr.beam import BeamPath, EdgeSteps, search_paths
from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.path_cache import PathCache
from lokg.taimr.retriever import TAIMRRetriever
from lokg.taimr.topology import uniform_log_attention
from lokg.taimr.walk.graph import WalkGraph
from lokg.taimr.walk.search import beam_search

#: 0 -e0-> 1 -e3-> 4,  0 -e1-> 2 -e4-> 4,  0 -e2-> 3 -e5-> 3 (a self-loop); node 4 is a sink.
SRC = np.array([0, 0, 0, 1, 2, 3])
DST = np.array([1, 2, 3, 4, 4, 3])
SCORE = np.array([-1.0, -0.5, -1.0, -0.5, -2.0, -0.25])


def _search(width, max_hops=2, score=SCORE):
    kept = search_paths(
        EdgeSteps(SRC, DST, score), BeamPath(0.0, 0), max_hops=max_hops, width=width
    )
    return [(p.steps, p.score, p.node) for p in kept]


def test_width_two_keeps_the_two_best_of_each_hop_and_every_kept_path():
    # hop 0: e1 (-0.5), then e0 and e2 tie at -1.0: e0 first (step order); e2 is cut.
    # hop 1: e0 -> e3: -1.5; e1 -> e4: -2.5.  Every kept path is a result, hop by hop.
    assert _search(2) == [
        ((1,), -0.5, 2),
        ((0,), -1.0, 1),
        ((0, 3), -1.5, 4),
        ((1, 4), -2.5, 4),
    ]


def test_width_one_follows_the_best_step_each_hop():
    assert _search(1) == [((1,), -0.5, 2), ((1, 4), -2.5, 4)]


def test_width_none_keeps_every_path():
    # hop 1: e1 -> e4 -2.5, e0 -> e3 -1.5, e2 -> e5 (the self-loop) -1.25
    assert _search(None) == [
        ((1,), -0.5, 2),
        ((0,), -1.0, 1),
        ((2,), -1.0, 3),
        ((2, 5), -1.25, 3),
        ((0, 3), -1.5, 4),
        ((1, 4), -2.5, 4),
    ]


def test_ties_keep_beam_order_then_step_order():
    # every step scores -1: hop 0 keeps e0, e1, e2 in step order; at hop 1 all three
    # candidates tie at -2 and come in the beam's order (e3 from e0's path first, ...)
    flat = np.full(6, -1.0)
    assert [steps for steps, _, _ in _search(None, score=flat)] == [
        (0,), (1,), (2,), (0, 3), (1, 4), (2, 5)
    ]  # fmt: skip
    # width 2: the tie at hop 1 is cut in beam order, not by step id or node
    assert [steps for steps, _, _ in _search(2, score=flat)] == [(0,), (1,), (0, 3), (1, 4)]


def test_the_search_ends_when_no_path_has_a_step():
    # three hops allowed: after e0 e3 and e1 e4 the paths stand on the sink; only the
    # self-loop goes on (e2 e5 e5), so width None ends with it
    three = _search(None, max_hops=3)
    assert [s for s, _, _ in three if len(s) == 3] == [(2, 5, 5)]
    assert math.isclose(three[-1][1], -1.0 - 0.25 - 0.25)
    # a topic with no step: nothing at all
    assert search_paths(EdgeSteps(SRC, DST, SCORE), BeamPath(0.0, 4), max_hops=3, width=2) == []


# -------------------------------------------------------------------- the learned walk
#: local nodes 0 (topic), 1, 2; s0 0 -> 1 walks triple 0, s1 walks it back (1 -> 0), s2 1 -> 2,
#: s3 and s4 walk the self-loop triple 2 at node 1 forward and backward.
WALK = WalkGraph(
    nodes=np.array([10, 11, 12]),
    src=np.array([0, 1, 1, 1, 1]),
    dst=np.array([1, 0, 2, 1, 1]),
    triple_ids=np.array([0, 0, 1, 2, 2]),
    inverse=np.array([False, True, False, False, True]),
    step_relation=np.array([0, 3, 1, 2, 5]),
    depth=np.array([0, 1, 2]),
)
#: [m, L] log alpha_t of each step (hop 0 only s0 can be taken)
STEP_LP = np.array([[-0.5, -9, -9], [-9, -0.125, -0.125], [-9, -1.0, -1.0],
                    [-9, -0.5, -0.5], [-9, -0.5, -0.5]])  # fmt: skip
#: [n, L] log alpha_t(stop) of each node (column 0 unused: no stop before a step)
STOP_LP = np.array([[0.0, -0.25, -0.25], [0.0, -2.0, -2.0], [0.0, -0.25, -0.25]])


def _walks(max_hops, width):
    return [(w.steps, w.log_prob) for w in beam_search(WALK, STEP_LP, STOP_LP, max_hops, width)]


def test_walk_stops_are_scored_and_the_last_hop_stops_by_force():
    # hop 0: s0 (-0.5).  hop 1: (s0) stops at node 1: -0.5 - 2 = -2.5; s1 walks triple 0
    # straight back (barred); s3, s4 tie at -1.0 (step order), s2 -1.5 is cut by width 2.
    # The kept paths stop by force at L = 2 with their own score; best first.
    assert _walks(2, 2) == [((0, 3), -1.0), ((0, 4), -1.0), ((0,), -2.5)]


def test_walk_width_none_keeps_every_step_but_the_one_straight_back():
    assert _walks(2, None) == [((0, 3), -1.0), ((0, 4), -1.0), ((0, 2), -1.5), ((0,), -2.5)]


def test_walk_after_a_self_loop_any_step_may_follow():
    # hop 2 from (s0, s3) and (s0, s4), both on the self-loop: nothing is barred, so s1
    # (back over triple 0, but not straight after it) is the best step: -1.0 - 0.125 for both,
    # in beam order; the two stop at node 1 with -1.0 - 2.0.
    assert _walks(3, 2) == [
        ((0, 3, 1), -1.125),
        ((0, 4, 1), -1.125),
        ((0,), -2.5),
        ((0, 3), -3.0),
        ((0, 4), -3.0),
    ]


def test_walk_bars_a_triple_walked_back_twice():
    # a sixth step s5 walks triple 0 back to the topic once more (the same direction as s1),
    # scored best; both are straight back after s0, so the walks are those of WALK
    twice = WalkGraph(
        nodes=WALK.nodes,
        src=np.r_[WALK.src, 1],
        dst=np.r_[WALK.dst, 0],
        triple_ids=np.r_[WALK.triple_ids, 0],
        inverse=np.r_[WALK.inverse, True],
        step_relation=np.r_[WALK.step_relation, 3],
        depth=WALK.depth,
    )
    step_lp = np.vstack([STEP_LP, [-9, -0.0625, -0.0625]])
    walks = [(w.steps, w.log_prob) for w in beam_search(twice, step_lp, STOP_LP, 2, None)]
    assert walks == _walks(2, None)


# -------------------------------------------------------------------- TAIMR (Eq. (16))
@pytest.mark.parametrize("width", [None, 3])
def test_taimr_never_walks_a_fact_straight_back(family, width):
    """FAMILY with every inverse added: alice has 2 out-edges, bob and carol 3 each (one of
    them back to alice).  Uniform attention, lambda_topo = 0: S_topo = -log 2 at hop 1 and
    -log 2 - log 3 at hop 2.  Relations in id order (children, nationality, spouse, then
    their inverses): alice -children-> carol comes before alice -spouse-> bob."""
    kg = add_inverse_edges(family, relations_to_invert(family, "always"))
    cache = PathCache(kg, uniform_log_attention(kg), node_information_gain(kg), lambda_topo=0.0)
    r = TAIMRRetriever(
        kg, None, cache, max_hops=2, beam_width=width, relation_linking="off", lambda_rel=0.0
    )
    paths = r.search(kg.entities["alice"], None)
    got = [(tuple(kg.entities.label(e) for e in p.entities), p.s_topo) for p in paths]
    one, two = -math.log(2), -math.log(2) - math.log(3)
    expected = [
        (("alice", "carol"), one),
        (("alice", "bob"), one),
        # all four tie: beam order (carol's path first), then carol's steps in relation order
        (("alice", "carol", "spain"), two),
        (("alice", "carol", "bob"), two),  # bob -children-> carol, walked back: another fact
        (("alice", "bob", "carol"), two),
        (("alice", "bob", "france"), two),
    ][: 2 + (width or 4)]
    assert [g[0] for g in got] == [e[0] for e in expected]
    assert [g[1] for g in got] == pytest.approx([e[1] for e in expected])
