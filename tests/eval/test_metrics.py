"""The paper's metrics (§3.2) against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lokg.eval import KGQAMetrics, QuestionScore, aggregate, score_question, set_scores
from lokg.eval.metrics import covers_all_constraints


def test_set_scores_by_hand():
    # Â = {paris, lyon, nice}, A = {paris, marseille}: |Â∩A| = 1
    p, r, f1 = set_scores(["Paris", "Lyon", "Nice"], ["paris", "Marseille"])
    assert (p, r) == pytest.approx((1 / 3, 1 / 2))
    assert f1 == pytest.approx(2 * 1 / (3 + 2))  # Eq. of §3.2(b)


def test_set_scores_use_the_normalised_sets():
    # "The Beatles" and "beatles" are one answer, so Â has 1 element.
    assert set_scores(["The Beatles", "beatles"], ["Beatles"]) == (1.0, 1.0, 1.0)


def test_empty_prediction_scores_zero_and_empty_gold_is_an_error():
    assert set_scores([], ["x"]) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="gold answer set is empty"):
        set_scores(["x"], ["", "the"])


def test_hits1_reads_only_the_first_answer_and_hit_any():
    s = score_question(["Lyon", "Paris"], ["Paris"])
    assert s.hits1 == 0.0 and s.hit == 1.0
    s = score_question(["paris", "Lyon"], ["Paris"])
    assert s.hits1 == 1.0 and s.hit == 1.0
    s = score_question([], ["Paris"])
    assert s.hits1 == 0.0 and s.hit == 0.0


def test_hit_searches_the_raw_output():
    s = score_question(["I think"], ["Paris"], output_text="I think\nit is Paris.")
    assert s.hits1 == 0.0 and s.hit == 1.0


def test_coverage_is_measured_only_with_a_context():
    assert score_question(["x"], ["Paris"]).covered is None
    assert score_question(["x"], ["Paris"], context="(france, capital, paris)").covered is True
    assert score_question(["x"], ["Paris"], context="(france, capital, lyon)").covered is False


def test_answer_recall_is_the_share_of_all_gold_answers_in_the_context():
    ctx = "(ann, children, cal) (ann, children, dee)"
    s = score_question(["cal"], ["Cal", "dee", "eve", "fay"], context=ctx)
    assert s.covered is True and s.answer_recall == pytest.approx(2 / 4)
    # one answer listed twice (after normalisation) counts once; no context: unmeasured
    assert score_question(["x"], ["cal", "Cal", "eve"], context=ctx).answer_recall == 0.5
    assert score_question(["x"], ["cal"]).answer_recall is None
    m = aggregate([score_question(["x"], ["cal", "eve"], context=ctx),
                   score_question(["x"], ["dee"], context=ctx),
                   score_question(["x"], ["dee"])])  # fmt: skip
    assert m["answer_recall"] == pytest.approx((0.5 + 1.0) / 2)
    assert m["coverage"] == pytest.approx(1.0)


# entity ids: A=0, x=1, B=2, y=3, z=4; relation ids do not matter (any r links)
A, X, B, Y, Z = range(5)


def test_all_constraints_needs_a_path_from_every_topic_to_one_answer():
    both_arms = [[A, 0, X], [B, 1, X]]  # A -r0-> x <-r1- B
    assert covers_all_constraints(both_arms, [A, B], [X], max_hops=1) is True
    assert covers_all_constraints(both_arms[:1], [A, B], [X], max_hops=3) is False  # B's arm
    # two answers, each supported by one topic only: no single answer has both
    split = [[A, 0, X], [B, 1, Y]]
    assert covers_all_constraints(split, [A, B], [X, Y], max_hops=3) is False


def test_all_constraints_reads_triples_undirected_and_counts_hops_up_to_l():
    chain = [[A, 0, X], [Y, 1, X], [Y, 2, Z]]  # A - x - y - z: z is 3 edges from A
    assert covers_all_constraints(chain, [A], [Z], max_hops=3) is True
    assert covers_all_constraints(chain, [A], [Z], max_hops=2) is False
    assert covers_all_constraints(chain, [Z], [A], max_hops=3) is True  # either way round


def test_all_constraints_edge_cases_by_hand():
    one = [[A, 0, X]]
    assert covers_all_constraints(one, [A], [Y], max_hops=3) is False  # answer not packed
    assert covers_all_constraints(one, [A], [A], max_hops=1) is True  # the topic is the answer
    assert covers_all_constraints(one, [], [X], max_hops=1) is True  # no topic: answer packed
    assert covers_all_constraints(np.zeros((0, 3)), [A], [X], max_hops=3) is False  # empty
    with pytest.raises(ValueError, match="max_hops must be >= 1"):
        covers_all_constraints(one, [A], [X], max_hops=0)


def test_coverage_all_constraints_is_averaged_where_measured():
    s = [score_question(["x"], ["x"], context="x", covered_all_constraints=v)
         for v in (True, False, None)]  # fmt: skip
    m = aggregate(s)
    assert m["coverage_all_constraints"] == pytest.approx(1 / 2)
    assert m["coverage"] == pytest.approx(1.0)
    assert math.isnan(aggregate(s[2:])["coverage_all_constraints"])


def make(h1, hit, f1, tok, calls, ta, tn, cov, lat, failed=False, p=None, r=None):
    return QuestionScore(h1, hit, f1 if p is None else p, f1 if r is None else r, f1, tok, tok,
                         calls, ta, tn, cov, lat, failed)  # fmt: skip


def test_run_aggregate_by_hand():
    scores = [
        make(1.0, 1.0, 1.0, 100, 1, 90, 100, True, 0.2),
        make(0.0, 1.0, 0.5, 120, 1, 60, 50, True, 0.4),
        make(0.0, 0.0, 0.0, 80, 1, 0, 0, None, None, failed=True),
        make(1.0, 1.0, 0.5, 100, 1, None, None, False, 0.3),
    ]
    m = aggregate(scores)
    assert m["n"] == 4
    assert m["hits@1"] == pytest.approx(0.5)
    assert m["hit"] == pytest.approx(0.75)
    assert m["f1"] == pytest.approx(0.5)
    assert m["tok/q"] == pytest.approx(100.0)
    assert m["calls/q"] == pytest.approx(1.0)
    # TCR: mean of T_after/T_naive over questions with T_naive > 0: (0.9 + 1.2) / 2
    assert m["tcr"] == pytest.approx(1.05)
    # P@1K = F1 × 1000 / T_total, H@1K = H@1 × 1000 / T_total (§3.2 d, e)
    assert m["p@1k"] == pytest.approx(0.5 * 1000 / 100)
    assert m["h@1k"] == pytest.approx(0.5 * 1000 / 100)
    assert m["coverage"] == pytest.approx(2 / 3)
    assert m["retrieval_latency_s"] == pytest.approx(0.3)
    assert m["failed"] == pytest.approx(0.25)


def test_p_at_1k_reproduces_table5_pq2hop_lokg():
    # DeepSeek-chat, PQ-2hop, LOKG: F1 0.710, H@1 0.720, tok/q 101 -> P@1K 7.030, H@1K 7.129
    m = KGQAMetrics()
    m.update(make(0.72, 0.72, 0.71, 101, 1, 101, 101, None, None))
    out = m.compute()
    assert round(out["p@1k"], 3) == 7.030 and round(out["h@1k"], 3) == 7.129


def test_zero_tokens_makes_amortised_metrics_undefined():
    out = aggregate([make(1.0, 1.0, 1.0, 0, 0, None, None, None, None)])
    assert math.isnan(out["p@1k"]) and math.isnan(out["h@1k"]) and math.isnan(out["tcr"])


def test_metric_is_a_torchmetrics_sum_reduction():
    a, b = KGQAMetrics(), KGQAMetrics()
    s1 = make(1.0, 1.0, 1.0, 100, 1, 90, 100, True, 0.2)
    s2 = make(0.0, 0.0, 0.0, 300, 2, 10, 20, False, 0.1)
    a.update(s1)
    b.update(s2)
    a.merge_state(b)  # what a distributed sync does
    assert a.compute() == aggregate([s1, s2])
    assert all(v.dtype == torch.float64 for v in a.metric_state.values())
    a.reset()
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="no question was scored"):
        a.compute()
