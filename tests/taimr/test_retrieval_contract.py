"""Every retriever keeps the one retrieval contract (lokg/retrieval.py), built from its config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from lokg.assemble import retriever_plan
from lokg.kg.inverse_edges import add_inverse_edges, relations_to_invert
from lokg.retrieval import (
    PerQuestionRetriever,
    RetrievalResult,
    Retriever,
    TopicEntity,
    resolve_topics,
)
from lokg.taimr.topology import uniform_log_attention
from lokg.typing import Question

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "retriever"
#: every config of the retriever group; a new retriever config joins this test automatically
RETRIEVER_CONFIGS = sorted(p.stem for p in CONFIGS.glob("*.yaml"))


def _load(name: str):
    cfg = OmegaConf.load(CONFIGS / f"{name}.yaml")
    base = cfg.get("defaults")
    if base:  # a config extending another of the group (taimr_linked extends taimr)
        parent = OmegaConf.load(CONFIGS / f"{base[0]}.yaml")
        cfg = OmegaConf.merge(parent, {k: v for k, v in cfg.items() if k != "defaults"})
    return cfg


def _walk_model_dir(kg, embedder) -> Path:
    """An (untrained) walk-model artifact sized for ``kg`` and the keyword embedder: the
    contract does not depend on training."""
    import tempfile

    import torch

    from lokg.taimr.walk.artifact import save_walk_network
    from lokg.taimr.walk.net import WalkNet

    dim = embedder.encode(["x"]).shape[1]
    arch = {"node_dim": dim, "rel_dim": 4 + dim + 1, "query_dim": dim, "name_dim": dim,
            "transe_dim": 4, "hidden": 8, "heads": 2, "max_hops": 3,
            "question_in_attention": True, "question_key": "relation",
            "relation_source": "fixed", "both_directions": True}  # fmt: skip
    torch.manual_seed(0)
    net = WalkNet(dim, 4 + dim + 1, dim, 8, 2, 0.0, 3)
    out = Path(tempfile.mkdtemp(prefix="walk-model-"))
    save_walk_network(out, net, arch, np.zeros((kg.num_relations, 4), np.float32))
    return out


def _answer_gat_dir(walk_dir: Path, embedder) -> Path:
    """An (untrained) answer-GAT artifact over ``walk_dir``'s candidates, sized for the
    keyword embedder and :func:`_walk_model_dir`'s relation features."""
    import torch

    from lokg.models.rerank_module import RerankModule
    from lokg.taimr.walk.joint import STRUCTURE_DIM
    from lokg.taimr.walk.rerank import save_answer_gat

    dim = embedder.encode(["x"]).shape[1]
    torch.manual_seed(0)
    m = RerankModule(dim + STRUCTURE_DIM, 4 + dim + 1, dim, hidden=8, heads=2, transe_dim=4)
    out = walk_dir.parent / f"rerank-{walk_dir.name}"
    save_answer_gat(out, m.net, m.architecture(), {"walk_dir": str(walk_dir)})
    return out


class ChatDouble:
    """Chat-client test double for retrievers that call the LLM (their builders declare the
    chat client: ToG, GraphRAG): every prompt gets the same canned reply (their parsers fall
    back where it does not fit)."""

    def chat(self, messages, ledger=None, max_tokens=None):
        return type("Reply", (), {"text": "{spouse (Score: 1.0)}"})()


def _build(name: str, kg, embedder, train_questions=()):
    """The config's retriever over ``kg``, given what its builder declares (lokg.assemble)."""
    plan = retriever_plan(_load(name))
    available = {
        "embedder": embedder,
        "train_questions": list(train_questions),
        "chat": ChatDouble(),
        "edge_log_alpha": uniform_log_attention(kg),
        "relation_embeddings": None,
    }
    if "model_dir" in plan.needs:
        available["model_dir"] = _walk_model_dir(kg, embedder)
    if "rerank" in plan.needs:
        available["rerank"] = str(_answer_gat_dir(available["model_dir"], embedder))
    return plan.make(kg, **{n: available[n] for n in plan.needs})


QUESTION = Question(
    id="q1",
    text="which nationality is alice 's couple ?",
    answers=("france",),
    topic_entities=("nobody", "alice"),  # an unknown topic before a known one
    gold_path=(("alice", "spouse", "bob"), ("bob", "nationality", "france")),  # for the oracle
)
TRAIN = [
    Question("t1", "what is the nationality of bob 's wife ?", ("x",), ("bob",)),
    Question("t2", "who is the spouse of carol ?", ("y",), ("carol",)),
]


def _check_contract(result: RetrievalResult, kg) -> None:
    assert isinstance(result, RetrievalResult)
    # the walk reads the KG's own part (same ids) of a graph with added inverse edges
    assert result.kg is kg or result.kg is kg.own_part()
    ids = list(result.triple_ids)
    # candidates are facts as the KG states them: never an added inverse edge
    assert len(ids) == len(set(ids)) and all(0 <= t < kg.num_own_triples for t in ids)
    scores = [a.score for a in result.answers]
    assert scores == sorted(scores, reverse=True)  # best first
    for a in result.answers:
        assert a.label == kg.entities.label(a.entity)
    for p in result.paths:
        assert set(kg.stated(p.triple_ids)) <= set(ids)
        for i, t in enumerate(p.triple_ids):  # a path is a walk: (v_i, r_i, v_i+1) is triple t
            h, r, tail = (int(x) for x in kg.triples_np[t])
            assert {h, tail} == {p.entities[i], p.entities[i + 1]} and r == p.relations[i]
    # the unknown topic is reported, the known one keeps its own id
    assert result.unknown_topics == ("nobody",)
    assert result.topics == (TopicEntity("alice", kg.entities["alice"]),)


@pytest.mark.parametrize("name", RETRIEVER_CONFIGS)
def test_every_retriever_config_keeps_the_contract(name, family, embedder, tmp_path):
    retriever = _build(name, family, embedder, TRAIN)
    assert isinstance(retriever, Retriever)
    result = retriever.retrieve(QUESTION)
    _check_contract(result, family)
    if name != "none":  # the no-evidence reference (baseline=none) finds none by design
        assert not result.is_empty  # alice has edges: every retriever finds some evidence
    # the retriever owns its cache: saving then loading round-trips, or there is none
    written = retriever.save_cache(tmp_path)
    if retriever.cache_key is None:
        assert written is None and retriever.load_cache(tmp_path) is False
    else:
        assert written is not None and written.is_file()
        fresh = _build(name, family, embedder, TRAIN)
        assert fresh.cache_key == retriever.cache_key
        assert fresh.load_cache(tmp_path) is True
        assert fresh.retrieve(QUESTION) == result


@pytest.mark.parametrize("name", RETRIEVER_CONFIGS)
def test_every_retriever_keeps_the_contract_on_a_graph_with_added_inverses(name, family, embedder):
    kg = add_inverse_edges(family, relations_to_invert(family, "always"))
    result = _build(name, kg, embedder, TRAIN).retrieve(QUESTION)
    _check_contract(result, kg)
    if name != "none":
        assert not result.is_empty


@pytest.mark.parametrize("name", RETRIEVER_CONFIGS)
def test_per_question_wrapper_keeps_the_contract(name, family, embedder):
    wrapper = PerQuestionRetriever(
        graph_of=lambda q: family, build=lambda kg: _build(name, kg, embedder, TRAIN)
    )
    assert isinstance(wrapper, Retriever) and wrapper.cache_key is None
    _check_contract(wrapper.retrieve(QUESTION), family)


def test_resolve_topics_pairs_each_label_with_its_own_id(family):
    found, unknown = resolve_topics(family, ["bob", "ghost", "alice", ""])
    assert found == [
        TopicEntity("bob", family.entities["bob"]),
        TopicEntity("alice", family.entities["alice"]),
    ]
    assert unknown == ["ghost", ""]


def test_taimr_links_relations_from_the_right_topic_when_one_is_unknown(family, embedder):
    # with linking on, the chain is linked for the topic's own label: were labels and ids
    # misaligned ("nobody" paired with alice's id), the linker would see the wrong entity
    retriever = _build("taimr_linked", family, embedder, TRAIN)
    seen = []
    link = retriever.linker.link
    retriever.linker.link = lambda text, label: seen.append(label) or link(text, label)
    both = retriever.retrieve(QUESTION)
    alone = retriever.retrieve(
        Question("q2", QUESTION.text, QUESTION.answers, topic_entities=("alice",))
    )
    assert seen == ["alice", "alice"]
    assert [a.entity for a in both.answers] == [a.entity for a in alone.answers]
    assert np.array_equal(both.triple_ids, alone.triple_ids)


def test_check_counts_refuses_the_first_setting_below_one():
    from lokg.retrieval import check_counts

    check_counts(max_hops=1, k_top=20)
    with pytest.raises(ValueError, match=r"^retriever\.k_top must be >= 1, got 0$"):
        check_counts(max_hops=3, k_top=0, pool_limit=-1)
