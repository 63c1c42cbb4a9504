"""Multiple-choice knapsack of Eq. (11): hand instance, DP == brute force, greedy bounds."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lokg.ittc.mckp import (
    solve,
    solve_brute_force,
    solve_dp,
    solve_dp_python,
    solve_greedy,
)


def test_hand_instance():
    # two triples, (cost, value) per granularity; B = 4
    #   t1: (1, 1.0) (2, 2.0) (3, 3.5)      t2: (1, 1.0) (2, 1.5) (3, 2.0)
    # feasible pairs with cost <= 4: (v,c) t1 verbose + t2 compact = 4.5 at cost 4 (best),
    # balanced + balanced = 3.5, compact + verbose = 3.0, ...
    costs = np.array([[1, 2, 3], [1, 2, 3]])
    values = np.array([[1.0, 2.0, 3.5], [1.0, 1.5, 2.0]])
    sol = solve_dp(costs, values, 4)
    assert sol.choice.tolist() == [2, 0]
    assert sol.value == pytest.approx(4.5)
    assert sol.cost == 4
    # B = 6: everything verbose
    assert solve_dp(costs, values, 6).choice.tolist() == [2, 2]
    # B = 1: two compact triples cost 2 -> infeasible (every triple must be encoded)
    assert solve_dp(costs, values, 1) is None
    assert solve_greedy(costs, values, 1) is None


def test_greedy_by_value_density():
    # start compact (cost 2, value 2); upgrades: t1 +2 tokens for +2.5 (1.25/token),
    # t2 +1 token for +0.5 (0.5/token). B = 4: only t1's upgrade fits after taking it.
    costs = np.array([[1, 3], [1, 2]])
    values = np.array([[1.0, 3.5], [1.0, 1.5]])
    sol = solve_greedy(costs, values, 4)
    assert sol.choice.tolist() == [1, 0]
    assert sol.value == pytest.approx(4.5)


def test_solve_switches_to_greedy_above_dp_max_budget():
    costs, values = np.array([[1, 2]]), np.array([[1.0, 2.0]])
    assert solve(costs, values, 4096).solver == "dp"
    assert solve(costs, values, 4097).solver == "greedy"
    assert solve(costs, values, 10, dp_max_budget=5).solver == "greedy"


def test_empty_and_zero_costs():
    assert solve_dp(np.zeros((0, 3)), np.zeros((0, 3)), 0).choice.tolist() == []
    sol = solve_dp(np.array([[0, 0, 1]]), np.array([[0.0, 1.0, 2.0]]), 0)
    assert sol.choice.tolist() == [1]


@pytest.mark.parametrize(
    ("costs", "values", "budget", "match"),
    [
        ([[1, 2]], [[1.0]], 3, r"costs and values must both be \[N, K\]"),
        ([[-1, 2]], [[1.0, 2.0]], 3, r"costs must be >= 0"),
        ([[1, 2]], [[1.0, np.nan]], 3, r"values must be finite"),
        ([[1, 2]], [[1.0, 2.0]], -1, r"budget must be a non-negative integer"),
    ],
)
def test_validation(costs, values, budget, match):
    with pytest.raises(ValueError, match=match):
        solve_dp(np.array(costs), np.array(values), budget)


@st.composite
def instances(draw, max_n=6, max_k=3, max_cost=12):
    n = draw(st.integers(0, max_n))
    k = draw(st.integers(1, max_k))
    costs = np.array(
        draw(st.lists(st.integers(0, max_cost), min_size=n * k, max_size=n * k)), dtype=np.int64
    ).reshape(n, k)
    values = np.array(
        draw(
            st.lists(
                st.floats(0, 10, allow_nan=False, allow_infinity=False),
                min_size=n * k,
                max_size=n * k,
            )
        )
    ).reshape(n, k)
    budget = draw(st.integers(0, max_cost * max_n))
    return costs, values, budget


@settings(max_examples=150, deadline=None)
@given(instances())
def test_dp_equals_brute_force(instance):
    costs, values, budget = instance
    dp, bf = solve_dp(costs, values, budget), solve_brute_force(costs, values, budget)
    assert (dp is None) == (bf is None)
    if dp is not None:
        assert dp.cost <= budget
        assert dp.value == pytest.approx(bf.value, rel=1e-9, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(instances(max_n=12, max_cost=30))
def test_numba_dp_matches_pure_python_dp_exactly(instance):
    costs, values, budget = instance
    fast, slow = solve_dp(costs, values, budget), solve_dp_python(costs, values, budget)
    assert (fast is None) == (slow is None)
    if fast is not None:
        assert fast.choice.tolist() == slow.choice.tolist()
        assert fast.value == slow.value


@settings(max_examples=150, deadline=None)
@given(instances())
def test_greedy_is_feasible_and_never_beats_dp(instance):
    costs, values, budget = instance
    greedy, dp = solve_greedy(costs, values, budget), solve_dp(costs, values, budget)
    assert (greedy is None) == (dp is None)
    if greedy is not None:
        assert greedy.cost <= budget
        assert greedy.value <= dp.value + 1e-9
        # starts from the cheapest choices, so it is never below the all-cheapest value
        cheapest = costs.min(axis=1, keepdims=True) == costs
        floor = np.where(cheapest, values, -np.inf).max(axis=1).sum()
        assert greedy.value >= floor - 1e-9


def test_more_choices_than_an_int8_can_index():
    # a class of the grouped rendering (lokg.ittc.group) may hold more than 127 options:
    # the DP's choice table widens to int16 and gives the reference's answer
    rng = np.random.default_rng(0)
    costs = rng.integers(1, 40, size=(4, 200))
    values = rng.random((4, 200))
    costs[:, 150], values[:, 150] = 1, 10.0  # option 150: the cheapest and the best
    fast, slow = solve_dp(costs, values, 60), solve_dp_python(costs, values, 60)
    assert fast.choice.tolist() == slow.choice.tolist() == [150] * 4
    assert fast.value == slow.value == 40.0
