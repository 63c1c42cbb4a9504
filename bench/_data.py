"""The package's datasets for the benches: the real config, reader and split.

Every bench gets its questions and graph here, exactly as ``evaluate.py`` does: compose
``configs/evaluate.yaml`` with ``data=<name>``, instantiate the DataModule, ``prepare_data()``
(written once under ``<root>/artifacts``) and ``setup()``. No bench reads a dataset file or
splits questions itself, so every number is measured on the package's split (no question text
and no topic-and-chain in two splits; ``data.split_group_by``).

``root`` is ``$LOKG_ROOT`` when set, else the working directory (as for the entry points).
Settings are chosen on ``--split val``; ``--split test`` reports a chosen configuration once.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import hydra
from omegaconf import DictConfig

from lokg.config import compose_config
from lokg.data.datamodule import KGQADataModule
from lokg.typing import Question

__all__ = [
    "DATASETS",
    "EVAL_SPLITS",
    "TEST_LEDGER",
    "add_data_arguments",
    "add_rerun_test_argument",
    "bench_root",
    "compose",
    "load_datamodule",
    "split_questions",
]

#: the PathQuestion configs under ``configs/data/`` (the benches' datasets)
DATASETS = ("pq2h", "pq3h", "pql2h", "pql3h")
#: splits a bench may measure on: ``val`` to choose a setting, ``test`` to report it once
EVAL_SPLITS = ("val", "test")


#: where test reports are recorded, one line per (configuration, dataset) (lokg.eval.ledger)
TEST_LEDGER = Path(__file__).resolve().parent / "test_ledger.jsonl"


def add_rerun_test_argument(ap: argparse.ArgumentParser) -> None:
    """``--rerun-test REASON``: measure on test a configuration the ledger already holds."""
    ap.add_argument(
        "--rerun-test",
        default=None,
        metavar="REASON",
        help="measure a configuration the test ledger already holds, recording why",
    )


def bench_root() -> str:
    """Where artifacts, logs and caches live: ``$LOKG_ROOT``, else the working directory."""
    return os.environ.get("LOKG_ROOT", os.getcwd())


def compose(data: str, overrides: Sequence[str] = ()) -> DictConfig:
    """``configs/evaluate.yaml`` composed with ``data=<data>`` and ``overrides``."""
    return compose_config("evaluate", [f"data={data}", *overrides], bench_root())


def load_datamodule(cfg: DictConfig) -> KGQADataModule:
    """The config's dataset, prepared (once) and loaded: ``.kg``, ``.questions[split]``."""
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("test")
    return dm


def split_questions(dm: KGQADataModule, split: str, limit: int | None = None) -> list[Question]:
    """The first ``limit`` questions (all when ``None``) of the package's ``split``."""
    if split not in EVAL_SPLITS:
        raise ValueError(f"split={split!r}; expected one of {EVAL_SPLITS}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit={limit}; expected a positive number of questions or none")
    questions = dm.questions[split]
    if not questions:
        raise ValueError(f"{dm.name}: split {split!r} has no questions")
    return questions[:limit] if limit else questions


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of questions, got {text}")
    return value


def add_data_arguments(
    parser: argparse.ArgumentParser, default: Sequence[str], many: bool = True
) -> None:
    """``--data`` (config names), ``--split val|test`` (default val) and ``--limit N``."""
    parser.add_argument(
        "--data",
        nargs="+" if many else None,
        default=list(default) if many else default[0],
        choices=DATASETS,
        help="dataset config names (configs/data/)",
    )
    parser.add_argument(
        "--split",
        default="val",
        choices=EVAL_SPLITS,
        help="val to choose settings (default); test to report a chosen one once",
    )
    parser.add_argument(
        "--limit", type=_positive, default=None, help="first N questions of the split (quick runs)"
    )
