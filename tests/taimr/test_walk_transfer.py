"""The pretrained walk's transfer switches (docs/design/taimr.md items 27 and 33): the
component vocabulary, the token coverage, the stop match, the name-free key, the stop gate,
the stop's vocabulary size."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.walk.net import WalkNet, hop_distribution
from lokg.taimr.walk.vocabulary import ComponentVocabulary

from .conftest import DIM

# two KGs in one graph: a -r0-> b -r1-> c, and d -r2-> e; f is isolated
TWO_KGS = [("a", "r0", "b"), ("b", "r1", "c"), ("d", "r2", "e")]


def two_kgs() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(TWO_KGS, extra_entities=["f"])


def test_components_hold_their_own_relations():
    kg = two_kgs()
    vocab = ComponentVocabulary(kg)
    a, c, d, f = (kg.entities[x] for x in "acdf")
    assert vocab.component_of(a) == vocab.component_of(c) != vocab.component_of(d)
    r = {x: kg.relations[x] for x in ("r0", "r1", "r2")}
    assert sorted(vocab.relations_of(c).tolist()) == sorted([r["r0"], r["r1"]])
    assert vocab.relations_of(d).tolist() == [r["r2"]]
    assert vocab.relations_of(f).tolist() == []


def test_allowed_marks_forward_and_inverse_steps_of_the_topics_component():
    kg = two_kgs()
    vocab = ComponentVocabulary(kg)
    R = kg.num_relations
    a, d, f = (kg.entities[x] for x in "adf")
    allowed = vocab.allowed([a, d, f])  # over all 2R step relations
    r0, r1, r2 = (kg.relations[x] for x in ("r0", "r1", "r2"))
    assert allowed[0].nonzero().flatten().tolist() == sorted([r0, r1, r0 + R, r1 + R])
    assert allowed[1].nonzero().flatten().tolist() == sorted([r2, r2 + R])
    assert allowed[2].all()  # isolated: nothing to walk, every column kept (no empty softmax)
    forward = torch.arange(R)  # the walk without both_directions: columns are relations
    assert vocab.allowed([d], forward)[0].nonzero().flatten().tolist() == [r2]
    inverse_of_r2 = torch.tensor([r2 + R, r0])  # any vocabulary: its columns, in its order
    assert vocab.allowed([d], inverse_of_r2)[0].tolist() == [True, False]


def _net(**kw) -> WalkNet:
    torch.manual_seed(0)
    return WalkNet(
        4, 4 + DIM + 1, DIM, hidden=8, heads=2, dropout=0.0, max_hops=2, graph_context=False,
        normalization="vocabulary", question_tokens=True, name_match=True,
        name_span=(4, 4 + DIM), **kw,
    ).eval()  # fmt: skip


def test_a_question_hop_distribution_covers_only_its_vocabulary():
    """log P_t(r | q) = logit_t(r) - log(sum over the allowed r' and stop): the disallowed
    relations get probability 0 and the rest, with stop, sum to one at each hop."""
    net = _net()
    feats = torch.randn(6, 4 + DIM + 1)
    q, tokens = torch.randn(1, DIM), torch.randn(1, 5, DIM)
    allowed = torch.tensor([[True, False, True, False, False, True]])
    with torch.no_grad():
        full_lp, full_stop = net.hop_log_probs(feats, q, tokens)
        lp, stop = net.hop_log_probs(feats, q, tokens, allowed=allowed)
    assert torch.isinf(lp[0, :, ~allowed[0]]).all()
    for t in range(2):
        total = lp[0, t, allowed[0]].exp().sum() + (stop[0, t].exp() if t else 0.0)
        assert float(total) == pytest.approx(1.0, abs=1e-5)
    # the allowed logits are the unmasked ones, renormalised: the same differences
    diff = lp[0, 1, allowed[0]] - full_lp[0, 1, allowed[0]]
    assert torch.allclose(diff, diff[0].expand_as(diff), atol=1e-5)
    assert float(stop[0, 1] - full_stop[0, 1]) == pytest.approx(float(diff[0]), abs=1e-5)


def test_token_coverage_moves_the_pointer_off_a_token_already_read():
    """With gamma large, hop 1 cannot attend the token hop 0 attended (beta_1 -> 0 there)."""
    net = _net(token_coverage=True)
    with torch.no_grad():
        net.coverage_weight.fill_(50.0)  # softplus(50) = 50
        net.token_hop.zero_()
        net.token_hop[0, 0] = 30.0  # hop 0's query: key dimension 0
        net.token_recur.weight.zero_()
        net.token_key.weight.zero_()
        net.token_key.weight[0, 0] = 1.0
    tokens = torch.zeros(1, 3, DIM)
    tokens[0, 0, 0] = 1.0  # token 0 answers hop 0's query; tokens 1, 2 are alike
    tokens[0, 1, 1] = tokens[0, 2, 2] = 1.0
    with torch.no_grad():
        _, beta = net.token_attention(torch.zeros(1, DIM), tokens)
    assert float(beta[0, 0, 0]) > 0.99
    assert float(beta[0, 1, 0]) < 1e-6
    assert float(beta[0, 1, 1]) == pytest.approx(0.5, abs=1e-4)


def test_stop_match_and_stop_context_set_the_stop_logit():
    """stop_context=False, stop_match: logit(stop) = b_t + w_t max_r cos(c_t, name(r)), so
    the stop-vs-relation log-odds move by exactly (w' - w) max_r cos when w_t changes, and
    W_s (the context's stop projection) no longer enters."""
    net = _net(stop_match=True, stop_context=False)
    feats = torch.randn(4, 4 + DIM + 1)
    q, tokens = torch.randn(1, DIM), torch.randn(1, 3, DIM)

    def log_odds() -> torch.Tensor:  # logit(stop) - logit(r) at hop 1, [V]
        with torch.no_grad():
            lp, stop = net.hop_log_probs(feats, q, tokens)
        return stop[0, 1] - lp[0, 1]

    with torch.no_grad():
        cos = net.name_cosines(net._question_queries(q, tokens, None)[3], feats)
    before = log_odds()
    with torch.no_grad():
        net.stop_match_weight[1] -= 2.0
    assert torch.allclose(
        log_odds() - before, torch.full_like(before, -2.0 * float(cos[0, 1].max())), atol=1e-5
    )
    moved = log_odds()
    with torch.no_grad():
        net.stop_query.weight.normal_()
    assert torch.allclose(log_odds(), moved)
    # ... yet W_s gets a gradient, all zeros: DDP (trainer=ddp) would stop on an unused one
    lp, stop = net.hop_log_probs(feats, q, tokens)
    (stop.sum() + lp[torch.isfinite(lp)].sum()).backward()
    grad = net.stop_query.weight.grad
    assert grad is not None and not grad.any()
    with pytest.raises(ValueError, match="stop_context=False needs stop_match=True"):
        _net(stop_context=False)


def test_hop_distribution_with_the_stop_gate_by_hand():
    """stop_gate: P_t(stop) = sigmoid(s_t), P_t(r) = (1 - sigmoid(s_t)) softmax_r l_t(r) for
    t >= 1; hop 0 has no stop.  Two relations with logits (0, log 3) and s_1 = log 4:
    P(stop) = 4/5, P(r) = 1/5 * (1/4, 3/4).  The softmax's stop, 4 / (1 + 3 + 4) = 1/2."""
    logits = torch.tensor([[[0.0, math.log(3)], [0.0, math.log(3)]]])  # [B=1, L=2, V=2]
    stop = torch.tensor([[7.0, math.log(4)]])  # s_0 is never read
    lp, sp = hop_distribution(logits, stop, gate=True)
    assert torch.allclose(lp[0, 0].exp(), torch.tensor([0.25, 0.75]))
    assert sp[0, 0] == float("-inf")
    assert float(sp[0, 1].exp()) == pytest.approx(0.8)
    assert torch.allclose(lp[0, 1].exp(), torch.tensor([0.05, 0.15]))
    _, soft = hop_distribution(logits, stop)
    assert float(soft[0, 1].exp()) == pytest.approx(0.5)


def test_the_stop_gate_keeps_stop_as_the_vocabulary_grows():
    """The same relations, each three times over (the best name match is unchanged): under
    the softmax the relations' mass triples and stop's probability falls, as the zero-shot
    walk's did on PQL's 726 step relations against PQ's 26 (taimr.md item 33); under the
    gate it does not move."""
    net = _net(stop_match=True, stop_context=False, stop_gate=True)
    q, tokens = torch.randn(1, DIM), torch.randn(1, 3, DIM)
    few = torch.randn(4, 4 + DIM + 1)
    many = torch.cat([few, few, few])  # the same names thrice: max cos is unchanged
    with torch.no_grad():
        _, stop_few = net.hop_log_probs(few, q, tokens)
        _, stop_many = net.hop_log_probs(many, q, tokens)
        net.stop_gate = False
        _, soft_few = net.hop_log_probs(few, q, tokens)
        _, soft_many = net.hop_log_probs(many, q, tokens)
    assert torch.allclose(stop_few[0, 1:], stop_many[0, 1:])
    assert float(soft_many[0, 1]) < float(soft_few[0, 1])
    with pytest.raises(ValueError, match="stop_gate=True needs normalization='vocabulary'"):
        WalkNet(4, 9, DIM, hidden=8, graph_context=False, normalization="node", stop_gate=True)


def test_stop_size_adds_kappa_log_vocabulary_size_to_the_stop_logit():
    """stop_size: logit(stop) += kappa_t log |V_q|, |V_q| the question's own vocabulary (its
    component's relations).  With kappa_1 = 1, a question whose component has 4 relations
    against one with 2 (the same relation 0 in both) moves stop-vs-relation-0's log-odds at
    hop 1 by log 4 - log 2 = log 2; kappa starts at 0 (the walk without the switch)."""
    net = _net(stop_match=True, stop_context=False, stop_size=True)
    assert not net.stop_size_weight.any()
    feats = torch.randn(4, 4 + DIM + 1)
    q, tokens = torch.randn(2, DIM), torch.randn(2, 3, DIM)
    allowed = torch.tensor([[True, True, False, False], [True, True, True, True]])
    with torch.no_grad():
        net.stop_size_weight[1] = 1.0
        lp, stop = net.hop_log_probs(feats, torch.cat([q[:1]] * 2), torch.cat([tokens[:1]] * 2),
                                     allowed=allowed)  # fmt: skip
    odds = stop[:, 1] - lp[:, 1, 0]  # [2]
    assert float(odds[1] - odds[0]) == pytest.approx(math.log(2), abs=1e-5)
    with pytest.raises(ValueError, match="stop_size=True needs normalization='vocabulary'"):
        WalkNet(4, 9, DIM, hidden=8, graph_context=False, normalization="node", stop_size=True)


def test_a_name_free_key_ignores_the_relation_name():
    """name_in_key=False: W_r e_r is the same for two relations that differ in name only."""
    net = _net(name_in_key=False)
    feats = torch.zeros(2, 4 + DIM + 1)
    feats[:, :4] = 1.0
    feats[0, 4:-1], feats[1, 4:-1] = torch.randn(DIM), torch.randn(DIM)
    keys = net.relation_keys(feats)
    assert torch.allclose(keys[0], keys[1])
    with pytest.raises(ValueError, match="name_in_key=False needs name_match=True"):
        WalkNet(4, 4 + DIM + 1, DIM, name_in_key=False, name_span=(4, 4 + DIM))


def test_a_component_scoped_walk_retrieves_within_the_topics_kg(tmp_path):
    """build_learned on a walk recorded with vocabulary_scope=component: each topic's hop is
    over its own component's relations (the other KG's get probability 0), the retriever
    finds its answers there, and a hop without its topic is refused."""
    from lokg.taimr.walk.artifact import save_walk_network
    from lokg.taimr.walk.retriever import build_learned
    from lokg.typing import Question

    from .conftest import KeywordEncoder

    kg = two_kgs()
    arch = {"node_dim": DIM, "rel_dim": 4 + DIM + 1, "query_dim": DIM, "name_dim": DIM,
            "transe_dim": 4, "hidden": 8, "heads": 2, "max_hops": 2,
            "question_in_attention": True, "question_key": "relation", "question_tokens": False,
            "graph_context": False, "normalization": "vocabulary", "name_match": True,
            "relation_source": "none", "both_directions": True,
            "vocabulary_scope": "component"}  # fmt: skip
    net = WalkNet(
        DIM, 4 + DIM + 1, DIM, hidden=8, heads=2, dropout=0.0, max_hops=2, graph_context=False,
        normalization="vocabulary", name_match=True, name_span=(4, 4 + DIM),
    )  # fmt: skip  # pooled question (the keyword test encoder has no token vectors)
    save_walk_network(tmp_path, net, arch, np.zeros((3, 4), np.float32), {"relations": []})
    walk = build_learned(kg, KeywordEncoder(model_id="test/keywords"), tmp_path, max_hops=2)
    R, d = kg.num_relations, kg.entities["d"]
    logp, _ = walk.model.hop_log_probs("what is the r2 of d ?", d)
    r2 = kg.relations["r2"]
    assert set(np.flatnonzero(np.isfinite(logp[0])).tolist()) == {r2, r2 + R}
    with pytest.raises(ValueError, match="needs the topic entity"):
        walk.model.hop_log_probs("what is the r2 of d ?")
    res = walk.retrieve(Question("q", "what is the r2 of d ?", ("e",), ("d",)))
    assert {a.label for a in res.answers} == {"e"}


def test_training_normalises_each_question_over_its_own_component():
    """The training loss reads each question's hop distribution over its topic's component:
    with fewer relations competing, every supervised path is at least as likely (loss no
    higher than over the whole graph, same weights), and a question whose component holds
    every relation gets the same loss either way."""
    from lokg.typing import Question

    from .conftest import KeywordEncoder
    from .test_walk import _module

    kg = two_kgs()
    enc = KeywordEncoder(model_id="test/keywords")
    kw = {"graph_context": False, "normalization": "vocabulary", "name_match": True}
    graph_scoped = _module(kg, enc, **kw)
    component_scoped = _module(kg, enc, vocabulary_scope="component", **kw)
    asks = [Question("q1", "what is the r0 of a ?", ("b",), ("a",)),
            Question("q2", "what is the r2 of d ?", ("e",), ("d",))]  # fmt: skip
    with torch.no_grad():
        lg, _ = graph_scoped._batch_loss([graph_scoped.supervise(q) for q in asks])
        lc, _ = component_scoped._batch_loss([component_scoped.supervise(q) for q in asks])
    assert float(lc) < float(lg)
    one_kg = KnowledgeGraph.from_labeled_triples(TWO_KGS[:2])
    a, b = _module(one_kg, enc, **kw), _module(one_kg, enc, vocabulary_scope="component", **kw)
    with torch.no_grad():
        la, _ = a._batch_loss([a.supervise(asks[0])])
        lb, _ = b._batch_loss([b.supervise(asks[0])])
    assert float(la) == pytest.approx(float(lb), abs=1e-6)
    with pytest.raises(ValueError, match="vocabulary_scope=component needs"):
        _module(kg, enc, vocabulary_scope="component")  # the node-normalised GAT walk


def test_the_stop_match_reads_the_questions_own_vocabulary():
    """Under a restricted vocabulary the stop match's max runs over the allowed relations
    only: a relation of another KG that the context names better does not move the stop."""
    net = _net(stop_match=True, stop_context=False)
    feats = torch.randn(4, 4 + DIM + 1)
    q, tokens = torch.randn(1, DIM), torch.randn(1, 3, DIM)
    with torch.no_grad():
        net.stop_match_weight.fill_(-3.0)
        cos = net.name_cosines(net._question_queries(q, tokens, None)[3], feats)[0, 1]
        best = int(cos.argmax())
        allowed = torch.ones(1, 4, dtype=torch.bool)
        allowed[0, best] = False
        lp, stop = net.hop_log_probs(feats, q, tokens, allowed=allowed)
    rest = cos[allowed[0]].max()
    kept = int(allowed[0].nonzero()[0])
    # logit(stop) - logit(r) for an allowed r, with the max over the allowed relations
    with torch.no_grad():
        full_lp, full_stop = net.hop_log_probs(feats, q, tokens)
    shift = (stop[0, 1] - lp[0, 1, kept]) - (full_stop[0, 1] - full_lp[0, 1, kept])
    assert float(shift) == pytest.approx(-3.0 * float(rest - cos.max()), abs=1e-5)
