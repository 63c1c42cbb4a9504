"""bench/bench_retrieval.py: a row's walk model is the best-on-val artifact trained with the
default ``model`` config and only the row's switch changed (older training settings never
stand for a row)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lokg.artifacts import default_walk_model
from lokg.taimr.walk.artifact import default_walk_settings

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))  # the bench imports its sibling _data.py
    spec = importlib.util.spec_from_file_location(
        "lokg_bench_retrieval", BENCH / "bench_retrieval.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _artifact(root: Path, name: str, model: dict, best: float) -> Path:
    d = root / name
    d.mkdir(parents=True)
    OmegaConf.save(OmegaConf.create({"model": model}), d / "config.yaml")
    (d / "qgat.json").write_text(json.dumps({"best_value": best, "architecture": {}}))
    return d


def test_rows_use_the_default_training_config_with_their_switch(bench, tmp_path):
    default = default_walk_settings()
    root = tmp_path / "pql3h-0123"
    mine = _artifact(root, "qgat-a", default, 0.90)
    _artifact(root, "qgat-b", {**default, "min_steps": default["min_steps"] * 2}, 1.00)
    free = _artifact(root, "qgat-c", {**default, "relation_source": "learned"}, 0.95)
    free_better = _artifact(root, "qgat-d", {**default, "relation_source": "learned"}, 0.97)
    # qgat-b scored higher but was trained with other settings: not the default row's model
    assert bench.walk_model_dir(root, {}) == mine
    # among models with the row's switch, the best on val
    assert bench.walk_model_dir(root, {"relation_source": "learned"}) == free_better != free
    with pytest.raises(SystemExit, match=r"model\.question_encoder=frozen.*data=pql3h"):
        bench.walk_model_dir(root, {"question_encoder": "frozen"})


def test_retriever_learned_uses_the_default_settings_model_not_the_latest(tmp_path, caplog):
    """``retriever=learned`` without ``retriever.model_dir`` (evaluate.py's default): a model
    trained for an ablation after the default one does not stand in for it; with no model of
    the default settings, the latest stands, with a warning naming it."""
    default = default_walk_settings()
    root = tmp_path / "pql3h-0123"
    mine = _artifact(root, "qgat-a", default, 0.90)
    ablation = _artifact(root, "qgat-b", {**default, "normalization": "node"}, 0.99)
    (root / "qgat.latest").write_text(ablation.name)  # trained last
    assert default_walk_model(root) == mine
    other = tmp_path / "pql2h-0456"
    only = _artifact(other, "qgat-c", {**default, "name_match": False}, 0.5)
    (other / "qgat.latest").write_text(only.name)
    with caplog.at_level("WARNING", logger="lokg.artifacts"):
        assert default_walk_model(other) == only
    assert "trained with the default settings" in caplog.text and "qgat-c" in caplog.text


def test_a_second_test_report_is_refused_before_anything_is_measured(bench, tmp_path, monkeypatch):
    from lokg.eval.ledger import LedgerEntry, TestLedger
    from lokg.evaluate import ledger_key

    monkeypatch.setenv("LOKG_ROOT", str(tmp_path))
    ledger = tmp_path / "test_ledger.jsonl"
    monkeypatch.setattr(bench, "LEDGER", ledger)

    def must_not_run(*_a, **_k):  # a test double: the refusal comes first
        raise AssertionError("measured a configuration the ledger already holds")

    monkeypatch.setattr(bench, "measure_row", must_not_run)
    cfg = bench.row_config("pq2h", "paper", "test", 128)
    TestLedger(ledger).append(
        LedgerEntry("bench_retrieval", "paper", "pq2h", ledger_key(cfg).hash, {"hits@1": 0.5})
    )
    argv = ["bench_retrieval.py", "--data", "pq2h", "--rows", "paper", "--split", "test"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(Exception, match=r"paper on pq2h: its test split was already reported"):
        bench.main()
    # the held-out-template split is another configuration
    other = bench.row_config("pq2h", "paper", "test", 128, group_by="template")
    assert ledger_key(other) != ledger_key(cfg)
