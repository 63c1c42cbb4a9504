"""Synthetic chain questions over random-word graphs (lokg/data/synthetic_chains.py)."""

from __future__ import annotations

import numpy as np
import pytest

from lokg.config import compose_config
from lokg.data.synthetic_chains import (
    PARAPHRASE_BAND,
    SyntheticChainsSource,
    ask,
    paraphrase_table,
    read_paraphrases,
)
from lokg.errors import InputError


def test_the_three_compositions_read_as_english():
    chain = ["mother", "home", "mayor"]
    assert ask("nested", "ann", chain) == "what is the mayor of the home of the mother of ann ?"
    assert ask("possessive", "ann", chain, "who is") == "who is ann 's mother 's home 's mayor ?"
    assert ask("mixed", "ann", chain) == "what is the mayor of ann 's mother 's home ?"
    # mixed_at="any": the turn from possessive to nested after any hop but the last
    assert (
        ask("mixed", "ann", chain, possessive=1)
        == "what is the mayor of the home of ann 's mother ?"
    )
    with pytest.raises(ValueError, match="1 <= possessive < 3"):
        ask("mixed", "ann", chain, possessive=3)
    with pytest.raises(ValueError, match="two relations or more"):
        ask("mixed", "ann", ["mother"])


def small() -> SyntheticChainsSource:
    return SyntheticChainsSource(graphs=3, entities=20, relations=4, out_degree=2, questions=200)


def test_every_question_is_answered_by_its_chain_on_the_graph():
    """The gold path is a walk on the graph from the topic; the answers are exactly the
    entities the chain of its relations reaches (set semantics); (topic, chain) is unique."""
    raw = small().load()
    triples = {raw.kg.labeled(i) for i in range(raw.kg.num_triples)}
    questions = raw.questions["train"] + raw.questions["val"]
    assert raw.questions["test"] == [] and questions
    seen = set()
    for q in questions:
        chain = [r for _, r, _ in q.gold_path]
        assert 1 <= len(chain) <= 3 and q.gold_path[0][0] == q.topic_entities[0]
        assert all(t in triples for t in q.gold_path)
        assert all(a[2] == b[0] for a, b in zip(q.gold_path, q.gold_path[1:], strict=False))
        frontier = {q.topic_entities[0]}
        for r in chain:
            frontier = {t for h, rr, t in triples if rr == r and h in frontier}
        assert set(q.answers) == frontier
        assert all(r.split(".", 1)[1] in q.text for r in chain)
        assert (q.topic_entities, tuple(chain)) not in seen
        seen.add((q.topic_entities, tuple(chain)))


def test_the_draw_is_fixed_by_the_seed():
    a, b = small().load(), small().load()
    assert [q.text for q in a.questions["train"]] == [q.text for q in b.questions["train"]]
    other = SyntheticChainsSource(graphs=3, entities=20, relations=4, out_degree=2,
                                  questions=200, seed=1).load()  # fmt: skip
    assert [q.text for q in other.questions["train"]] != [q.text for q in a.questions["train"]]
    assert small().fingerprint() != SyntheticChainsSource(graphs=4).fingerprint()


def test_bad_settings_name_the_key():
    with pytest.raises(InputError, match=r"data.source.graphs=0; expected a whole number >= 1"):
        SyntheticChainsSource(graphs=0)
    with pytest.raises(InputError, match=r"data.source.mixed_at='first'; expected 'last' or 'any'"):
        SyntheticChainsSource(mixed_at="first")
    with pytest.raises(InputError, match="out_degree=5 exceeds relations=4"):
        SyntheticChainsSource(relations=4, out_degree=5)


def test_the_data_config_builds_the_source(tmp_path):
    cfg = compose_config("train", ["data=synthetic_chains"], tmp_path)
    assert cfg.data.source._target_ == "lokg.data.synthetic_chains.SyntheticChainsSource"
    assert cfg.data.source.questions == 6000


def test_the_shipped_pretraining_adds_the_member_and_the_switches(tmp_path):
    """experiment=pretrain_walk is its ablation experiment=pretrain_walk_bundled with one more
    union member and item 27's switches (docs/design/taimr.md item 28), whose questions are
    paraphrased and mixed at any hop; experiment=pretrain_walk_verbatim differs from it in
    those two settings alone (item 34)."""
    base = compose_config("train", ["experiment=pretrain_walk_bundled"], tmp_path)
    cand = compose_config("train", ["experiment=pretrain_walk"], tmp_path)
    assert set(cand.data.source.members) == {*base.data.source.members, "synthetic_chains"}
    switches = ("name_in_key", "token_coverage", "stop_match", "stop_context")
    assert [cand.model[k] for k in switches] == [False, True, True, False]
    assert [base.model[k] for k in switches] == [True, False, False, True]
    assert cand.model.relation_source == base.model.relation_source == "none"
    verbatim = compose_config("train", ["experiment=pretrain_walk_verbatim"], tmp_path)
    shipped = cand.data.source.members.synthetic_chains.source
    ablated = verbatim.data.source.members.synthetic_chains.source
    assert (shipped.paraphrase, shipped.mixed_at) == (0.3, "any")
    assert (ablated.paraphrase, ablated.mixed_at) == (0.0, "last")
    assert {**shipped, "paraphrase": 0.0, "mixed_at": "last"} == {**ablated}
    assert verbatim.model == cand.model


def test_paraphrases_are_near_the_word_but_not_its_inflections():
    """paraphrase_table by hand: unit vectors at known cosines to the word "mother"."""
    word = np.array([[1.0, 0.0]])
    at = lambda c: [c, float(np.sqrt(1 - c * c))]  # noqa: E731 - a vector at cosine c
    pool = ["mother", "mothers", "mom", "parent", "chair", "dad"]
    vectors = np.array([at(1.0), at(0.9), at(0.7), at(0.6), at(0.1), at(0.5)])
    table = paraphrase_table(["mother"], word, pool, vectors, band=(0.45, 0.8), per_word=2)
    # "mother" itself and "mothers" are above the band (and inflections), "chair" below it;
    # two per word: the nearest two of mom 0.7, parent 0.6, dad 0.5
    assert table == {"mother": [("mom", 0.7), ("parent", 0.6)]}
    # a shared 4-letter prefix is an inflection even inside the band
    assert paraphrase_table(["mother"], word, ["mothering"], np.array([at(0.6)])) == {}


def test_the_shipped_paraphrases_read_back_and_stay_in_the_band():
    table = read_paraphrases()
    assert len(table) == 3000
    lo, hi = PARAPHRASE_BAND
    assert all(lo <= c <= hi and p != w for w, ps in table.items() for p, c in ps)  # 3 places


def test_a_paraphrased_hop_names_no_other_relation_of_its_graph():
    """With paraphrase=1 every hop that has a usable paraphrase is asked by it; the question
    still answers by its gold path, and a paraphrase is never another relation's word or listed
    nearer to another relation word of the graph."""
    para = SyntheticChainsSource(graphs=3, entities=20, relations=4, out_degree=2,
                                 questions=200, paraphrase=1.0).load()  # fmt: skip
    table = read_paraphrases()
    graph_words = {}  # entity -> the relation words of its graph
    for i in range(para.kg.num_triples):
        h, r, _ = para.kg.labeled(i)
        graph_words.setdefault(h, set()).add(r.split(".", 1)[1])
    reworded = 0
    for q in para.questions["train"] + para.questions["val"]:
        words = [r.split(".", 1)[1] for _, r, _ in q.gold_path]
        for w in words:
            if f" {w} " in f" {q.text} ":
                continue
            reworded += 1
            near = dict(table[w])
            used = [p for p in near if f" {p} " in f" {q.text} "]
            assert used, q.text
            others = graph_words[q.topic_entities[0]] - {w}
            assert all(dict(table.get(o, [])).get(p, -1) < near[p] for p in used for o in others)
    assert reworded > 0
    assert SyntheticChainsSource(paraphrase=0.3).fingerprint() != small().fingerprint()
    # off by default, and then not recorded: sets made before the switch keep their hash
    assert "paraphrase" not in small().config()
    with pytest.raises(InputError, match=r"data.source.paraphrase=2; expected 0 <= x <= 1"):
        SyntheticChainsSource(paraphrase=2)
