"""KAPING's pool, ranking and verbalisation, and the oracle / none references, by hand."""

from __future__ import annotations

import pytest

from lokg.baselines.kaping import KAPINGEncoder, KAPINGRetriever, kaping_line
from lokg.baselines.references import NoEvidenceRetriever, OracleRetriever
from lokg.errors import InputError
from lokg.pipeline import LOKG
from lokg.tokens import count_tokens
from lokg.typing import Question


def tid(kg, h, r, t) -> int:
    rows = kg.triples_np.tolist()
    return rows.index([kg.entities[h], kg.relations[r], kg.entities[t]])


Q = Question("q1", "who is the spouse of alice ?", ("bob",), ("alice",),
             (("alice", "spouse", "bob"),))  # fmt: skip


def test_kaping_verbalises_a_triple_as_its_paper_does(family):
    assert kaping_line(family, family.triples_np[tid(family, "alice", "spouse", "bob")]) == (
        "(alice, spouse, bob)"
    )


def test_kaping_pool_is_one_hop_out_and_ranked_by_word_overlap(family, bag_embedder):
    ret = KAPINGRetriever(family, bag_embedder, max_hops=1, k_top=2, pool_limit=200)
    out = ret.retrieve(Q)
    # pool: alice's three out-edges; not bob's nationality (2 hops), not carol's in-edge.
    assert out.extra["pool"] == 3
    # question words {who, is, the, spouse, of, alice}; "(alice, spouse, bob)" shares 2 of 3
    # words: 2/sqrt(6*3) = 0.4714; the other two share 1: 1/sqrt(18) = 0.2357 (tie: pool order)
    spouse = tid(family, "alice", "spouse", "bob")
    assert out.triple_ids[0] == spouse and len(out.triple_ids) == 2
    assert out.paths[0].s_final == pytest.approx(2 / 18**0.5, abs=1e-6)
    assert out.paths[1].s_final == pytest.approx(1 / 18**0.5, abs=1e-6)
    assert out.answers[0].label == "bob"


def test_kaping_pool_limit_and_embeddings_computed_once_per_triple(family, bag_embedder):
    ret = KAPINGRetriever(family, bag_embedder, max_hops=1, k_top=20, pool_limit=2)
    assert ret.retrieve(Q).extra["pool"] == 2
    n_first = len(bag_embedder.encoded)  # 2 triples + 1 question
    assert n_first == 3
    ret.retrieve(Q)
    assert len(bag_embedder.encoded) == n_first + 1  # only the question again


def test_kaping_encoder_lines_in_rank_order_cut_at_a_line_boundary(family):
    ids = [tid(family, "alice", "spouse", "bob"), tid(family, "alice", "birthplace", "paris")]
    enc = KAPINGEncoder()
    full = enc.encode(family, ids, budget=1000)
    assert full.text == "(alice, spouse, bob)\n(alice, birthplace, paris)"
    first = count_tokens("(alice, spouse, bob)")
    cut = enc.encode(family, ids, budget=first)
    assert cut.text == "(alice, spouse, bob)" and cut.num_tokens == first <= cut.budget
    assert cut.naive_tokens == full.num_tokens


def test_oracle_gives_the_gold_path_triples_only(family):
    q = Question("q2", "what is the nationality of alice 's spouse ?", ("france",), ("alice",),
                 (("alice", "spouse", "bob"), ("bob", "nationality", "france")))  # fmt: skip
    out = OracleRetriever(family).retrieve(q)
    assert list(out.triple_ids) == [
        tid(family, "alice", "spouse", "bob"),
        tid(family, "bob", "nationality", "france"),
    ]
    assert out.top_answer == "france" and out.extra["gold_triples_in_kg"] == 2


def test_oracle_refuses_a_dataset_without_gold_paths(family):
    with pytest.raises(InputError, match="baseline=oracle needs the gold path"):
        OracleRetriever(family).retrieve(Question("q3", "who ?", ("bob",), ("alice",)))


def test_none_sends_the_question_alone_in_one_call(family, reader_double):
    from lokg.baselines.kaping import KAPINGEncoder as Enc

    lokg = LOKG(NoEvidenceRetriever(family), Enc(), reader_double, budget=64,
                answer_without_evidence=True)  # fmt: skip
    out = lokg.answer(Q)
    assert out.context.text == "" and out.no_evidence and out.accounting["calls"] == 1
    assert reader_double.seen == [(Q.text, "")]
