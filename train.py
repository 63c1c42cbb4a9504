"""Train LOKG's learned components from config: ``python train.py [overrides]``.

See configs/train.yaml; the job itself is lokg.train.run. A mistake in the input prints one
line, ``error: ...``, and exits 2 (lokg.cli).
"""

import hydra
from omegaconf import DictConfig

from lokg import cli
from lokg.config import register_configs
from lokg.train import run

register_configs()


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> None:
    cli.run_job(run, cfg)


if __name__ == "__main__":
    cli.main(main)
