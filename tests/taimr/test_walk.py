"""The learned walk (docs/design/taimr.md "Learned walk"): both edge directions, the stopping
walk's probabilities by hand, supervised paths, and the question-aware model learning what
uniform attention cannot: which relation the question asks for."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import pytorch_lightning as pl
import torch
from pytorch_lightning.loggers import Logger
from torch.utils.data import DataLoader

from lokg.kg.graph import KnowledgeGraph
from lokg.models.walk_module import WalkModule, rank_answers
from lokg.nn.grouped import group_logsumexp
from lokg.retrieval import Retriever
from lokg.taimr.walk.graph import walk_graph
from lokg.taimr.walk.net import (
    WalkNet,
    hop_distribution,
    relation_features,
    relation_name,
    vocabulary_log_probs,
    walk_log_probs,
)
from lokg.taimr.walk.retriever import WalkModel, WalkRetriever, length_log_probs
from lokg.taimr.walk.search import answers_of, beam_search, beam_walk
from lokg.taimr.walk.supervision import (
    answer_graph,
    keep_steps,
    relation_degrees,
    supervised_paths,
)
from lokg.typing import Question

from .conftest import DIM, KEYWORDS, KeywordEncoder

# --------------------------------------------------------------------------- walk graphs


def test_walk_graph_has_both_directions(family):
    # alice -spouse-> bob -nationality-> france; alice -children-> carol; bob -children-> carol
    france = family.entities["france"]
    g = walk_graph(family, france, max_hops=2)
    labels = [family.entities.label(int(n)) for n in g.nodes]
    assert labels[0] == "france"
    # from france only the backward step nationality^-1 leads out (to bob) ...
    first = [e for e in range(g.num_steps) if g.src[e] == 0]
    assert len(first) == 1 and g.inverse[first[0]]
    R = family.num_relations
    assert g.step_relation[first[0]] == family.relations["nationality"] + R
    # ... and bob's steps (both ways) are in the 2-hop ball: alice, carol, and back to france
    assert set(labels) == {"france", "bob", "alice", "carol"}
    # forward-only walking from france finds nothing
    assert walk_graph(family, france, 2, both_directions=False).num_steps == 0


def test_supervised_paths_follow_the_gold_relations(family):
    alice = family.entities["alice"]
    g = walk_graph(family, alice, max_hops=2)
    spain = family.entities["spain"]
    # two 2-step paths reach spain: children->nationality and spouse->children is 2 steps to
    # carol, not spain; so the gold relations pick alice -children-> carol -nationality-> spain
    paths = supervised_paths(family, g, [spain], 2, ["children", "nationality"])
    assert len(paths) == 1
    rels = [family.relations.label(int(family.triples_np[g.triple_ids[e], 1])) for e in paths[0]]
    assert rels == ["children", "nationality"]
    # without a gold length: the shortest paths
    carol = family.entities["carol"]
    shortest = supervised_paths(family, g, [carol])
    assert [len(p) for p in shortest] == [1]


def test_supervised_paths_reach_a_head_through_inverse_steps(family):
    # asked from france, the answer alice is reached by nationality^-1 then spouse^-1
    g = walk_graph(family, family.entities["france"], max_hops=2)
    (path,) = supervised_paths(family, g, [family.entities["alice"]])
    assert all(g.inverse[e] for e in path)
    assert [int(g.triple_ids[e]) for e in path] == [2, 0]  # the triples, true direction kept


def _labelled_paths(kg, g, paths):
    """Each path as (triple id, inverse) pairs: comparable across graphs."""
    return sorted(tuple((int(g.triple_ids[e]), bool(g.inverse[e])) for e in p) for p in paths)


def test_answer_graph_finds_the_supervised_paths_of_the_whole_ball():
    """On a random graph, the answer graph (the L-1 ball plus the answers' own steps) gives
    the same supervised paths as the whole L-hop ball, and keep_steps keeps exactly them."""
    rng = np.random.default_rng(0)
    triples = [(f"e{rng.integers(40)}", f"r{rng.integers(5)}", f"e{rng.integers(40)}")
               for _ in range(160)]  # fmt: skip
    kg = KnowledgeGraph.from_labeled_triples(triples)
    checked = 0
    for topic in range(0, kg.num_entities, 3):
        for answer in range(1, kg.num_entities, 7):
            ball = walk_graph(kg, topic, 3)
            small = answer_graph(kg, topic, [answer], 3)
            assert small.num_steps <= ball.num_steps
            for length in (None, 3):
                want = supervised_paths(kg, ball, [answer], length, max_paths=10_000, max_hops=3)
                got = supervised_paths(kg, small, [answer], length, max_paths=10_000, max_hops=3)
                assert _labelled_paths(kg, small, got) == _labelled_paths(kg, ball, want)
                kept, renumbered = keep_steps(small, got)
                assert _labelled_paths(kg, kept, renumbered) == _labelled_paths(kg, small, got)
                assert kept.num_steps == len({e for p in got for e in p})
                checked += bool(got)
    assert checked > 20


def test_relation_degrees_count_the_kg_steps_by_hand(family):
    """deg_r(u) of each step, from the KG: bob has one children step and one nationality
    step forward, one spouse^-1 step backward; carol is the tail of two children triples."""
    g = walk_graph(family, family.entities["bob"], 1)
    deg = relation_degrees(family, g)
    for e in range(g.num_steps):
        label = family.relations.label(int(family.triples_np[g.triple_ids[e], 1]))
        assert deg[e] == 1, label  # bob has one step of each of his relations
    carol = walk_graph(family, family.entities["carol"], 1)
    children_back = family.relations["children"] + family.num_relations
    deg = relation_degrees(family, carol)
    pairs = zip(deg, carol.step_relation, strict=True)
    assert [int(d) for d, r in pairs if r == children_back] == [2, 2]


# --------------------------------------------------------------------------- probabilities


def test_group_logsumexp_by_hand():
    v = torch.tensor([0.0, math.log(3.0), 1.0])
    out = group_logsumexp(v, torch.tensor([0, 0, 2]), 3)
    assert out[0].item() == pytest.approx(math.log(4.0))
    assert out[1].item() == float("-inf")
    assert out[2].item() == pytest.approx(1.0)


def test_walk_log_probs_by_hand():
    # node 0 has two steps (logits 0 and log 3); node 1 has one step (logit 0) and stop logit 0
    src = torch.tensor([0, 0, 1])
    step = torch.tensor([[0.0, 5.0], [math.log(3.0), 5.0], [0.0, 0.0]])
    stop = torch.tensor([[9.0, 0.0], [9.0, 0.0], [9.0, 0.0]])
    step_lp, stop_lp = walk_log_probs(step, stop, src, 3)
    # hop 0: no stop option: 1/4 and 3/4
    assert step_lp[:, 0].exp()[:2].tolist() == pytest.approx([0.25, 0.75])
    assert stop_lp[:, 0].tolist() == [float("-inf")] * 3
    # hop 1 at node 1: its step and its stop share the mass (1/2 each) ...
    assert step_lp[2, 1].exp().item() == pytest.approx(0.5)
    assert stop_lp[1, 1].exp().item() == pytest.approx(0.5)
    # ... node 0: two equal steps (logit 5) and a stop (logit 0)
    z = 2 * math.exp(5.0) + 1.0
    assert step_lp[0, 1].exp().item() == pytest.approx(math.exp(5.0) / z)
    assert stop_lp[0, 1].exp().item() == pytest.approx(1.0 / z)
    # node 2 has no step: it stops for sure
    assert stop_lp[2, 1].item() == pytest.approx(0.0)


def test_vocabulary_log_probs_by_hand():
    """normalization="vocabulary": each hop's mass is spread over the whole relation
    vocabulary and stop (hop_distribution), then a relation's share over the node's steps
    with it (vocabulary_log_probs)."""
    # node 0 (topic): r0 -> 1, r0 -> 2, r1 -> 3; node 1: r2 -> 4; nodes 2, 3, 4 have no step
    src = torch.tensor([0, 0, 0, 1])
    rel = torch.tensor([0, 0, 1, 2])
    # one question, vocabulary {r0, r1, r2}: hop 0 logits (log 2, 0, 0); hop 1 (0, 0, log 2)
    all_logits = torch.tensor([[[math.log(2.0), 0.0, 0.0], [0.0, 0.0, math.log(2.0)]]])
    all_stop = torch.tensor([[7.0, 0.0]])  # the hop-0 stop logit is never used
    hop_logp, hop_stop = hop_distribution(all_logits, all_stop)
    # hop 0: Z = 2 + 1 + 1 = 4; hop 1: Z = 1 + 1 + 2 + 1 (stop) = 5
    assert hop_logp[0].exp().tolist() == [pytest.approx([0.5, 0.25, 0.25]),
                                          pytest.approx([0.2, 0.2, 0.4])]  # fmt: skip
    assert hop_stop[0, 0].item() == float("-inf")
    assert hop_stop[0, 1].exp().item() == pytest.approx(0.2)
    owner_m, owner_n = torch.zeros(4, dtype=torch.long), torch.zeros(5, dtype=torch.long)
    step_lp, stop_lp = vocabulary_log_probs(hop_logp, hop_stop, src, rel, owner_m, owner_n)
    # r0 (2/4) is shared by node 0's two r0 steps; r1 gets 1/4
    assert step_lp[:3, 0].exp().tolist() == pytest.approx([0.25, 0.25, 0.25])
    assert stop_lp[:, 0].tolist() == [float("-inf")] * 5
    # node 1's r2 step 2/5, stopping 1/5 anywhere
    assert step_lp[3, 1].exp().item() == pytest.approx(0.4)
    assert stop_lp[:, 1].exp().tolist() == pytest.approx([0.2] * 5)
    # a dead end keeps its 1/5: it does not stop for sure as under walk_log_probs, so
    # P(stop at 3 after r1) = 1/4 * 1/5 < P(1 --r2--> 4) = 1/4 * 2/5
    step = all_logits[0][:, rel].T  # each step's logit is its relation's
    _, node_stop = walk_log_probs(step, all_stop.expand(5, 2), src, 5)
    assert node_stop[3, 1].exp().item() == pytest.approx(1.0)


def _vocabulary_net(graph_context: bool):
    """A vocabulary-normalised WalkNet and a 4-node graph: node 0 has every relation (0, 1, 2)
    once, node 1 only relation 0, twice.  Returns ``(net, rel_feats, edge_index, rel)``."""
    torch.manual_seed(0)
    net = WalkNet(4, 5, 6, hidden=8, heads=2, max_hops=2, graph_context=graph_context,
                  normalization="vocabulary").eval()  # fmt: skip
    edge_index = torch.tensor([[0, 0, 0, 1, 1], [1, 2, 3, 2, 3]])
    return net, torch.randn(3, 5), edge_index, torch.tensor([0, 1, 2, 0, 0])


def test_vocabulary_normalization_matches_the_networks_logits():
    """WalkNet.log_probs(normalization="vocabulary") is vocabulary_log_probs on its
    own step logits: a node's probabilities of its relations and stop sum to at most 1, and to
    exactly 1 on a node that has every relation of the vocabulary."""
    net, rel_feats, edge_index, rel = _vocabulary_net(graph_context=False)
    x, q = torch.zeros(4, 0), torch.randn(1, 6)
    step_lp, stop_lp = net.log_probs(x, edge_index, rel, rel_feats, q)
    total_0 = step_lp[:3, 1].exp().sum() + stop_lp[0, 1].exp()
    assert total_0.item() == pytest.approx(1.0, abs=1e-6)
    total_1 = step_lp[3:, 1].exp().sum() + stop_lp[1, 1].exp()
    assert total_1.item() < 1.0
    # node 1's two r0 steps share r0's probability, which node 0's single r0 step has whole
    assert step_lp[3, 1].exp().item() == pytest.approx(step_lp[0, 1].exp().item() / 2)


def test_gat_split_starts_uniform_and_hands_out_each_relation_whole():
    """graph_context=True under vocabulary normalisation (the GAT split): the relation and stop
    probabilities are the question's alone; node states only share a relation's probability
    among a node's steps that carry it.  W_p^(t) starts at zero: the uniform 1/deg_r(u)."""
    net, rel_feats, edge_index, rel = _vocabulary_net(graph_context=True)
    x, q = torch.randn(4, 4), torch.randn(1, 6)
    hop_lp, hop_stop = net.hop_log_probs(rel_feats, q)  # [1, L, 3], [1, L]
    step_lp, stop_lp = net.log_probs(x, edge_index, rel, rel_feats, q)
    uniform = hop_lp[0, :, rel].T - torch.tensor([1, 1, 1, 2, 2.0]).log().unsqueeze(1)
    assert torch.allclose(step_lp, uniform, atol=1e-6)
    assert torch.allclose(stop_lp, hop_stop.expand(4, 2))
    torch.nn.init.normal_(net.split_query.weight)  # a trained split
    step_lp, stop_lp = net.log_probs(x, edge_index, rel, rel_feats, q)
    p = step_lp.exp()
    assert p[3, 1].item() != pytest.approx(p[4, 1].item(), abs=1e-4)  # node 1 now prefers one
    # ... but hands out r0's probability whole, as node 0's single r0 step has it
    assert (p[3] + p[4]).tolist() == pytest.approx(p[0].tolist(), abs=1e-6)
    assert torch.allclose(step_lp[:3], uniform[:3], atol=1e-6)  # one step per relation: all
    assert torch.allclose(stop_lp, hop_stop.expand(4, 2))  # stopping is untouched
    assert (p[:3, 1].sum() + stop_lp[0, 1].exp()).item() == pytest.approx(1.0, abs=1e-6)


def _children_by_country(n: int) -> tuple[KnowledgeGraph, list[Question]]:
    """p_i -children-> c_i france and p_i -children-> d_i spain (the country in the child's
    name: its node feature); asked for the child of one country.  The relation is the same:
    only node states can tell the two children apart."""
    triples, questions = [], []
    for i in range(n):
        kids = {"france": f"c{i}_france", "spain": f"d{i}_spain"}
        triples += [(f"p{i}", "children", kid) for kid in kids.values()]
        for country, kid in kids.items():
            questions.append(
                Question(f"q{i}{country}", f"which son of p{i} is {country} ?", (kid,),
                         (f"p{i}",), ((f"p{i}", "children", kid),))
            )  # fmt: skip
    return KnowledgeGraph.from_labeled_triples(triples), questions


@pytest.mark.slow
def test_gat_split_tells_apart_what_the_uniform_split_cannot():
    """Two children by one relation: the uniform split ties them (half the held-out
    questions at best), the GAT split learns from their node states which the question asks
    for."""
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _children_by_country(12)
    train, held_out = questions[:16], questions[16:]
    uniform = _module(kg, embedder, graph_context=False, normalization="vocabulary")
    _fit(uniform, train)
    assert _hits(uniform, held_out) <= 0.5 + 1e-9
    split = _module(kg, embedder, graph_context=True, normalization="vocabulary")
    _fit(split, train)
    assert _hits(split, held_out) == 1.0


@pytest.mark.parametrize("beam", [2, 16])
def test_beam_walk_equals_beam_search_on_the_whole_ball(beam):
    """beam_walk (builds only the expanded steps) keeps the same paths with the same
    log-probabilities, in the same order, as walk_graph + vocabulary_log_probs + beam_search,
    for a random hop distribution; a narrow beam builds fewer steps than the ball."""
    # t -r-> h0..h5; each h_i -s-> x_i0..x_i5 and -u-> y_i: a beam of 2 leaves most unbuilt
    kg = KnowledgeGraph.from_labeled_triples(
        [("t", "r", f"h{i}") for i in range(6)]
        + [(f"h{i}", "s", f"x{i}{j}") for i in range(6) for j in range(6)]
        + [(f"h{i}", "u", f"y{i}") for i in range(6)]
    )
    rng = np.random.default_rng(0)
    L, width = 3, 2 * kg.num_relations
    hop_logp, hop_stop = hop_distribution(
        torch.from_numpy(rng.normal(size=(1, L, width))), torch.from_numpy(rng.normal(size=(1, L)))
    )
    topic = kg.entities["t"]
    ball = walk_graph(kg, topic, L)
    src, rel = torch.from_numpy(ball.src), torch.from_numpy(ball.step_relation)
    zeros_m, zeros_n = torch.zeros_like(src), torch.zeros(ball.num_nodes, dtype=torch.long)
    step_lp, stop_lp = vocabulary_log_probs(hop_logp, hop_stop, src, rel, zeros_m, zeros_n)
    want = beam_search(ball, step_lp.numpy(), stop_lp.numpy(), L, beam)
    g, got = beam_walk(kg, topic, hop_logp[0].numpy(), hop_stop[0].numpy(), L, beam)

    def labelled(graph, walks):
        return [(tuple(int(graph.triple_ids[e]) for e in w.steps),
                 tuple(bool(graph.inverse[e]) for e in w.steps)) for w in walks]  # fmt: skip

    assert labelled(g, got) == labelled(ball, want)
    assert [w.log_prob for w in got] == pytest.approx([w.log_prob for w in want])
    assert answers_of(g, got).keys() == answers_of(ball, want).keys()
    if beam == 2:
        assert g.num_steps < ball.num_steps


def test_beam_search_scores_a_stopping_walk(family):
    """log P(p) = sum of step log-probs + log P(stop) at its end (none at L)."""
    g = walk_graph(family, family.entities["alice"], max_hops=2, both_directions=False)
    m, n = g.num_steps, g.num_nodes
    step_lp = np.full((m, 2), math.log(0.5))
    stop_lp = np.full((n, 2), math.log(0.25))
    walks = beam_search(g, step_lp, stop_lp, max_hops=2, beam_width=8)
    by_len = {len(w.steps): w.log_prob for w in walks}
    assert by_len[1] == pytest.approx(math.log(0.5) + math.log(0.25))
    assert by_len[2] == pytest.approx(2 * math.log(0.5))  # forced stop at L: no stop factor
    assert [w.log_prob for w in walks] == sorted((w.log_prob for w in walks), reverse=True)


def test_relation_features_inverse_is_minus_transe():
    e = torch.arange(6, dtype=torch.float32).view(2, 3)
    names = torch.ones(2, 4)
    f = relation_features(e, names, 2, 3)
    assert f.shape == (4, 3 + 4 + 1)
    assert torch.equal(f[2, :3], -e[0]) and torch.equal(f[3, :3], -e[1])
    assert f[:2, -1].tolist() == [0.0, 0.0] and f[2:, -1].tolist() == [1.0, 1.0]
    assert torch.equal(f[0, 3:7], names[0]) and torch.equal(f[2, 3:7], names[0])
    assert relation_name("__people__person__nationality") == "people person nationality"


# --------------------------------------------------------------------------- learning


def _people(n: int) -> tuple[KnowledgeGraph, list[Question]]:
    """p_i -spouse-> s_i -nationality-> france|spain; p_i -children-> c_i -nationality-> the
    other country. Which country answers depends only on the relation the question names."""
    triples, questions = [], []
    for i in range(n):
        a, b = ("france", "spain") if i % 2 else ("spain", "france")
        triples += [
            (f"p{i}", "spouse", f"s{i}"),
            (f"p{i}", "children", f"c{i}"),
            (f"s{i}", "nationality", a),
            (f"c{i}", "nationality", b),
        ]
        questions += [
            Question(f"q{i}s", f"nationality of p{i} 's spouse ?", (a,), (f"p{i}",),
                     ((f"p{i}", "spouse", f"s{i}"), (f"s{i}", "nationality", a))),
            Question(f"q{i}c", f"nationality of p{i} 's son ?", (b,), (f"p{i}",),
                     ((f"p{i}", "children", f"c{i}"), (f"c{i}", "nationality", b))),
        ]  # fmt: skip
    return KnowledgeGraph.from_labeled_triples(triples), questions


def _module(
    kg: KnowledgeGraph, embedder: KeywordEncoder, max_fanout: int | None = None, **kw
) -> WalkModule:
    torch.manual_seed(0)
    m = WalkModule(
        kg.num_relations, node_dim=DIM, name_dim=DIM, transe_dim=4, hidden=16, heads=2,
        dropout=0.0, max_hops=2, beam_width=16, max_fanout=max_fanout, **kw,
    )  # fmt: skip
    names = [kg.entity_name(e) for e in range(kg.num_entities)]
    feats = torch.from_numpy(embedder.encode(names))
    rel_names = torch.from_numpy(
        embedder.encode([relation_name(kg.relations.label(r)) for r in range(kg.num_relations)])
    )
    transe = torch.randn(kg.num_relations, 4)

    def query_encoder(texts):
        return torch.from_numpy(embedder.encode(texts, kind="query"))

    def token_encoder(texts):
        return [torch.from_numpy(t) for t in embedder.encode_tokens(texts, kind="query")]

    tokens = token_encoder if isinstance(embedder, OrderedKeywordEncoder) else None
    m.set_graph(kg, feats, transe, rel_names, query_encoder, tokens)
    return m


def _fit(m: WalkModule, questions: list[Question], steps: int = 60) -> None:
    opt = torch.optim.Adam([p for p in m.parameters() if p.requires_grad], lr=0.02)
    items = [m.supervise(q) for q in questions]
    m.train()
    for _ in range(steps):
        opt.zero_grad()
        loss, _ = m._batch_loss(items)
        loss.backward()
        opt.step()
    m.eval()


def _hits(m: WalkModule, questions: list[Question]) -> float:
    """Share of ``questions`` whose best answer, ranked as validation ranks it, is gold."""
    items = [m.supervise(q) for q in questions]
    with torch.no_grad():
        _, orders = m._batch_loss(items, rank=True)
    hits = sum(order[0] in s.answers for s, order in zip(items, orders, strict=True))
    return hits / len(questions)


@pytest.mark.slow
def test_question_aware_walk_beats_uniform_attention():
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _people(12)
    train, held_out = questions[:16], questions[16:]
    m = _module(kg, embedder)
    _fit(m, train)
    assert _hits(m, held_out) == 1.0
    # uniform attention cannot tell spouse from son: both 2-step answers tie at 1/4 each
    g = walk_graph(kg, kg.entities["p8"], 2, both_directions=False)
    uniform = np.log(1.0 / 2.0)
    _, scores, _ = rank_answers(g, np.full((g.num_steps, 2), uniform),
                                    np.full((g.num_nodes, 2), -np.inf), 2, 16)  # fmt: skip
    countries = {kg.entities["france"], kg.entities["spain"]}
    assert len({scores[c] for c in countries}) == 1


def _dead_ends(n: int) -> tuple[KnowledgeGraph, list[Question]]:
    """p_i -lives_in-> city_i (a dead end: no mayor) and p_i -lives_in-> town_i -mayor-> m_i;
    asked "mayor of p_i 's lives_in ?".  A walk that stops at city_i after one hop reaches a
    wrong answer without ever choosing a wrong relation."""
    triples, questions = [], []
    for i in range(n):
        triples += [(f"p{i}", "lives_in", f"city{i}"), (f"p{i}", "lives_in", f"town{i}"),
                    (f"town{i}", "mayor", f"m{i}")]  # fmt: skip
        gold = ((f"p{i}", "lives_in", f"town{i}"), (f"town{i}", "mayor", f"m{i}"))
        questions.append(
            Question(f"q{i}", f"mayor of p{i} 's lives_in ?", (f"m{i}",), (f"p{i}",), gold)
        )
    return KnowledgeGraph.from_labeled_triples(triples), questions


@pytest.mark.slow
def test_vocabulary_normalised_walk_does_not_stop_at_a_dead_end():
    """The default walk (no node states, each hop normalised over the relation vocabulary):
    stopping after one hop costs P(stop | hop 1) wherever the walk is, so the dead end
    city_i ranks below the mayor on held-out people."""
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _dead_ends(12)
    m = _module(kg, embedder, graph_context=False, normalization="vocabulary")
    _fit(m, questions[:8])
    assert _hits(m, questions[8:]) == 1.0
    g = walk_graph(kg, kg.entities["p8"], 2)
    with torch.no_grad():
        step_lp, stop_lp, _, _ = m.score_graphs([g], [questions[8].text])
    _, scores, _ = rank_answers(g, step_lp.double().numpy(), stop_lp.double().numpy(), 2, 16)
    city, mayor = kg.entities["city8"], kg.entities["m8"]
    assert scores.get(city, -np.inf) < scores[mayor]


@pytest.mark.slow
def test_without_the_question_the_walk_cannot_choose():
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _people(12)
    m = _module(kg, embedder, question_in_attention=False)
    _fit(m, questions[:16])
    assert _hits(m, questions[16:]) <= 0.5 + 1e-9  # the same walk for both questions


def test_gradient_reaches_w_r_e_r_and_the_question_projection():
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _people(2)
    m = _module(kg, embedder, relation_source="learned")
    loss, _ = m._batch_loss([m.supervise(q) for q in questions])
    loss.backward()
    for name, p in [
        ("W_r (hop attention)", m.net.lin_rel.weight),
        ("W_r (GAT layer 1)", m.net.gat.conv1.lin_rel.weight),
        ("W_q^(t)", m.net.hop_query.weight),
        ("W_q (GAT layer 1)", m.net.gat.conv1.lin_query.weight),
        ("e_r (learned table)", m.relation_table.weight),
    ]:
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_fixed_relation_source_keeps_transe_frozen():
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _people(2)
    m = _module(kg, embedder)  # relation_source="fixed"
    before = m.relation_table.weight.clone()
    _fit(m, questions, steps=3)
    assert torch.equal(before, m.relation_table.weight)


def test_no_supervised_path_stops_training_with_one_line():
    from lokg.errors import InputError

    embedder = KeywordEncoder(model_id="test/keywords")
    kg, _ = _people(2)
    m = _module(kg, embedder)
    nowhere = [Question("x", "nationality of p0 ?", ("mars",), ("p0",))]
    with pytest.raises(InputError, match="no train question has a path"):
        m.check_supervision(nowhere)


# --------------------------------------------------------------------------- retrieval


def _retriever(m: WalkModule, kg, embedder, **kw) -> WalkRetriever:
    model = WalkModel(m.net, kg, embedder, m.relation_table.weight.detach().numpy(), 4, True)
    return WalkRetriever(kg, embedder, model, max_hops=2, beam_width=16, **kw)


@pytest.mark.slow
def test_retriever_answers_from_the_tail_end():
    """A question whose topic is the tail of its triples gets its answer by inverse steps,
    and the triples keep their true direction."""
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _people(12)
    # ask from the answer end: "whose spouse has nationality france?" topic france
    m = _module(kg, embedder)
    _fit(m, questions[:16])
    r = _retriever(m, kg, embedder)
    assert isinstance(r, Retriever)
    res = r.retrieve(Question("t", "spouse of nationality france ?", ("p1",), ("france",)))
    assert res.paths, "walking backwards from a tail must find paths"
    labels = {a.label for a in res.answers}
    assert "p1" in labels
    for p in res.paths:
        for i, tid in enumerate(p.triple_ids):
            u, v = p.entities[i], p.entities[i + 1]
            h, _, t = kg.triples_np[tid]
            assert {u, v} == {int(h), int(t)}


class HopModelDouble:
    """Test double of a vocabulary-normalised :class:`WalkModel`: fixed hop distributions
    ``[L, 2R]`` and stop probabilities ``[L]``, whatever the question."""

    class net:  # what WalkRetriever reads of a WalkNet
        steps_only, gat_split = True, False

    def __init__(self, hop: np.ndarray, stop: np.ndarray):
        self.hop, self.stop = np.log(hop), np.log(stop)

    def hop_log_probs(self, question: str, topic: int | None = None):
        return self.hop, self.stop

    def scope_of(self, entity: int) -> None:
        return None


def test_by_length_ranks_the_answers_of_the_walks_believed_length_first():
    """ann -born_in-> oslo, ann -parents-> bob -born_in-> rome.  Hop 0: P(born_in) = 0.5,
    P(parents) = 0.4; hop 1: P(stop) = 0.3, P(born_in) = 0.2.  Paths: oslo 0.5 * 0.3 = 0.15,
    bob 0.4 * 0.3 = 0.12, rome 0.4 * 0.2 = 0.08 (stop forced at L = 2).  The walk believes
    P(|p| = 1) = 0.3 < P(|p| = 2) = 0.7: ``by_length`` ranks rome first, the others after in
    their order."""
    kg = KnowledgeGraph.from_labeled_triples(
        [("ann", "born_in", "oslo"), ("ann", "parents", "bob"), ("bob", "born_in", "rome")]
    )
    born, parents = kg.relations.get("born_in"), kg.relations.get("parents")
    hop = np.full((2, 4), 0.05)
    hop[0, [born, parents]] = 0.5, 0.4
    hop[1, [born, parents]] = 0.2, 0.2
    hop[1, [born + 2, parents + 2]] = 0.15
    model = HopModelDouble(hop, np.array([1.0, 0.3]))
    embedder = KeywordEncoder(model_id="test/keywords")
    q = Question("q", "where was ann 's parent born ?", (), ("ann",))
    plain = WalkRetriever(kg, embedder, model, max_hops=2)
    ranked = [(a.label, round(math.exp(a.score), 6)) for a in plain.retrieve(q).answers]
    assert ranked == [("oslo", 0.15), ("bob", 0.12), ("rome", 0.08)]
    at = plain.answers_at_length(q)  # whatever by_length says
    assert at.length == 2 and list(at.log_mass) == [kg.entities.get("rome")]
    assert math.exp(at.log_mass[kg.entities.get("rome")]) == pytest.approx(0.08)
    by_length = WalkRetriever(kg, embedder, model, max_hops=2, by_length=True)
    res = by_length.retrieve(q)
    assert [a.label for a in res.answers] == ["rome", "oslo", "bob"]
    assert [kg.entities.label(e) for e in res.answers[0].path.entities] == ["ann", "bob", "rome"]


def test_an_answers_mass_at_the_believed_length_sums_its_paths_of_that_length():
    """As above, with a second two-hop path to rome (lived_in, 0.1 at hop 1): rome's
    P(a, |p| = 2 | q) = 0.4 * 0.2 + 0.4 * 0.1 = 0.12, its best path of two hops born_in."""
    kg = KnowledgeGraph.from_labeled_triples(
        [("ann", "born_in", "oslo"), ("ann", "parents", "bob"), ("bob", "born_in", "rome"),
         ("bob", "lived_in", "rome")]
    )  # fmt: skip
    born, parents, lived = (kg.relations.get(r) for r in ("born_in", "parents", "lived_in"))
    hop = np.full((2, 6), 0.05)
    hop[0, [born, parents]] = 0.5, 0.4
    hop[1, [born, lived]] = 0.2, 0.1
    model = HopModelDouble(hop, np.array([1.0, 0.3]))
    r = WalkRetriever(kg, KeywordEncoder(model_id="test/keywords"), model, max_hops=2)
    at = r.answers_at_length(Question("q", "where was ann 's parent born ?", (), ("ann",)))
    rome = kg.entities.get("rome")
    assert at.length == 2 and math.exp(at.log_mass[rome]) == pytest.approx(0.12)
    assert at.paths[rome].relations == (parents, born)
    assert math.exp(at.paths[rome].s_topo) == pytest.approx(0.08)


def test_the_walks_length_belief_is_read_off_its_stop_distribution():
    """P_1(stop) = 0.1, P_2(stop) = 0.5, forced at L: P(|p| = 1) = 0.1,
    P(|p| = 2) = 0.9 * 0.5 = 0.45, P(|p| = 3) = 0.9 * 0.5 = 0.45; with L = 2, 0.1 and 0.9."""
    stop = np.log([0.7, 0.1, 0.5])  # entry 0 unused
    assert np.exp(length_log_probs(stop, 3)) == pytest.approx([0.1, 0.45, 0.45])
    assert np.exp(length_log_probs(stop, 2)) == pytest.approx([0.1, 0.9])


class NodeModelDouble(HopModelDouble):
    """Test double of a node-normalised :class:`WalkModel` (its stop is a node's): every
    step of hop ``t`` scores ``hop[t, step relation]``, every node's stop ``stop[t]``."""

    class net:  # what WalkRetriever reads of a WalkNet
        steps_only, gat_split = False, False

    def log_probs(self, graph, question: str) -> tuple[np.ndarray, np.ndarray]:
        return self.hop[:, graph.step_relation].T, np.tile(self.stop, (graph.num_nodes, 1))


def test_under_node_normalisation_the_believed_length_holds_most_of_the_beams_mass():
    """The graph of the test above, P_1(stop) = 0.1, P(born_in) = 0.5 at hop 1: oslo
    0.5 * 0.1 = 0.05, bob 0.4 * 0.1 = 0.04, rome 0.4 * 0.5 = 0.2 (stop forced at L = 2).
    One hop holds 0.09 of the beam's mass, two hops 0.2: rome; with P_1(stop) = 0.9, one
    hop holds 0.81 against 0.4 * 0.5 = 0.2: oslo 0.45 and bob 0.36."""
    kg = KnowledgeGraph.from_labeled_triples(
        [("ann", "born_in", "oslo"), ("ann", "parents", "bob"), ("bob", "born_in", "rome")]
    )
    born, parents = kg.relations.get("born_in"), kg.relations.get("parents")
    hop = np.full((2, 4), 0.05)
    hop[0, [born, parents]] = 0.5, 0.4
    hop[1, born] = 0.5
    embedder = KeywordEncoder(model_id="test/keywords")
    q = Question("q", "where was ann 's parent born ?", (), ("ann",))
    at = WalkRetriever(kg, embedder, NodeModelDouble(hop, np.array([1.0, 0.1])), max_hops=2)
    at = at.answers_at_length(q)
    assert at.length == 2 and list(at.log_mass) == [kg.entities.get("rome")]
    assert math.exp(at.log_mass[kg.entities.get("rome")]) == pytest.approx(0.2)
    at = WalkRetriever(kg, embedder, NodeModelDouble(hop, np.array([1.0, 0.9])), max_hops=2)
    at = at.answers_at_length(q)
    mass = {kg.entities.label(a): round(math.exp(m), 6) for a, m in at.log_mass.items()}
    assert at.length == 1 and mass == {"oslo": 0.45, "bob": 0.36}


def test_by_length_auto_is_on_unless_the_walk_learned_this_kgs_answers(tmp_path):
    """The KG's own walk (its vocabulary, a ``<data>-<fp>`` dataset): off; the same
    vocabulary adapted or self-trained without answers, or another graph's walk: on."""
    from lokg.taimr.walk.retriever import learned_these_answers

    assert learned_these_answers(tmp_path / "pq2h-4c95efd5fe48" / "qgat-1", True)
    for data in ("kg_chains_pq2h-cbfdecf291a6", "self_labels_pq2h-c049f72d8e6f"):
        assert not learned_these_answers(tmp_path / data / "qgat-1", True)
    assert not learned_these_answers(tmp_path / "pretrain-61143e371e28" / "qgat-1", False)


def test_empty_walk_falls_back_and_says_so():
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, _ = _people(2)
    m = _module(kg, embedder)

    class NamedDouble(Retriever):
        """Test double standing in for the semantic fallback."""

        name = "double"

        def retrieve(self, question):
            from lokg.retrieval import RetrievalResult

            return RetrievalResult(kg, extra={"seen": question.id})

    r = _retriever(m, kg, embedder, fallback=NamedDouble())
    res = r.retrieve(Question("z", "nationality of nobody ?", ("x",), ("unknown_topic",)))
    assert res.extra == {"seen": "z", "fallback": "double"}


@pytest.mark.slow
def test_trained_walk_model_runs_on_per_question_subgraphs(tmp_path):
    """RoG format (one subgraph per question): the model trained on the training questions
    runs on each test question's own graph, inductively (names, no TransE there)."""
    from pathlib import Path

    from lokg.data import KGQADataModule, RoGSource
    from lokg.retrieval import PerQuestionRetriever

    root = Path(__file__).resolve().parents[1] / "fixtures" / "rog_mini"
    files = {s: str(root / f"{s}.jsonl") for s in ("train", "val", "test")}
    dm = KGQADataModule(RoGSource("rog_mini", files=files), artifacts_dir=str(tmp_path / "a"))
    dm.prepare_data()
    dm.setup("fit")
    embedder = KeywordEncoder(model_id="test/keywords")
    m = _module(dm.kg, embedder)
    assert m.check_supervision(dm.questions["train"]) > 0.5
    _fit(m, dm.questions["train"], steps=10)

    def build(kg):
        return WalkRetriever(kg, embedder, WalkModel(m.net, kg, embedder, None, 4, True), 2)

    r = PerQuestionRetriever(lambda q: dm.question_graph(q.id), build)
    covered = 0
    for q in dm.questions["test"]:
        res = r.retrieve(q)
        sub = dm.question_graph(q.id)
        assert res.kg.num_triples == sub.num_triples  # the question's own graph
        assert all(0 <= t < sub.num_triples for t in res.triple_ids)
        covered += bool(set(q.answers) & {a.label for a in res.answers})
    assert covered == len(dm.questions["test"])


def test_free_relation_table_applies_only_to_its_own_relation_vocabulary(family, tmp_path):
    """A model trained with a free e_r table uses it on graphs with the same relation
    vocabulary (e.g. per-question subgraphs); on another KG the e_r part is zero."""
    from lokg.taimr.walk.artifact import save_walk_network
    from lokg.taimr.walk.retriever import build_learned

    embedder = KeywordEncoder(model_id="test/keywords")
    R = family.num_relations
    arch = {"node_dim": DIM, "rel_dim": 4 + DIM + 1, "query_dim": DIM, "name_dim": DIM,
            "transe_dim": 4, "hidden": 8, "heads": 2, "max_hops": 2,
            "question_in_attention": True, "question_key": "relation",
            "relation_source": "learned", "both_directions": True}  # fmt: skip
    table = np.arange(R * 4, dtype=np.float32).reshape(R, 4) + 1.0
    net = WalkNet(DIM, 4 + DIM + 1, DIM, 8, 2, 0.0, 2)
    meta = {"kg_fingerprint": "elsewhere", "relations": list(family.relations.labels)}
    save_walk_network(tmp_path, net, arch, table, meta)
    same = build_learned(family, embedder, tmp_path, max_hops=2)
    assert torch.equal(same.model.rel_feats[:R, :4], torch.from_numpy(table))
    other = KnowledgeGraph.from_labeled_triples([("a", "knows", "b")])
    elsewhere = build_learned(other, embedder, tmp_path, max_hops=2)
    assert not elsewhere.model.rel_feats[:, :4].any()


# --------------------------------------------------------------------------- token pointer


class OrderedKeywordEncoder(KeywordEncoder):
    """Test double: :class:`KeywordEncoder` whose tokens are words, each its keyword axis
    (nothing for other words) plus its relative position ``j / (T - 1)`` on the last axis:
    order is visible in the tokens, invisible in the pooled bag of keywords."""

    def encode_tokens(self, texts, kind="query"):
        out = []
        for text in texts:
            words = text.lower().replace("?", " ").split()
            vecs = np.zeros((len(words), DIM), np.float32)
            for j, word in enumerate(words):
                if word in KEYWORDS:
                    vecs[j, KEYWORDS[word]] = 1.0
                vecs[j, DIM - 1] = j / max(len(words) - 1, 1)
            out.append(vecs)
        return out


def _ordered(n: int) -> tuple[KnowledgeGraph, list[Question]]:
    """p_i -spouse-> s_i -children-> A and p_i -children-> c_i -spouse-> B (A != B): "children
    of p_i 's spouse" and "spouse of p_i 's children" name the same two relations, and only
    their order says which country answers."""
    triples, questions = [], []
    for i in range(n):
        a, b = ("france", "spain") if i % 2 else ("spain", "france")
        triples += [
            (f"p{i}", "spouse", f"s{i}"),
            (f"s{i}", "children", a),
            (f"p{i}", "children", f"c{i}"),
            (f"c{i}", "spouse", b),
        ]
        questions += [
            Question(f"q{i}a", f"children of p{i} 's spouse ?", (a,), (f"p{i}",),
                     ((f"p{i}", "spouse", f"s{i}"), (f"s{i}", "children", a))),
            Question(f"q{i}b", f"spouse of p{i} 's children ?", (b,), (f"p{i}",),
                     ((f"p{i}", "children", f"c{i}"), (f"c{i}", "spouse", b))),
        ]  # fmt: skip
    return KnowledgeGraph.from_labeled_triples(triples), questions


def test_token_attention_points_per_hop_by_hand():
    torch.manual_seed(0)
    net = WalkNet(DIM, 5, DIM, hidden=DIM, heads=2, dropout=0.0, max_hops=2,
                          question_tokens=True)  # fmt: skip
    with torch.no_grad():
        net.token_key.weight.copy_(torch.eye(DIM))  # W_k = I: key_j = H_j
        net.token_recur.weight.zero_()  # no recurrence: u_t alone
        net.token_hop.copy_(torch.zeros(2, DIM))
        net.token_hop[0, 0] = 3.0  # hop 0 looks for axis 0, hop 1 for axis 1
        net.token_hop[1, 1] = 3.0
    tokens = torch.eye(DIM)[[0, 1, 2, 0]].unsqueeze(0)  # [1, 4, d]: the last one is padding
    mask = torch.tensor([[True, True, True, False]])
    ctx, beta = net.token_attention(torch.zeros(1, DIM), tokens, mask)
    # beta_0 = softmax(3/sqrt(6), 0, 0) over the three real tokens; the padded copy gets 0
    big = math.exp(3.0 / math.sqrt(DIM))
    assert beta[0, 0].tolist() == pytest.approx([big / (big + 2), 1 / (big + 2), 1 / (big + 2), 0])
    assert beta[0, 1].tolist() == pytest.approx([1 / (big + 2), big / (big + 2), 1 / (big + 2), 0])
    # c_t = sum_j beta_tj H_j
    assert ctx[0, 0].tolist() == pytest.approx((beta[0, 0] @ tokens[0]).tolist())
    assert ctx.shape == (1, 2, DIM)


@pytest.mark.slow
def test_token_pointer_learns_the_order_a_pooled_question_cannot_see():
    embedder = OrderedKeywordEncoder(model_id="test/ordered-keywords")
    kg, questions = _ordered(12)
    train, held_out = questions[:16], questions[16:]
    pooled = _module(kg, embedder)
    _fit(pooled, train, steps=80)
    assert _hits(pooled, held_out) <= 0.5 + 1e-9  # one bag of keywords, one walk, per pair
    pointer = _module(kg, embedder, question_tokens=True)
    _fit(pointer, train, steps=80)
    assert _hits(pointer, held_out) == 1.0
    # the retriever passes the tokens too
    r = _retriever(pointer, kg, embedder)
    res = r.retrieve(held_out[1])
    assert res.answers[0].label == held_out[1].answers[0]


def test_gradient_reaches_the_token_pointer():
    embedder = OrderedKeywordEncoder(model_id="test/ordered-keywords")
    kg, questions = _ordered(2)
    m = _module(kg, embedder, question_tokens=True)
    loss, _ = m._batch_loss([m.supervise(q) for q in questions])
    loss.backward()
    for name, p in [
        ("W_k", m.net.token_key.weight),
        ("W_c", m.net.token_recur.weight),
        ("u_t", m.net.token_hop),
        ("W_q^(t)", m.net.hop_query.weight),
    ]:
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_question_tokens_needs_a_token_encoder():
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, _ = _people(2)
    with pytest.raises(ValueError, match="needs a token encoder"):
        _module(kg, embedder, question_tokens=True)


# --------------------------------------------------------------------------- fine-tuned encoder


@pytest.mark.slow
def test_finetuned_question_encoder_trains_and_travels_with_the_model(tmp_path):
    """``question_encoder=finetune``: the path loss reaches the sentence encoder's own
    weights, and the exported artifact carries the trained encoder, so retrieval encodes
    questions exactly as training did."""
    from lokg.embed import SentenceEncoder
    from lokg.nn.question_encoder import QuestionLM
    from lokg.taimr.walk.artifact import save_walk_network
    from lokg.taimr.walk.retriever import build_learned

    embedder = SentenceEncoder()  # the bundled all-MiniLM-L6-v2
    kg, questions = _people(2)
    d = embedder.dim
    torch.manual_seed(0)
    m = WalkModule(
        kg.num_relations, node_dim=d, name_dim=d, transe_dim=4, hidden=16, heads=2,
        dropout=0.0, max_hops=2, beam_width=16, max_fanout=None, question_tokens=True,
        graph_context=False, question_encoder="finetune", encoder_lr=1e-3,
    )  # fmt: skip
    feats = torch.from_numpy(embedder.encode([kg.entity_name(e) for e in range(kg.num_entities)]))
    names = torch.from_numpy(
        embedder.encode([relation_name(kg.relations.label(r)) for r in range(kg.num_relations)])
    )
    lm = QuestionLM.from_embedder(embedder)
    m.set_graph(kg, feats, torch.randn(kg.num_relations, 4), names, None, None, lm)
    before, _, _ = lm.encode([questions[0].text])
    # the frozen embedder and the untrained copy agree on the pooled question vector
    assert before[0].numpy() == pytest.approx(
        embedder.encode([questions[0].text], "query")[0], abs=1e-5
    )
    opt = m.configure_optimizers()
    assert [g["lr"] for g in opt.param_groups][1] == 1e-3  # encoder_lr for the question encoder
    loss, _ = m._batch_loss([m.supervise(q) for q in questions])
    loss.backward()
    grad = lm.lm.embeddings.word_embeddings.weight.grad
    assert grad is not None and grad.abs().sum() > 0
    opt.step()
    after, _, _ = lm.encode([questions[0].text])
    assert not torch.allclose(before, after)
    save_walk_network(tmp_path, m.net, m.architecture(), m.relation_table.weight.detach().numpy(),
                      {"embedder": {"query_prefix": ""}}, question_lm=lm)  # fmt: skip
    r = build_learned(kg, embedder, tmp_path, max_hops=2, beam_width=16)
    q, tokens, mask = r.model.question(questions[0].text)
    assert torch.allclose(q, after, atol=1e-5) and tokens is not None
    # [CLS] and [SEP] are not pointed at: only the word pieces between them
    assert mask[0].tolist() == [False] + [True] * (mask.size(1) - 2) + [False]
    assert r.retrieve(questions[0]).paths


@pytest.mark.parametrize("normalization", ["vocabulary", "node"])
def test_name_match_adds_tau_times_cosine_to_every_hop_logit_by_hand(normalization):
    """logit_t(r | q) += tau_t * cos(c_t, name(r)): relation r's name is its own keyword axis
    (r0 -> 0, r1 -> 1, r2 -> 2; r^-1 shares r's name), the question is (3, 0, 4, 0, 0, 0), so
    cos = (0.6, 0, 0.8) and, relative to r0, the logits move by tau_t * (0, -0.6, 0.2)."""
    torch.manual_seed(0)
    kw = dict(hidden=8, heads=2, dropout=0.0, max_hops=2, graph_context=False,
              normalization=normalization)  # fmt: skip
    plain = WalkNet(4, 4 + DIM + 1, DIM, **kw).eval()
    named = WalkNet(4, 4 + DIM + 1, DIM, name_match=True, name_span=(4, 4 + DIM), **kw)
    named.load_state_dict({**plain.state_dict(), "name_scale": torch.tensor([2.0, 3.0])})
    named.eval()
    rel_feats = relation_features(torch.randn(3, 4), torch.eye(DIM)[:3], 3, 4)  # [6, 11]
    q = torch.tensor([[3.0, 0.0, 4.0, 0.0, 0.0, 0.0]])
    cos = torch.tensor([0.6, 0.0, 0.8, 0.6, 0.0, 0.8])  # steps r0 r1 r2 r0^-1 r1^-1 r2^-1
    tau = torch.tensor([2.0, 3.0])
    if normalization == "vocabulary":
        before, _ = plain.hop_log_probs(rel_feats, q)  # [1, L, 6]
        after, _ = named.hop_log_probs(rel_feats, q)
        moved = (after - after[..., :1]) - (before - before[..., :1])  # [1, L, 6]
        assert torch.allclose(moved[0], tau[:, None] * (cos - cos[0]), atol=1e-5)
    else:  # one node with one step per step relation: the raw step logits [6, L]
        edge_index = torch.tensor([[0] * 6, [1, 2, 3, 4, 5, 6]])
        rel = torch.arange(6)
        before, _ = plain(torch.zeros(7, 0), edge_index, rel, rel_feats, q)
        after, _ = named(torch.zeros(7, 0), edge_index, rel, rel_feats, q)
        assert torch.allclose(after - before, cos[:, None] * tau[None, :], atol=1e-5)
    with pytest.raises(ValueError, match="name_span"):
        WalkNet(4, 4 + DIM + 1, DIM, name_match=True, name_span=(4, 6), **kw)


def _three_relations(n: int) -> tuple[KnowledgeGraph, list[Question]]:
    """p_i -spouse-> s_i, p_i -children-> c_i, p_i -nationality-> n_i; one one-hop question
    per relation ("spouse of p_i ?", "son of p_i ?", "nationality of p_i ?")."""
    triples, questions = [], []
    for i in range(n):
        for rel, word, end in (("spouse", "spouse", "s"), ("children", "son", "c"),
                               ("nationality", "nationality", "n")):  # fmt: skip
            triples.append((f"p{i}", rel, f"{end}{i}"))
            questions.append(Question(f"q{i}{end}", f"{word} of p{i} ?", (f"{end}{i}",),
                                      (f"p{i}",), ((f"p{i}", rel, f"{end}{i}"),)))  # fmt: skip
    return KnowledgeGraph.from_labeled_triples(triples), questions


@pytest.mark.slow
def test_name_match_answers_with_a_relation_never_seen_in_training():
    """Trained on spouse and children questions only, the walk model must answer nationality
    questions.  Its learned terms only ever saw nationality as a wrong step; the name cosine
    reads "nationality" in the question and in the relation's name."""
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _three_relations(8)
    train = [q for q in questions if not q.text.startswith("nationality")]
    unseen = [q for q in questions if q.text.startswith("nationality")]
    named = _module(kg, embedder, name_match=True, normalization="vocabulary", graph_context=False)
    _fit(named, train)
    assert _hits(named, unseen) == 1.0
    assert _hits(named, train) == 1.0
    plain = _module(kg, embedder, normalization="vocabulary", graph_context=False)
    _fit(plain, train)
    assert _hits(plain, unseen) == 0.0


class RecordingTableLogger(Logger):
    """Test double: a Lightning logger that takes tables (as ``WandbLogger`` does) and keeps
    every ``log_table`` call."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[str], list[list], int | None]] = []

    @property
    def name(self) -> str:
        return "recording"

    @property
    def version(self) -> int:
        return 0

    def log_hyperparams(self, params, *args, **kwargs) -> None:
        pass

    def log_metrics(self, metrics, step=None) -> None:
        pass

    def log_table(self, key, columns=None, data=None, step=None) -> None:
        self.tables.append((key, columns, data, step))


def test_each_validation_epoch_logs_a_per_question_table():
    """``val/questions``: one row per val question (question, gold, predicted, hit, recall,
    supervised), sorted by id, at every validation epoch; a question whose topic is not in the
    graph is a row too (missed, unsupervised), and the hit column averages to val/hits@1."""
    embedder = KeywordEncoder(model_id="test/keywords")
    kg, questions = _people(6)
    lost = Question("qx", "nationality of nobody 's spouse ?", ("spain",), ("nobody",))
    val = [*questions[:4], lost]
    m = _module(kg, embedder)
    logger = RecordingTableLogger()
    trainer = pl.Trainer(
        max_epochs=2, logger=logger, accelerator="cpu", num_sanity_val_steps=0,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    trainer.fit(
        m,
        DataLoader(questions, batch_size=4, collate_fn=list),
        DataLoader(val, batch_size=4, collate_fn=list),
    )
    assert [t[0] for t in logger.tables] == ["val/questions", "val/questions"]
    _, columns, data, step = logger.tables[-1]
    assert columns == ["id", "question", "gold", "predicted", "hit", "recall", "supervised"]
    assert step == trainer.global_step
    rows = [dict(zip(columns, r, strict=True)) for r in data]
    assert [r["id"] for r in rows] == sorted(q.id for q in val)
    by_id = {r["id"]: r for r in rows}
    assert by_id["qx"] == {
        "id": "qx", "question": lost.text, "gold": "spain", "predicted": "", "hit": False,
        "recall": False, "supervised": False,
    }  # fmt: skip
    for q in questions[:4]:
        r = by_id[q.id]
        assert r["gold"] == q.answers[0] and r["supervised"]
        assert kg.entities.get(r["predicted"]) is not None  # an entity the walk reached
        assert r["hit"] == (r["predicted"] == r["gold"])
    hits = sum(r["hit"] for r in rows) / len(rows)
    assert trainer.callback_metrics["val/hits@1"].item() == pytest.approx(hits)


def _reference_beam(kg, topic, hop_logp, hop_stop, max_hops, beam_width, both=True, fanout=None):
    """The stopping walk's beam search written out plainly: every step of every node in the
    beam becomes a candidate scored ``hop_logp[t, r] - log deg_r(u)``; no pruning."""
    beam, ended = [(0.0, topic, (), None)], []
    for t in range(max_hops):
        cand = []
        for score, u, path, prev in beam:
            if t > 0:
                ended.append((path, score + float(hop_stop[t])))
            out, inn = kg.out_triples(u).tolist(), kg.in_triples(u).tolist() if both else []
            steps = [(x, False) for x in out] + [(x, True) for x in inn]
            if fanout is not None and len(steps) > fanout:  # the training walk's seeded sample
                keep = np.random.default_rng((0, u)).choice(len(steps), fanout, False)
                steps = [steps[i] for i in sorted(keep.tolist())]
            rels = [int(kg.triples_np[x, 1]) + kg.num_relations * f for x, f in steps]
            for (x, f), r in zip(steps, rels, strict=True):
                if path and prev is not None and path[-1] == (x, not f):
                    continue  # straight back along the previous step (not a self-loop)
                h, _, tl = (int(v) for v in kg.triples_np[x])
                v = h if f else tl
                lp = hop_logp[t, r] - math.log(rels.count(r))
                cand.append((score + float(lp), v, (*path, (x, f)), None if v == u else u))
        cand.sort(key=lambda c: -c[0])
        beam = cand[:beam_width]
    ended += [(path, score) for score, _, path, _ in beam]
    ended.sort(key=lambda w: -w[1])
    return ended


@pytest.mark.parametrize("seed", range(6))
def test_beam_walk_keeps_what_the_unpruned_beam_keeps_on_random_graphs_with_hubs(seed):
    """beam_walk scores only a node's ``beam_width`` best steps: on random multigraphs with
    a hub, self-loops and a repeated (h, r, t), beams narrower and wider than the hub's
    degree, it keeps exactly the walks (same order, same log-probabilities) of the plain
    beam search over every step."""
    rng = np.random.default_rng(seed)
    n, m = 12, 60
    heads = np.concatenate([np.zeros(20, dtype=int), rng.integers(0, n, m - 20)])  # a hub
    triples = [
        (f"e{h}", f"r{rng.integers(0, 3)}", f"e{rng.integers(0, n)}") for h in heads.tolist()
    ] + [("e1", "r0", "e1"), ("e2", "r1", "e3"), ("e2", "r1", "e3")]
    kg = KnowledgeGraph.from_labeled_triples(triples)
    L = 3
    hop_logp = rng.normal(size=(L, 2 * kg.num_relations))
    if seed % 2:  # relations tied at some hops: their steps then compete in listing order
        hop_logp = np.round(hop_logp)
    hop_stop = rng.normal(size=L)
    topic = kg.entities["e0"]
    for beam, both, fan in itertools.product((1, 3, 8, 64), (True, False), (None, 4)):
        g, got = beam_walk(
            kg, topic, hop_logp, hop_stop, L, beam, both_directions=both, max_fanout=fan
        )
        got = [
            (tuple((int(g.triple_ids[e]), bool(g.inverse[e])) for e in w.steps), w.log_prob)
            for w in got
        ]
        assert got == _reference_beam(kg, topic, hop_logp, hop_stop, L, beam, both, fan), beam


def test_node_steps_best_is_the_prefix_of_a_stable_sort_of_every_step():
    """_NodeSteps.best(group scores, k) reads only the groups it needs and returns what
    ``argsort(-step_scores, stable)[:k]`` over all the node's steps in listing order would:
    a hand case with two tied relations, then random nodes with many ties."""
    from lokg.taimr.walk.search import _NodeSteps

    # listing order:      0   1   2   3   4   5     (relations b a b c a b)
    kg = KnowledgeGraph.from_labeled_triples([("u", r, f"v{i}") for i, r in enumerate("babcab")])
    u = kg.entities["u"]
    steps = _NodeSteps.of(kg.steps_by_relation(False), u, None, 0)
    names = [kg.relations.label(int(r)) for r in steps.relation]
    assert names == ["a", "b", "c"] and steps.count.tolist() == [2, 3, 1]
    assert steps.neg_log_deg == pytest.approx(-np.log([2, 3, 1]))
    # a and b tied: their steps merge in listing order 0 (b) 1 (a) 2 (b) 4 (a) 5 (b)
    pos, lp = steps.best(np.array([0.5, 0.5, 0.1]), 4)
    assert steps.order[pos].tolist() == [0, 1, 2, 4] and lp.tolist() == [0.5] * 4
    pos, lp = steps.best(np.array([0.2, 0.5, 0.3]), 5)  # b, then c, then a
    assert steps.order[pos].tolist() == [0, 2, 5, 3, 1] and lp.tolist() == [0.5] * 3 + [0.3, 0.2]
    rng = np.random.default_rng(0)
    for _ in range(200):
        rels = rng.integers(0, 6, size=rng.integers(1, 40))
        kg = KnowledgeGraph.from_labeled_triples(
            [("u", f"r{r}", f"v{i}") for i, r in enumerate(rels.tolist())]
            + [(f"w{i}", f"r{rng.integers(6)}", "u") for i in range(rng.integers(0, 10))]
        )
        u, both = kg.entities["u"], bool(rng.integers(2))
        steps = _NodeSteps.of(kg.steps_by_relation(both), u, None, 0)
        group_scores = rng.integers(0, 3, size=len(steps.relation)) * -0.5  # many ties
        per_step = np.repeat(group_scores, steps.count)[np.argsort(steps.order)]
        k = int(rng.integers(1, 20))
        pos, lp = steps.best(group_scores, k)
        want = np.argsort(-per_step, kind="stable")[:k]
        assert steps.order[pos].tolist() == want.tolist()
        assert lp.tolist() == per_step[want].tolist()
