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
- :class:`GeneratedSource` — questions beyond chains (conjunctions, constraints, many
  answers) generated over a PathQuestion KB (:mod:`lokg.data.question_sets`); ``beyond_*``.
- :class:`CustomSource` — bring your own KG file and questions JSONL.

Every source takes ``inverse`` (``data.source.inverse``: ``auto`` | ``always`` | ``never``,
:mod:`lokg.kg.inverse_edges`): whether retrieval runs on the KG with ``r (inverse)`` edges
added. The source reads the KG as given; the edges are added after SCOS
(:func:`lokg.artifacts.load_graph_artifacts`), and the setting enters the prepared data's
fingerprint (:meth:`DatasetSource.config`) so that the artifacts of an augmented graph are
never those of the plain one.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from lokg.data.question_sets import GENERATOR_VERSION, KINDS, generate, mine_phrasings
from lokg.data.splits import SPLITS
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.inverse_edges import check_inverse_mode
from lokg.kg.io import (
    CONTROL_CHARACTERS,
    HEADER_MODES,
    TRIPLE_FORMATS,
    DataFormatError,
    ReadReport,
    check_input_file,
    named_os_errors,
    read_kg,
    read_pathquestion,
    read_questions,
)
from lokg.typing import LabeledTriple, Question

log = logging.getLogger(__name__)

__all__ = [
    "CustomSource",
    "DatasetSource",
    "EvidenceSource",
    "GeneratedSource",
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
    with named_os_errors(path), open(path, "rb") as fh:
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
        questions_file: where the questions to be split came from (named by the error when
            they are too few for the split).
    """

    kg: KnowledgeGraph
    questions: list[Question] | dict[str, list[Question]]
    presplit: bool = False
    subgraphs: dict[str, list[LabeledTriple]] | None = None
    reports: list[str] = field(default_factory=list)
    questions_file: str | None = None


class DatasetSource(ABC):
    """Base class; subclasses set ``name`` and implement :meth:`load` and :meth:`files`."""

    name: str = "dataset"
    #: whether results on this dataset may be reported as the paper's setting
    paper_setting: bool = True
    #: ``data.source.inverse``: added inverse edges (:mod:`lokg.kg.inverse_edges`)
    inverse: str = "auto"

    @abstractmethod
    def files(self) -> list[Path]:
        """The files the dataset is read from (hashed into the fingerprint)."""

    def config(self) -> dict:
        """What identifies the dataset besides its files. ``inverse`` enters it unless
        ``never`` (so a run on the KG as given keeps the key it had before the option)."""
        out = {"class": type(self).__name__, "name": self.name}
        if self.inverse != "never":
            out["inverse"] = self.inverse
        return out

    def fingerprint(self) -> str:
        """Hash of the source's configuration and the bytes of its files."""
        h = hashlib.sha256(json.dumps(self.config(), sort_keys=True).encode())
        for path in self.files():
            h.update(_sha256_file(path).encode())
        return h.hexdigest()[:16]

    @abstractmethod
    def load(self) -> RawDataset:
        """Read the files into a :class:`RawDataset`."""

    def questions_origin(self, split: str) -> str:
        """Where ``split``'s questions come from, as an error message names it."""
        return f"{self.name}'s {split} questions"


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
        inverse: ``auto`` | ``always`` | ``never`` (module docstring).
    """

    def __init__(
        self,
        variant: str,
        name: str | None = None,
        root: str | None = None,
        inverse: str = "auto",
    ):
        self.inverse = check_inverse_mode(inverse)
        if variant not in PATHQUESTION_VARIANTS:
            raise InputError(
                f"data.source.variant={variant!r}; expected one of {list(PATHQUESTION_VARIANTS)}"
            )
        self.variant = variant
        self.name = name or variant.lower().replace("-", "")
        self.root = (
            Path(os.path.expanduser(root)) if root else resource_path("data", "pathquestion")
        )

    def files(self) -> list[Path]:
        qa, kb = PATHQUESTION_VARIANTS[self.variant]
        return [check_input_file(self.root / name, "data.source.root") for name in (qa, kb)]

    def config(self) -> dict:
        return {**super().config(), "variant": self.variant}

    def load(self) -> RawDataset:
        qa_path, kb_path = self.files()
        kg, kb_report = read_kg(kb_path, fmt="tsv", header="none", name=self.name)
        questions, q_report = read_pathquestion(qa_path, prefix=self.name, kg=kg)
        reports = [kb_report.summary(), q_report.summary()]
        return RawDataset(kg, questions, reports=reports, questions_file=str(qa_path))


class GeneratedSource(PathQuestionSource):
    """Questions beyond chains generated over a PathQuestion KB (issue 28 §1,
    :mod:`lokg.data.question_sets`): conjunctions of two anchors, chains with a constraint,
    chains with many answers, worded with the phrasings the variant's own questions use.

    Not a published dataset: every name starts ``beyond_``, ids are
    ``<name>-<kind>-<n>`` (so reports can break rows down by kind), and the generation
    settings enter the fingerprint.

    Args:
        variant: the PathQuestion variant whose KB is the graph and whose questions give the
            wordings (``PQ-3H``, ``PQL-2H``, ...).
        kinds: which of :data:`lokg.data.question_sets.KINDS` to generate.
        size: patterns per kind, at most (each worded ``wordings`` times).
        seed: the draw (fixed in the configs).
        wordings: texts per pattern.
        min_count: a phrasing is kept when PathQuestion uses it this often for the relation.
        name: dataset name (default ``beyond_<variant>``).
        inverse: ``auto`` | ``always`` | ``never`` (module docstring).
    """

    paper_setting = False

    def __init__(
        self,
        variant: str,
        kinds: Sequence[str] = KINDS,
        size: int = 400,
        seed: int = 0,
        wordings: int = 2,
        min_count: int = 2,
        name: str | None = None,
        inverse: str = "auto",
    ):
        super().__init__(variant, name=None, inverse=inverse)
        self.name = name or "beyond_" + variant.lower().replace("-", "")
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise InputError(f"data.source.kinds={kinds!r}; expected a non-empty subset of {KINDS}")
        for key, value in (("size", size), ("wordings", wordings), ("min_count", min_count)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"data.source.{key}={value!r}; expected an integer >= 1")
        self.kinds = kinds
        self.size, self.seed, self.wordings, self.min_count = size, seed, wordings, min_count

    def config(self) -> dict:
        return {
            **super().config(),
            "generator": GENERATOR_VERSION,
            "kinds": self.kinds,
            "size": self.size,
            "seed": self.seed,
            "wordings": self.wordings,
            "min_count": self.min_count,
        }

    def load(self) -> RawDataset:
        qa_path, kb_path = self.files()
        raw = super().load()  # the KB and the variant's own chain questions (the wordings)
        kg, chains = raw.kg, raw.questions
        triples = [kg.labeled(i) for i in range(kg.num_triples)]
        book = mine_phrasings(chains, triples, min_count=self.min_count)
        questions: list[Question] = []
        counts = []
        for kind in self.kinds:
            made = generate(
                kind,
                triples,
                book,
                size=self.size,
                seed=self.seed,
                prefix=f"{self.name}-{kind}",
                wordings=self.wordings,
            )
            questions += made
            counts.append(f"{kind} {len(made)}")
        reports = [
            raw.reports[0],
            f"{qa_path}: wordings of {len(book.phrases)} relations mined from "
            f"{book.parsed} of {book.lines} lines",
            f"generated (seed {self.seed}): " + ", ".join(counts),
        ]
        if not questions:
            raise InputError(
                f"data.source.kinds={self.kinds}: no question of these kinds exists over "
                f"{kb_path}; expected a KG with multi-valued relations"
            )
        return RawDataset(kg, questions, reports=reports, questions_file=str(qa_path))


# --------------------------------------------------------------------------- RoG format
ROG_SPLITS = {"train": "train", "val": "validation", "test": "test"}


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _rog_rows(path: Path) -> Iterator[tuple[int, dict | None]]:
    """Rows of a RoG-format file: JSONL (optionally gzipped) or parquet; ``None`` for a blank
    line (the caller counts it)."""
    if path.suffix == ".parquet":
        import pyarrow as pa  # ships with `datasets`
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(path).to_pylist()
        except (pa.ArrowException, OSError) as err:
            msg = " ".join(str(err).split())[:120]
            raise DataFormatError(f"{path}: not a readable parquet file ({msg})") from None
        yield from enumerate(rows, start=1)
        return
    lineno = 0
    try:
        with _open_text(path) as fh:
            for lineno, text in enumerate(fh, start=1):
                if not text.strip():
                    yield lineno, None
                    continue
                try:
                    yield lineno, json.loads(text)
                except json.JSONDecodeError as err:
                    raise DataFormatError(
                        f"{path}:{lineno}: invalid JSON ({err.msg} at column {err.colno}); "
                        "expected one RoG record per line"
                    ) from None
    except UnicodeDecodeError as err:
        raise DataFormatError(
            f"{path}:{lineno + 1}: not valid UTF-8 ({err.reason}); expected a UTF-8 text file"
        ) from None
    except (OSError, EOFError) as err:  # gzip.BadGzipFile is an OSError; EOFError: truncated
        what = "gzip" if path.suffix == ".gz" else "text"
        raise DataFormatError(
            f"{path}:{lineno + 1}: not a readable {what} file ({err}); expected RoG JSONL"
        ) from None


def _rog_question(path: Path, lineno: int, row: dict, report: ReadReport) -> tuple[Question, list]:
    where = f"{path}:{lineno}"
    if not isinstance(row, dict):
        raise DataFormatError(f"{where}: expected a JSON object with RoG fields")
    missing = [k for k in ("id", "question", "answer", "q_entity", "graph") if k not in row]
    if missing:
        raise DataFormatError(f"{where}: missing RoG field(s) {missing}")
    qid, text = row["id"], row["question"]
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
        raise DataFormatError(f"{where}: 'id' is {qid!r}; expected a non-empty string or integer")
    if not isinstance(text, str) or not text.strip():
        raise DataFormatError(f"{where}: 'question' is {text!r}; expected a non-empty string")
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
    blank = next((i for i, t in enumerate(topics) if not t.strip()), None)
    if blank is not None:
        raise DataFormatError(
            f"{where}: 'q_entity'[{blank}] is {topics[blank]!r}; expected a non-empty entity label"
        )
    if not all(a.strip() for a in answers):
        report.skipped["empty answer strings dropped"] += sum(not a.strip() for a in answers)
    triples = [tuple(t) for t in graph]
    nodes = {t[0] for t in triples} | {t[2] for t in triples}
    absent = [t for t in topics if t not in nodes]
    if absent:
        report.notes.append(f"{row['id']}: topic entity {absent[0]!r} not in its subgraph")
    q = Question(
        id=str(qid),
        text=text.strip(),
        answers=tuple(a for a in answers if a.strip()),
        topic_entities=tuple(topics),
    )
    report.control_questions += bool(CONTROL_CHARACTERS.search(q.text))
    return q, triples


class RoGSource(DatasetSource):
    """WebQSP / CWQ in the RoG format, one subgraph per question.

    Args:
        name: dataset name (``webqsp``, ``cwq``, ...).
        files: split -> local ``.jsonl``/``.jsonl.gz``/``.parquet`` file (``train``, ``val``,
            ``test``; missing splits are empty).
        hf_name: HF hub dataset (e.g. ``rmanluo/RoG-webqsp``), used when ``files`` is empty;
            needs network access the first time.
        inverse: ``auto`` | ``always`` | ``never`` (module docstring); decided on the union
            of the subgraphs and applied to each.
    """

    def __init__(
        self,
        name: str,
        files: dict[str, str] | None = None,
        hf_name: str | None = None,
        inverse: str = "auto",
    ):
        self.inverse = check_inverse_mode(inverse)
        self.name = name
        self.split_files = {k: v for k, v in (files or {}).items()}
        unknown = set(self.split_files) - set(ROG_SPLITS)
        if unknown:
            raise InputError(
                f"data.source.files has split(s) {sorted(unknown)}; expected {list(ROG_SPLITS)}"
            )
        if not self.split_files and not hf_name:
            raise InputError("RoGSource needs data.source.files or data.source.hf_name")
        self.hf_name = hf_name

    def _local_files(self) -> dict[str, Path]:
        """Split -> checked local file, in split order."""
        return {
            s: check_input_file(self.split_files[s], f"data.source.files.{s}")
            for s in ROG_SPLITS
            if s in self.split_files
        }

    def files(self) -> list[Path]:
        return list(self._local_files().values())

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
        local = self._local_files()
        for split in ROG_SPLITS:
            if self.split_files:
                if split not in local:
                    continue
                path = local[split]
                rows: Iterable[tuple[int, dict | None]] = _rog_rows(path)
            else:
                path = Path(f"{self.hf_name}:{ROG_SPLITS[split]}")
                rows = self._hf_rows(split)
            report = ReadReport(str(path))
            for lineno, row in rows:
                report.lines = lineno
                if row is None:
                    report.blank += 1
                    continue
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

    Args:
        which: ``webqsp`` or ``cwq``.
        inverse: ``auto`` | ``always`` | ``never`` (module docstring).
        resplit: split the test questions 8:1:1 with the package's split
            (``data.split_*``), so a model can be trained on the stand-in (issue 28): no
            official train split exists offline. The name becomes
            ``<which>_evidence_resplit``; its test split is a tenth of the original test set.
            A question whose answer list is empty (58 of WebQSP's, none of CWQ's) can be
            neither supervised nor scored: the resplit leaves it out, counted in the read
            report, and the count enters :meth:`config` (so the key changes only where a
            question is left out).
    """

    paper_setting = False
    CHOICES = ("webqsp", "cwq")

    def __init__(self, which: str, inverse: str = "auto", resplit: bool = False):
        if which not in self.CHOICES:
            raise InputError(f"data.source.which={which!r}; expected one of {list(self.CHOICES)}")
        if not isinstance(resplit, bool):
            raise InputError(f"data.source.resplit={resplit!r}; expected true or false")
        path = resource_path("data", "evidence", f"{which}_evidence.jsonl.gz")
        name = f"{which}_evidence" + ("_resplit" if resplit else "")
        super().__init__(name=name, files={"test": str(path)}, inverse=inverse)
        self.which, self.resplit = which, resplit

    def config(self) -> dict:
        if not self.resplit:
            return super().config()
        out = {**super().config(), "resplit": True}
        if unanswerable := self._unanswerable():
            out["unanswerable_left_out"] = unanswerable
        return out

    def _unanswerable(self) -> int:
        """How many records of the file have no non-empty answer."""
        if not hasattr(self, "_unanswerable_count"):
            rows = _rog_rows(Path(self.files()[0]))
            self._unanswerable_count = sum(
                1
                for _, row in rows
                if isinstance(row, dict)
                and not any(isinstance(a, str) and a.strip() for a in row.get("answer") or [])
            )
        return self._unanswerable_count

    def load(self) -> RawDataset:
        raw = super().load()
        if self.resplit:
            questions = list(raw.questions["test"])  # type: ignore[index]
            raw.questions = [q for q in questions if q.answers]
            if left := len(questions) - len(raw.questions):
                raw.reports.append(f"{left} questions without an answer left out (no gold)")
            raw.presplit = False
            raw.questions_file = str(self.files()[0])
        return raw

    def question_types(self) -> dict[str, str]:
        """Question id -> CWQ's ``compositionality_type`` (conjunction, composition,
        comparative, superlative; ``cwq_types.json.gz``, SOURCE.txt); empty for WebQSP, which
        has no such field."""
        if self.which != "cwq":
            return {}
        path = resource_path("data", "evidence", "cwq_types.json.gz")
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)


# --------------------------------------------------------------------------- custom
#: what a split given as ``null`` costs, for its WARNING line
_EMPTY_SPLIT_COST = {
    "train": "no model can be trained on this dataset's questions",
    "val": "model selection on val is impossible",
    "test": "nothing can be evaluated on test",
}


def _check_split_paths(split_paths: Mapping[str, str | None]) -> None:
    """``data.source.split_paths`` names exactly train, val and test, at least one with a
    file; else an :class:`InputError` naming the key."""
    expected = (
        "expected train, val and test (a questions JSONL each, or null for a split left empty)"
    )
    keys = sorted(str(k) for k in split_paths)
    unknown = [k for k in keys if k not in SPLITS]
    missing = [s for s in SPLITS if s not in split_paths]
    if unknown or missing:
        what = f"has unknown split(s) {unknown}" if unknown else f"has no {', '.join(missing)}"
        raise InputError(f"data.source.split_paths {what} (keys {keys}); {expected}")
    if all(split_paths[s] is None for s in SPLITS):
        raise InputError(f"data.source.split_paths gives no file (all three are null); {expected}")


class CustomSource(DatasetSource):
    """Bring-your-own KG: a triples file (TSV/CSV/N-Triples) and questions JSONL.

    Args:
        name: dataset name.
        kg_path: triples file.
        questions_path: one questions JSONL to be split, or ``None`` when ``split_paths``
            gives ``train``/``val``/``test`` files. A file whose records have no ``answers``
            is for answering only: every question goes to ``test`` (no train or val: nothing
            to train a model on or to select it with), and the answer metrics read "n/a".
        split_paths: optional split -> questions JSONL, naming all three splits; ``null`` for
            a split on purpose left empty (one WARNING line says what it costs: with
            ``val: null`` there is no model selection on val).  A missing split is an error,
            so that a forgotten ``val`` is not read as an empty one.
        kg_format: ``auto``/``tsv``/``csv``/``nt``; ``kg_header``: ``auto``/``present``/``none``.
        kg_comment_prefix: TSV/CSV lines starting with it are comments; ``None`` (default):
            every non-blank row is a triple, ``#`` included (N-Triples keeps its ``#`` comments).
        inverse: ``auto`` | ``always`` | ``never`` (module docstring).

    Paths are checked when the files are first needed (:meth:`files`), with messages naming
    the config key (``data.source.kg_path is empty``, ``<path>: is a directory, ...``).
    """

    def __init__(
        self,
        name: str,
        kg_path: str,
        questions_path: str | None = None,
        *,
        split_paths: dict[str, str] | None = None,
        kg_format: str = "auto",
        kg_header: str = "auto",
        kg_comment_prefix: str | None = None,
        inverse: str = "auto",
    ):
        self.inverse = check_inverse_mode(inverse)
        if (questions_path is None) == (not split_paths):
            raise InputError(
                "data.source: give exactly one of questions_path or split_paths "
                "(train/val/test questions JSONL)"
            )
        if split_paths:
            _check_split_paths(split_paths)
        if kg_format not in TRIPLE_FORMATS:
            raise InputError(
                f"data.source.kg_format={kg_format!r}; expected one of {list(TRIPLE_FORMATS)}"
            )
        if kg_header not in HEADER_MODES:
            raise InputError(
                f"data.source.kg_header={kg_header!r}; expected one of {list(HEADER_MODES)}"
            )
        if kg_comment_prefix is not None and (
            not isinstance(kg_comment_prefix, str) or not kg_comment_prefix.strip()
        ):
            raise InputError(
                f"data.source.kg_comment_prefix={kg_comment_prefix!r}; expected null (no "
                "comments) or a non-blank string such as '#'"
            )
        self.name = name
        self.kg_path = kg_path
        self.questions_path = questions_path
        self.split_paths = {s: split_paths[s] for s in SPLITS} if split_paths else {}
        for split, path in self.split_paths.items():
            if path is None:
                log.warning(
                    "data.source.split_paths.%s is null: no %s questions; %s",
                    split,
                    split,
                    _EMPTY_SPLIT_COST[split],
                )
        self.kg_format, self.kg_header = kg_format, kg_header
        self.kg_comment_prefix = kg_comment_prefix

    def _paths(self) -> tuple[Path, dict[str, Path]]:
        """The checked KG file and questions files (``"all"`` or split -> file)."""
        kg = check_input_file(self.kg_path, "data.source.kg_path")
        if self.questions_path is not None:
            return kg, {"all": check_input_file(self.questions_path, "data.source.questions_path")}
        return kg, {
            split: check_input_file(path, f"data.source.split_paths.{split}")
            for split, path in self.split_paths.items()
            if path is not None
        }

    def files(self) -> list[Path]:
        kg, questions = self._paths()
        return [kg, *questions.values()]

    def questions_origin(self, split: str) -> str:
        if self.questions_path is not None:
            return f"the questions file {self.questions_path}"
        return f"data.source.split_paths.{split} ({self.split_paths.get(split)})"

    def config(self) -> dict:
        out = {
            **super().config(),
            "format": self.kg_format,
            "header": self.kg_header,
            "comment_prefix": self.kg_comment_prefix,
        }
        if self.split_paths:  # which splits the files are (files() alone cannot tell)
            out["splits"] = [s for s, path in self.split_paths.items() if path is not None]
        return out

    def load(self) -> RawDataset:
        kg_path, question_paths = self._paths()
        kg, kg_report = read_kg(
            kg_path, self.kg_format, self.kg_header, self.name, self.kg_comment_prefix
        )
        reports = [kg_report.summary()]
        if "all" in question_paths:
            path = question_paths["all"]
            questions, rep = read_questions(path, kg)
            reports.append(rep.summary())
            if not questions[0].answers:  # answering only (the reader: all records or none)
                reports.append(f"{path}: answering only: all {len(questions)} in test")
                by_split = {"train": [], "val": [], "test": questions}
                return RawDataset(kg, by_split, presplit=True, reports=reports)
            return RawDataset(kg, questions, reports=reports, questions_file=str(path))
        by_split: dict[str, list[Question]] = {"train": [], "val": [], "test": []}
        seen: dict[str, str] = {}
        for split, path in question_paths.items():
            qs, rep = read_questions(path, kg, taken_ids=seen)
            seen.update((q.id, f"split {split!r}") for q in qs)
            by_split[split] = qs
            reports.append(rep.summary())
        return RawDataset(kg, by_split, presplit=True, reports=reports)
