"""The answer GAT's offline stage end to end on a tiny custom dataset (issue 28 §3): a walk
trained by train.py, the answer GAT trained on its candidates by train.py (the joint items of
the train and val questions, labelled by the gold answers' names), exported beside the walk,
and read back by ``retriever=learned_gat`` in evaluate.py."""

from __future__ import annotations

import json

import hydra
import pytest

from lokg.evaluate import run as evaluate
from lokg.pipeline import LOKG
from lokg.taimr.walk.rerank import META_FILE
from lokg.train import run as train

from ..fixtures import toy_kg

SPLITS = {
    "train": [("t1", "alice", "france"), ("t2", "dave", "spain"), ("t3", "frank", "italy")],
    "val": [("v1", "dave", "spain")],
    "test": [("s1", "alice", "france"), ("s2", "frank", "italy")],
}


@pytest.mark.slow
def test_train_rerank_learns_from_the_walks_candidates_and_evaluate_reads_it(make_cfg, tmp_path):
    data = toy_kg.custom_data_overrides(
        *toy_kg.write_custom_dataset(tmp_path, toy_kg.COUPLES, toy_kg.spouse_questions(SPLITS))
    )
    common = [*data, "scos=off", "trainer.enable_progress_bar=false", "~logger"]
    walk = train(make_cfg("train", [
        "experiment=train_walk", *common, "model.relation_source=learned",
        "model.question_encoder=frozen", "model.min_steps=0", "trainer.max_epochs=2",
    ]))["walk_dir"]  # fmt: skip
    out = train(make_cfg("train", ["experiment=train_rerank", *common, "trainer.max_epochs=2"]))
    rerank = out["rerank_dir"]
    assert rerank.parent == walk.parent and rerank.name.startswith("rerank-")
    meta = json.loads((rerank / META_FILE).read_text(encoding="utf-8"))
    assert meta["walk_dir"] == str(walk)
    # every training and validation question had candidates, each with its gold one
    assert meta["questions"] == {"train": [3, 3, 3], "val": [1, 1, 1]}
    assert meta["architecture"]["node_dim"] == 384 + 13 and meta["architecture"]["layers"] == 2
    cfg = make_cfg("evaluate", [
        *data, "scos=off", "retriever=learned_gat", "llm=extractive", "split=test", "~logger",
    ])  # fmt: skip
    assert evaluate(cfg)["metrics"]["n"] == 2
    # retriever.rerank=default resolves once, to this artifact, and names it in the run key
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("test")
    assert LOKG.from_config(cfg, dm).provenance["rerank"] == rerank.name
