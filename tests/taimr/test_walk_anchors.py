"""Several anchors (lokg/taimr/walk/anchors.py): each anchor's view, its exact support and the
product-of-experts join, by hand on a small family graph."""

import itertools
import math

import numpy as np
import pytest
import torch

from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.walk.anchors import (
    ANCHOR_MARK,
    anchor_arm,
    anchor_support,
    anchor_view,
    graph_support,
    join,
)
from lokg.taimr.walk.graph import walk_graph

TRIPLES = [
    ("ann", "children", "cal"),
    ("ann", "children", "dee"),
    ("ann", "children", "eve"),
    ("bob", "children", "cal"),
    ("bob", "children", "dee"),
    ("bob", "children", "fay"),
    ("cal", "gender", "male"),
    ("dee", "gender", "female"),
    ("fay", "gender", "male"),
]


@pytest.fixture(scope="module")
def kg():
    return KnowledgeGraph.from_labeled_triples(TRIPLES)


def hops(kg, probs: dict, stop: float, L: int = 2):
    """``[L, 2R]`` log-probabilities: ``probs`` maps a step label (``r`` or ``r^-1``) to its
    probability at every hop; every other step relation gets a tiny one."""
    R = kg.num_relations
    logp = np.full((L, 2 * R), math.log(1e-6))
    for label, p in probs.items():
        inverse = label.endswith("^-1")
        r = kg.relations[label.removesuffix("^-1")] + (R if inverse else 0)
        logp[:, r] = math.log(p)
    return logp, np.full(L, math.log(stop))


def test_a_view_marks_the_walked_anchor_only_when_there_are_several():
    text = "what is both Ann Lee 's son and bob 's son ?"
    assert anchor_view(text, "ann_lee", ["ann_lee"]) == text
    assert anchor_view(text, "ann_lee", ["ann_lee", "bob"]) == (
        f"what is both {ANCHOR_MARK} 's son and bob 's son ?"
    )
    assert anchor_view(text, "bob", ["ann_lee", "bob"]).endswith(f"and {ANCHOR_MARK} 's son ?")
    assert anchor_view(text, "carl", ["carl", "bob"]) == text  # not mentioned: unchanged
    assert anchor_view(text, " _ ", [" _ ", "bob"]) == text  # nothing to find: unchanged
    assert anchor_view("the son of bobby and bob ?", "bob", ["x", "bob"]) == (
        f"the son of bobby and {ANCHOR_MARK} ?"
    )  # a whole mention, not a prefix of another word


def test_support_sums_every_path_exactly_as_the_walk_scores_it(kg):
    logp, stop = hops(kg, {"children": 0.5, "gender": 0.5}, stop=0.9)
    ann, cal, dee = (kg.entities[x] for x in ("ann", "cal", "dee"))
    got = anchor_support(kg, ann, [cal, dee], logp, stop, max_hops=2)
    # one path ann -children-> cal: log 0.5 - log deg_children(ann) = log 0.5 - log 3, + stop
    want = math.log(0.5) - math.log(3) + math.log(0.9)
    assert got[cal][0] == pytest.approx(want)
    assert got[cal][1].entities == (ann, cal) and len(got[cal][1].triple_ids) == 1
    assert set(got) == {cal, dee}
    # from a gender value: male -gender^-1-> cal (deg 2 at male), never the 3-step detour
    male = kg.entities["male"]
    logp, stop = hops(kg, {"gender^-1": 0.8, "children": 0.1}, stop=0.9)
    got = anchor_support(kg, male, [cal, dee], logp, stop, max_hops=2)
    assert set(got) == {cal}  # dee is female: male reaches her only through 3 steps
    assert got[cal][0] == pytest.approx(math.log(0.8) - math.log(2) + math.log(0.9))


def test_two_paths_to_one_answer_add_up(kg):
    # bob reaches male twice in 2 hops: bob -children-> cal -gender-> male, and via fay
    logp, stop = hops(kg, {"children": 0.5, "gender": 0.5}, stop=0.9)
    bob, male = kg.entities["bob"], kg.entities["male"]
    got = anchor_support(kg, bob, [male], logp, stop, max_hops=2)
    one = math.log(0.5) - math.log(3) + math.log(0.5) - math.log(1)  # bob -> cal -> male
    assert got[male][0] == pytest.approx(float(np.logaddexp(one, one)))  # via cal and fay


def test_join_ranks_answers_supported_by_every_anchor_first(kg):
    logp, stop = hops(kg, {"children": 0.5}, stop=0.9)
    ann, bob = kg.entities["ann"], kg.entities["bob"]
    kids = [kg.entities[x] for x in ("cal", "dee", "eve", "fay")]
    per = [anchor_support(kg, a, kids, logp, stop, 2) for a in (ann, bob)]
    ranked = join([*per, {}])  # an anchor reaching no candidate is left out
    top = {kg.entities.label(j.entity) for j in ranked[:2]}
    assert top == {"cal", "dee"} and [j.supported_by for j in ranked] == [2, 2, 1, 1]
    assert ranked[0].log_prob == pytest.approx(2 * (math.log(0.5) - math.log(3) + math.log(0.9)))
    assert len(ranked[0].paths) == 2


def test_each_anchor_learns_its_own_arm_of_the_gold_path():
    chain = [("a", "r1", "m"), ("m", "r2", "x")]
    assert anchor_arm(chain, "a", ["x"]) == ("r1", "r2")
    conjunction = [("a", "r0", "m"), ("m", "r2", "x"), ("b", "r1", "x")]
    assert anchor_arm(conjunction, "a", ["x", "y"]) == ("r0", "r2")
    assert anchor_arm(conjunction, "b", ["y", "x"]) == ("r1",)
    constraint = [("a", "r1", "x"), ("x", "gender", "male")]
    assert anchor_arm(constraint, "male", ["x"]) == ("gender^-1",)
    assert anchor_arm(constraint, "zed", ["x"]) is None  # not on the path
    assert anchor_arm(constraint, "a", ["q"]) is None  # the path names no answer


# --------------------------------------------------------------------------- in the walk
def test_training_gives_each_anchor_its_view_and_its_arm(kg):
    from lokg.typing import Question

    from .conftest import KeywordEncoder
    from .test_walk import _module

    m = _module(kg, KeywordEncoder(model_id="test/keywords"))
    q = Question("c", "what is both ann 's son and male 's holder ?", ("cal",), ("ann", "male"),
                 (("ann", "children", "cal"), ("cal", "gender", "male")))  # fmt: skip
    items = m.supervise_all(q)
    assert [s.question.text for s in items] == [
        f"what is both {ANCHOR_MARK} 's son and male 's holder ?",
        f"what is both ann 's son and {ANCHOR_MARK} 's holder ?",
    ]
    assert [s.topic for s in items] == [kg.entities["ann"], kg.entities["male"]]
    R = kg.num_relations
    arms = [[int(s.graph.step_relation[e]) for e in s.paths[0]] for s in items]
    assert arms == [[kg.relations["children"]], [kg.relations["gender"] + R]]
    assert m.supervise(q) is items[0]
    one = Question("o", "who is ann 's son ?", ("cal",), ("ann",), (("ann", "children", "cal"),))
    assert [s.question.text for s in m.supervise_all(one)] == ["who is ann 's son ?"]


def test_validation_joins_the_anchors_under_the_gat_split(kg):
    """The GAT split's validation ranks a question's anchors jointly, from each anchor's
    scored walk graph, as the retriever does: one order for both items."""
    from lokg.models.walk_module import rank_answers
    from lokg.taimr.walk.anchors import rank_jointly_on_graphs
    from lokg.typing import Question

    from .conftest import KeywordEncoder
    from .test_walk import _module

    m = _module(kg, KeywordEncoder(model_id="test/keywords"), graph_context=True,
                normalization="vocabulary")  # fmt: skip
    q = Question("c", "what is both ann 's son and male 's holder ?", ("cal",), ("ann", "male"),
                 (("ann", "children", "cal"), ("cal", "gender", "male")))  # fmt: skip
    items = m.supervise_all(q)
    assert all(s.graph.num_steps > len(s.paths[0]) for s in items)  # whole walk graphs
    with torch.no_grad():
        _, orders = m._batch_loss(items, rank=True)
        step, stop, off_m, off_n = m.score_graphs([s.graph for s in items],
                                                  [s.question.text for s in items])  # fmt: skip
    scored = [
        (s.graph, step[off_m[i] : off_m[i + 1]].double().numpy(),
         stop[off_n[i] : off_n[i + 1]].double().numpy())
        for i, s in enumerate(items)
    ]  # fmt: skip
    candidates = {a for g in scored for a in rank_answers(*g, 2, m.hparams.beam_width)[0]}
    joint = [j.entity for j in rank_jointly_on_graphs(scored, candidates, 2)]
    assert orders == [joint, joint]


def test_validation_ranks_on_the_whole_walk_graph_not_the_sampled_training_one(kg):
    """Training samples ``max_fanout`` steps a node; the retriever walks them all
    (``max_fanout: null``). Validation of a walk that scores graphs (the GAT split) ranks on
    the whole graph, so it counts the answers and the shares retrieval would."""
    from lokg.models.walk_module import rank_answers
    from lokg.typing import Question

    from .conftest import KeywordEncoder
    from .test_walk import _module

    m = _module(kg, KeywordEncoder(model_id="test/keywords"), max_fanout=1,
                graph_context=True, normalization="vocabulary")  # fmt: skip
    q = Question("s", "who is ann 's child ?", ("eve",), ("ann",), (("ann", "children", "eve"),))
    items = m.supervise_all(q)
    whole = walk_graph(kg, kg.entities["ann"], 2, None, True)
    assert items[0].graph.num_steps < whole.num_steps  # one of ann's three children kept
    with torch.no_grad():
        _, orders = m._batch_loss(items, rank=True)
        step, stop, _, _ = m.score_graphs([whole], [q.text])
    expected = rank_answers(whole, step.double().numpy(), stop.double().numpy(), 2, 16)[0]
    assert orders == [expected]
    assert {kg.entities[x] for x in ("cal", "dee", "eve")} <= set(orders[0])


class ScriptedWalkModel:
    """A test double of the walk model: each view of the question gets the hop distribution
    scripted for the anchor it marks (children from ann, gender^-1 from male)."""

    def __init__(self, kg):
        self.kg = kg
        self.net = type(
            "Net",
            (),
            {"normalization": "vocabulary", "graph_context": False, "gat_split": False,
             "steps_only": True},
        )()  # fmt: skip
        self.views: list[str] = []

    def scope_of(self, entity):
        return None  # one vocabulary: the graph's

    def hop_log_probs(self, text, topic=None):
        self.views.append(text)
        step = "gender^-1" if f"{ANCHOR_MARK} 's holder" in text else "children"
        return hops(self.kg, {step: 0.9}, stop=0.9)


class ScriptedSplitWalkModel(ScriptedWalkModel):
    """The same test double under the GAT split: it scores each anchor's walk graph, the
    split uniform (``-log deg_r(u)`` within the graph), so the join must come out as the
    lazy one's."""

    def __init__(self, kg):
        super().__init__(kg)
        self.net = type(
            "Net",
            (),
            {"normalization": "vocabulary", "graph_context": True, "gat_split": True,
             "steps_only": False},
        )()  # fmt: skip

    def log_probs(self, graph, text):
        return uniform_split(graph, *self.hop_log_probs(text))


def uniform_split(graph, logp, stop):
    """``(step_logp [m, L], stop_logp [n, L])`` of the hop distributions on a walk graph, each
    relation's probability split evenly among a node's steps that carry it."""
    key = graph.src * (logp.shape[1] + 1) + graph.step_relation
    _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    step = logp[:, graph.step_relation].T - np.log(counts[inverse])[:, None]
    stop_lp = np.tile(stop, (graph.num_nodes, 1))
    stop_lp[:, 0] = -np.inf
    return step, stop_lp


def test_graph_support_is_the_lazy_support_when_the_split_is_uniform(kg):
    """:func:`graph_support` on a scored walk graph (the GAT split's route) sums the same paths
    with the same scores as :func:`anchor_support` on the KG, when the split is uniform."""
    logp, stop = hops(kg, {"children": 0.5, "gender": 0.3, "children^-1": 0.1}, stop=0.6)
    everyone = list(range(kg.num_entities))
    some = [kg.entities[x] for x in ("cal", "fay")]  # the search keeps only steps toward them
    for anchor, candidates in itertools.product(("ann", "male"), (everyone, some)):
        a = kg.entities[anchor]
        lazy = anchor_support(kg, a, candidates, logp, stop, max_hops=2)
        g = walk_graph(kg, a, 2)
        on_graph = graph_support(g, *uniform_split(g, logp, stop), candidates, max_hops=2)
        assert set(on_graph) == set(lazy) and lazy
        for e, (total, path) in lazy.items():
            assert on_graph[e][0] == pytest.approx(total)
            assert on_graph[e][1].log_prob == pytest.approx(path.log_prob)


def test_the_retriever_joins_on_graphs_under_the_gat_split(kg):
    from lokg.taimr.walk.retriever import WalkRetriever
    from lokg.typing import Question

    from .conftest import KeywordEncoder

    embedder = KeywordEncoder(model_id="test/keywords")
    q = Question("c", "which son of ann is male 's holder ?", ("cal",), ("ann", "male"))
    split = ScriptedSplitWalkModel(kg)
    got = WalkRetriever(kg, embedder, split, max_hops=2, beam_width=16).retrieve(q)
    want = WalkRetriever(kg, embedder, ScriptedWalkModel(kg), max_hops=2, beam_width=16).retrieve(q)
    assert len(split.views) == 2 and all(ANCHOR_MARK in v for v in split.views)
    assert [(a.label, round(a.score, 9)) for a in got.answers] == [
        (a.label, round(a.score, 9)) for a in want.answers
    ]
    assert sorted(p.entities for p in got.paths) == sorted(p.entities for p in want.paths)


def test_the_retriever_ranks_by_the_join_and_sends_every_anchors_path(kg):
    from lokg.taimr.walk.retriever import WalkRetriever
    from lokg.typing import Question

    from .conftest import KeywordEncoder

    embedder = KeywordEncoder(model_id="test/keywords")
    model = ScriptedWalkModel(kg)
    r = WalkRetriever(kg, embedder, model, max_hops=2, beam_width=16)
    q = Question("c", "which son of ann is male 's holder ?", ("cal",), ("ann", "male"))
    res = r.retrieve(q)
    # ann's children {cal, dee, eve}; male's holders {cal, fay}: cal is supported by both
    assert [a.label for a in res.answers][:1] == ["cal"]
    assert len(model.views) == 2 and all(ANCHOR_MARK in v for v in model.views)
    cal_paths = [p for p in res.paths if p.entities[-1] == kg.entities["cal"]]
    assert {p.entities[0] for p in cal_paths} == {kg.entities["ann"], kg.entities["male"]}
    # eve is ann's child, but male reaches her by no path of <= 2 steps: one anchor short,
    # she ranks below bob, whom both reach by unlikely 2-step paths (log eps below them)
    score = {a.label: a.score for a in res.answers}
    assert score["eve"] < score["bob"] - 900 and score["bob"] < score["cal"]
    # the walk before the join: both topics walk with the whole question, logsumexp
    union = WalkRetriever(kg, embedder, ScriptedWalkModel(kg), max_hops=2, beam_width=16,
                          anchors="union").retrieve(q)  # fmt: skip
    assert all(p.entities[0] in {kg.entities["ann"], kg.entities["male"]} for p in union.paths)
    with pytest.raises(ValueError, match="retriever.anchors must be one of"):
        WalkRetriever(kg, embedder, model, anchors="both")


class ChainReadingWalkModel(ScriptedWalkModel):
    """A test double of a walk that reads the constraint's relation as one more hop of the
    chain: every view takes children, gender^-1 or sex alike, and goes on past hop 1."""

    def hop_log_probs(self, text, topic=None):
        self.views.append(text)
        return hops(self.kg, {"children": 0.3, "gender^-1": 0.3, "sex": 0.3}, stop=0.1)


def test_an_anchor_the_join_reaches_ranks_after_every_other_answer():
    """ "which son of ann is male 's holder ?": ann -children-> cal -sex-> male, and male
    -gender^-1-> cal -sex-> male back to itself, so the join supports the constraint's value
    ``male`` from both anchors and ranks it above the answer cal (``scored``, as before);
    ``anchor_answers="last"`` puts every anchor after every other answer, and changes no
    score."""
    from lokg.taimr.walk.retriever import WalkRetriever
    from lokg.typing import Question

    from .conftest import KeywordEncoder

    sexes = [("cal", "sex", "male"), ("fay", "sex", "male"), ("dee", "sex", "female")]
    kg = KnowledgeGraph.from_labeled_triples(TRIPLES + sexes)
    q = Question("c", "which son of ann is male 's holder ?", ("cal",), ("ann", "male"))

    def answers(mode):
        r = WalkRetriever(
            kg, KeywordEncoder(model_id="test/keywords"), ChainReadingWalkModel(kg), max_hops=2,
            beam_width=16, anchor_answers=mode,
        )  # fmt: skip
        return [(a.label, a.score) for a in r.retrieve(q).answers]

    scored, last = answers("scored"), answers("last")
    assert [a for a, _ in scored[:2]] == ["male", "cal"]  # the constraint's value first
    assert [a for a, _ in last[:2]] == ["cal", "bob"]
    assert last[-2:] == sorted((x for x in scored if x[0] in ("ann", "male")), key=lambda x: -x[1])
    assert sorted(last) == sorted(scored)  # the same answers, the same scores
    with pytest.raises(ValueError, match="retriever.anchor_answers must be one of"):
        WalkRetriever(
            kg, KeywordEncoder(model_id="t"), ChainReadingWalkModel(kg), anchor_answers="x"
        )
