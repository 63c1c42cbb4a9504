"""The pipeline API: what it sends is what it counts, one budget rule, no Lightning, no eval."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hydra.utils import instantiate

from lokg.baselines.bfs import BFSRetriever
from lokg.errors import QuestionFailed
from lokg.eval.metrics import aggregate
from lokg.eval.records import question_record
from lokg.ittc import ITTCEncoder, NaiveEncoder, TruncateEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.llm import ExtractiveReader
from lokg.pipeline import LOKG, BudgetExceeded
from lokg.tokens import check_budget, count_tokens
from lokg.typing import Question

from .fixtures.doubles import RecordingReaderDouble

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


class OverBudgetEncoderDouble(NaiveEncoder):
    """Test double of an encoder that promises the budget and breaks it."""

    name = "over_budget_double"
    respects_budget = True


def test_evidence_over_the_budget_fails_the_question_not_the_run(family):
    lokg = LOKG(BFSRetriever(family), OverBudgetEncoderDouble(), RecordingReaderDouble(), budget=2)
    with pytest.raises(BudgetExceeded, match=r"^q: evidence has \d+ tokens > budget 2 ") as err:
        lokg.answer(Question("q", "who ?", ("bob",), ("alice",)))
    assert isinstance(err.value, QuestionFailed) and err.value.attempts == 0
    assert lokg.reader.calls == []  # nothing was sent


def test_unknown_topic_skips_the_llm_call_and_is_recorded_as_no_evidence(family):
    reader = RecordingReaderDouble()
    lokg = LOKG(BFSRetriever(family), ITTCEncoder(), reader, budget=64)
    out = lokg.answer(Question("ghost", "who is nobody ?", ("x",), ("no_such_entity",)))
    assert out.no_evidence and reader.calls == [] and out.answers == [] and out.prompt == []
    rec = question_record(out)
    assert rec.status == "ok" and rec.extra["no_evidence"] is True
    assert rec.calls == 0 and rec.tokens == 0 and rec.predictions == []
    # a known topic is answered as before
    out = lokg.answer(Question("q", "who is alice's spouse ?", ("bob",), ("alice",)))
    assert not out.no_evidence and len(reader.calls) == 1
    assert question_record(out).extra["no_evidence"] is False


def test_answer_without_evidence_makes_the_call(family):
    reader = RecordingReaderDouble()
    lokg = LOKG(BFSRetriever(family), ITTCEncoder(), reader, budget=64,
                answer_without_evidence=True)  # fmt: skip
    out = lokg.answer(Question("ghost", "who is nobody ?", ("x",), ("no_such_entity",)))
    assert out.no_evidence and len(reader.calls) == 1
    assert "(no evidence retrieved)" in reader.calls[0][0]["content"]


def test_extractive_reader_is_unaffected_by_no_evidence(family):
    lokg = LOKG(BFSRetriever(family), ITTCEncoder(), ExtractiveReader(), budget=64)
    out = lokg.answer(Question("ghost", "who is nobody ?", ("x",), ("no_such_entity",)))
    assert out.no_evidence and question_record(out).calls == 0


def test_no_evidence_warning_counts_the_questions(family, caplog):
    from lokg.evaluate import warn_no_evidence

    lokg = LOKG(BFSRetriever(family), ITTCEncoder(), RecordingReaderDouble(), budget=64)
    records = [
        question_record(lokg.answer(Question(str(i), "who ?", ("x",), (topic,))))
        for i, topic in enumerate(["ghost", "alice", "nobody"])
    ]
    with caplog.at_level("WARNING"):
        assert warn_no_evidence(records, skipped=True) == 2
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        "2 questions had no evidence (unknown topic entity or empty retrieval); "
        "their LLM call was skipped"
    )


@pytest.mark.parametrize("encoder", [ITTCEncoder(), TruncateEncoder()])
def test_budget_scope_prompt_caps_the_whole_prompt(pq2h, encoder):
    reader = RecordingReaderDouble()
    b = 160
    lokg = LOKG(BFSRetriever(pq2h.kg, max_hops=2), encoder, reader, budget=b,
                budget_scope="prompt")  # fmt: skip
    for q in pq2h.questions["test"][:10]:
        out = lokg.answer(q)
        (message,) = out.prompt
        total = count_tokens(message["content"])
        assert total <= b
        overhead = reader.prompt_overhead(q.text)
        assert out.evidence_budget <= b - overhead and out.evidence_tokens <= out.evidence_budget
        rec = question_record(out)
        assert rec.extra["budget_scope"] == "prompt" and rec.extra["budget"] == b
    # the same questions under the paper's scope put up to B tokens of evidence alone
    lokg = LOKG(BFSRetriever(pq2h.kg, max_hops=2), encoder, RecordingReaderDouble(), budget=b)
    out = lokg.answer(pq2h.questions["test"][0])
    assert out.budget_scope == "evidence" and out.evidence_budget == b


def test_budget_scope_prompt_too_small_for_the_template_fails_the_question(family):
    reader = RecordingReaderDouble()
    lokg = LOKG(BFSRetriever(family), ITTCEncoder(), reader, budget=20, budget_scope="prompt")
    with pytest.raises(BudgetExceeded, match="budget 20 leaves no room for evidence; the prompt "
                       r"without evidence already has \d+ tokens"):  # fmt: skip
        lokg.answer(Question("q", "who is alice's spouse ?", ("bob",), ("alice",)))
    assert reader.calls == []


def test_budget_scope_is_checked():
    kg = KnowledgeGraph.from_labeled_triples([("a", "r", "b")])
    with pytest.raises(ValueError, match=r"budget_scope='all'; expected one of \['evidence', "):
        LOKG(BFSRetriever(kg), ITTCEncoder(), ExtractiveReader(), budget_scope="all")


def test_a_budget_failure_is_recorded_and_the_run_goes_on(family, tmp_path):
    from lokg.eval.results import ResultsWriter
    from lokg.eval.runner import run_questions

    reader = RecordingReaderDouble()
    # B = 120 fits the template (92 tokens) with a short question, not with a long one (173)
    lokg = LOKG(BFSRetriever(family), ITTCEncoder(), reader, budget=120, budget_scope="prompt")
    long = "who is the spouse of alice " + "and of her family " * 20 + "?"
    questions = [Question("long", long, ("bob",), ("alice",)),
                 Question("short", "who is alice's spouse ?", ("bob",), ("alice",))]  # fmt: skip
    with ResultsWriter(tmp_path / "results.jsonl") as writer:
        stats = run_questions(
            questions, lambda q: question_record(lokg.answer(q)), writer, progress=False
        )
        records = dict(writer.records)
    assert stats.failed == 1 and len(reader.calls) == 1
    assert records["long"].status == "failed" and "leaves no room for evidence" in (
        records["long"].error
    )
    assert records["short"].status == "ok" and records["short"].extra["budget_scope"] == "prompt"


@pytest.mark.slow
def test_retriever_only_hits1_never_exceeds_coverage_at_any_budget(pq2h, tmp_path):
    # the extractive reader answers from the packed context only: what ITTC dropped under B
    # cannot be its answer, so Hits@1 <= coverage at every B, and B = 1 packs nothing
    from lokg.config import compose_config
    from lokg.taimr.build import build_taimr

    cfg = compose_config("evaluate", ["data=pq2h"], tmp_path)
    retriever = build_taimr(
        pq2h.kg, instantiate(cfg.embedder), train_questions=pq2h.questions["train"],
        attention="uniform", lambda_topo=0.0, relation_linking="chain", k_top_unit="answers",
    )  # fmt: skip
    questions = pq2h.questions["test"][:30]
    seen = []
    for budget in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        lokg = LOKG(retriever, ITTCEncoder(), ExtractiveReader(), budget=budget)
        m = aggregate(question_record(lokg.answer(q)).score() for q in questions)
        assert m["hits@1"] <= m["coverage"], budget
        seen.append((budget, m["hits@1"], m["coverage"]))
    assert seen[0][1:] == (0.0, 0.0)  # B = 1: nothing fits, nothing is answered
    assert seen[-1][1] > 0.8  # and the same reader answers once the evidence fits
