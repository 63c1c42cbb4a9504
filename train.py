"""Train LOKG's learned components from config: ``python train.py [overrides]``.

See configs/train.yaml; the job itself is lokg.train.run.
"""

import hydra
from omegaconf import DictConfig

from lokg.config import register_configs
from lokg.train import run

register_configs()


@hydra.main(version_base="1.3", config_path="configs", config_name="train")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
