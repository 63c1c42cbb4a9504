"""The test ledger's hash of a configuration (:func:`lokg.evaluate.ledger_key`): a config key
added later (:data:`lokg.evaluate.NEUTRAL_KEYS`) leaves the hash as it was at the value that
runs as before it existed, with ``auto`` resolved for the run's walk and graph and
``anchor_answers`` for the split's questions."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from omegaconf import open_dict

import lokg.evaluate as evaluate
from lokg.config import compose_config
from lokg.evaluate import ledger_key
from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.walk.artifact import META_FILE
from lokg.taimr.walk.retriever import by_length_in_effect
from lokg.typing import Question


@pytest.fixture
def learned(tmp_path, monkeypatch):
    """``evaluate`` composed for PQ-2H with ``retriever=learned`` and a walk directory; one
    ``by_length`` and one ``anchor_answers`` per call (``None``: the configuration as it was
    before the key existed; ``anchor_answers`` is left out unless given)."""
    monkeypatch.setenv("LOKG_ROOT", str(tmp_path))
    walk = tmp_path / "pq2h-4c95efd5fe48" / "qgat-1"

    def compose(by_length: str | None, anchor_answers: str | None = None):
        over = ["data=pq2h", "retriever=learned", "split=test", f"retriever.model_dir={walk}"]
        cfg = compose_config("evaluate", over, str(tmp_path))
        with open_dict(cfg):
            if by_length is None:
                del cfg.retriever["by_length"]
            else:
                cfg.retriever.by_length = {"true": True, "false": False}.get(by_length, by_length)
            if anchor_answers is None:
                del cfg.retriever["anchor_answers"]
            else:
                cfg.retriever.anchor_answers = anchor_answers
        return cfg

    return compose


def test_by_length_at_its_neutral_value_keeps_the_hash_of_before(learned):
    before = ledger_key(learned(None))
    off = ledger_key(learned("false"))
    assert off.hash == before.hash and off.earlier != ()  # the 2026-12-07 hash: an earlier one
    on = ledger_key(learned("true"))
    assert on.hash != before.hash and on.earlier == ()  # written as it runs: one hash


def test_by_length_auto_is_keyed_as_the_run_takes_it(learned, monkeypatch):
    """``auto`` resolves through the run's graph artifacts (a test double here: a graph
    without artifacts to load) and :func:`by_length_in_effect` (a double saying off, then
    on): off keys as before the key existed, on as ``true``; either way the hash ``auto``
    had is an earlier hash."""
    seen = []
    double = SimpleNamespace(walk_dir="qgat-1", kg="graph")
    monkeypatch.setattr(evaluate, "graph_artifacts", lambda cfg, dm, plan: double)
    for value, written in ((False, None), (True, "true")):
        monkeypatch.setattr(evaluate, "_IN_EFFECT", {})
        monkeypatch.setattr(
            evaluate, "by_length_in_effect", lambda b, d, kg, v=value: seen.append((b, d, kg)) or v
        )
        auto = ledger_key(learned("auto"), datamodule="prepared")
        assert auto.hash == ledger_key(learned(written)).hash
        assert len(auto.earlier) == 1 and auto.earlier[0] != auto.hash
    assert seen == [("auto", "qgat-1", "graph")] * 2


def test_by_length_in_effect_reads_the_walks_vocabulary_and_dataset(tmp_path):
    """The KG's own walk (its relations, a ``<data>-<fp>`` dataset): off; the same relations
    adapted without answers, or another graph's walk: on; ``true`` / ``false`` as written."""
    kg = KnowledgeGraph.from_labeled_triples([("a", "father", "b"), ("b", "born_in", "c")])

    def walk(dataset: str, relations: list[str]):
        d = tmp_path / dataset / "qgat-1"
        d.mkdir(parents=True)
        (d / META_FILE).write_text(json.dumps({"relations": relations}), encoding="utf-8")
        return d

    own = walk("pq2h-4c95efd5fe48", list(kg.relations.labels))
    assert by_length_in_effect("auto", own, kg) is False
    assert by_length_in_effect(True, own, kg) is True
    adapted = walk("kg_chains_pq2h-cbfdecf291a6", list(kg.relations.labels))
    assert by_length_in_effect("auto", adapted, kg) is True
    other = walk("pretrain-61143e371e28", ["mother"])
    assert by_length_in_effect("auto", other, kg) is True and not by_length_in_effect(
        False, other, kg
    )


def _split_of(*topic_sets):
    """A test double of a prepared datamodule: its test split's questions, one per set of
    topic entities."""
    qs = [Question(f"q{i}", "?", ("x",), tuple(t)) for i, t in enumerate(topic_sets)]
    return SimpleNamespace(questions={"test": qs})


def test_anchor_answers_is_neutral_on_a_split_without_two_topic_entities(learned, monkeypatch):
    """``last`` reorders only a join of several anchors: on a split whose questions name one
    topic entity each it keys as before the key existed, and the lines keyed with
    ``by_length`` written and no ``anchor_answers`` (2026-12-07) are an earlier hash."""
    monkeypatch.setattr(evaluate, "_IN_EFFECT", {})
    chains = _split_of(["a"], ["b"])
    last = ledger_key(learned("false", "last"), datamodule=chains)
    assert last.hash == ledger_key(learned(None)).hash  # neither key: the hash of before
    assert ledger_key(learned("false")).hash == last.hash
    assert set(ledger_key(learned("false")).earlier) < set(last.earlier)
    assert ledger_key(learned("false", "scored")).hash == last.hash


def test_anchor_answers_on_a_split_that_joins_is_a_new_configuration(learned, monkeypatch):
    """A question naming two topic entities: ``last`` enters the hash, and the lines keyed
    before it existed (measured as ``scored``) are not earlier hashes of it."""
    monkeypatch.setattr(evaluate, "_IN_EFFECT", {})
    joins = _split_of(["a"], ["a", "b"])
    last = ledger_key(learned("false", "last"), datamodule=joins)
    before = ledger_key(learned("false"))
    assert last.hash != before.hash
    assert before.hash not in last.earlier and not set(before.earlier) & set(last.earlier)
    monkeypatch.setattr(evaluate, "_IN_EFFECT", {})
    scored = ledger_key(learned("false", "scored"), datamodule=joins)
    assert scored.hash == before.hash
    union = learned("false", "last")
    with open_dict(union):
        union.retriever.anchors = "union"  # no join: last changes nothing
    monkeypatch.setattr(evaluate, "_IN_EFFECT", {})
    no_join = ledger_key(union, datamodule=joins)
    with open_dict(union):
        del union.retriever["anchor_answers"]
    assert no_join.hash == ledger_key(union).hash


def test_a_shipped_walk_is_keyed_by_its_training_data(tmp_path, monkeypatch):
    """Every walk shipped in the package is a directory named ``pretrained``: the key names it
    ``pretrained@<record.json's data.prepared>``, so a walk shipped again is a new
    configuration; for a walk of ``SHIPPED_BY_NAME`` (keyed by the name alone before) that
    older hash is an earlier one, so its lines are still found."""
    monkeypatch.setenv("LOKG_ROOT", str(tmp_path))

    def key(walk):
        over = ["data=pq2h", "retriever=learned", "split=test", f"retriever.model_dir={walk}",
                "retriever.by_length=false"]  # fmt: skip
        return ledger_key(compose_config("evaluate", over, str(tmp_path)))

    def shipped(where, prepared):
        walk = tmp_path / where / "pretrained"
        walk.mkdir(parents=True)
        (walk / "record.json").write_text(json.dumps({"data": {"prepared": prepared}}))
        return walk

    by_name = key(tmp_path / "plain" / "pretrained")  # no record: the directory's name alone
    old, new = shipped("old", "pretrain-aaa"), shipped("new", "pretrain-bbb")
    assert len({by_name.hash, key(old).hash, key(new).hash}) == 3
    assert by_name.hash not in key(old).earlier
    monkeypatch.setattr(evaluate, "SHIPPED_BY_NAME", frozenset({"pretrain-aaa"}))
    assert by_name.hash in key(old).earlier and by_name.hash not in key(new).earlier
    (new / "record.json").write_text("{}")  # a record without its data: named as before
    assert key(new).hash == by_name.hash
