"""bench/bench_questions.py: the ``answerable`` group (a gold answer within L steps of a topic
in the question's own pool) and tokens per recalled answer, by hand; and the answer GAT's
rows pin the ``rerank-*`` artifact trained on the row's walk with the row's switch."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lokg.eval.results import QuestionResult
from lokg.kg.graph import KnowledgeGraph
from lokg.typing import Question

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load(name: str):
    sys.path.insert(0, str(BENCH))  # the benches import their sibling _data.py
    spec = importlib.util.spec_from_file_location(f"lokg_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _load("bench_questions")


def test_an_answer_three_steps_away_is_answerable_and_four_is_not(bench):
    kg = KnowledgeGraph.from_labeled_triples(
        [("a", "r", "b"), ("c", "r", "b"), ("c", "r", "d"), ("e", "r", "d")]
    )
    assert bench.answerable(kg, Question("q", "?", ("D",), ("a",)))  # a-b-c-d, either way
    assert not bench.answerable(kg, Question("q", "?", ("e",), ("a",)))  # four steps
    assert not bench.answerable(kg, Question("q", "?", ("d",), ("x",)))  # topic not in pool


def test_an_answer_anywhere_in_the_pool_is_in_the_pool_however_far_or_disconnected(bench):
    kg = KnowledgeGraph.from_labeled_triples([("a", "r", "b"), ("c", "r", "d")])
    assert bench.answer_in_pool(kg, Question("q", "?", ("D",), ("a",)))  # no path from a
    assert not bench.answer_in_pool(kg, Question("q", "?", ("e",), ("a",)))


def test_tokens_per_recalled_answer_divides_all_tokens_by_the_answers_recalled(bench):
    def record(qid, gold, context, tokens):
        return QuestionResult(
            id=qid, question="?", gold=gold, predictions=[gold[0]], output=gold[0],
            context=context, t_after=tokens,
        )  # fmt: skip

    # q1: 4 gold answers, 2 in its 40 tokens; q2: 2 gold answers, both in its 20 tokens
    records = [
        record("q1", ["alpha", "beta", "gamma", "delta"], "alpha | r | beta", 40),
        record("q2", ["eta", "theta"], "eta | r | theta", 20),
    ]
    out = bench.group_metrics(records, {"many": ["q1", "q2"]}, {"q1": 4, "q2": 2})["many"]
    assert out["answer_recall"] == pytest.approx((0.5 + 1.0) / 2)
    assert out["tok/answer"] == pytest.approx(60 / 4)
    assert out["tok/q"] == pytest.approx(30) and out["n"] == 2


def test_an_answer_gat_row_uses_the_artifact_trained_on_its_walk_with_its_switch(tmp_path):
    retrieval = _load("bench_retrieval")
    walk, other = tmp_path / "qgat-a", tmp_path / "qgat-b"
    walk.mkdir()
    other.mkdir()

    def artifact(name: str, walk_dir: Path, value: float, **change) -> Path:
        d = tmp_path / name
        d.mkdir()
        model = {**OmegaConf.load(BENCH.parent / "configs/model/rerank.yaml").model, **change}
        OmegaConf.save(OmegaConf.create({"model": model}), d / "config.yaml")
        meta = {"walk_dir": str(walk_dir), "best_value": value}
        (d / "rerank.json").write_text(json.dumps(meta), encoding="utf-8")
        return d

    default = artifact("rerank-1", walk, 0.5)
    artifact("rerank-2", other, 0.9)  # better, but on another walk's candidates
    flat = artifact("rerank-3", walk, 0.4, layers=0)
    assert retrieval.rerank_model_dir(tmp_path, walk, {}) == default
    assert retrieval.rerank_model_dir(tmp_path, walk, {"layers": 0}) == flat
    with pytest.raises(SystemExit, match="experiment=train_rerank"):
        retrieval.rerank_model_dir(tmp_path, walk, {"use_transe": False})


def test_the_gat_split_answer_gat_row_rescores_the_gat_split_walk_and_the_others_the_default():
    rows = _load("bench_retrieval").ROWS
    assert rows["learned, GAT split + answer GAT"][1] == rows["learned, GAT split"][1]
    assert rows["learned, GAT split"][1] == {"graph_context": True}
    assert rows["learned + answer GAT"][1] == rows["learned"][1] == {}
