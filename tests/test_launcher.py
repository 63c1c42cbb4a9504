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
