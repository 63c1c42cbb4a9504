"""``trainer=ddp``: TransE and then the GAT trained by two CPU processes (Lightning DDP, gloo)
through the real entry point, ``train.py``; the post-fit stages run once, on rank 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lokg.config import compose_config

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["trainer.max_epochs=1", "trainer.enable_progress_bar=false", "logger=csv", "debug=limit"]


def test_ddp_config_is_two_cpu_processes(tmp_path):
    cfg = compose_config("train", ["experiment=train_transe", "trainer=ddp"], tmp_path)
    t = cfg.trainer
    assert (t.strategy, t.accelerator, t.devices, t.num_nodes) == ("ddp", "cpu", 2, 1)


def _train(root: Path, experiment: str) -> str:
    env = {**os.environ, "LOKG_ROOT": str(root), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), f"experiment={experiment}", "trainer=ddp", *SMALL],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    return out


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
    assert "rank 1: fit done" in out
    assert out.count("GAT artifacts:") == 1
    (gat,) = data.glob("*/gat-*")
    assert (gat / "edge_log_alpha.npy").is_file()
