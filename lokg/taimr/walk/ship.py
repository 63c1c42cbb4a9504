"""Ship a pretrained walk inside the package: ``python -m lokg.taimr.walk.ship <qgat dir>``.

Copies what retrieval reads of a walk artifact trained by ``python train.py
experiment=pretrain_walk`` (:data:`~lokg.taimr.walk.artifact.SHIPPED_FILES`: the network, its
record, its config and the question encoder's top layers as a change from the pip-installed
encoder) into :data:`~lokg.taimr.walk.artifact.PRETRAINED_DIR`, with ``record.json``: which
artifact, the training data (the union's members and the prepared data's fingerprint), the
commit, the config key, the validation numbers and the shipped size.  Machine paths in the
copied config and record become ``<local path>``.  Refuses an artifact that carries the
whole encoder (``question_encoder/``) or that would ship more than :data:`MAX_SHIPPED_MB`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from lokg.atomic_io import atomic_directory
from lokg.errors import InputError
from lokg.taimr.walk.artifact import (
    META_FILE,
    PRETRAINED_DIR,
    PRETRAINED_RECORD,
    QUESTION_ENCODER_DELTA,
    QUESTION_ENCODER_DIR,
    SHIPPED_FILES,
    read_walk_meta,
)

__all__ = ["MAX_SHIPPED_MB", "ship"]

#: what the package may carry for the walk (issue goal: <= 10 MB beside the pip MiniLM)
MAX_SHIPPED_MB = 10.0
LOCAL = "<local path>"


def _scrubbed(node: Any) -> Any:
    """``node`` with every absolute filesystem path replaced by :data:`LOCAL`."""
    if isinstance(node, dict):
        return {k: _scrubbed(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_scrubbed(v) for v in node]
    if isinstance(node, str) and os.path.isabs(node):
        return LOCAL
    return node


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def ship(source: str | os.PathLike, dest: str | os.PathLike = PRETRAINED_DIR) -> dict:
    """Copy the walk artifact ``source`` to ``dest`` (module doc); returns the record."""
    source = Path(source)
    if not (source / META_FILE).is_file():
        raise InputError(f"{source}: not a walk artifact (no {META_FILE})")
    if (source / QUESTION_ENCODER_DIR).exists() or not (source / QUESTION_ENCODER_DELTA).is_file():
        raise InputError(
            f"{source}: the question encoder is saved whole; ship a walk trained with "
            "model.encoder_trainable_layers=k (experiment=pretrain_walk), whose top layers "
            "are saved as a change from the pip-installed encoder"
        )
    size = sum((source / f).stat().st_size for f in SHIPPED_FILES)
    if size > MAX_SHIPPED_MB * 2**20:
        raise InputError(f"{source}: {size / 2**20:.1f} MB to ship; at most {MAX_SHIPPED_MB} MB")
    meta = read_walk_meta(source)
    config = OmegaConf.to_container(OmegaConf.load(source / "config.yaml"), resolve=False)
    members = sorted(((config.get("data") or {}).get("source") or {}).get("members") or {})
    record = {
        "artifact": source.name,
        "data": {"prepared": source.parent.name, "members": members},
        "shipped_at_commit": _commit(),
        "config_key": source.name.split("-", 1)[-1],
        "val": {k: meta.get(k) for k in ("monitor", "best_value", "best_epoch", "last_epoch")},
        "shipped_mb": round(size / 2**20, 2),
        "shipped_on": dt.date.today().isoformat(),
        "retrain": "python train.py experiment=pretrain_walk, then "
        "python -m lokg.taimr.walk.ship <its qgat-* directory>",
    }
    with atomic_directory(Path(dest)) as tmp:
        for name in SHIPPED_FILES:
            if name == "config.yaml":
                OmegaConf.save(OmegaConf.create(_scrubbed(config)), tmp / name)
            elif name == META_FILE:
                (tmp / name).write_text(json.dumps(_scrubbed(meta), indent=1), encoding="utf-8")
            else:
                shutil.copyfile(source / name, tmp / name)
        (tmp / PRETRAINED_RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lokg.taimr.walk.ship", description=__doc__)
    parser.add_argument("artifact", help="a qgat-* directory trained by experiment=pretrain_walk")
    parser.add_argument("--dest", default=str(PRETRAINED_DIR), help="where to ship it")
    args = parser.parse_args(argv)
    try:
        record = ship(args.artifact, args.dest)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
