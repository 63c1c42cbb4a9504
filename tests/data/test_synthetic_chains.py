"""Synthetic chain questions over random-word graphs (lokg/data/synthetic_chains.py)."""

from __future__ import annotations

import pytest

from lokg.config import compose_config
from lokg.data.synthetic_chains import SyntheticChainsSource, ask
from lokg.errors import InputError


def test_the_three_compositions_read_as_english():
    chain = ["mother", "home", "mayor"]
    assert ask("nested", "ann", chain) == "what is the mayor of the home of the mother of ann ?"
    assert ask("possessive", "ann", chain, "who is") == "who is ann 's mother 's home 's mayor ?"
    assert ask("mixed", "ann", chain) == "what is the mayor of ann 's mother 's home ?"
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
    with pytest.raises(InputError, match="out_degree=5 exceeds relations=4"):
        SyntheticChainsSource(relations=4, out_degree=5)


def test_the_data_config_builds_the_source(tmp_path):
    cfg = compose_config("train", ["data=synthetic_chains"], tmp_path)
    assert cfg.data.source._target_ == "lokg.data.synthetic_chains.SyntheticChainsSource"
    assert cfg.data.source.questions == 6000


def test_the_shipped_pretraining_adds_the_member_and_the_switches(tmp_path):
    """experiment=pretrain_walk is its ablation experiment=pretrain_walk_bundled with one more
    union member and item 27's switches (docs/design/taimr.md item 28)."""
    base = compose_config("train", ["experiment=pretrain_walk_bundled"], tmp_path)
    cand = compose_config("train", ["experiment=pretrain_walk"], tmp_path)
    assert set(cand.data.source.members) == {*base.data.source.members, "synthetic_chains"}
    switches = ("name_in_key", "token_coverage", "stop_match", "stop_context")
    assert [cand.model[k] for k in switches] == [False, True, True, False]
    assert [base.model[k] for k in switches] == [True, False, False, True]
    assert cand.model.relation_source == base.model.relation_source == "none"
