"""``trainer=ddp``: TransE (dense and sparse), the GAT and the question-aware walk model
trained by two CPU processes (Lightning DDP, gloo) through the real entry point,
``train.py``; the post-fit stages run once, on rank 0."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lokg.config import compose_config

from .fixtures import toy_kg

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["trainer.enable_progress_bar=false", "logger=csv", "debug=limit"]


def test_ddp_config_is_two_cpu_processes(tmp_path):
    cfg = compose_config("train", ["experiment=train_transe", "trainer=ddp"], tmp_path)
    t = cfg.trainer
    assert (t.strategy, t.accelerator, t.devices, t.num_nodes) == ("ddp", "cpu", 2, 1)


def _train(
    root: Path,
    experiment: str,
    *overrides: str,
    epochs: int = 1,
    ddp: bool = True,
    timeout: float = 600,
) -> str:
    """``train.py experiment=<experiment> [trainer=ddp]`` in ``root``; its console output.

    A run past ``timeout`` (a DDP process waiting on a collective the other never joins) is
    killed with its whole process group, rank 1 included, and fails the test."""
    env = {
        **os.environ,
        "LOKG_ROOT": str(root),
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONWARNINGS": "ignore",
    }
    args = [
        sys.executable,
        str(ROOT / "train.py"),
        f"experiment={experiment}",
        *(["trainer=ddp"] if ddp else []),
        f"trainer.max_epochs={epochs}",
        *SMALL,
        *overrides,
    ]
    with subprocess.Popen(
        args,
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            pytest.fail(f"train.py hung for {timeout}s (a DDP deadlock?):\n{out[-3000:]}")
    assert proc.returncode == 0, out[-3000:]
    return out


def _fit_lines(out: str) -> dict[int, str]:
    """rank -> the validation metrics it reports after fit (``rank 1: fit done; val/...``)."""
    return {int(r): m for r, m in re.findall(r"rank (\d+): fit done; (.*)", out)}


def _val_rows(run_dir: Path) -> list[dict[str, str]]:
    """The per-epoch validation rows rank 0's CSV logger wrote."""
    (metrics,) = run_dir.rglob("metrics.csv")
    with metrics.open() as f:
        return [r for r in csv.DictReader(f) if r.get("val/hits@1")]


@pytest.mark.slow
def test_transe_then_gat_train_with_two_processes(tmp_path):
    data = tmp_path / "artifacts" / "data"
    out = _train(tmp_path, "train_transe")
    assert "rank 1: fit done" in out  # the second process trained too
    assert out.count("SCOS artifacts:") == 1  # written once, by rank 0
    # TransE + SCOS are keyed by the KG (artifacts/kg/<fingerprint>/scos-*)
    (scos,) = [p for p in (tmp_path / "artifacts").rglob("scos-*") if p.is_dir()]
    assert (scos / "scos" / "mapping.npy").is_file() and (scos / "transe.ckpt").is_file()
    out = _train(tmp_path, "train_gat")  # on the SCOS graph rank 0 wrote
    # both ranks trained and see the same all-reduced validation metrics
    fit = _fit_lines(out)
    assert sorted(fit) == [0, 1] and fit[0] == fit[1], fit
    assert "val/paths_recall" in fit[0] and "val/hits@1" in fit[0]
    assert out.count("GAT artifacts:") == 1
    (gat,) = data.glob("*/gat-*")
    assert (gat / "edge_log_alpha.npy").is_file()


@pytest.mark.slow
def test_sparse_transe_keeps_the_two_replicas_equal_and_unit_norm(tmp_path):
    """``model=transe_sparse trainer=ddp``: gloo all-reduces sparse gradients (indices and
    values gathered), so SparseAdam moves the rows of both processes' batches on both; the
    norm constraint must cover the same rows (the all-reduced gradient's, not the local
    batch's: with those, each process left the other's rows off the unit sphere, |e| up to
    1.35, and the replicas drifted apart by 0.12). Batches of 64: the ranks see different
    triples (at the default 4,096 PQ-2H is one batch, which DDP pads to both ranks)."""
    import torch

    replicas = tmp_path / "replicas"
    out = _train(
        tmp_path, "train_transe", "model=transe_sparse", "data.batch_size=64",
        "+callbacks.replicas._target_=tests.fixtures.replicas.SaveEntityTable",
        f"+callbacks.replicas.directory={replicas}", epochs=2,
    )  # fmt: skip
    assert "rank 1: fit done" in out and out.count("SCOS artifacts:") == 1
    rank0, rank1 = (torch.load(replicas / f"entity_rank{r}.pt") for r in (0, 1))
    assert torch.equal(rank0, rank1)
    norms = rank0.norm(dim=1)
    torch.testing.assert_close(norms, torch.ones_like(norms))


@pytest.mark.slow
def test_walk_model_trains_with_two_processes_and_exports_once(tmp_path):
    """``experiment=train_walk trainer=ddp`` on PQ-2H (2 epochs of debug=limit) after TransE +
    SCOS (one process: only its e_r are needed): both ranks train, see the same all-reduced
    val/hits@1, and rank 0 alone exports the best epoch, which the retriever then loads."""
    from hydra.utils import instantiate

    from lokg.artifacts import load_graph_artifacts
    from lokg.taimr.walk.retriever import build_learned

    _train(tmp_path, "train_transe", ddp=False)
    # 24 batches per rank and epoch (the whole training split): the vocabulary-normalised walk
    # ranks no gold answer first after debug=limit's 5 (val Hits@1 0.0 / 0.016)
    out = _train(tmp_path, "train_walk", "trainer.limit_train_batches=24", epochs=2)
    # both ranks trained, and every rank reports the same (synced) validation metrics
    fit = _fit_lines(out)
    assert sorted(fit) == [0, 1] and fit[0] == fit[1], fit
    synced = dict(kv.split("=") for kv in fit[0].split(", "))
    assert set(synced) == {"val/hits@1", "val/loss", "val/recall"}
    # the export ran once, on rank 0 (Hydra gives each rank its own log file)
    assert out.count("walk model artifacts:") == 1
    (rank1_log,) = (tmp_path / "logs").rglob("train_ddp_process_1.log")
    run_dir = rank1_log.parent
    assert "walk model artifacts:" in (run_dir / "train.log").read_text()
    assert "walk model artifacts:" not in rank1_log.read_text()
    (qgat,) = (tmp_path / "artifacts" / "data").glob("*/qgat-*")
    # qgat.json records the best epoch on val/hits@1, the one rank 0's logger saw best
    meta = json.loads((qgat / "qgat.json").read_text())
    rows = _val_rows(run_dir)
    hits = [float(r["val/hits@1"]) for r in rows]
    assert [int(r["epoch"]) for r in rows] == [0, 1]
    best = hits.index(max(hits))  # ModelCheckpoint keeps the first of equal values
    assert (meta["selected"], meta["monitor"]) == ("best", "val/hits@1")
    assert meta["best_epoch"] == meta["epoch"] == best and meta["last_epoch"] == 1
    assert meta["best_value"] == pytest.approx(max(hits))
    assert meta["checkpoint"] == f"epoch_{best:03d}.ckpt"
    assert float(synced["val/hits@1"]) == pytest.approx(hits[-1])  # what both ranks saw
    # the exported model loads through retriever=learned and answers questions
    cfg = compose_config("train", ["experiment=train_walk"], tmp_path)
    dm = instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    art = load_graph_artifacts(cfg, dm, need_gat=False, need_walk=True)
    assert art.walk_dir.resolve() == qgat.resolve()
    retriever = build_learned(
        art.kg, instantiate(cfg.embedder), art.walk_dir, art.relation_embeddings,
        beam_width=16, fallback="none",
    )  # fmt: skip
    questions = dm.questions["val"][:8]
    results = [retriever.retrieve(q) for q in questions]
    assert all(r.answers and r.paths for r in results)  # found by the walk: no fallback
    top = [r.answers[0].label in q.answers for q, r in zip(questions, results, strict=True)]
    assert any(top), "the trained walk should rank a gold answer first for some question"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("experiment", "recall"), [("train_walk", "val/recall"), ("train_gat", "val/paths_recall")]
)
def test_ddp_with_batches_that_have_nothing_to_learn(tmp_path, experiment, recall):
    """One question per batch, and one question of each split has no topic entity in the
    graph: at every step one rank has nothing to learn or score.  DDP still needs it in the
    gradient all-reduce and in the epoch's metric all-reduce (both models used to wait
    forever), and the metrics are the question-weighted means of what was scored: the walk
    model and the paper's GAT alike."""
    splits = {
        "train": [("t1", "alice", "france"), ("t2", "nobody", "france")],
        "val": [("v1", "dave", "spain"), ("v2", "noone", "spain")],
        "test": [("s1", "alice", "france")],
    }
    couples = toy_kg.COUPLES[:6]  # alice's two chains, dave -spouse-> erin -nationality-> spain
    dataset = toy_kg.write_custom_dataset(tmp_path, couples, toy_kg.spouse_questions(splits))
    out = _train(
        tmp_path, experiment, *toy_kg.custom_data_overrides(*dataset), "data.batch_size=1",
        "scos=off", "model.relation_source=learned", epochs=2, timeout=240,
    )  # fmt: skip
    fit = _fit_lines(out)
    assert sorted(fit) == [0, 1] and fit[0] == fit[1], fit
    artifacts = {"train_walk": "walk model artifacts:", "train_gat": "GAT artifacts:"}
    assert out.count(artifacts[experiment]) == 1
    (rank1_log,) = (tmp_path / "logs").rglob("train_ddp_process_1.log")
    rows = _val_rows(rank1_log.parent)
    assert len(rows) == 2
    for r in rows:  # v1 alone was scored: recall over {v1}, a finite loss
        assert float(r[recall]) in (0.0, 1.0)
        assert float(r["val/hits@1"]) in (0.0, 1.0)
        loss = float(r["val/loss"])
        assert 0.0 <= loss < float("inf")
        # the GAT's is 0 here: each node of v1's graph has one out-edge, so alpha = 1
        assert loss > 0.0 or experiment == "train_gat"
