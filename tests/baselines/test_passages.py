"""Text evidence under B (GraphRAG's reports, LLMLingua's output) and the per-question ledger
of a method's own calls, through the pipeline."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lokg.baselines.kaping import KAPINGEncoder
from lokg.ittc.passages import cut_to_budget, encode_passages
from lokg.llm.accounting import add_accounting
from lokg.pipeline import LOKG
from lokg.retrieval import RetrievalResult, Retriever, resolve_topics
from lokg.tokens import count_tokens, get_tokenizer
from lokg.typing import Question

TOK = get_tokenizer()
Q = Question("q1", "who is the spouse of alice ?", ("bob",), ("alice",))


def test_cut_keeps_whole_lines_then_whole_words():
    text = "alpha beta gamma\ndelta epsilon zeta eta"
    assert cut_to_budget(TOK, text, 1000) == text
    first = count_tokens("alpha beta gamma")
    assert cut_to_budget(TOK, text, first) == "alpha beta gamma"
    two_more = count_tokens("alpha beta gamma\ndelta epsilon")
    assert cut_to_budget(TOK, text, two_more) == "alpha beta gamma\ndelta epsilon"
    assert cut_to_budget(TOK, "alpha beta gamma", count_tokens("alpha beta")) == "alpha beta"


def test_passages_whole_in_rank_order_and_stop_at_the_first_overflow():
    p = ["report one: alice married bob.", "report two: bob is french.", "r3"]
    two = count_tokens(p[0] + "\n\n" + p[1])
    ctx = encode_passages(TOK, p, two)
    assert ctx.text == p[0] + "\n\n" + p[1] and ctx.num_tokens == two
    assert ctx.naive_tokens == count_tokens("\n\n".join(p)) and ctx.solver == "passages"
    # GraphRAG's builder stops at the first report that overflows (r3 would fit, is not used)
    assert encode_passages(TOK, p, two + 1).text == ctx.text
    # not even the first fits: it is cut
    assert encode_passages(TOK, p, 3).text == cut_to_budget(TOK, p[0], 3)


def test_accounting_sums_key_by_key():
    a = {"calls": 3, "prompt_tokens": 100, "completion_tokens": 9}
    b = {"calls": 1, "prompt_tokens": 50, "completion_tokens": 2, "cached_calls": 1}
    assert add_accounting(a, None, b) == {
        "calls": 4, "prompt_tokens": 150, "completion_tokens": 11, "cached_calls": 1,
    }  # fmt: skip


class PassageRetrieverDouble(Retriever):
    """Retriever test double: fixed passages and a fixed ledger of its own calls."""

    def __init__(self, kg, passages, accounting):
        self.kg, self.passages, self.accounting = kg, passages, accounting

    def retrieve(self, question):
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        return RetrievalResult(self.kg, topics=topics, unknown_topics=unknown,
                               passages=self.passages, accounting=self.accounting)  # fmt: skip


def test_pipeline_adds_the_methods_calls_and_places_passages_under_b(family, reader_double):
    own = {"calls": 5, "prompt_tokens": 700, "completion_tokens": 40}
    ret = PassageRetrieverDouble(family, ["alice married bob.", "bob is french."], own)
    out = LOKG(ret, KAPINGEncoder(), reader_double, budget=6).answer(Q)
    assert out.context.text == "alice married bob." and out.evidence_tokens <= 6
    reader_tokens = count_tokens(out.prompt[0]["content"])
    assert out.accounting["calls"] == 6
    assert out.accounting["prompt_tokens"] == 700 + reader_tokens
    assert out.accounting["completion_tokens"] == 41


WORD = st.text(alphabet="abcdefghij ,.()é\n", min_size=0, max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(WORD, max_size=8), st.integers(1, 40))
def test_text_evidence_never_exceeds_b(passages, budget):
    ctx = encode_passages(TOK, passages, budget)
    assert ctx.num_tokens == count_tokens(ctx.text) <= budget
    cut = cut_to_budget(TOK, "\n".join(passages), budget)
    assert count_tokens(cut) <= budget
