"""Every method's evidence is at most B tokens, over randomised graphs, candidates and budgets."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lokg.baselines.kaping import KAPINGEncoder, KAPINGRetriever
from lokg.baselines.llmlingua import LLMLinguaEncoder
from lokg.baselines.references import OracleRetriever
from lokg.baselines.tog import ToGEncoder
from lokg.ittc import TruncateEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.pipeline import LOKG
from lokg.tokens import count_tokens
from lokg.typing import Question

NAMES = st.sampled_from(["alice", "bob", "carol_de_la_vega", "paris", "x", "ülrich", "a_b_c"])
RELS = st.sampled_from(["spouse", "people.person.nationality", "born_in", "r"])
TRIPLES = st.lists(st.tuples(NAMES, RELS, NAMES), min_size=1, max_size=25)


class EchoCompressorDouble(LLMLinguaEncoder):
    """Test double: a "compressor" that returns its input, so the cut after it does the work."""

    def compress(self, lines, target):
        return "".join(lines)


ENCODERS = [KAPINGEncoder(), ToGEncoder(), TruncateEncoder(), EchoCompressorDouble()]


@settings(max_examples=40, deadline=None)
@given(TRIPLES, st.integers(1, 80), st.randoms(use_true_random=False))
def test_every_baseline_encoder_fits_b(triples, budget, rnd):
    kg = KnowledgeGraph.from_labeled_triples(triples)
    ids = list(range(kg.num_triples))
    rnd.shuffle(ids)
    for enc in ENCODERS:
        ctx = enc.encode(kg, ids, budget=budget)
        assert ctx.num_tokens == count_tokens(ctx.text) <= budget, type(enc).__name__


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(TRIPLES, st.integers(1, 60))
def test_pipeline_evidence_fits_b_for_kaping_and_oracle(bag_embedder, reader_double, triples,
                                                        budget):  # fmt: skip
    kg = KnowledgeGraph.from_labeled_triples(triples)
    h, r, t = triples[0]
    q = Question("q", f"what is the {r} of {h} ?", (t,), (h,), ((h, r, t),))
    for retriever, encoder in ((KAPINGRetriever(kg, bag_embedder), KAPINGEncoder()),
                               (OracleRetriever(kg), TruncateEncoder())):  # fmt: skip
        out = LOKG(retriever, encoder, reader_double, budget=budget).answer(q)
        assert out.evidence_tokens == count_tokens(out.context.text) <= budget


@settings(max_examples=40, deadline=None)
@given(TRIPLES, st.integers(1, 120), st.integers(0, 5), st.integers(1, 4))
def test_graphrag_local_tables_fit_their_share(triples, budget, mapped, top_k):
    from lokg.baselines.graphrag import degrees, local_tables
    from lokg.tokens import get_tokenizer

    kg = KnowledgeGraph.from_labeled_triples(triples)
    ids = list(range(kg.num_triples))
    selected = list(range(min(mapped, kg.num_entities)))
    tok = get_tokenizer()
    tables = local_tables(
        kg, ids, selected, degree=degrees(kg, ids), max_tokens=budget, top_k_relationships=top_k,
        tokenizer=tok,
    )  # fmt: skip
    assert tok.count(tables.text) <= budget
    assert tables.covered <= len(selected) and len(tables.entities) <= len(selected)
