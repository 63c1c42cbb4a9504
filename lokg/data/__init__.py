"""Datasets: sources (PathQuestion, RoG-format WebQSP/CWQ, offline evidence sets, custom),
deterministic splits, and the LightningDataModule."""

from lokg.data.datamodule import KGQADataModule
from lokg.data.sources import (
    CustomSource,
    DatasetSource,
    EvidenceSource,
    GeneratedSource,
    PathQuestionSource,
    RoGSource,
)

__all__ = [
    "CustomSource",
    "DatasetSource",
    "EvidenceSource",
    "GeneratedSource",
    "KGQADataModule",
    "PathQuestionSource",
    "RoGSource",
]
