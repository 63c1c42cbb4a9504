"""Information value v(t, k) = β_k · α(t) · H(O | R = r) of Eqs. (9)-(10), by hand.

In the hand graph, born_in reaches x_town from 2 subjects and y_city from 1:
H(born_in) = H(2/3, 1/3); likes has a single tail, H(likes) = 0.
"""

import math

import numpy as np
import pytest

from lokg.ittc.value import query_boost, triple_values

H_BORN = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))


def _ids(kg, *labelled):
    return np.array(
        [[kg.entities[h], kg.relations[r], kg.entities[t]] for h, r, t in labelled], dtype=np.int64
    )


def test_values_eq9_without_query_entities(hand_kg):
    t = _ids(hand_kg, ("cat", "born_in", "y_city"), ("ann", "likes", "bob"))
    v = triple_values(hand_kg, t, set())
    np.testing.assert_allclose(v[0], [0.5 * H_BORN, 0.8 * H_BORN, 1.0 * H_BORN])
    np.testing.assert_allclose(v[1], [0.0, 0.0, 0.0])  # H(likes) = 0


def test_boost_eq10_on_subject_or_object(hand_kg):
    t = _ids(
        hand_kg,
        ("cat", "born_in", "y_city"),
        ("ann", "born_in", "x_town"),
        ("bob", "born_in", "x_town"),
    )
    e_query = {hand_kg.entities["y_city"]}  # touches the object of triple 0
    e_cand = {hand_kg.entities["ann"]}  # touches the subject of triple 1
    np.testing.assert_array_equal(query_boost(t, e_query | e_cand, 3.0), [3.0, 3.0, 1.0])
    v = triple_values(hand_kg, t, e_query | e_cand, betas=(0.5, 0.8, 1.0), lambda_boost=3.0)
    np.testing.assert_allclose(v[:, 2], [3 * H_BORN, 3 * H_BORN, H_BORN])
    np.testing.assert_allclose(v[0], [1.5 * H_BORN, 2.4 * H_BORN, 3 * H_BORN])


def test_value_validation(hand_kg):
    t = _ids(hand_kg, ("cat", "born_in", "y_city"))
    with pytest.raises(ValueError, match=r"lambda_boost must be >= 1"):
        triple_values(hand_kg, t, set(), lambda_boost=0.5)
    with pytest.raises(ValueError, match=r"betas must be"):
        triple_values(hand_kg, t, set(), betas=(0.5, -1.0, 1.0))
