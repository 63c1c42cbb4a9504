"""The label each bundle is recorded under (:func:`lokg.labels.run_label`) is the string results
and tables are keyed by: these literals are the labels every configuration had before the
label became one function (computed on main with ``recorded_ablation``/``recorded_labels``),
so a change to them is a change to every results table, and must be made on purpose."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lokg.labels import run_label

BENCH = Path(__file__).resolve().parent.parent / "bench"

#: (overrides, (method, configuration, ablation))
EXPECTED = [
    (["experiment=lokg", "ablation=none"], ("LOKG (ours)", "lokg", "full")),
    (["experiment=lokg", "ablation=no_scos"], ("LOKG (ours)", "lokg", "no_scos")),
    (["experiment=lokg", "ablation=no_ittc"], ("LOKG (ours)", "lokg", "no_ittc")),
    (["experiment=lokg", "ablation=no_taimr"], ("LOKG (ours)", "lokg", "no_taimr")),
    (["experiment=paper", "ablation=none"], ("LOKG (paper)", "paper", "full")),
    (["experiment=paper", "ablation=no_scos"], ("LOKG (paper)", "paper", "no_scos")),
    (["experiment=paper", "ablation=no_ittc"], ("LOKG (paper)", "paper", "no_ittc")),
    (["experiment=paper", "ablation=no_taimr"], ("LOKG (paper)", "paper", "no_taimr")),
    (["baseline=graphrag"], ("GraphRAG", "graphrag", "full")),
    (["experiment=paper", "baseline=graphrag"], ("GraphRAG", "graphrag", "full")),
    (["baseline=kaping"], ("KAPING", "kaping", "full")),
    (["experiment=paper", "baseline=kaping"], ("KAPING", "kaping", "full")),
    (["baseline=none"], ("none", "none", "full")),
    (["experiment=paper", "baseline=none"], ("none", "none", "full")),
    (["baseline=oracle"], ("oracle", "oracle", "full")),
    (["experiment=paper", "baseline=oracle"], ("oracle", "oracle", "full")),
    (["baseline=taimr_llmlingua"], ("TAIMR+LLMLingua", "taimr_llmlingua", "full")),
    (["experiment=paper", "baseline=taimr_llmlingua"],
     ("TAIMR+LLMLingua", "taimr_llmlingua", "full")),
    (["baseline=tog"], ("ToG", "tog", "full")),
    (["experiment=paper", "baseline=tog"], ("ToG", "tog", "full")),
    # overrides given directly, not through a bundle
    (["scos=off"], ("LOKG (ours)", "lokg", "no_scos")),
    (["encoder=naive"], ("LOKG (ours)", "lokg", "no_ittc")),
    (["experiment=paper", "scos=off"], ("LOKG (paper)", "paper", "no_scos")),
    (["experiment=paper", "retriever.lambda_topo=0.0"],
     ("LOKG (paper) + overrides", "paper+overrides", "full")),
    (["experiment=paper", "encoder=ittc_rank"],
     ("LOKG (paper) + overrides", "paper+overrides", "full")),
    (["method=BFS+truncate", "retriever=bfs"], ("BFS+truncate", "lokg", "full")),
]  # fmt: skip

#: bench/bench_budget_curve.py's METHODS -> label
BUDGET_CURVE = {
    "paper": ("LOKG (paper)", "paper", "full"),
    "lokg": ("LOKG (ours)", "lokg", "full"),
    "bfs": ("BFS+truncate", "bfs", "full"),
    "bfs_out": ("BFS-out+truncate", "bfs_out", "full"),
    "semantic": ("semantic+truncate", "semantic", "full"),
    "kaping": ("KAPING-retrieval+truncate", "kaping", "full"),
    "taimr_llmlingua": ("TAIMR+LLMLingua", "taimr_llmlingua", "full"),
    "oracle": ("oracle", "oracle", "full"),
}


def _label(make_cfg, overrides):
    label = run_label(make_cfg("evaluate", ["llm=extractive", *overrides]))
    return label.method, label.configuration, label.ablation


@pytest.mark.parametrize(("overrides", "expected"), EXPECTED, ids=lambda x: str(x))
def test_each_bundle_keeps_its_label(make_cfg, overrides, expected):
    assert _label(make_cfg, overrides) == expected


def _budget_curve_methods() -> dict[str, list[str]]:
    sys.path.insert(0, str(BENCH))
    try:
        from bench_budget_curve import METHODS
    finally:
        sys.path.remove(str(BENCH))
    return METHODS


def test_every_budget_curve_method_is_listed():
    assert sorted(_budget_curve_methods()) == sorted(BUDGET_CURVE)


@pytest.mark.parametrize(("name", "expected"), sorted(BUDGET_CURVE.items()))
def test_each_budget_curve_method_keeps_its_label(make_cfg, name, expected):
    assert _label(make_cfg, _budget_curve_methods()[name]) == expected


#: bench/bench_retrieval.py's ROWS (with their row_label overrides) -> label
RETRIEVAL_ROWS = {
    "paper": ("paper", "bench:paper", "full"),
    "uniform+rules": ("uniform+rules", "bench:uniform+rules", "full"),
    "learned": ("learned", "bench:learned", "full"),
    "learned, no name match": ("learned, no name match", "bench:learned_no_name_match", "full"),
    "learned, free relation table":
        ("learned, free relation table", "bench:learned_free_relation_table", "full"),
    "learned, no question in attention":
        ("learned, no question in attention", "bench:learned_no_question_in_attention", "full"),
    "learned, frozen question encoder":
        ("learned, frozen question encoder", "bench:learned_frozen_question_encoder", "full"),
    "learned, node-normalised walk":
        ("learned, node-normalised walk", "bench:learned_node-normalised_walk", "full"),
    "learned, anchors union": ("learned, anchors union", "bench:learned_anchors_union", "full"),
    "learned + answer GAT":
        ("learned + answer GAT", "bench:learned_+_answer_GAT", "full"),
    "learned + answer GAT, omega 0.5":
        ("learned + answer GAT, omega 0.5", "bench:learned_+_answer_GAT_omega_0.5", "full"),
    "learned + answer GAT, omega 4":
        ("learned + answer GAT, omega 4", "bench:learned_+_answer_GAT_omega_4", "full"),
    "learned + answer GAT, no message passing":
        (
            "learned + answer GAT, no message passing",
            "bench:learned_+_answer_GAT_no_message_passing",
            "full",
        ),
    "learned + answer GAT, no TransE e_r":
        ("learned + answer GAT, no TransE e_r", "bench:learned_+_answer_GAT_no_TransE_e_r", "full"),
    "learned + answer GAT, no question in attention":
        (
            "learned + answer GAT, no question in attention",
            "bench:learned_+_answer_GAT_no_question_in_attention",
            "full",
        ),
    "learned, grouped rendering":
        ("learned, grouped rendering", "bench:learned_grouped_rendering", "full"),
    "learned, GAT node states in the step logits":
        (
            "learned, GAT node states in the step logits",
            "bench:learned_GAT_node_states_in_the_step_logits",
            "full",
        ),
    "learned, GAT node states, question keyed on relation and node":
        (
            "learned, GAT node states, question keyed on relation and node",
            "bench:learned_GAT_node_states_question_keyed_on_relation_and_node",
            "full",
        ),
    "learned, GAT split":
        ("learned, GAT split", "bench:learned_GAT_split", "full"),
    "learned, GAT split, free relation table":
        (
            "learned, GAT split, free relation table",
            "bench:learned_GAT_split_free_relation_table",
            "full",
        ),
    "learned, GAT split + answer GAT":
        ("learned, GAT split + answer GAT", "bench:learned_GAT_split_+_answer_GAT", "full"),
    # day one on a new KG: no TransE, so SCOS is off, and the row says so
    "pretrained walk": ("pretrained walk", "bench:pretrained_walk", "no_scos"),
}  # fmt: skip


@pytest.mark.parametrize(("row", "expected"), sorted(RETRIEVAL_ROWS.items()))
def test_each_retrieval_bench_row_keeps_its_label(make_cfg, row, expected):
    sys.path.insert(0, str(BENCH))
    try:
        from bench_retrieval import ROWS, row_label
    finally:
        sys.path.remove(str(BENCH))
    assert sorted(ROWS) == sorted(RETRIEVAL_ROWS)
    assert _label(make_cfg, [*ROWS[row][0], *row_label(row)]) == expected


def test_every_evaluate_bundle_is_covered():
    configs = BENCH.parent / "configs"
    covered = {o for overrides, _ in EXPECTED for o in overrides}
    for group in ("baseline", "ablation"):
        for path in sorted((configs / group).glob("*.yaml")):
            assert f"{group}={path.stem}" in covered, path
    assert {"experiment=lokg", "experiment=paper"} <= covered
