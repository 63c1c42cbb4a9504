"""The test ledger's hash of a configuration (:func:`lokg.evaluate.ledger_key`): a config key
added later (:data:`lokg.evaluate.NEUTRAL_KEYS`) leaves the hash as it was at the value that
runs as before it existed, with ``auto`` resolved for the run's walk and graph."""

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


@pytest.fixture
def learned(tmp_path, monkeypatch):
    """``evaluate`` composed for PQ-2H with ``retriever=learned`` and a walk directory; one
    ``by_length`` per call."""
    monkeypatch.setenv("LOKG_ROOT", str(tmp_path))
    walk = tmp_path / "pq2h-4c95efd5fe48" / "qgat-1"

    def compose(by_length: str | None):
        over = ["data=pq2h", "retriever=learned", "split=test", f"retriever.model_dir={walk}"]
        cfg = compose_config("evaluate", over, str(tmp_path))
        with open_dict(cfg):
            if by_length is None:  # the configuration as it was before the key existed
                del cfg.retriever["by_length"]
            else:
                cfg.retriever.by_length = {"true": True, "false": False}.get(by_length, by_length)
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
