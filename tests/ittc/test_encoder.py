"""The encoders (ITTC, naive, truncate): exact text, exact count, never above B."""

from pathlib import Path

import numpy as np
import pytest
import torch
from hydra.utils import instantiate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from lokg.ittc import Encoder, ITTCEncoder, NaiveEncoder, TruncateEncoder
from lokg.ittc.render import GRANULARITIES
from lokg.kg.graph import KnowledgeGraph
from lokg.tokens import count_tokens

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "encoder"


def test_naive_output_below_activation_ratio_has_tcr_exactly_one(fb_kg):
    ctx = ITTCEncoder().encode(fb_kg, range(fb_kg.num_triples), budget=2048)
    naive = NaiveEncoder().encode(fb_kg, range(fb_kg.num_triples), budget=2048)
    assert ctx.solver == "naive"
    assert ctx.text == naive.text
    assert ctx.num_tokens == ctx.naive_tokens == count_tokens(ctx.text)
    assert ctx.tcr == 1.0
    assert ctx.granularity == ("naive",) * fb_kg.num_triples


def test_mckp_activates_above_activation_ratio(fb_kg):
    enc = ITTCEncoder()
    t_naive = enc.encode(fb_kg, range(12), budget=2048).naive_tokens
    budget = int(t_naive / 0.7) - 1  # T_naive > 0.7 B
    ctx = enc.encode(fb_kg, range(12), budget=budget)
    assert ctx.solver == "dp"
    assert ctx.order == enc.encoding_order(fb_kg).order
    assert ctx.num_tokens == count_tokens(ctx.text) <= budget
    assert len(ctx.dropped) == 0
    # the text is the chosen renderings, line by line, in candidate order, without the
    # final newline (the block is sent as is)
    assert len(ctx.triples) == 12
    rendered = [enc.renderer.line(fb_kg, t, ctx.order, g) for t, g in
                zip(ctx.triples, ctx.granularity, strict=True)]  # fmt: skip
    assert ctx.text == "".join(rendered)[:-1] and not ctx.text.endswith("\n")


def test_context_count_is_sum_of_line_costs(fb_kg):
    # with cl100k, the count of the joined text equals the MCKP's summed costs c(t, k)
    enc = ITTCEncoder()
    order = enc.encoding_order(fb_kg).order
    for g in GRANULARITIES:
        lines = enc.renderer.lines(fb_kg, fb_kg.triples_np, order, g)
        assert count_tokens("".join(lines)) == sum(count_tokens(x) for x in lines)


def test_budget_between_compact_and_verbose_mixes_granularities(fb_kg):
    enc = ITTCEncoder(activation_ratio=0.0)  # always run the MCKP
    order = enc.encoding_order(fb_kg).order
    cost = {
        g: count_tokens("".join(enc.renderer.lines(fb_kg, fb_kg.triples_np, order, g)))
        for g in GRANULARITIES
    }
    budget = (cost["compact"] + cost["verbose"]) // 2
    ctx = enc.encode(fb_kg, range(12), budget=budget)
    assert ctx.solver == "dp" and ctx.num_tokens <= budget
    counts = ctx.granularity_counts()
    assert counts["dropped"] == 0
    assert counts["compact"] < 12 and counts["verbose"] < 12


def test_query_boost_buys_the_verbose_form(hand_kg):
    # two born_in triples of equal H(r); only the boosted one can afford verbose
    enc = ITTCEncoder(activation_ratio=0.0)  # always run the MCKP
    cands = [("cat", "born_in", "y_city"), ("bob", "born_in", "x_town")]
    order = enc.encoding_order(hand_kg).order
    ids = [(hand_kg.entities[h], hand_kg.relations[r], hand_kg.entities[t]) for h, r, t in cands]
    c = {
        g: [count_tokens(enc.renderer.line(hand_kg, t, order, g)) for t in ids]
        for g in GRANULARITIES
    }
    budget = c["verbose"][1] + c["compact"][0]
    assert budget < c["verbose"][0] + c["verbose"][1]
    ctx = enc.encode(hand_kg, cands, budget=budget, query_entities=["bob"])
    assert ctx.granularity[1] == "verbose"
    ctx = enc.encode(
        hand_kg, cands, budget=c["verbose"][0] + c["compact"][1], candidate_entities=["cat"]
    )
    assert ctx.granularity[0] == "verbose"


def test_infeasible_drops_lowest_value_triples_first(hand_kg):
    # likes has H = 0, so (ann, likes, bob) has value 0 and is dropped before any born_in
    enc = ITTCEncoder()
    cands = [
        ("ann", "likes", "bob"),
        ("cat", "born_in", "y_city"),
        ("ann", "born_in", "x_town"),
    ]
    order = enc.encoding_order(hand_kg).order
    compact = [
        count_tokens(enc.renderer.line(hand_kg, t, order, "compact"))
        for t in enc.encode(hand_kg, cands, budget=10**4).triples
    ]
    budget = compact[1] + compact[2]  # room for two compact triples only
    ctx = enc.encode(hand_kg, cands, budget=budget, query_entities=["ann"])
    assert ctx.num_tokens <= budget
    assert ctx.dropped.tolist() == [
        [hand_kg.entities["ann"], hand_kg.relations["likes"], hand_kg.entities["bob"]]
    ]
    # among equal values, the lower retrieval score goes first
    tie = [("cat", "born_in", "y_city"), ("bob", "born_in", "x_town")]
    one = min(compact[1], compact[2])
    ctx = enc.encode(hand_kg, tie, budget=one + 1, scores=[0.1, 0.9])
    assert ctx.dropped.tolist() == [
        [hand_kg.entities["cat"], hand_kg.relations["born_in"], hand_kg.entities["y_city"]]
    ]


def test_rank_drop_policy_keeps_the_best_ranked_triples(hand_kg):
    # the same instance as above: the value policy drops the zero-value first candidate,
    # the rank policy keeps it and drops the last-ranked one instead
    enc = ITTCEncoder(drop_policy="rank")
    cands = [
        ("ann", "likes", "bob"),
        ("cat", "born_in", "y_city"),
        ("ann", "born_in", "x_town"),
    ]
    order = enc.encoding_order(hand_kg).order
    compact = [count_tokens(enc.renderer.line(hand_kg, t, order, "compact")) for t in
               enc.encode(hand_kg, cands, budget=10**4).triples]  # fmt: skip
    budget = compact[0] + compact[1]  # room for the first two compact triples only
    ctx = enc.encode(hand_kg, cands, budget=budget, query_entities=["ann"])
    assert ctx.num_tokens <= budget
    assert ctx.dropped.tolist() == [
        [hand_kg.entities["ann"], hand_kg.relations["born_in"], hand_kg.entities["x_town"]]
    ]
    with pytest.raises(ValueError, match="drop_policy 'random' is not one of"):
        ITTCEncoder(drop_policy="random")


def test_budget_below_one_line_drops_everything_and_empty_candidates(hand_kg):
    enc = ITTCEncoder()
    ctx = enc.encode(hand_kg, range(4), budget=1)
    assert ctx.text == "" and ctx.num_tokens == 0 and len(ctx.dropped) == 4
    with pytest.raises(ValueError, match=r"^budget=0; expected a positive whole number of tokens$"):
        enc.encode(hand_kg, range(4), budget=0)
    empty = enc.encode(hand_kg, [], budget=64)
    assert empty.text == "" and empty.solver == "empty" and empty.tcr == 1.0


def test_candidate_forms_are_equivalent_and_deduplicated(hand_kg):
    enc = ITTCEncoder()
    by_id = enc.encode(hand_kg, [0, 1, 2, 3, 1], budget=64)
    by_tensor = enc.encode(hand_kg, torch.as_tensor(hand_kg.triples_np), budget=64)
    by_label = enc.encode(hand_kg, [hand_kg.labeled(i) for i in range(4)], budget=64)
    assert by_id.text == by_tensor.text == by_label.text
    assert len(by_id.triples) == 4


class _SuperAdditive:
    """A tokenizer whose count of a joined text exceeds the sum of its lines' counts."""

    name = "superadditive"

    def count(self, text):
        return len(text.split()) + text.count("\n") ** 2

    def count_many(self, texts):
        return np.array([self.count(t) for t in texts], dtype=np.int64)


def test_repair_keeps_the_budget_with_a_non_additive_tokenizer(fb_kg):
    enc = ITTCEncoder(activation_ratio=0.0)
    enc.tokenizer = _SuperAdditive()
    ctx = enc.encode(fb_kg, range(12), budget=80)
    assert ctx.repaired
    assert ctx.num_tokens == enc.tokenizer.count(ctx.text) <= 80


def test_truncate_keeps_a_prefix_and_naive_does_not_cut(fb_kg):
    naive = NaiveEncoder().encode(fb_kg, range(12), budget=40)
    assert naive.over_budget and naive.tcr == 1.0
    trunc = TruncateEncoder().encode(fb_kg, range(12), budget=40)
    assert trunc.num_tokens <= 40
    assert naive.text.startswith(trunc.text)
    assert len(trunc.triples) + len(trunc.dropped) == 12
    # with scores, the best-scored lines are kept first
    scores = np.arange(12, dtype=float)  # last candidate best
    best = TruncateEncoder().encode(fb_kg, range(12), budget=40, scores=scores)
    assert best.triples[0].tolist() == fb_kg.triples_np[11].tolist()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"order": "spo"}, r"order 'spo' is not one of \['entropy', 'sro'"),
        ({"betas": (0.5, 1.0)}, r"betas must have 3 entries"),
        ({"lambda_boost": 0.0}, r"lambda_boost must be >= 1"),
        ({"activation_ratio": 1.5}, r"activation_ratio must be in \[0, 1\]"),
        ({"dp_max_budget": -5}, r"encoder.dp_max_budget=-5; expected a whole number >= 0"),
        ({"tokenizer_backend": "spm"}, r"backend 'spm' is not one of"),
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ITTCEncoder(**kwargs)


@pytest.mark.parametrize(
    ("candidates", "kwargs", "match"),
    [
        ([("ann", "likes", "zed")], {}, r"labelled candidate .*unknown label 'zed'"),
        ([7], {}, r"candidate triple ids must be in \[0, 4\)"),
        ([0, 1], {"scores": [1.0]}, r"scores has 1 entries, expected one per candidate \(2\)"),
        ([0], {"query_entities": ["nobody"]}, r"query_entities: unknown entity label 'nobody'"),
        ([0], {"budget": 1.5}, r"^budget=1.5; expected a positive whole number of tokens$"),
    ],
)
def test_bad_input(hand_kg, candidates, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ITTCEncoder().encode(hand_kg, candidates, **{"budget": 64, **kwargs})


@pytest.mark.parametrize("name", ["ittc", "naive", "truncate"])
def test_configs_instantiate(name):
    enc = instantiate(OmegaConf.load(CONFIGS / f"{name}.yaml"))
    assert isinstance(enc, Encoder) and enc.name == name
    if name == "ittc":
        assert enc.betas == (0.5, 0.8, 1.0)
        assert enc.lambda_boost == 3.0 and enc.activation_ratio == 0.7
        assert enc.dp_max_budget == 4096 and enc.order == "entropy"


_NAMES = st.sampled_from(["ann", "bob", "Los_Angeles", "x", "Kenneth_Peach", "the_united_kingdom"])
_RELS = st.sampled_from(["born_in", "__people__person__spouse", "likes", "a.b.c_d", "r"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    triples=st.lists(st.tuples(_NAMES, _RELS, _NAMES), min_size=1, max_size=25),
    data=st.data(),
)
def test_property_context_never_exceeds_budget(triples, data):
    kg = KnowledgeGraph.from_labeled_triples(triples)
    n = kg.num_triples
    cands = data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n))
    budget = data.draw(st.integers(1, 300))
    boost = data.draw(st.sets(st.integers(0, kg.num_entities - 1), max_size=3))
    ratio = data.draw(st.sampled_from([0.0, 0.7, 1.0]))
    dp_max = data.draw(st.sampled_from([0, 4096]))  # 0: the greedy path
    for enc in (
        ITTCEncoder(activation_ratio=ratio, dp_max_budget=dp_max),
        TruncateEncoder(),
    ):
        ctx = enc.encode(kg, cands, budget=budget, query_entities=boost)
        assert ctx.num_tokens == count_tokens(ctx.text) <= budget
        assert len(ctx.triples) + len(ctx.dropped) == len({tuple(kg.triples_np[i]) for i in cands})


# ------------------------------------------------------------------ the record of the decision
def _check_units(ctx, candidates):
    """The units agree with the context's own fields: one row per distinct candidate, the
    kept ones in text order with their lines, the dropped ones exactly ``ctx.dropped``."""
    units = ctx.units
    assert np.array_equal(units.triples, candidates)
    kept = units.kept
    assert np.array_equal(units.triples[kept], ctx.triples)  # candidate order is text order
    assert tuple(np.array(units.rendering)[kept]) == ctx.granularity
    assert np.array_equal(units.triples[~kept], ctx.dropped)
    assert "\n".join(np.array(units.lines, dtype=object)[kept]) == ctx.text
    assert all(units.lines[i] == "" and units.cost[i] == 0 for i in np.flatnonzero(~kept))
    for i in np.flatnonzero(kept):  # the cost of a kept unit is its line's, newline included
        assert units.cost[i] == count_tokens(units.lines[i] + "\n")


@pytest.mark.parametrize("budget", [12, 30, 40, 2048])  # drop, MCKP, MCKP, naive template
def test_ittc_context_carries_the_costs_and_values_it_weighed(hand_kg, budget):
    enc = ITTCEncoder(drop_policy="rank")
    ctx = enc.encode(hand_kg, range(4), budget=budget, query_entities=["ann"])
    cand = hand_kg.triples_np[:4]
    _check_units(ctx, cand)
    units = ctx.units
    # c(t, k) are the renderings' token counts; v(t, k) = β_k · α(t) · H(O | R = r), Eq. (9):
    # born_in has tails x_town, x_town, y_city (H = ln 3 - 2/3 ln 2), likes one tail (H = 0)
    _, _, costs = enc.renderings(hand_kg, cand)
    assert np.array_equal(units.costs, costs)
    h_born = np.log(3) - 2 / 3 * np.log(2)
    alpha = np.array([3.0, 1.0, 1.0, 3.0])  # ann is the subject of triples 0 and 3
    h = np.array([h_born, h_born, h_born, 0.0])
    expected = (alpha * h)[:, None] * np.array([0.5, 0.8, 1.0])[None, :]
    assert np.allclose(units.values, expected)
    assert units.boosted.tolist() == [True, False, False, True]
    kept = units.kept
    if ctx.solver == "naive":  # a uniform-template line scores as verbose
        assert set(units.rendering) == {"naive"} and np.allclose(units.value, expected[:, -1])
    else:
        k = [GRANULARITIES.index(g) for g in np.array(units.rendering)[kept]]
        assert np.array_equal(units.cost[kept], costs[kept, k])
        assert np.allclose(units.value[kept], expected[kept, k])
        assert units.value[kept].sum() == pytest.approx(ctx.value)
        assert units.cost.sum() <= budget
    assert units.min_total == int(costs.min(axis=1).sum())
    if budget == 12:
        assert (~kept).any()  # all compact exceed B: the latest ranks went first
        assert kept.tolist() == sorted(kept.tolist(), reverse=True)


@pytest.mark.parametrize("encoder", [NaiveEncoder, TruncateEncoder])
def test_template_encoders_carry_their_line_costs(fb_kg, encoder):
    ctx = encoder().encode(fb_kg, range(12), budget=60)
    _check_units(ctx, fb_kg.triples_np[:12])
    assert ctx.units.costs is None and ctx.units.values is None and ctx.units.boosted is None
    assert np.isnan(ctx.units.value[ctx.units.kept]).all()
    assert ctx.units.cost.sum() == sum(count_tokens(line + "\n") for line in ctx.text.split("\n"))
    assert (encoder is TruncateEncoder) == (not ctx.units.kept.all())


def test_duplicates_are_one_unit_and_the_empty_set_none(hand_kg):
    ctx = ITTCEncoder().encode(hand_kg, [2, 0, 2, 1, 0], budget=2048)
    _check_units(ctx, hand_kg.triples_np[[2, 0, 1]])
    empty = ITTCEncoder().encode(hand_kg, [], budget=64)
    assert len(empty.units) == 0 and empty.units.min_total is None
