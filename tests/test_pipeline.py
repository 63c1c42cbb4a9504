"""The pipeline API: what it sends is what it counts, one budget rule, no Lightning, no eval."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hydra.utils import instantiate

from lokg.baselines.bfs import BFSRetriever
from lokg.eval.metrics import aggregate
from lokg.eval.records import question_record
from lokg.ittc import ITTCEncoder, NaiveEncoder, TruncateEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.llm import ExtractiveReader
from lokg.pipeline import LOKG
from lokg.tokens import check_budget, count_tokens
from lokg.typing import Question

BUDGET_ERROR = r"^budget=0; expected a positive whole number of tokens$"


@pytest.fixture(scope="module")
def pq2h(tmp_path_factory):
    """PQ-2H as the package prepares it: the whole KB and the hashed path-grouped split."""
    from lokg.config import compose_config

    root = tmp_path_factory.mktemp("pq2h")
    dm = instantiate(compose_config("evaluate", ["data=pq2h"], root).data)
    dm.prepare_data()
    dm.setup("test")
    return dm


@pytest.fixture
def family() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(
        [("alice", "spouse", "bob"), ("bob", "nationality", "france")]
    )


@pytest.mark.parametrize("encoder", [NaiveEncoder(), TruncateEncoder(), ITTCEncoder()])
def test_tcr_is_exactly_one_when_nothing_is_compressed(pq2h, encoder):
    # BFS out-neighbourhoods of PQ-2H test questions are far below B = 4096 tokens, so the
    # naive template, truncation and ITTC (below its 0.7 B activation) all send the naive text
    lokg = LOKG(BFSRetriever(pq2h.kg, max_hops=2, direction="out"), encoder,
                ExtractiveReader(), budget=4096)  # fmt: skip
    records = []
    for q in pq2h.questions["test"][:40]:
        out = lokg.answer(q)
        assert out.context.num_tokens == count_tokens(out.context.text)  # counted as sent
        records.append(question_record(out))
    assert all(r.t_after == r.t_naive > 0 for r in records)
    metrics = aggregate(r.score() for r in records)
    assert metrics["tcr"] == 1.0  # exactly
    assert metrics["evidence_tok/q"] > 0 and metrics["tok/q"] == 0  # extractive: no call
    assert metrics["empty_contexts"] == 0


def test_ittc_compresses_below_one_on_the_same_questions(pq2h):
    lokg = LOKG(BFSRetriever(pq2h.kg, max_hops=2, direction="both"), ITTCEncoder(),
                ExtractiveReader(), budget=64)  # fmt: skip
    records = [question_record(lokg.answer(q)) for q in pq2h.questions["test"][:20]]
    assert all(r.t_after <= 64 for r in records)
    assert aggregate(r.score() for r in records)["tcr"] < 1.0


def test_unknown_topic_gives_an_empty_context_and_is_recorded(pq2h):
    lokg = LOKG(BFSRetriever(pq2h.kg), NaiveEncoder(), ExtractiveReader(), budget=128)
    q = Question("ghost", "where was nobody born ?", ("x",), ("no_such_entity",))
    out = lokg.answer(q)
    assert out.empty_context and out.evidence_tokens == 0
    rec = question_record(out)
    assert rec.extra["unknown_topics"] == ["no_such_entity"] and rec.extra["empty_context"]
    assert aggregate([rec.score()])["empty_contexts"] == 1


def test_one_budget_rule_everywhere(family):
    # the one rule (lokg.tokens.check_budget) answers for the pipeline, its per-call budget and
    # the encoders alike, with one message
    assert check_budget(7) == 7
    for bad in (0, -3, 1.5, True, "64", None):
        with pytest.raises(ValueError, match="expected a positive whole number of tokens"):
            check_budget(bad)
    with pytest.raises(ValueError, match=BUDGET_ERROR):
        LOKG(BFSRetriever(family), NaiveEncoder(), ExtractiveReader(), budget=0)
    lokg = LOKG(BFSRetriever(family), NaiveEncoder(), ExtractiveReader(), budget=64)
    q = Question("q", "who ?", ("bob",), ("alice",))
    with pytest.raises(ValueError, match=BUDGET_ERROR):
        lokg.answer(q, budget=0)
    for encoder in (ITTCEncoder(), NaiveEncoder(), TruncateEncoder()):
        with pytest.raises(ValueError, match=BUDGET_ERROR):
            encoder.encode(family, [0], budget=0)


def test_a_retriever_must_keep_the_contract(family):
    class NotARetriever:
        def retrieve(self, question):
            return []

    with pytest.raises(TypeError, match="retriever must implement lokg.retrieval.Retriever"):
        LOKG(NotARetriever(), NaiveEncoder(), ExtractiveReader())


def test_importing_and_building_the_pipeline_loads_no_lightning_and_no_eval():
    code = """
import sys
from lokg.pipeline import LOKG
from lokg.baselines.bfs import BFSRetriever
from lokg.ittc import ITTCEncoder
from lokg.llm import ExtractiveReader
from lokg.kg.graph import KnowledgeGraph
from lokg.typing import Question
kg = KnowledgeGraph.from_labeled_triples([("a", "r", "b")])
out = LOKG(BFSRetriever(kg), ITTCEncoder(), ExtractiveReader(), budget=64).answer(
    Question("q", "what ?", ("b",), ("a",)))
assert out.context.text
bad = sorted(m for m in sys.modules
             if m.split(".")[0] in ("pytorch_lightning", "lightning") or m.startswith("lokg.eval"))
print(bad)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_kg_is_the_retrievals(family):
    # the encoder reads the graph the retrieval result carries (per-question graphs included)
    other = KnowledgeGraph.from_labeled_triples([("alice", "likes", "tea")])
    lokg = LOKG(BFSRetriever(other), NaiveEncoder(), ExtractiveReader(), budget=64)
    out = lokg.answer(Question("q", "what does alice like ?", ("tea",), ("alice",)))
    assert out.retrieval.kg is other and "tea" in out.context.text
