"""Evaluate LOKG (or an ablation/baseline) from config: ``python evaluate.py [overrides]``.

See configs/evaluate.yaml; the job itself is lokg.evaluate.run.
"""

import hydra
from omegaconf import DictConfig

from lokg.config import register_configs
from lokg.evaluate import run

register_configs()


@hydra.main(version_base="1.3", config_path="configs", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
