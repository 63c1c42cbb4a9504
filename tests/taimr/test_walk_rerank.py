"""The answer GAT over the joint subgraph (issue 28 §3; lokg/taimr/walk/joint.py, rerank.py,
lokg/nn/answer_gat.py, lokg/models/rerank_module.py), by hand on a small family graph:

    ann -children-> cal, dee, eve;  bob -children-> cal, dee, fay
    cal -gender-> male;  dee -gender-> female;  fay -gender-> male
"""

import itertools

import numpy as np
import pytest
import torch

from lokg.kg.graph import KnowledgeGraph
from lokg.nn.answer_gat import AnswerGAT, candidate_log_softmax
from lokg.retrieval import RankedAnswer, RetrievalResult, RetrievedPath, TopicEntity
from lokg.taimr.walk.joint import MAX_DISTANCE, STRUCTURE_DIM, joint_graph
from lokg.taimr.walk.rerank import Reranker, batch_items, joint_item, reorder, step_features

from .test_walk_anchors import TRIPLES

L = MAX_DISTANCE + 2  # one anchor's distance one-hot


@pytest.fixture(scope="module")
def kg():
    return KnowledgeGraph.from_labeled_triples(TRIPLES)


def path(kg, *names):
    """The path through ``names`` along the graph's triples (either direction)."""
    ents = [kg.entities[n] for n in names]
    tids = []
    for u, v in itertools.pairwise(ents):
        tri = kg.triples_np
        hit = np.flatnonzero(
            ((tri[:, 0] == u) & (tri[:, 2] == v)) | ((tri[:, 0] == v) & (tri[:, 2] == u))
        )
        tids.append(int(hit[0]))
    rels = tuple(int(kg.triples_np[t, 1]) for t in tids)
    return RetrievedPath(tuple(ents), tuple(tids), rels, 0.0)


def result(kg, topics, answers, paths):
    """A retrieval result with ``answers`` (label, score) best first."""
    ranked = [RankedAnswer(kg.entities[a], a, s) for a, s in answers]
    tops = [TopicEntity(t, kg.entities[t]) for t in topics]
    return RetrievalResult(kg, (), ranked, paths, tops)


def test_the_joint_subgraph_holds_anchors_candidates_paths_and_neighbours(kg):
    res = result(
        kg, ["ann", "male"], [("cal", -1.0), ("dee", -2.0)],
        [path(kg, "ann", "cal"), path(kg, "male", "cal"), path(kg, "ann", "dee")],
    )  # fmt: skip
    g = joint_graph(res, max_candidates=32, max_neighbours=8)
    label = [kg.entities.label(int(e)) for e in g.nodes]
    # anchors first, then the candidates in the retriever's order, then the rest
    assert label[:4] == ["ann", "male", "cal", "dee"]
    assert [label[i] for i in g.candidates] == ["cal", "dee"]
    # cal's neighbours: ann, bob (children^-1), male; dee's: ann, bob, female
    assert set(label) == {"ann", "male", "cal", "dee", "bob", "female"}
    # every triple between two nodes, both step directions: ann-cal, ann-dee, bob-cal,
    # bob-dee, cal-male, dee-female
    assert len(g.src) == 2 * 6
    R = kg.num_relations
    children = kg.relations["children"]
    i = {n: k for k, n in enumerate(label)}
    fwd = {(int(s), int(d)) for s, d, r in zip(g.src, g.dst, g.step_relation, strict=True)
           if r == children}  # fmt: skip
    back = {(int(s), int(d)) for s, d, r in zip(g.src, g.dst, g.step_relation, strict=True)
            if r == children + R}  # fmt: skip
    assert (i["ann"], i["cal"]) in fwd and (i["cal"], i["ann"]) in back


def test_structure_features_say_which_anchors_reach_a_node_and_how_far(kg):
    res = result(kg, ["ann", "male"], [("cal", -1.0), ("dee", -2.0)], [path(kg, "ann", "cal")])
    g = joint_graph(res)
    label = [kg.entities.label(int(e)) for e in g.nodes]
    f = {n: g.structure[k] for k, n in enumerate(label)}
    assert g.structure.shape == (len(label), STRUCTURE_DIM)
    assert f["ann"][0] == 1 and f["cal"][1] == 1 and f["dee"][1] == 1 and f["bob"][:2].sum() == 0
    # cal: 1 step from ann, 1 from male; dee: 1 from ann, 3 from male (dee-bob-cal-male)
    assert f["cal"][2 + 1] == 1 and f["cal"][2 + L + 1] == 1
    assert f["dee"][2 + 1] == 1 and f["dee"][2 + L + 3] == 1
    # female: 2 from ann (ann-dee-female), 4 > L from male: "farther" bucket
    assert f["female"][2 + 2] == 1 and f["female"][2 + L + MAX_DISTANCE + 1] == 1
    # the share of anchors within 3 steps
    assert f["cal"][-1] == 1.0 and f["female"][-1] == 0.5
    # one anchor: the second slot says "farther" everywhere
    one = joint_graph(result(kg, ["ann"], [("cal", -1.0)], [path(kg, "ann", "cal")]))
    assert (one.structure[:, 2 + L + MAX_DISTANCE + 1] == 1).all()


def test_no_anchor_or_no_answer_gives_no_joint_subgraph_and_an_anchor_may_be_a_candidate(kg):
    assert joint_graph(result(kg, [], [("cal", -1.0)], [])) is None
    assert joint_graph(result(kg, ["ann"], [], [])) is None
    g = joint_graph(result(kg, ["ann"], [("ann", -0.5), ("cal", -1.0)], [path(kg, "ann", "cal")]))
    label = [kg.entities.label(int(e)) for e in g.nodes]
    assert [label[i] for i in g.candidates] == ["ann", "cal"] and label.count("ann") == 1
    assert g.structure[0, 0] == 1 and g.structure[0, 1] == 1  # anchor and candidate


def test_candidate_log_softmax_normalises_within_each_question():
    logits = torch.tensor([0.0, 0.0, 1.0, 2.0, 3.0])
    owner = torch.tensor([0, 0, 1, 1, 1])
    lp = candidate_log_softmax(logits, owner, 2)
    assert torch.allclose(lp[:2].exp(), torch.tensor([0.5, 0.5]))
    z = np.log(np.exp(1) + np.exp(2) + np.exp(3))
    assert torch.allclose(lp[2:], torch.tensor([1 - z, 2 - z, 3 - z], dtype=torch.float32))


def test_the_answer_gat_scores_one_logit_per_candidate_and_needs_two_or_no_layers():
    torch.manual_seed(0)
    net = AnswerGAT(node_dim=5, rel_dim=3, query_dim=4, hidden=8, heads=2, dropout=0.0)
    x = torch.randn(4, 5)
    edge_index = torch.tensor([[0, 1, 2, 1], [1, 0, 1, 3]])
    out = net(x, edge_index, torch.arange(4), torch.randn(4, 3), torch.randn(1, 4),
              torch.zeros(4, dtype=torch.long), torch.tensor([1, 3]),
              torch.zeros(2, dtype=torch.long))  # fmt: skip
    assert out.shape == (2,) and torch.isfinite(out).all()
    # without layers the score reads each candidate's own features only: its neighbours'
    # features do not move it
    flat = AnswerGAT(5, 3, 4, hidden=8, heads=2, dropout=0.0, layers=0)
    one = torch.zeros(1, dtype=torch.long)
    args = (edge_index, torch.arange(4), torch.randn(4, 3), torch.randn(1, 4),
            torch.zeros(4, dtype=torch.long), torch.tensor([1]), one)  # fmt: skip
    x2 = x.clone()
    x2[0] += 10.0
    assert torch.allclose(flat(x, *args), flat(x2, *args))
    assert not torch.allclose(net(x, *args), net(x2, *args))
    with pytest.raises(ValueError, match="layers must be 0 or 2"):
        AnswerGAT(5, 3, 4, layers=1)


def test_reorder_puts_the_answers_in_the_new_order_with_their_paths(kg):
    paths = [path(kg, "ann", "cal"), path(kg, "male", "cal"), path(kg, "ann", "dee")]
    res = result(kg, ["ann", "male"], [("cal", -1.0), ("dee", -2.0), ("eve", -3.0)], paths)
    out = reorder(res, [1, 0, 2], [0.5, 0.1, -3.0], keep=2)
    assert [a.label for a in out.answers] == ["dee", "cal", "eve"]
    assert [a.score for a in out.answers] == [0.5, 0.1, -3.0]
    # the first two answers' paths, dee's first
    assert [p.entities[-1] for p in out.paths] == [kg.entities[x] for x in ("dee", "cal", "cal")]
    assert list(out.triple_ids) == [paths[2].triple_ids[0], paths[0].triple_ids[0],
                                    paths[1].triple_ids[0]]  # fmt: skip
    # keep: only the first k answers' paths
    assert [p.entities[-1] for p in reorder(res, [0, 1, 2], [0, 0, 0], 1).paths] == [
        kg.entities["cal"]
    ] * 2
    with pytest.raises(ValueError, match="permutation"):
        reorder(res, [0, 1], [0, 0], keep=1)


def test_an_answer_the_gat_did_not_score_gets_its_worst_candidates_log_probability():
    from lokg.taimr.walk.rerank import fused_scores

    walk = np.array([-1.0, -2.0, -4.0, -5.0])
    gat = np.log(np.array([0.2, 0.8]))  # two candidates
    fused = fused_scores(walk, gat, 2.0)
    assert fused.tolist() == pytest.approx(
        [-1 + 2 * np.log(0.2), -2 + 2 * np.log(0.8), -4 + 2 * np.log(0.2), -5 + 2 * np.log(0.2)]
    )
    # no answer after the candidates passes one: walk and GAT floor are both lower
    assert max(fused[2:]) <= min(fused[:2])
    assert fused_scores(walk, gat, 0.0).tolist() == walk.tolist()


class ConstantNet(torch.nn.Module):
    """A test double of the answer GAT: each candidate's logit is given by name."""

    def __init__(self, kg, logits: dict[str, float]):
        super().__init__()
        self.kg, self.logits = kg, logits
        self.nodes = None

    def forward(self, x, edge_index, step_relation, rel, query, owner, candidates, cand_owner):
        return torch.tensor([self.logits[self.kg.entities.label(int(self.nodes[c]))]
                             for c in candidates.tolist()])  # fmt: skip


def test_the_fused_score_is_the_walks_plus_omega_times_the_gats_log_softmax(kg, monkeypatch):
    from .conftest import KeywordEncoder

    res = result(kg, ["ann"], [("cal", -1.0), ("dee", -1.0), ("eve", -1.5)],
                 [path(kg, "ann", x) for x in ("cal", "dee", "eve")])  # fmt: skip
    net = ConstantNet(kg, {"ann": 2.0, "cal": 0.0, "dee": 1.0, "eve": 3.0})
    g = joint_graph(res)
    net.nodes = g.nodes
    rel_feats = torch.zeros(2 * kg.num_relations, 3)
    embedder = KeywordEncoder(model_id="test/keywords")
    out = Reranker(net, embedder, 0.5, 32, 8, transe_dim=1, use_transe=True).rerank(
        res, "which son of ann ?", rel_feats, keep=3
    )
    z = np.log(np.exp(0) + np.exp(1) + np.exp(3))
    fused = {"cal": -1.0 + 0.5 * (0 - z), "dee": -1.0 + 0.5 * (1 - z), "eve": -1.5 + 0.5 * (3 - z)}
    assert [a.label for a in out.answers] == ["eve", "dee", "cal"]
    assert [a.score for a in out.answers] == pytest.approx(
        [fused[x] for x in ("eve", "dee", "cal")]
    )
    # omega 0: the walk's order stands (ties keep it), an anchor among the answers included
    res = result(kg, ["ann"], [("ann", -0.5), ("cal", -1.0), ("dee", -1.0), ("eve", -1.5)],
                 [path(kg, "ann", x) for x in ("cal", "dee", "eve")])  # fmt: skip
    net.nodes = joint_graph(res).nodes
    same = Reranker(net, embedder, 0.0, 32, 8, 1, True).rerank(
        res, "son of ann ?", rel_feats, keep=4
    )
    assert same.answers == res.answers and same.paths == res.paths


def test_without_transe_its_columns_of_the_step_features_are_zero(kg):
    res = result(kg, ["ann"], [("cal", -1.0)], [path(kg, "ann", "cal")])
    g = joint_graph(res)
    rel_feats = torch.arange(2 * kg.num_relations * 4, dtype=torch.float32).view(-1, 4) + 1
    with_e = step_features(rel_feats, g, transe_dim=2, use_transe=True)
    without = step_features(rel_feats, g, transe_dim=2, use_transe=False)
    assert with_e.shape == (len(g.src), 4)
    assert (without[:, :2] == 0).all() and torch.equal(without[:, 2:], with_e[:, 2:])


def test_the_rerank_module_learns_to_put_the_gold_candidate_first():
    """A short fit on two questions over one joint subgraph whose gold answers differ only in
    the question: the question in the scorer is what tells them apart (FAMILY: alice's 2-hop
    chains end at france and spain)."""
    from lokg.models.rerank_module import RerankModule
    from lokg.taimr.walk.rerank import NodeFeatures, score_batch
    from lokg.typing import Question

    from ..fixtures.toy_kg import FAMILY
    from .conftest import KeywordEncoder

    torch.manual_seed(0)
    fam = KnowledgeGraph.from_labeled_triples(FAMILY)
    embedder = KeywordEncoder(model_id="test/keywords")
    chains = [path(fam, "alice", "bob", "france"), path(fam, "alice", "carol", "spain")]
    res = result(fam, ["alice"], [("france", -1.0), ("spain", -1.0)], chains)
    g = joint_graph(res)
    rel = step_features(torch.randn(2 * fam.num_relations, 3), g, 1, True)
    qa, qb = embedder.encode(["france ?", "spain ?"], kind="query")
    feats = NodeFeatures(embedder)
    items = {
        "a": joint_item(g, fam, feats, rel, qa, [-1.0, -1.0], [True, False]),
        "b": joint_item(g, fam, feats, rel, qb, [-1.0, -1.0], [False, True]),
    }
    m = RerankModule(node_dim=items["a"].x.size(1), rel_dim=3, query_dim=len(qa), hidden=16,
                     heads=2, dropout=0.0)  # fmt: skip
    m.set_items(items)
    questions = [Question("a", "france ?", ("france",), ("alice",)),
                 Question("b", "spain ?", ("spain",), ("alice",))]  # fmt: skip
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = m.training_step(questions, 0)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[0] > 0.5 and losses[-1] < 0.1  # from near log 2 (two candidates) to near 0
    lp = score_batch(m.net.eval(), batch_items([items["a"], items["b"]])).view(2, 2)
    assert lp[0].argmax() == 0 and lp[1].argmax() == 1


def test_an_exported_answer_gat_loads_with_the_same_scores_and_default_finds_it(tmp_path):
    from omegaconf import OmegaConf

    from lokg.models.rerank_module import RerankModule
    from lokg.taimr.walk.rerank import RERANK_CONFIG, load_answer_gat, save_answer_gat
    from lokg.taimr.walk.retriever import _reranker

    from .conftest import KeywordEncoder

    torch.manual_seed(0)
    m = RerankModule(node_dim=7, rel_dim=3, query_dim=4, hidden=8, heads=2, dropout=0.0)
    walk = tmp_path / "qgat-x"
    walk.mkdir()
    out = tmp_path / "rerank-y"
    save_answer_gat(out, m.net, m.architecture(), {"walk_dir": str(walk), "best_value": 0.5})
    model = OmegaConf.load(RERANK_CONFIG).model
    OmegaConf.save(OmegaConf.create({"model": model}), out / "config.yaml")
    net, meta = load_answer_gat(out)
    args = (torch.randn(3, 7), torch.tensor([[0, 1], [1, 2]]), torch.arange(2), torch.randn(2, 3),
            torch.randn(1, 4), torch.zeros(2, dtype=torch.long), torch.tensor([1, 2]),
            torch.zeros(2, dtype=torch.long))  # fmt: skip
    assert torch.allclose(net(*args), m.net.eval()(*args))
    assert meta["architecture"]["max_candidates"] == 32
    walk_arch = {"transe_dim": 64, "name_dim": 384 - 64 - 1 - 1}  # rel_dim 3 would be 64+318+1
    embedder = KeywordEncoder(model_id="test/keywords")  # output_dim unknown: not checked
    with pytest.raises(ValueError, match="expects 3 for the walk's relation features"):
        _reranker(walk, "default", None, embedder, walk_arch)
    small = RerankModule(node_dim=7, rel_dim=66, query_dim=4, hidden=8, heads=2, dropout=0.0)
    save_answer_gat(out, small.net, small.architecture(), {"walk_dir": str(walk)})
    load_answer_gat.cache_clear()
    r = _reranker(walk, "default", None, embedder, {"transe_dim": 64, "name_dim": 1})
    assert r.weight == 1.0 and r.max_candidates == 32 and r.use_transe
    with pytest.raises(FileNotFoundError, match="experiment=train_rerank"):
        _reranker(tmp_path / "qgat-other", "default", 2.0, embedder, walk_arch)


def test_a_batch_offsets_each_questions_nodes_and_the_loss_sums_its_gold_candidates():
    from lokg.models.rerank_module import RerankModule
    from lokg.taimr.walk.rerank import JointItem, score_batch
    from lokg.typing import Question

    def item(n, m, cands, gold):
        edges = torch.stack([torch.arange(m) % n, (torch.arange(m) + 1) % n])
        x, rel, cands = torch.randn(n, 5), torch.randn(m, 3), torch.tensor(cands)
        return JointItem(x, edges, rel, torch.randn(4), cands, torch.zeros(len(cands)),
                         torch.tensor(gold))  # fmt: skip

    torch.manual_seed(0)
    a, b = item(3, 4, [1, 2], [True, False]), item(5, 2, [0, 3, 4], [True, False, True])
    batch = batch_items([a, b])
    assert batch.candidates.tolist() == [1, 2, 3 + 0, 3 + 3, 3 + 4]
    assert batch.edge_index[:, 4:].tolist() == (b.edge_index + 3).tolist()
    assert batch.edge_owner.tolist() == [0] * 4 + [1] * 2
    assert batch.candidate_owner.tolist() == [0, 0, 1, 1, 1]
    m = RerankModule(node_dim=5, rel_dim=3, query_dim=4, hidden=8, heads=2, dropout=0.0).eval()
    m.set_items({"a": a, "b": b})
    lp = score_batch(m.net, batch)
    # L = -mean_q log sum_{gold} p: a's one gold candidate, b's two
    want = -(lp[0] + torch.logsumexp(lp[torch.tensor([2, 4])], 0)) / 2
    qs = [Question("a", "?", ("x",), ("y",)), Question("b", "?", ("x",), ("y",))]
    assert torch.allclose(m.training_step(qs, 0), want)
