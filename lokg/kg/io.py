"""Readers and writers for KG and question files, with errors that name file and line.

Every reader either returns complete data or raises :class:`DataFormatError` with a
one-line message ``<file>:<line>: <what was wrong>; expected <what>``.  Nothing is dropped
silently: what a reader skips on purpose (blank lines, comments, a header, exact duplicate
triples) is counted in a :class:`ReadReport`.

Supported inputs:

- triples as TSV or CSV, with or without a header row (``head,relation,tail`` and the usual
  synonyms), or N-Triples (``.nt``); ``rdfs:label`` literals become entity names;
- questions as JSONL with keys ``id``, ``question``, ``answers``, ``topic_entities`` and an
  optional ``gold_path`` (list of ``[head, relation, tail]``);
- PathQuestion's own text format (``question \\t answer(a1/a2/) \\t s#r1#e1#r2#a[#<end>#a]``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lokg.kg.graph import EntityAttributes, KnowledgeGraph
from lokg.typing import LabeledTriple, Question

__all__ = [
    "DataFormatError",
    "ReadReport",
    "read_kg",
    "read_pathquestion",
    "read_questions",
    "read_triples",
    "write_questions",
    "write_triples",
]

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
_HEADER_WORDS = {
    ("head", "relation", "tail"),
    ("h", "r", "t"),
    ("subject", "predicate", "object"),
    ("subject", "relation", "object"),
    ("s", "p", "o"),
    ("source", "relation", "target"),
}
TRIPLE_FORMATS = ("auto", "tsv", "csv", "nt")


class DataFormatError(ValueError):
    """A data file is malformed; the message names the file and line."""


@dataclass
class ReadReport:
    """What a reader consumed and what it skipped on purpose (nothing is dropped silently)."""

    path: str
    lines: int = 0
    records: int = 0
    blank: int = 0
    comments: int = 0
    header: bool = False
    duplicates: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{self.records} records from {self.lines} lines"]
        if self.header:
            parts.append("header skipped")
        if self.blank:
            parts.append(f"{self.blank} blank")
        if self.comments:
            parts.append(f"{self.comments} comments")
        if self.duplicates:
            parts.append(f"{self.duplicates} exact duplicates kept once")
        return f"{self.path}: " + ", ".join(parts + self.notes)


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the newline stripped; errors name file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFormatError(
                    f"{path}:{lineno}: not valid UTF-8 (byte 0x{raw[err.start]:02x} at column "
                    f"{err.start + 1}); expected a UTF-8 text file"
                ) from None
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield lineno, text.rstrip("\r\n")


def _data_lines(path: Path, report: ReadReport) -> Iterator[tuple[int, str]]:
    """Non-blank, non-comment (``#``) lines of a triples file; the skipped ones are counted."""
    for lineno, text in _lines(path):
        report.lines = lineno
        if not text.strip():
            report.blank += 1
        elif text.lstrip().startswith("#"):
            report.comments += 1
        else:
            yield lineno, text


def _empty_error(path: str | os.PathLike, what: str) -> DataFormatError:
    return DataFormatError(f"{path}:1: file has no {what}; expected at least one")


# --------------------------------------------------------------------------- triples
def _detect_format(path: Path, fmt: str) -> str:
    if fmt not in TRIPLE_FORMATS:
        raise ValueError(f"unknown triple format {fmt!r}; expected one of {TRIPLE_FORMATS}")
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower()
    return {".csv": "csv", ".nt": "nt"}.get(suffix, "tsv")


def _is_header(fields: list[str]) -> bool:
    return tuple(f.strip().lower() for f in fields) in _HEADER_WORDS


def _delimited(path: Path, fmt: str, header: str, report: ReadReport) -> Iterator[LabeledTriple]:
    sep = "\t" if fmt == "tsv" else ","
    name = "tab" if fmt == "tsv" else "comma"
    for lineno, text in _data_lines(path, report):
        fields = next(csv.reader(io.StringIO(text))) if fmt == "csv" else text.split(sep)
        first_row = report.records == 0 and not report.header
        if first_row and (header == "present" or (header == "auto" and _is_header(fields))):
            report.header = True
            continue
        if len(fields) != 3:
            raise DataFormatError(
                f"{path}:{lineno}: {len(fields)} {name}-separated columns; expected 3 "
                "(head, relation, tail)"
            )
        h, r, t = (f.strip() for f in fields)
        if not (h and r and t):
            raise DataFormatError(
                f"{path}:{lineno}: empty {('head', 'relation', 'tail')[[h, r, t].index('')]}; "
                "expected three non-empty columns"
            )
        report.records += 1
        yield h, r, t


_NT_TERM = r'(<[^>]*>|_:[A-Za-z0-9_.\-]+|"(?:[^"\\]|\\.)*"(?:@[A-Za-z\-]+|\^\^<[^>]*>)?)'
_NT_LINE = re.compile(rf"^\s*{_NT_TERM}\s+{_NT_TERM}\s+{_NT_TERM}\s*\.\s*(#.*)?$")
_NT_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", '"': '"', "\\": "\\", "'": "'", "b": "\b"}


def _nt_value(term: str) -> tuple[str, bool]:
    """Label of an N-Triples term and whether it is a literal."""
    if term.startswith("<"):
        return term[1:-1], False
    if term.startswith("_:"):
        return term, False
    body = term[1 : term.rindex('"')]

    def unescape(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] in "uU":
            return chr(int(esc[1:], 16))
        return _NT_ESCAPES.get(esc, esc)

    return re.sub(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", unescape, body), True


def _ntriples(path: Path, report: ReadReport, names: dict[str, str]) -> Iterator[LabeledTriple]:
    for lineno, text in _data_lines(path, report):
        m = _NT_LINE.match(text)
        if m is None:
            raise DataFormatError(
                f"{path}:{lineno}: not an N-Triples statement; expected "
                "'<subject> <predicate> <object> .'"
            )
        (s, s_lit), (p, p_lit), (o, o_lit) = (_nt_value(m.group(i)) for i in (1, 2, 3))
        if s_lit or p_lit:
            raise DataFormatError(
                f"{path}:{lineno}: literal in subject or predicate; expected an IRI or blank node"
            )
        report.records += 1
        if p == RDFS_LABEL and o_lit:
            names.setdefault(s, o)
            continue
        yield s, p, o


def read_triples(
    path: str | os.PathLike, fmt: str = "auto", header: str = "auto"
) -> tuple[list[LabeledTriple], ReadReport, dict[str, str]]:
    """Read labelled triples.

    Args:
        path: a ``.tsv``/``.txt`` (tab), ``.csv`` or ``.nt`` file.
        fmt: ``auto`` (by suffix), ``tsv``, ``csv`` or ``nt``.
        header: ``auto`` (skip a first row such as ``head,relation,tail``), ``present`` or
            ``none``.

    Returns:
        the triples in file order with exact duplicates kept once, the read report, and the
        entity names found (``rdfs:label`` literals in N-Triples; empty otherwise).
    """
    path = Path(path)
    if header not in ("auto", "present", "none"):
        raise ValueError(f"unknown header mode {header!r}; expected 'auto', 'present' or 'none'")
    fmt = _detect_format(path, fmt)
    report = ReadReport(str(path))
    names: dict[str, str] = {}
    rows = _ntriples(path, report, names) if fmt == "nt" else _delimited(path, fmt, header, report)
    seen: set[LabeledTriple] = set()
    triples: list[LabeledTriple] = []
    for triple in rows:
        if triple in seen:
            report.duplicates += 1
            continue
        seen.add(triple)
        triples.append(triple)
    if not triples:
        raise _empty_error(path, "triples")
    if names:
        report.notes.append(f"{len(names)} rdfs:label names")
    return triples, report, names


def read_kg(
    path: str | os.PathLike, fmt: str = "auto", header: str = "auto", name: str | None = None
) -> tuple[KnowledgeGraph, ReadReport]:
    """Read a triples file into a :class:`KnowledgeGraph` (names attached when present)."""
    triples, report, names = read_triples(path, fmt, header)
    kg = KnowledgeGraph.from_labeled_triples(triples, name=name or Path(path).stem)
    if names:
        kg.attributes = EntityAttributes(names=[names.get(e) for e in kg.entities.labels])
    return kg, report


def write_triples(path: str | os.PathLike, triples: list[LabeledTriple]) -> None:
    """Write a header-less TSV (labels must not contain tabs or newlines)."""
    with open(path, "w", encoding="utf-8") as fh:
        for h, r, t in triples:
            fh.write(f"{h}\t{r}\t{t}\n")


# --------------------------------------------------------------------------- questions
def _expect(cond: bool, path: os.PathLike | str, lineno: int, msg: str) -> None:
    if not cond:
        raise DataFormatError(f"{path}:{lineno}: {msg}")


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def read_questions(
    path: str | os.PathLike, kg: KnowledgeGraph | None = None
) -> tuple[list[Question], ReadReport]:
    """Read questions JSONL (``id``, ``question``, ``answers``, ``topic_entities``).

    With ``kg`` every topic entity must be in its vocabulary.  Duplicate ids, missing or
    mistyped keys, invalid JSON and empty files are errors naming the line.
    """
    report = ReadReport(str(path))
    questions: list[Question] = []
    first_line: dict[str, int] = {}
    for lineno, text in _lines(path):
        report.lines = lineno
        if not text.strip():
            report.blank += 1
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as err:
            raise DataFormatError(
                f"{path}:{lineno}: invalid JSON ({err.msg} at column {err.colno}); "
                "expected one JSON object per line"
            ) from None
        _expect(isinstance(obj, dict), path, lineno, "expected a JSON object")
        missing = [k for k in ("id", "question", "answers", "topic_entities") if k not in obj]
        _expect(not missing, path, lineno, f"missing key(s) {missing}")
        qid = obj["id"]
        _expect(
            isinstance(qid, (str, int)) and not isinstance(qid, bool) and str(qid) != "",
            path,
            lineno,
            f"'id' is {qid!r}; expected a non-empty string or integer",
        )
        qid = str(qid)
        if qid in first_line:
            raise DataFormatError(
                f"{path}:{lineno}: duplicate id {qid!r} (first on line {first_line[qid]}); "
                "expected unique ids"
            )
        first_line[qid] = lineno
        text_q = obj["question"]
        _expect(
            isinstance(text_q, str) and text_q.strip() != "",
            path,
            lineno,
            "'question' must be a non-empty string",
        )
        _expect(
            _str_list(obj["answers"]), path, lineno, "'answers' must be a list of non-empty strings"
        )
        topics = obj["topic_entities"]
        _expect(
            _str_list(topics) and len(topics) > 0,
            path,
            lineno,
            "'topic_entities' must be a non-empty list of non-empty strings",
        )
        if kg is not None:
            unknown = [t for t in topics if t not in kg.entities]
            _expect(
                not unknown,
                path,
                lineno,
                f"unknown topic entit{'y' if len(unknown) == 1 else 'ies'} {unknown} "
                f"(not in KG {kg.name!r})",
            )
        gold = obj.get("gold_path", [])
        _expect(
            isinstance(gold, list) and all(_str_list(t) and len(t) == 3 for t in gold),
            path,
            lineno,
            "'gold_path' must be a list of [head, relation, tail] string triples",
        )
        if not obj["answers"]:
            report.notes.append(f"line {lineno}: question {qid!r} has no gold answer")
        questions.append(
            Question(
                id=qid,
                text=text_q.strip(),
                answers=tuple(obj["answers"]),
                topic_entities=tuple(topics),
                gold_path=tuple(tuple(t) for t in gold),
            )
        )
        report.records += 1
    if not questions:
        raise _empty_error(path, "questions")
    return questions, report


def write_questions(path: str | os.PathLike, questions: list[Question]) -> None:
    """Write questions JSONL atomically (temp file + rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- PathQuestion
def _split_answer_field(field_: str) -> list[str] | None:
    """``first(a1/a2/)`` -> ``[a1, a2]``; labels may themselves contain parentheses."""
    if not field_.endswith("/)"):
        return None
    for i, ch in enumerate(field_):
        if ch != "(":
            continue
        inner = field_[i + 1 : -1]
        answers = [a for a in inner.split("/") if a]
        if field_[:i] in answers:
            return answers
    return None


def read_pathquestion(
    path: str | os.PathLike, prefix: str, kg: KnowledgeGraph | None = None
) -> tuple[list[Question], ReadReport]:
    """Read a PathQuestion / PathQuestion-Large file (Zhou et al., 2018).

    Each line is ``question \\t first(a1/a2/) \\t s#r1#e1#r2#e2[#r3#e3][#<end>#e]``.  The topic
    entity is the path's first element; the gold path is the chain of triples up to
    ``<end>``.  Ids are ``<prefix>-<line number>`` (stable: results are keyed by them).
    """
    report = ReadReport(str(path))
    questions: list[Question] = []
    for lineno, text in _lines(path):
        report.lines = lineno
        if not text.strip():
            report.blank += 1
            continue
        fields = text.split("\t")
        _expect(
            len(fields) == 3,
            path,
            lineno,
            f"{len(fields)} tab-separated columns; expected 3 (question, answers, path)",
        )
        question, answer_field, path_field = (f.strip() for f in fields)
        _expect(question != "", path, lineno, "empty question")
        answers = _split_answer_field(answer_field)
        _expect(
            answers is not None,
            path,
            lineno,
            f"answer column {answer_field[:60]!r}; expected 'first(a1/a2/)'",
        )
        elems = path_field.split("#")
        if "<end>" in elems:
            elems = elems[: elems.index("<end>")]
        _expect(
            len(elems) >= 3 and len(elems) % 2 == 1 and all(elems),
            path,
            lineno,
            f"path {path_field[:60]!r}; expected 'subject#rel#entity[#rel#entity...]'",
        )
        gold = tuple((elems[i], elems[i + 1], elems[i + 2]) for i in range(0, len(elems) - 2, 2))
        if kg is not None:
            missing = [t for t in gold if t[0] not in kg.entities or t[2] not in kg.entities]
            if missing:
                raise DataFormatError(
                    f"{path}:{lineno}: gold path triple {missing[0]} has an entity that is not "
                    "in the KG; expected every gold path entity in the KB"
                )
        questions.append(
            Question(
                id=f"{prefix}-{lineno:05d}",
                text=question,
                answers=tuple(answers),
                topic_entities=(elems[0],),
                gold_path=gold,
            )
        )
        report.records += 1
    if not questions:
        raise _empty_error(path, "questions")
    return questions, report
