"""Evaluate LOKG (or an ablation/baseline) from config: ``python evaluate.py [overrides]``.

See configs/evaluate.yaml; the job itself is lokg.evaluate.run. A mistake in the input prints
one line, ``error: ...``, and exits 2 (lokg.cli).
"""

import hydra
from omegaconf import DictConfig

from lokg import cli
from lokg.config import register_configs
from lokg.evaluate import run

register_configs()


@hydra.main(version_base="1.3", config_path="configs", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    cli.run_job(run, cfg)


if __name__ == "__main__":
    cli.main(main)
