"""``hydra/launcher=slurm`` (configs/hydra/launcher/slurm.yaml): the submitit SLURM launcher
composes with the project's settings over the plugin's, for both entry points."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from lokg.config import register_configs

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.mark.parametrize("name", ["train", "evaluate"])
def test_slurm_launcher_composes(name, tmp_path):
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose(
            config_name=name,
            overrides=[f"paths.root_dir={tmp_path}", "hydra/launcher=slurm",
                       "hydra.launcher.partition=gpu", "hydra.launcher.gpus_per_node=1"],
            return_hydra_config=True,
        )  # fmt: skip
    launcher = cfg.hydra.launcher
    assert (
        launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    )
    assert (launcher.partition, launcher.gpus_per_node, launcher.cpus_per_task) == ("gpu", 1, 8)
    assert launcher.timeout_min == 240 and launcher.max_num_timeout == 0
    GlobalHydra.instance().clear()


@pytest.mark.slow
def test_a_multirun_sweep_runs_every_job(tmp_path):
    """``evaluate.py -m a=x,y`` (the recorded sweeps of docs/design/taimr.md): the sweep
    directory resolves before any job runs (it once named ``${hydra:runtime.cwd}``, which the
    sweeper cannot resolve, so every multirun stopped with one error line), and each job
    writes its own results."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "LOKG_ROOT": str(tmp_path)}
    sweep_args = ["retriever=taimr_linked", "scos=off", "llm=extractive", "limit=1", "~logger",
                  "retriever.lambda_q=0,0.5"]  # fmt: skip
    cmd = [sys.executable, str(CONFIGS.parent / "evaluate.py"), "-m", *sweep_args]
    out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    (sweep,) = (tmp_path / "logs" / "evaluate" / "multiruns").iterdir()
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]
    runs = list((tmp_path / "logs" / "evaluate" / "results" / "pq2h").iterdir())
    assert len(runs) == 2  # one results directory per configuration
