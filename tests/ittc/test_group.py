"""The grouped rendering (beyond the paper, issue 28 §4): triples sharing (subject, relation)
written once, ``s | r | o_1; o_2; ...``, one more option of the MCKP of Eq. (11).

The hand instance: Keanu Reeves acted in three films and Sandra Bullock in one of them.

    acted_in tails: The Matrix, Speed, John Wick, Speed
        H(O | R = acted_in) = 1/2 ln 2 + 2 · 1/4 ln 4 = 1.5 ln 2                   (Eq. (4))
    E_q = {Keanu Reeves}: α = 3 for his triples, 1 for Sandra's                    (Eq. (10))
    v(t, k) = β_k · α(t) · H, β = (0.5, 0.8, 1.0)                                 (Eq. (9))
        Keanu's triples: (2.25, 3.6, 4.5) · ln 2 each; Sandra's: (0.75, 1.2, 1.5) · ln 2
"""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from lokg.eval.metrics import score_question
from lokg.ittc import ITTCEncoder
from lokg.ittc.group import Grouping, find_groups, member_frontier, pack
from lokg.ittc.mckp import solve_dp
from lokg.ittc.render import TripleRenderer
from lokg.ittc.value import triple_values
from lokg.kg.graph import KnowledgeGraph
from lokg.paper_settings import departures
from lokg.tokens import count_tokens

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "encoder"

FILMS = [
    ("Keanu_Reeves", "acted_in", "The_Matrix"),
    ("Keanu_Reeves", "acted_in", "Speed"),
    ("Keanu_Reeves", "acted_in", "John_Wick"),
    ("Sandra_Bullock", "acted_in", "Speed"),
    ("Speed", "directed_by", "Jan_de_Bont"),
]
CANDIDATES = FILMS[:4]
LN2 = math.log(2)


@pytest.fixture
def films() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(FILMS, name="films")


def _encode(kg, budget, group_objects=True, **kw):
    enc = ITTCEncoder(activation_ratio=0.0, order="sro", group_objects=group_objects, **kw)
    return enc.encode(kg, CANDIDATES, budget=budget, query_entities=["Keanu_Reeves"])


def _ids(kg, triples):
    return np.array([(kg.entities[s], kg.relations[r], kg.entities[o]) for s, r, o in triples])


# ------------------------------------------------------------------ the line and its cost
def test_the_grouped_line_states_subject_and_relation_once(films):
    r = TripleRenderer()
    keanu, acted = films.entities["Keanu_Reeves"], films.relations["acted_in"]
    objects = [films.entities[o] for o in ("The_Matrix", "Speed", "John_Wick")]
    line = r.grouped_line(films, keanu, acted, objects, "sro", "compact")
    assert line == "Keanu Reeves | acted in | The Matrix; Speed; John Wick\n"
    # the objects take the object's slot of any order σ (σ* is r→o→s on PathQuestion)
    assert r.grouped_line(films, keanu, acted, objects, "ros", "compact") == (
        "acted in | The Matrix; Speed; John Wick | Keanu Reeves\n"
    )
    assert r.grouped_line(films, keanu, acted, objects, "sro", "balanced") == (
        "Keanu Reeves | acted in | The Matrix (acted in); Speed (acted in); John Wick (acted in)\n"
    )
    # one object: the triple's own line
    t = _ids(films, CANDIDATES[:1])[0]
    assert r.grouped_line(films, keanu, acted, objects[:1], "sro", "verbose") == (
        r.line(films, t, "sro", "verbose")
    )


def test_the_grouped_line_costs_its_tokens_counted_like_every_line():
    # cl100k pieces: K|ean|u| Reeves| || acted| in| | (8) + The| Matrix (2) + ; (1) + Speed (1)
    # + ; (1) + John| Wick (2) + \n (1) = 16; one line per triple: 8 + object + \n = 11, 10, 11
    assert count_tokens("Keanu Reeves | acted in |") == 8
    assert count_tokens("Keanu Reeves | acted in | The Matrix; Speed; John Wick\n") == 16
    alone = [f"Keanu Reeves | acted in | {o}\n" for o in ("The Matrix", "Speed", "John Wick")]
    assert [count_tokens(x) for x in alone] == [11, 10, 11]  # 32 tokens for the same facts


def test_find_groups_keeps_rank_order(films):
    triples = _ids(films, [FILMS[3], FILMS[0], FILMS[4], FILMS[2], FILMS[1]])
    assert [g.tolist() for g in find_groups(triples)] == [[1, 3, 4]]  # Keanu's, by rank
    assert find_groups(triples[[0, 1, 2]]) == []  # no (s, r) twice


# ------------------------------------------------------------------ the MCKP class of a group
def _grouping(kg):
    enc = ITTCEncoder(order="sro")
    triples = _ids(kg, CANDIDATES)
    _, _, costs = enc.renderings(kg, triples)
    values = triple_values(kg, triples, {kg.entities["Keanu_Reeves"]})
    return Grouping(kg, triples, enc.renderer, enc.tokenizer, "sro", costs, values)


def test_a_group_is_one_class_worth_its_members_values_at_its_lines_cost(films):
    grouping = _grouping(films)
    assert grouping.costs.tolist() == [[11, 14, 29], [10, 13, 23], [11, 14, 30], [10, 13, 21]]
    keanu, sandra = grouping.classes(np.ones(4, dtype=bool))
    # grouped at k: cost = tokens of the exact line, value = Σ_j v(t_j, k) = 3 · β_k · 4.5 ln 2
    lines, costs = grouping.grouped(keanu.members)
    assert costs.tolist() == [count_tokens(x) for x in lines] == [16, 25, 46]
    assert keanu.members.tolist() == [0, 1, 2] and keanu.grouped.all()
    assert keanu.costs.tolist() == [16, 25, 46]
    assert np.allclose(keanu.values, np.array([6.75, 10.8, 13.5]) * LN2)
    # every one-line-per-member assignment is dominated: all compact costs 11 + 10 + 11 = 32
    # for the 6.75 ln 2 the grouped compact line gives for 16; all verbose costs 82 for 13.5
    assert keanu.granularity.tolist() == [[0, 0, 0], [1, 1, 1], [2, 2, 2]]
    # Sandra shares (s, r) with no candidate: her K renderings, as in the paper
    assert sandra.members.tolist() == [3] and not sandra.grouped.any()
    assert sandra.costs.tolist() == [10, 13, 21]
    assert np.allclose(sandra.values, np.array([0.75, 1.2, 1.5]) * LN2)


def test_member_frontier_by_hand():
    # two triples, (cost, value): t1 (1, 1) (2, 2) (3, 3.5); t2 (1, 1) (2, 1.5) (3, 2)
    # totals: 2 -> 2 (c, c); 3 -> 3 (b, c); 4 -> 4.5 (v, c); 5 -> 5 (v, b); 6 -> 5.5 (v, v)
    front = member_frontier(np.array([[1, 2, 3], [1, 2, 3]]), np.array([[1, 2, 3.5], [1, 1.5, 2]]))
    assert front.costs.tolist() == [2, 3, 4, 5, 6]
    assert front.values.tolist() == [2.0, 3.0, 4.5, 5.0, 5.5]
    assert front.granularity.tolist() == [[0, 0], [1, 0], [2, 0], [2, 1], [2, 2]]


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda m: st.tuples(
            st.lists(st.lists(st.integers(0, 9), min_size=3, max_size=3), min_size=m, max_size=m),
            st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3), min_size=m, max_size=m),
        )
    )
)
def test_member_frontier_equals_enumeration(instance):
    costs, values = (np.array(x) for x in instance)
    front = member_frontier(costs, values)
    rows = np.arange(len(costs))
    # the best value at each total cost or less, over all K^m assignments
    best: dict[int, float] = {}
    for ks in itertools.product(range(3), repeat=len(costs)):
        c = int(costs[rows, list(ks)].sum())
        best[c] = max(best.get(c, -1.0), float(values[rows, list(ks)].sum()))
    for budget in range(int(costs.sum()) + 1):
        reachable = [v for c, v in best.items() if c <= budget]
        on_front = front.values[front.costs <= budget]
        assert (max(reachable) if reachable else None) == (
            on_front.max() if len(on_front) else None
        )
    for c, v, ks in zip(front.costs, front.values, front.granularity, strict=True):
        assert costs[rows, ks].sum() == c and values[rows, ks].sum() == pytest.approx(v)


# ------------------------------------------------------------------ what the encoder does
def test_the_mckp_chooses_the_grouped_line_when_it_is_cheaper_per_value(films):
    # B = 42 = 11 + 10 + 11 + 10: without grouping every triple fits only compact (7.5 ln 2).
    # With grouping the classes are Keanu {16: 6.75, 25: 10.8, 46: 13.5} and Sandra
    # {10: 0.75, 13: 1.2, 21: 1.5} (× ln 2); within 42 tokens: 25 + 13 = 38 -> 12.0 (best),
    # 25 + 10 -> 11.55, 16 + 21 -> 8.25, 16 + 13 -> 7.95, 46 + anything > 42
    off = _encode(films, 42, group_objects=False)
    assert off.granularity == ("compact",) * 4
    assert off.value == pytest.approx(7.5 * LN2)
    on = _encode(films, 42)
    assert on.text == (
        "Keanu Reeves | acted in | The Matrix (acted in); Speed (acted in); John Wick (acted in)\n"
        "Sandra Bullock | acted in | Speed (acted in)"
    )
    assert on.value == pytest.approx(12.0 * LN2)
    assert on.granularity == ("balanced",) * 4 and len(on.dropped) == 0
    assert on.num_tokens == count_tokens(on.text) <= 42
    assert on.report == {"grouped_lines": 1, "grouped_triples": 3}


def test_a_budget_that_fits_one_line_fits_the_whole_group(films):
    # B = 16: one line per triple fits one of Keanu's films (the infeasible case drops the
    # rest); the grouped compact line (16 tokens) states all three, Sandra's (v 0.75 ln 2,
    # the lowest compact value) is dropped first
    off = _encode(films, 16, group_objects=False)
    assert len(off.triples) == 1
    on = _encode(films, 16)
    assert on.text == "Keanu Reeves | acted in | The Matrix; Speed; John Wick"
    assert on.dropped.tolist() == _ids(films, CANDIDATES[3:]).tolist()
    assert on.value == pytest.approx(6.75 * LN2)


def test_the_record_says_which_triples_each_line_states(films):
    ctx = _encode(films, 42)
    units, ids = ctx.units, _ids(films, CANDIDATES)
    assert units.line_index.tolist() == [0, 0, 0, 1]
    assert units.grouped.tolist() == [True, True, True, False]
    assert [t.tolist() for t in ctx.line_triples()] == [ids[:3].tolist(), ids[3:].tolist()]
    assert units.lines[:3] == (ctx.text.split("\n")[0],) * 3
    # the grouped line's 25 tokens on its first unit, so the costs add up to the lines'
    assert units.cost.tolist() == [25, 0, 0, 13]
    assert np.allclose(units.value, np.array([3.6, 3.6, 3.6, 1.2]) * LN2)
    assert units.value.sum() == pytest.approx(ctx.value)
    assert np.array_equal(ctx.triples, ids)  # text order: the group where its first member ranks


def test_coverage_counts_every_object_of_a_grouped_line(films):
    # coverage and answer recall search the injected text (lokg.eval.metrics); every object
    # of a grouped line is in it, and the record lists the same triples as placed
    gold = ["The Matrix", "Speed", "John Wick"]
    on, off = _encode(films, 16), _encode(films, 16, group_objects=False)
    placed = {films.entities.label(int(o)) for t in on.line_triples() for o in t[:, 2]}
    assert placed == {"The_Matrix", "Speed", "John_Wick"}
    assert score_question(["x"], gold, context=on.text).answer_recall == 1.0
    assert score_question(["x"], gold, context=off.text).answer_recall == pytest.approx(1 / 3)


@pytest.mark.parametrize("dp_max_budget", [4096, 0])  # DP and greedy
@pytest.mark.parametrize("drop_policy", ["value", "rank"])
def test_the_budget_is_never_exceeded_across_a_sweep(films, dp_max_budget, drop_policy):
    for budget in range(1, 90):
        ctx = _encode(films, budget, dp_max_budget=dp_max_budget, drop_policy=drop_policy)
        assert ctx.num_tokens == count_tokens(ctx.text) <= budget
        assert len(ctx.triples) + len(ctx.dropped) == 4
        assert ctx.units.cost.sum() <= budget


class _SuperAdditive:
    """A tokenizer whose count of a joined text exceeds the sum of its lines' counts."""

    name = "superadditive"

    def count(self, text):
        return len(text.split()) + text.count("\n") ** 2

    def count_many(self, texts):
        return np.array([self.count(t) for t in texts], dtype=np.int64)


def test_repair_keeps_the_budget_with_a_non_additive_tokenizer(films):
    enc = ITTCEncoder(activation_ratio=0.0, group_objects=True)
    enc.tokenizer = _SuperAdditive()
    repaired = False
    for budget in range(1, 60):  # three lines or more cost more together than apart
        ctx = enc.encode(films, FILMS, budget=budget)
        assert ctx.num_tokens == enc.tokenizer.count(ctx.text) <= budget
        repaired |= ctx.repaired
    assert repaired


# ------------------------------------------------------------------ off, or nothing to group
def test_off_writes_one_line_per_triple(films):
    enc = ITTCEncoder(activation_ratio=0.0, order="sro")
    assert enc.group_objects is False and "group_objects" not in repr(enc)
    for budget in (16, 42, 80):
        ctx = _encode(films, budget, group_objects=False)
        lines = [enc.renderer.line(films, t, "sro", g) for t, g in
                 zip(ctx.triples, ctx.granularity, strict=True)]  # fmt: skip
        assert ctx.text == "".join(lines)[:-1] and ctx.report == {}
        assert ctx.units.line_index.tolist() == [*range(len(ctx.triples)), *[-1] * len(ctx.dropped)]


def _same_context(a, b):
    assert (a.text, a.num_tokens, a.granularity, a.solver, a.order, a.report) == (
        b.text, b.num_tokens, b.granularity, b.solver, b.order, b.report
    )  # fmt: skip
    assert np.array_equal(a.triples, b.triples) and np.array_equal(a.dropped, b.dropped)
    assert a.value == b.value and a.repaired == b.repaired
    for field in ("rendering", "lines"):
        assert getattr(a.units, field) == getattr(b.units, field)
    for field in ("cost", "value", "costs", "values", "boosted", "line_index"):
        assert np.array_equal(getattr(a.units, field), getattr(b.units, field))


_NAMES = st.sampled_from(["ann", "bob", "Los_Angeles", "x", "Kenneth_Peach"])
_RELS = st.sampled_from(["born_in", "likes", "a.b.c_d"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(triples=st.lists(st.tuples(_NAMES, _RELS, _NAMES), min_size=1, max_size=20), data=st.data())
def test_property_nothing_to_group_is_encoded_as_without_grouping(triples, data):
    kg = KnowledgeGraph.from_labeled_triples(triples)
    first: dict[tuple[int, int], int] = {}
    for i, (s, r, _) in enumerate(kg.triples_np.tolist()):
        first.setdefault((s, r), i)
    cands = data.draw(st.permutations(sorted(first.values())))  # no (s, r) twice
    budget = data.draw(st.integers(1, 200))
    kw = {"activation_ratio": data.draw(st.sampled_from([0.0, 0.7])),
          "dp_max_budget": data.draw(st.sampled_from([0, 4096]))}  # fmt: skip
    on = ITTCEncoder(group_objects=True, **kw).encode(kg, cands, budget=budget)
    _same_context(on, ITTCEncoder(**kw).encode(kg, cands, budget=budget))


# ------------------------------------------------------------------ properties with groups
def _brute_force_value(grouping, budget):
    """Eq. (11) with groups, enumerated: each group grouped at some k or each member at its
    own k, every other triple at its own k; the best value within ``budget``."""
    n, k_count = grouping.costs.shape
    classes = [[(int(grouping.costs[i, k]), float(grouping.values[i, k])) for k in range(k_count)]
               for i in range(n) if grouping.group_of[i] < 0]  # fmt: skip
    for members in grouping.groups:
        opts = list(zip(grouping.grouped(members)[1].tolist(),
                        grouping.values[members].sum(axis=0).tolist(), strict=True))  # fmt: skip
        for ks in itertools.product(range(k_count), repeat=len(members)):
            opts.append((int(grouping.costs[members, ks].sum()),
                         float(grouping.values[members, ks].sum())))  # fmt: skip
        classes.append(opts)
    best = None
    for combo in itertools.product(*classes):
        if sum(c for c, _ in combo) <= budget:
            value = sum(v for _, v in combo)
            best = value if best is None else max(best, value)
    return best


def _random_grouping(data, synthetic=False):
    """A small graph, its first (at most 5) distinct triples as candidates, and their
    Grouping; ``synthetic``: the triples' own costs and values drawn at random (the grouped
    lines keep their real costs), so that members written one per line can beat the group."""
    subjects = data.draw(st.lists(_NAMES, min_size=1, max_size=4))
    triples = [(s, data.draw(_RELS), data.draw(_NAMES)) for s in subjects for _ in range(2)]
    kg = KnowledgeGraph.from_labeled_triples(triples)
    cands = kg.unique_triples()[:5]
    enc = ITTCEncoder(order=data.draw(st.sampled_from(["sro", "ros", "osr"])))
    _, _, costs = enc.renderings(kg, cands)
    values = triple_values(kg, cands, {0})
    if synthetic:
        size = costs.size
        costs = np.array(data.draw(st.lists(st.integers(1, 25), min_size=size, max_size=size)))
        values = np.array(data.draw(st.lists(st.integers(0, 9), min_size=size, max_size=size)))
        costs, values = costs.reshape(-1, 3), values.reshape(-1, 3).astype(float)
    return kg, cands, Grouping(kg, cands, enc.renderer, enc.tokenizer, enc.order, costs, values)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_the_classes_solve_eq_11_with_groups_exactly(data):
    # the DP over the classes (frontier + grouped lines, dominated options removed, padded)
    # reaches the optimum of the enumeration of every group-or-members choice
    _, _, grouping = _random_grouping(data, synthetic=data.draw(st.booleans()))
    classes = grouping.classes(np.ones(len(grouping.triples), dtype=bool))
    total_max = int(grouping.costs.max(axis=1).sum()) + 10
    budget = data.draw(st.integers(0, total_max))
    sol, best = solve_dp(*pack(classes), budget), _brute_force_value(grouping, budget)
    assert (sol is None) == (best is None)
    if sol is not None:
        assert sol.value == pytest.approx(best)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_property_grouping_never_lowers_the_optimum_nor_breaks_the_budget(data):
    kg, cands, grouping = _random_grouping(data)
    min_total = int(grouping.costs.min(axis=1).sum())
    budget = data.draw(st.integers(min_total, min_total + 120))  # no triple has to go
    kw = {"activation_ratio": 0.0, "order": grouping.order}
    off = ITTCEncoder(**kw).encode(kg, cands, budget=budget)
    on = ITTCEncoder(group_objects=True, **kw).encode(kg, cands, budget=budget)
    assert on.value >= off.value - 1e-9 and len(on.dropped) == 0
    assert on.num_tokens == count_tokens(on.text) <= budget
    # each line is what the renderer writes for the triples the record says it states
    units, r = on.units, grouping.renderer
    for at, (line, states) in enumerate(zip(on.text.split("\n"), on.line_triples(), strict=True)):
        g = units.rendering[int(np.flatnonzero(units.line_index == at)[0])]
        (s, rel), objects = states[0, :2], states[:, 2]
        assert line + "\n" == r.grouped_line(kg, s, rel, objects, on.order, g)
        if len(states) == 1:
            assert line + "\n" == r.line(kg, states[0], on.order, g)
    # any budget, any solver: never above B
    small = data.draw(st.integers(1, budget))
    for dp_max in (0, 4096):
        ctx = ITTCEncoder(group_objects=True, dp_max_budget=dp_max, **kw).encode(
            kg, cands, budget=small
        )
        assert ctx.num_tokens == count_tokens(ctx.text) <= small


# ------------------------------------------------------------------ configuration
def test_the_flag_is_off_unless_set_and_checked(make_cfg):
    assert instantiate(OmegaConf.load(CONFIGS / "ittc.yaml")).group_objects is False
    assert "group_objects" not in OmegaConf.load(CONFIGS / "ittc.yaml")  # run keys unchanged
    for overrides in (["encoder=ittc_grouped"], ["+encoder.group_objects=true"]):
        cfg = make_cfg("evaluate", overrides)
        grouped = instantiate(cfg.encoder)
        assert grouped.group_objects is True and "group_objects=True" in repr(grouped)
        assert grouped.drop_policy == "rank"  # on top of ours (experiment=lokg's ittc_rank)
        assert "encoder.group_objects: True (paper: False)" in departures(cfg)
    paper = make_cfg("evaluate", ["experiment=paper", "+encoder.group_objects=true"])
    assert instantiate(paper.encoder).drop_policy == "value"
    assert "encoder.group_objects" not in str(
        departures(make_cfg("evaluate", ["experiment=paper"]))
    )
    with pytest.raises(ValueError, match=r"^encoder.group_objects='yes'; expected true or false"):
        ITTCEncoder(group_objects="yes")
    with pytest.raises(ValueError, match=r"lists objects with '; ', which holds the separator"):
        ITTCEncoder(group_objects=True, separator=" ; ")
    assert ITTCEncoder(separator=" ; ").group_objects is False  # off: any separator
