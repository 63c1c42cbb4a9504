"""The composition root (lokg/assemble.py): what each builder declares is what it takes, it is
given exactly that, and the budget is validated once, where it enters."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from hydra.utils import get_object

from lokg.assemble import (
    ARTIFACTS,
    RETRIEVERS,
    SERVICES,
    Declaration,
    RetrieverPlan,
    RunSettings,
    retriever_plan,
    run_settings,
)
from lokg.baselines.bfs import BFSRetriever
from lokg.baselines.tog import build_tog
from lokg.config import COMPOSITION_KEYS
from lokg.embed import SentenceEncoder
from lokg.ittc import ITTCEncoder, NaiveEncoder
from lokg.llm import ExtractiveReader
from lokg.pipeline import LOKG
from lokg.taimr.build import build_semantic, build_taimr
from lokg.taimr.topology import uniform_log_attention
from lokg.tokens import Budget, check_budget
from lokg.typing import Question

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
BUDGET_ERROR = r"^budget=0; expected a positive whole number of tokens$"


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml"))


def parameters(builder) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(builder).parameters)


@pytest.fixture
def embedder() -> SentenceEncoder:
    """A sentence encoder that nothing here asks to encode (building a retriever does not)."""
    return SentenceEncoder(model_id="test/unused")


# ------------------------------------------------------------------ declarations
@pytest.mark.parametrize("name", options("retriever"))
def test_every_retriever_builder_declares_exactly_what_it_takes(make_cfg, name):
    node = make_cfg("evaluate", [f"retriever={name}"]).retriever
    builder = get_object(str(node._target_))
    assert builder in RETRIEVERS, f"{node._target_} has no declaration in RETRIEVERS"
    declared = RETRIEVERS[builder]
    params = parameters(builder)
    # every declared input is a keyword the builder takes ...
    assert set(declared.inputs) <= set(params)
    # ... and every parameter it cannot do without is kg, a declared input or a setting
    required = {n for n, p in params.items() if p.default is inspect.Parameter.empty}
    assert required <= {"kg", *declared.inputs, *node}
    # no builder swallows what it is not given
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params.values())
    # a service is never a setting of the config (an artifact may be resolved from one)
    assert not set(declared.services) & set(node)
    # the config's statement that the retriever calls the LLM agrees with the declaration
    assert bool(node.get("uses_llm", False)) == ("chat" in declared.services)


@pytest.mark.parametrize("group", ["encoder", "llm"])
def test_encoders_and_readers_are_built_from_their_settings_alone(make_cfg, group):
    for name in options(group):
        node = make_cfg("evaluate", [f"{group}={name}"])[group]
        params = parameters(get_object(str(node._target_)))
        required = {n for n, p in params.items() if p.default is inspect.Parameter.empty}
        assert required <= set(node), f"{group}={name} needs {required - set(node)} at call time"


def test_what_is_needed_follows_the_settings(make_cfg):
    # TAIMR reads the trained GAT's attention only with attention=gat (Eq. (16)'s alpha)
    paper = retriever_plan(make_cfg("evaluate", ["retriever=taimr"]).retriever)
    assert paper.needs == {"embedder", "train_questions", "edge_log_alpha"}
    uniform = make_cfg("evaluate", ["retriever=taimr", "retriever.attention=uniform"])
    assert retriever_plan(uniform.retriever).needs == {"embedder", "train_questions"}
    # the learned walk: its model and TransE's e_r; the answer GAT only when one is named
    learned = retriever_plan(make_cfg("evaluate", ["retriever=learned"]).retriever)
    assert learned.needs == {"embedder", "model_dir", "relation_embeddings"}
    gat = retriever_plan(make_cfg("evaluate", ["retriever=learned_gat"]).retriever)
    assert gat.needs == learned.needs | {"rerank"}
    # ToG calls the LLM; BFS needs nothing but the graph; uses_llm is not a setting of ToG
    tog = retriever_plan(make_cfg("evaluate", ["baseline=tog"]).retriever)
    assert tog.needs == {"embedder", "chat"} and "uses_llm" not in tog.settings
    assert retriever_plan(make_cfg("evaluate", ["retriever=bfs"]).retriever).needs == set()


def test_settings_are_the_configs_resolved_without_the_composition_keys(make_cfg):
    # GraphRAG's context is B tokens: `context_tokens: ${oc.select:budget,2048}`
    cfg = make_cfg("evaluate", ["baseline=graphrag", "budget=512"])
    plan = retriever_plan(cfg.retriever)
    assert plan.settings["context_tokens"] == 512 and plan.settings["node_limit"] == 2000
    assert not {"_target_", "_partial_", "uses_llm"} & set(plan.settings)


def test_a_declaration_names_only_known_inputs():
    assert set(SERVICES) == {"embedder", "train_questions", "chat"}
    assert set(ARTIFACTS) == {"edge_log_alpha", "model_dir", "relation_embeddings", "rerank"}
    with pytest.raises(ValueError, match=r"^declared input 'gat'; expected one of"):
        Declaration(artifacts=("gat",))
    with pytest.raises(ValueError, match=r"^declared condition on 'rerank', which is not"):
        Declaration(services=("embedder",), when={"rerank": lambda s: True})


# ------------------------------------------------------------------ given exactly that
def test_a_builder_given_an_undeclared_input_fails_loudly(family, embedder, make_cfg):
    plan = retriever_plan(make_cfg("evaluate", ["retriever=semantic"]).retriever)
    assert plan.name == "build_semantic" and plan.needs == {"embedder"}
    with pytest.raises(ValueError, match=r"^build_semantic declares \['embedder'\], was given "):
        plan.make(family, embedder=embedder, train_questions=[])
    with pytest.raises(ValueError, match=r"declares \['embedder'\], was given \[\]$"):
        plan.make(family)  # nor one short
    # the builder itself takes no **kwargs: a key it does not take is a TypeError, not ignored
    with pytest.raises(TypeError, match="train_questions"):
        build_semantic(family, embedder, train_questions=[])
    with pytest.raises(TypeError, match="edge_log_alpha"):
        BFSRetriever(family, edge_log_alpha=None)
    assert plan.make(family, embedder=embedder).k_top == 20  # given exactly its declaration


def test_taimr_is_given_the_attention_it_declares(family, embedder, make_cfg):
    plan = retriever_plan(make_cfg("evaluate", ["retriever=taimr"]).retriever)
    alpha = uniform_log_attention(family)
    built = plan.make(family, embedder=embedder, train_questions=[], edge_log_alpha=alpha)
    assert built.k_top == 20 and built.max_hops == 3  # Table 3's K_top and L
    with pytest.raises(ValueError, match="needs edge_log_alpha"):
        build_taimr(family, embedder)  # attention=gat by default, and no alpha given


def test_a_setting_resolved_into_an_artifact_is_replaced_by_it(family):
    # retriever.model_dir=null (the default model) arrives as the directory it resolved to
    def build(kg, model_dir=None, k_top=20):
        return model_dir, k_top

    plan = RetrieverPlan("build", build, {"model_dir": None, "k_top": 5}, frozenset({"model_dir"}))
    assert plan.make(family, model_dir="qgat-1") == ("qgat-1", 5)


@pytest.mark.parametrize("name", ["tog", "graphrag"])
def test_uses_llm_that_contradicts_the_declaration_is_one_line(make_cfg, name):
    cfg = make_cfg("evaluate", [f"baseline={name}", "retriever.uses_llm=false"])
    with pytest.raises(ValueError, match=rf"^retriever\.uses_llm=false: build_{name} calls"):
        retriever_plan(cfg.retriever)


def test_uses_llm_on_a_retriever_that_does_not_call_it_is_one_line(make_cfg):
    cfg = make_cfg("evaluate", ["baseline=kaping", "+retriever.uses_llm=true"])
    with pytest.raises(ValueError, match=r"^retriever\.uses_llm=true: build_kaping does not"):
        retriever_plan(cfg.retriever)
    assert COMPOSITION_KEYS == ("uses_llm",)  # read by the composition root, not the builder


def test_tog_is_given_the_chat_client_it_declares(family, embedder):
    class Chat:
        def chat(self, messages, ledger=None, max_tokens=None):
            raise AssertionError("not called while building")

    chat = Chat()
    tog = build_tog(family, embedder, chat, width=2)
    assert tog.chat is chat and (tog.width, tog.depth) == (2, 3)  # ToG's N and D
    with pytest.raises(ValueError, match=r"^retriever\.width must be >= 1, got 0$"):
        build_tog(family, embedder, chat, width=0)


# ------------------------------------------------------------------ the budget boundary
def test_the_config_budget_is_read_once_as_a_budget(make_cfg):
    settings = run_settings(make_cfg("evaluate"))
    assert settings == RunSettings(Budget(2048), "evidence", False)  # Table 3/4's B
    assert type(settings.budget) is Budget
    with pytest.raises(ValueError, match=BUDGET_ERROR):
        run_settings(make_cfg("evaluate", ["budget=0"]))
    with pytest.raises(ValueError, match=r"^budget_scope='all'; expected one of"):
        run_settings(make_cfg("evaluate", ["budget_scope=all"]))


def test_a_budget_passes_every_boundary_unchanged_and_an_int_is_checked_there(family):
    b = Budget(64)
    assert Budget(b) is b and check_budget(b) is b  # carried as the type: not checked again
    assert b == 64 and type(b - 4) is int  # a derived value is a new number, made a budget
    for bad in (0, -3, 1.5, True, "64", None):  # where it becomes one
        with pytest.raises(ValueError, match="expected a positive whole number of tokens"):
            Budget(bad)
    seen = []

    class RecordingEncoder(NaiveEncoder):
        def encode(self, kg, candidates, budget, **kw):
            seen.append(budget)
            return super().encode(kg, candidates, budget, **kw)

    lokg = LOKG(BFSRetriever(family), RecordingEncoder(), ExtractiveReader(), budget=b)
    assert lokg.budget is b
    q = Question("q", "who is alice 's spouse ?", ("bob",), ("alice",))
    lokg.answer(q)
    lokg.answer(q, budget=32)  # a library user's plain int, made a Budget at the boundary
    assert seen[0] is b and type(seen[1]) is Budget and seen[1] == 32
    # a plain int from a library user gets the same one line at the API boundary
    with pytest.raises(ValueError, match=BUDGET_ERROR):
        LOKG(BFSRetriever(family), ITTCEncoder(), ExtractiveReader(), budget=0)
    with pytest.raises(ValueError, match=BUDGET_ERROR):
        lokg.answer(q, budget=0)
