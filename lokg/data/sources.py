"""Dataset sources: where a dataset's KG and questions come from.

A source reads raw files and returns a :class:`RawDataset`; the
:class:`~lokg.data.datamodule.KGQADataModule` turns that into prepared artifacts once.

- :class:`PathQuestionSource` — PQ-2H/PQ-3H/PQL-2H/PQL-3H with their KBs, bundled in
  ``lokg/resources/data/pathquestion`` (Zhou et al. 2018, see SOURCE.txt there).  The whole
  KB is the graph.
- :class:`RoGSource` — WebQSP/CWQ in the RoG format (``rmanluo/RoG-webqsp``,
  ``rmanluo/RoG-cwq``: id, question, answer, q_entity, a_entity, graph) from the HF hub on an
  online machine or from local parquet/JSONL files; one subgraph per question.
- :class:`EvidenceSource` — the offline WebQSP/CWQ test questions with small GPT-labelled
  evidence pools bundled in ``lokg/resources/data/evidence``.  **Not the paper's setting**
  (no Freebase subgraphs); its name always carries the ``_evidence`` suffix.
- :class:`CustomSource` — bring your own KG file and questions JSONL.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from lokg.kg.graph import KnowledgeGraph
from lokg.kg.io import DataFormatError, ReadReport, read_kg, read_pathquestion, read_questions
from lokg.typing import LabeledTriple, Question

__all__ = [
    "CustomSource",
    "DatasetSource",
    "EvidenceSource",
    "PathQuestionSource",
    "RawDataset",
    "RoGSource",
    "resource_path",
]


def resource_path(*parts: str) -> Path:
    """Path of a file bundled with the package (``lokg/resources/...``)."""
    return Path(str(resources.files("lokg").joinpath("resources", *parts)))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class RawDataset:
    """What a source reads.

    Attributes:
        kg: the graph (for per-question datasets, the union of all question subgraphs).
        questions: all questions (to be split) or, when ``presplit``, a dict by split.
        presplit: the source defines its own train/val/test split.
        subgraphs: per-question labelled triples, for datasets with one subgraph per question.
        reports: one line per file read (what was read and skipped).
    """

    kg: KnowledgeGraph
    questions: list[Question] | dict[str, list[Question]]
    presplit: bool = False
    subgraphs: dict[str, list[LabeledTriple]] | None = None
    reports: list[str] = field(default_factory=list)


class DatasetSource(ABC):
    """Base class; subclasses set ``name`` and implement :meth:`load` and :meth:`files`."""

    name: str = "dataset"
    #: whether results on this dataset may be reported as the paper's setting
    paper_setting: bool = True

    @abstractmethod
    def files(self) -> list[Path]:
        """The files the dataset is read from (hashed into the fingerprint)."""

    def config(self) -> dict:
        return {"class": type(self).__name__, "name": self.name}

    def fingerprint(self) -> str:
        """Hash of the source's configuration and the bytes of its files."""
        h = hashlib.sha256(json.dumps(self.config(), sort_keys=True).encode())
        for path in self.files():
            h.update(_sha256_file(path).encode())
        return h.hexdigest()[:16]

    @abstractmethod
    def load(self) -> RawDataset:
        """Read the files into a :class:`RawDataset`."""


# --------------------------------------------------------------------------- PathQuestion
PATHQUESTION_VARIANTS: dict[str, tuple[str, str]] = {
    "PQ-2H": ("PQ-2H.txt", "2H-kb.txt"),
    "PQ-3H": ("PQ-3H.txt", "3H-kb.txt"),
    "PQL-2H": ("PQL-2H.txt", "PQL2-KB.txt"),
    "PQL-3H": ("PQL-3H.txt", "PQL3-KB.txt"),
    "PQL-3H_more": ("PQL-3H_more.txt", "PQL3-KB.txt"),
}


class PathQuestionSource(DatasetSource):
    """PathQuestion (IRN, COLING 2018) with its KB as the whole graph.

    Args:
        variant: one of ``PQ-2H``, ``PQ-3H``, ``PQL-2H``, ``PQL-3H``, ``PQL-3H_more``.
        name: dataset name used in artifacts and reports (default: variant lower-cased).
        root: directory holding the files (default: the bundled copy).
    """

    def __init__(self, variant: str, name: str | None = None, root: str | None = None):
        if variant not in PATHQUESTION_VARIANTS:
            raise ValueError(
                f"data.source.variant={variant!r}; expected one of {list(PATHQUESTION_VARIANTS)}"
            )
        self.variant = variant
        self.name = name or variant.lower().replace("-", "")
        self.root = Path(root) if root else resource_path("data", "pathquestion")

    def files(self) -> list[Path]:
        qa, kb = PATHQUESTION_VARIANTS[self.variant]
        return [self.root / qa, self.root / kb]

    def config(self) -> dict:
        return {**super().config(), "variant": self.variant}

    def load(self) -> RawDataset:
        qa_path, kb_path = self.files()
        kg, kb_report = read_kg(kb_path, fmt="tsv", header="none", name=self.name)
        questions, q_report = read_pathquestion(qa_path, prefix=self.name, kg=kg)
        return RawDataset(kg, questions, reports=[kb_report.summary(), q_report.summary()])


# --------------------------------------------------------------------------- RoG format
ROG_SPLITS = {"train": "train", "val": "validation", "test": "test"}


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _rog_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """Rows of a RoG-format file: JSONL (optionally gzipped) or parquet."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # ships with `datasets`

        yield from enumerate(pq.read_table(path).to_pylist(), start=1)
        return
    try:
        with _open_text(path) as fh:
            for lineno, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    yield lineno, json.loads(text)
                except json.JSONDecodeError as err:
                    raise DataFormatError(
                        f"{path}:{lineno}: invalid JSON ({err.msg}); expected one RoG record "
                        "per line"
                    ) from None
    except UnicodeDecodeError as err:
        raise DataFormatError(f"{path}: not valid UTF-8 ({err.reason})") from None


def _rog_question(path: Path, lineno: int, row: dict, report: ReadReport) -> tuple[Question, list]:
    where = f"{path}:{lineno}"
    if not isinstance(row, dict):
        raise DataFormatError(f"{where}: expected a JSON object with RoG fields")
    missing = [k for k in ("id", "question", "answer", "q_entity", "graph") if k not in row]
    if missing:
        raise DataFormatError(f"{where}: missing RoG field(s) {missing}")
    graph = row["graph"]
    if not isinstance(graph, list) or not all(
        isinstance(t, (list, tuple)) and len(t) == 3 and all(isinstance(x, str) for x in t)
        for t in graph
    ):
        raise DataFormatError(f"{where}: 'graph' must be a list of [head, relation, tail] strings")
    answers, topics = row["answer"], row["q_entity"]
    for key, value in (("answer", answers), ("q_entity", topics)):
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise DataFormatError(f"{where}: '{key}' must be a list of strings")
    if not topics:
        raise DataFormatError(f"{where}: 'q_entity' is empty; expected at least one topic entity")
    triples = [tuple(t) for t in graph]
    nodes = {t[0] for t in triples} | {t[2] for t in triples}
    absent = [t for t in topics if t not in nodes]
    if absent:
        report.notes.append(f"{row['id']}: topic entity {absent[0]!r} not in its subgraph")
    q = Question(
        id=str(row["id"]),
        text=str(row["question"]).strip(),
        answers=tuple(a for a in answers if a),
        topic_entities=tuple(topics),
    )
    return q, triples


class RoGSource(DatasetSource):
    """WebQSP / CWQ in the RoG format, one subgraph per question.

    Args:
        name: dataset name (``webqsp``, ``cwq``, ...).
        files: split -> local ``.jsonl``/``.jsonl.gz``/``.parquet`` file (``train``, ``val``,
            ``test``; missing splits are empty).
        hf_name: HF hub dataset (e.g. ``rmanluo/RoG-webqsp``), used when ``files`` is empty;
            needs network access the first time.
    """

    def __init__(self, name: str, files: dict[str, str] | None = None, hf_name: str | None = None):
        self.name = name
        self.split_files = {k: Path(os.path.expanduser(v)) for k, v in (files or {}).items()}
        unknown = set(self.split_files) - set(ROG_SPLITS)
        if unknown:
            raise ValueError(
                f"data.source.files has split(s) {sorted(unknown)}; expected {list(ROG_SPLITS)}"
            )
        if not self.split_files and not hf_name:
            raise ValueError("RoGSource needs data.source.files or data.source.hf_name")
        self.hf_name = hf_name

    def files(self) -> list[Path]:
        for split, path in self.split_files.items():
            if not path.is_file():
                raise FileNotFoundError(f"data.source.files.{split}: {path}: no such file")
        return [self.split_files[s] for s in ROG_SPLITS if s in self.split_files]

    def config(self) -> dict:
        return {**super().config(), "hf_name": None if self.split_files else self.hf_name}

    def _hf_rows(self, split: str) -> Iterator[tuple[int, dict]]:
        import datasets

        ds = datasets.load_dataset(self.hf_name, split=ROG_SPLITS[split])
        yield from enumerate(ds, start=1)

    def load(self) -> RawDataset:
        by_split: dict[str, list[Question]] = {s: [] for s in ROG_SPLITS}
        subgraphs: dict[str, list[LabeledTriple]] = {}
        reports: list[str] = []
        seen: dict[str, str] = {}
        for split in ROG_SPLITS:
            if self.split_files:
                if split not in self.split_files:
                    continue
                path = self.split_files[split]
                rows: Iterable[tuple[int, dict]] = _rog_rows(path)
            else:
                path = Path(f"{self.hf_name}:{ROG_SPLITS[split]}")
                rows = self._hf_rows(split)
            report = ReadReport(str(path))
            for lineno, row in rows:
                report.lines = lineno
                q, triples = _rog_question(path, lineno, row, report)
                if q.id in seen:
                    raise DataFormatError(
                        f"{path}:{lineno}: duplicate id {q.id!r} (also in split "
                        f"{seen[q.id]!r}); expected unique ids"
                    )
                seen[q.id] = split
                by_split[split].append(q)
                subgraphs[q.id] = triples
                report.records += 1
            if report.records == 0 and self.split_files:
                raise DataFormatError(f"{path}:1: file has no questions; expected at least one")
            if len(report.notes) > 3:
                n = len(report.notes)
                report.notes = [*report.notes[:3], f"... {n} questions with absent topic entity"]
            reports.append(report.summary())
        union = dict.fromkeys(t for triples in subgraphs.values() for t in triples)
        answers = {a for qs in by_split.values() for q in qs for a in q.answers}
        topics = {t for qs in by_split.values() for q in qs for t in q.topic_entities}
        kg = KnowledgeGraph.from_labeled_triples(
            union, name=self.name, extra_entities=sorted(answers | topics)
        )
        return RawDataset(kg, by_split, presplit=True, subgraphs=subgraphs, reports=reports)


class EvidenceSource(RoGSource):
    """Offline WebQSP/CWQ test questions with GPT-labelled evidence pools (RoG schema).

    Built by ``scripts/build_evidence_sets.py`` from public files (see the SOURCE.txt next
    to the data).  This is **not** the paper's setting (the paper retrieves from Freebase
    subgraphs); every report names it ``<dataset>_evidence``.
    """

    paper_setting = False
    CHOICES = ("webqsp", "cwq")

    def __init__(self, which: str):
        if which not in self.CHOICES:
            raise ValueError(f"data.source.which={which!r}; expected one of {list(self.CHOICES)}")
        path = resource_path("data", "evidence", f"{which}_evidence.jsonl.gz")
        super().__init__(name=f"{which}_evidence", files={"test": str(path)})


# --------------------------------------------------------------------------- custom
class CustomSource(DatasetSource):
    """Bring-your-own KG: a triples file (TSV/CSV/N-Triples) and questions JSONL.

    Args:
        name: dataset name.
        kg_path: triples file.
        questions_path: one questions JSONL to be split, or ``None`` when ``split_paths``
            gives ``train``/``val``/``test`` files.
        split_paths: optional split -> questions JSONL.
        kg_format: ``auto``/``tsv``/``csv``/``nt``; ``kg_header``: ``auto``/``present``/``none``.
    """

    def __init__(
        self,
        name: str,
        kg_path: str,
        questions_path: str | None = None,
        split_paths: dict[str, str] | None = None,
        kg_format: str = "auto",
        kg_header: str = "auto",
    ):
        if (questions_path is None) == (not split_paths):
            raise ValueError(
                "data.source: give exactly one of questions_path or split_paths "
                "(train/val/test questions JSONL)"
            )
        if split_paths and set(split_paths) - {"train", "val", "test"}:
            raise ValueError(
                f"data.source.split_paths has {sorted(split_paths)}; expected train/val/test"
            )
        self.name = name
        self.kg_path = Path(os.path.expanduser(kg_path))
        self.questions_path = Path(os.path.expanduser(questions_path)) if questions_path else None
        self.split_paths = {k: Path(os.path.expanduser(v)) for k, v in (split_paths or {}).items()}
        self.kg_format, self.kg_header = kg_format, kg_header

    def files(self) -> list[Path]:
        paths = [self.kg_path]
        paths += [self.questions_path] if self.questions_path else list(self.split_paths.values())
        for p in paths:
            if not p.is_file():
                raise FileNotFoundError(f"{p}: no such file (data.source)")
        return paths

    def config(self) -> dict:
        return {**super().config(), "format": self.kg_format, "header": self.kg_header}

    def load(self) -> RawDataset:
        kg, kg_report = read_kg(self.kg_path, self.kg_format, self.kg_header, name=self.name)
        reports = [kg_report.summary()]
        if self.questions_path is not None:
            questions, rep = read_questions(self.questions_path, kg)
            return RawDataset(kg, questions, reports=[*reports, rep.summary()])
        by_split: dict[str, list[Question]] = {"train": [], "val": [], "test": []}
        seen: dict[str, str] = {}
        for split, path in self.split_paths.items():
            qs, rep = read_questions(path, kg)
            for q in qs:
                if q.id in seen:
                    raise DataFormatError(
                        f"{path}: duplicate id {q.id!r} (also in split {seen[q.id]!r})"
                    )
                seen[q.id] = split
            by_split[split] = qs
            reports.append(rep.summary())
        return RawDataset(kg, by_split, presplit=True, reports=reports)
