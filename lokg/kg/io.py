"""Readers and writers for KG and question files, with errors that name file and line.

Every reader either returns complete data or raises :class:`DataFormatError` (an
:class:`~lokg.errors.InputError`) with a one-line message ``<file>:<line>: <what was wrong>;
expected <what>``; a path that is empty, missing or a directory is an ``InputError`` too
(:func:`check_input_file`).  Nothing is dropped silently: what a reader skips on purpose
(blank lines, comments where the format or the caller says there are comments, a header,
exact duplicate triples, extra ``rdfs:label`` literals) is counted by reason in a
:class:`ReadReport`, whose one-line summary the dataset statistics print.  A label holding a
control character (a NUL, an ESC, a DEL, a line break decoded from an N-Triples escape; see
:data:`CONTROL_CHARACTERS`) is kept as it is, counted in the report, and written as an escape
(``\\x00``) wherever it is rendered (:func:`lokg.ittc.render.one_line`); a question whose
text holds one is kept as written and counted the same way.

Supported inputs:

- triples as TSV or CSV, with or without a header row (``head,relation,tail`` and the usual
  synonyms), or N-Triples (``.nt``); ``rdfs:label`` literals become entity names.  TSV and CSV
  have no comments: a row whose head starts with ``#`` is data unless ``comment_prefix`` says
  otherwise; N-Triples has ``#`` comments by its grammar.  N-Triples IRIs are checked (non-empty,
  no spaces, control characters or ``<>"{}|^`\\``) and escapes are decoded strictly
  (``\\uXXXX``/``\\UXXXXXXXX`` must name a Unicode scalar value; a surrogate pair written as two
  ``\\u`` escapes is joined);
- questions as JSONL with keys ``id``, ``question``, ``answers``, ``topic_entities`` and an
  optional ``gold_path`` (list of ``[head, relation, tail]``); any other key is an error (a
  misspelt ``answer`` or ``gold_paths`` would otherwise be dropped unseen);
- PathQuestion's own text format (``question \\t answer(a1/a2/) \\t s#r1#e1#r2#a[#<end>#a]``).
"""

from __future__ import annotations

import csv
import difflib
import errno
import io
import json
import os
import re
import string
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lokg.atomic_io import atomic_file
from lokg.errors import InputError
from lokg.kg.graph import EntityAttributes, KnowledgeGraph
from lokg.typing import LabeledTriple, Question

__all__ = [
    "CONTROL_CHARACTERS",
    "QUESTION_KEYS",
    "REQUIRED_QUESTION_KEYS",
    "DataFormatError",
    "ReadReport",
    "check_input_file",
    "count_control_labels",
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
HEADER_MODES = ("auto", "present", "none")
#: the keys of a question record: ``id``, ``question``, ``topic_entities`` required (in
#: :data:`REQUIRED_QUESTION_KEYS`); ``answers`` optional (a file whose records have none is for
#: answering only) and ``gold_path`` optional
QUESTION_KEYS = ("id", "question", "answers", "topic_entities", "gold_path")
REQUIRED_QUESTION_KEYS = ("id", "question", "topic_entities")
#: characters a rendered line never holds raw: the control characters (category Cc: C0, DEL,
#: C1) and U+2028/U+2029, i.e. everything ``str.splitlines`` breaks on.  The readers count the
#: labels holding one; :func:`lokg.ittc.render.one_line` writes each as an escape.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class DataFormatError(InputError):
    """A data file is malformed; the message names the file and line."""


def _show(text: object) -> str:
    """``text`` as it may appear inside a one-line message (controls and line breaks escaped)."""
    s = str(text)
    return s if s.isprintable() else repr(s)


def _where(path: str | os.PathLike, lineno: int | None = None) -> str:
    return _show(path) if lineno is None else f"{_show(path)}:{lineno}"


@dataclass
class ReadReport:
    """What a reader consumed and what it skipped on purpose (nothing is dropped silently).

    Attributes:
        path: the file read.
        lines: lines read.
        records: records read (triples before exact duplicates are removed, ``rdfs:label``
            statements, questions).
        blank: blank lines skipped.
        comments: comment lines skipped (only where the format has comments or a
            ``comment_prefix`` was given; see :attr:`comment_prefix`).
        header: whether a header row was skipped.
        duplicates: exact duplicate triples kept once.
        control_labels: distinct labels (entities, relations, ``rdfs:label`` names) holding a
            control character (:data:`CONTROL_CHARACTERS`); kept, and escaped when rendered.
        control_questions: questions whose text holds a control character; kept as written.
        skipped: other skipped items, reason -> count.
        notes: other facts worth a line (e.g. questions whose topic entity is not in the KG).
        comment_prefix: what marked a comment line (``None``: no comments).
    """

    path: str
    lines: int = 0
    records: int = 0
    blank: int = 0
    comments: int = 0
    header: bool = False
    duplicates: int = 0
    control_labels: int = 0
    control_questions: int = 0
    skipped: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    comment_prefix: str | None = None

    def summary(self) -> str:
        """One line: records kept, then every skipped kind with its count."""
        parts = [f"{self.records} records from {self.lines} lines"]
        if self.header:
            parts.append("header skipped")
        if self.blank:
            parts.append(f"{self.blank} blank lines skipped")
        if self.comments:
            parts.append(f"{self.comments} comment lines ({self.comment_prefix!r}) skipped")
        if self.duplicates:
            parts.append(f"{self.duplicates} exact duplicates kept once")
        if self.control_labels:
            parts.append(
                f"{self.control_labels} labels with control characters (escaped when rendered)"
            )
        if self.control_questions:
            parts.append(
                f"{self.control_questions} questions with control characters in their text "
                "(kept as written)"
            )
        parts += [f"{n} {reason}" for reason, n in sorted(self.skipped.items())]
        return f"{_show(self.path)}: " + ", ".join(parts + [_show(n) for n in self.notes])


# --------------------------------------------------------------------------- paths
def check_input_file(path: str | os.PathLike | None, key: str | None = None) -> Path:
    """``path`` as a :class:`~pathlib.Path` to an existing regular file (``~`` expanded).

    Raises :class:`~lokg.errors.InputError` naming the path (and ``key``, the config key it
    came from, when given): ``<key> is empty``, ``<path>: no such file`` (``(a broken symbolic
    link)`` when it is one), ``<path>: is a symbolic-link loop, expected a file``, ``<path>: is
    a directory, expected a file``, ``<path>: not a regular file``.
    """
    of = f" ({key})" if key else ""
    if path is None or str(path).strip() == "":
        raise InputError(f"{key or 'input path'} is empty; expected the path of a file")
    text = os.path.expanduser(str(path))
    if "\x00" in text:
        raise InputError(f"{_show(text)}: path contains a NUL character{of}")
    p = Path(text)
    try:
        if p.is_dir():
            raise InputError(f"{_show(p)}: is a directory, expected a file{of}")
        if not p.exists():
            if _is_symlink_loop(p):
                raise InputError(f"{_show(p)}: is a symbolic-link loop, expected a file{of}")
            broken = " (a broken symbolic link)" if p.is_symlink() else ""
            raise InputError(f"{_show(p)}: no such file{broken}{of}")
        if not p.is_file():
            raise InputError(f"{_show(p)}: not a regular file, expected a file{of}")
    except OSError as err:  # e.g. a name too long, a parent that is a file
        raise InputError(f"{_show(p)}: cannot access ({err.strerror}){of}") from None
    return p


def _is_symlink_loop(p: Path) -> bool:
    """Whether resolving ``p`` runs in a circle of symbolic links (``a -> b -> a``, or such a
    circle among its parent directories); ``Path.exists`` reports that as a plain ``False``."""
    try:
        os.stat(p)
    except OSError as err:
        return err.errno == errno.ELOOP
    return False


def count_control_labels(labels: Iterable[str]) -> int:
    """How many of ``labels`` hold a control character (:data:`CONTROL_CHARACTERS`)."""
    return sum(1 for label in labels if CONTROL_CHARACTERS.search(label))


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with the newline stripped; errors name file and line."""
    path = check_input_file(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below; open errors get their own message
    except OSError as err:
        raise InputError(f"{_show(path)}: cannot read ({err.strerror})") from None
    with fh, named_os_errors(path):
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFormatError(
                    f"{_where(path, lineno)}: not valid UTF-8 (byte 0x{raw[err.start]:02x} at "
                    f"column {err.start + 1}); expected a UTF-8 text file"
                ) from None
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield lineno, text.rstrip("\r\n")


@contextmanager
def named_os_errors(path: str | os.PathLike) -> Iterator[None]:
    """Re-raise an ``OSError`` without a file name (a read failing part-way: ``EIO``) as one
    naming ``path``, which the entry points print as one line (:mod:`lokg.cli`)."""
    try:
        yield
    except OSError as err:
        if err.filename is not None or err.errno is None:
            raise
        raise OSError(err.errno, err.strerror or os.strerror(err.errno), str(path)) from None


def _data_lines(
    path: Path, report: ReadReport, comment_prefix: str | None
) -> Iterator[tuple[int, str]]:
    """Non-blank, non-comment lines of a triples file; the skipped ones are counted.

    ``comment_prefix=None``: no line is a comment (a row whose head starts with ``#`` is data).
    """
    report.comment_prefix = comment_prefix
    for lineno, text in _lines(path):
        report.lines = lineno
        if not text.strip():
            report.blank += 1
        elif comment_prefix is not None and text.lstrip().startswith(comment_prefix):
            report.comments += 1
        else:
            yield lineno, text


def _empty_error(path: str | os.PathLike, what: str, report: ReadReport) -> DataFormatError:
    seen = [f"{report.lines} lines"]
    if report.blank:
        seen.append(f"{report.blank} blank")
    if report.comments:
        seen.append(f"{report.comments} comments ({report.comment_prefix!r})")
    if report.header:
        seen.append("a header")
    return DataFormatError(
        f"{_where(path, 1)}: file has no {what} ({', '.join(seen)}); expected at least one"
    )


# --------------------------------------------------------------------------- triples
def _detect_format(path: Path, fmt: str) -> str:
    if fmt not in TRIPLE_FORMATS:
        raise InputError(f"unknown triple format {fmt!r}; expected one of {TRIPLE_FORMATS}")
    if fmt != "auto":
        return fmt
    suffix = path.suffix.lower()
    return {".csv": "csv", ".nt": "nt"}.get(suffix, "tsv")


def _is_header(fields: list[str]) -> bool:
    return tuple(f.strip().lower() for f in fields) in _HEADER_WORDS


def _delimited(
    path: Path, fmt: str, header: str, comment_prefix: str | None, report: ReadReport
) -> Iterator[LabeledTriple]:
    sep = "\t" if fmt == "tsv" else ","
    name = "tab" if fmt == "tsv" else "comma"
    for lineno, text in _data_lines(path, report, comment_prefix):
        fields = next(csv.reader(io.StringIO(text))) if fmt == "csv" else text.split(sep)
        first_row = report.records == 0 and not report.header
        if first_row and (header == "present" or (header == "auto" and _is_header(fields))):
            report.header = True
            continue
        if len(fields) != 3:
            hint = ""
            if comment_prefix is None and text.lstrip().startswith("#"):
                hint = (
                    f" ({fmt.upper()} has no comments: set the reader's comment_prefix to '#' "
                    "(data.source.kg_comment_prefix) if this line is one)"
                )
            raise DataFormatError(
                f"{_where(path, lineno)}: {len(fields)} {name}-separated columns; expected 3 "
                f"(head, relation, tail){hint}"
            )
        h, r, t = (f.strip() for f in fields)
        if not (h and r and t):
            raise DataFormatError(
                f"{_where(path, lineno)}: empty "
                f"{('head', 'relation', 'tail')[[h, r, t].index('')]}; "
                "expected three non-empty columns"
            )
        report.records += 1
        yield h, r, t


_NT_TERM = r'(<[^>]*>|_:[\w.\-]+|"(?:[^"\\]|\\.)*"(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^<[^>]*>)?)'
_NT_LINE = re.compile(rf"^\s*{_NT_TERM}\s+{_NT_TERM}\s+{_NT_TERM}\s*\.\s*(#.*)?$")
_NT_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_NT_ESCAPES_EXPECTED = r"\t \b \n \r \f \" \' \\ \uXXXX or \UXXXXXXXX"
#: characters an IRI may not contain (RDF 1.1 N-Triples IRIREF), besides controls and space
_IRI_FORBIDDEN = set('<>"{}|^`\\')
_LOW_SURROGATE = re.compile(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})")


def _nt_unescape(body: str, where: str, what: str, echar: bool) -> str:
    """Decode the escapes of an N-Triples literal (``echar``) or IRI (``\\u``/``\\U`` only)."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1] if i + 1 < n else ""
        if e in ("u", "U"):
            width = 4 if e == "u" else 8
            digits = body[i + 2 : i + 2 + width]
            shown = _show(body[i : i + 2 + width])
            if len(digits) != width or any(d not in string.hexdigits for d in digits):
                raise DataFormatError(
                    f"{where}: bad escape {shown} in {what}; expected \\{e} followed by "
                    f"{width} hex digits"
                )
            cp = int(digits, 16)
            i += 2 + width
            if 0xD800 <= cp <= 0xDBFF and (m := _LOW_SURROGATE.match(body, i)):
                cp = 0x10000 + ((cp - 0xD800) << 10) + (int(m.group(1), 16) - 0xDC00)
                i = m.end()
            elif 0xD800 <= cp <= 0xDFFF:
                raise DataFormatError(
                    f"{where}: escape {shown} in {what} is a lone surrogate; expected a Unicode "
                    "scalar value (or a surrogate pair written as two \\u escapes)"
                )
            elif cp > 0x10FFFF:
                raise DataFormatError(
                    f"{where}: escape {shown} in {what} is beyond U+10FFFF; expected a Unicode "
                    "code point"
                )
            out.append(chr(cp))
        elif echar and e in _NT_ECHAR:
            out.append(_NT_ECHAR[e])
            i += 2
        else:
            allowed = _NT_ESCAPES_EXPECTED if echar else r"\uXXXX or \UXXXXXXXX"
            raise DataFormatError(
                f"{where}: bad escape {_show(body[i : i + 2])} in {what}; expected {allowed}"
            )
    return "".join(out)


def _nt_iri(term: str, where: str) -> str:
    """The IRI of ``<...>``, validated: non-empty, no spaces, controls or ``<>"{}|^`\\``."""
    body = term[1:-1]
    if not body:
        raise DataFormatError(
            f"{where}: empty IRI <>; expected an IRI such as <http://example.org/a>"
        )
    iri = _nt_unescape(body, where, f"IRI <{_show(body)[:80]}>", echar=False)
    bad = next(
        (c for c in iri if ord(c) <= 0x20 or 0x7F <= ord(c) <= 0x9F or c in _IRI_FORBIDDEN), None
    )
    if bad is not None:
        kind = "a space" if bad == " " else repr(bad)
        raise DataFormatError(
            f"{where}: IRI <{_show(body)[:80]}> contains {kind}; expected an IRI without spaces, "
            'control characters or any of <>"{}|^`\\'
        )
    return iri


def _nt_value(term: str, where: str) -> tuple[str, bool]:
    """Label of an N-Triples term and whether it is a literal."""
    if term.startswith("<"):
        return _nt_iri(term, where), False
    if term.startswith("_:"):
        return term, False
    close = term.rindex('"')
    datatype = term[close + 1 :]
    if datatype.startswith("^^"):
        _nt_iri(datatype[2:], where)
    return _nt_unescape(term[1:close], where, "literal", echar=True), True


def _ntriples(path: Path, report: ReadReport, names: dict[str, str]) -> Iterator[LabeledTriple]:
    for lineno, text in _data_lines(path, report, "#"):
        where = _where(path, lineno)
        m = _NT_LINE.match(text)
        if m is None:
            raise DataFormatError(
                f"{where}: not an N-Triples statement; expected '<subject> <predicate> <object> .'"
            )
        (s, s_lit), (p, p_lit), (o, o_lit) = (_nt_value(m.group(i), where) for i in (1, 2, 3))
        if s_lit or p_lit:
            raise DataFormatError(
                f"{where}: literal in subject or predicate; expected an IRI or blank node"
            )
        if m.group(2).startswith("_:"):
            raise DataFormatError(f"{where}: blank node as predicate; expected an IRI")
        report.records += 1
        if p == RDFS_LABEL and o_lit:
            if s in names and names[s] != o:
                report.skipped["further rdfs:label literals ignored (first kept)"] += 1
            names.setdefault(s, o)
            continue
        yield s, p, o


def read_triples(
    path: str | os.PathLike,
    fmt: str = "auto",
    header: str = "auto",
    comment_prefix: str | None = None,
) -> tuple[list[LabeledTriple], ReadReport, dict[str, str]]:
    """Read labelled triples.

    Args:
        path: a ``.tsv``/``.txt`` (tab), ``.csv`` or ``.nt`` file.
        fmt: ``auto`` (by suffix), ``tsv``, ``csv`` or ``nt``.
        header: ``auto`` (skip a first row such as ``head,relation,tail``), ``present`` or
            ``none``.
        comment_prefix: TSV/CSV lines starting with it (after spaces) are comments; ``None``
            (the default): TSV and CSV have no comments, every non-blank row is data.
            N-Triples always has ``#`` comments.

    Returns:
        the triples in file order with exact duplicates kept once, the read report, and the
        entity names found (``rdfs:label`` literals in N-Triples; empty otherwise).
    """
    if header not in HEADER_MODES:
        raise InputError(f"unknown header mode {header!r}; expected one of {HEADER_MODES}")
    if comment_prefix is not None and (
        not isinstance(comment_prefix, str) or not comment_prefix.strip()
    ):
        raise InputError(
            f"comment_prefix={comment_prefix!r}; expected null or a non-blank string such as '#'"
        )
    path = check_input_file(path)
    fmt = _detect_format(path, fmt)
    report = ReadReport(str(path))
    names: dict[str, str] = {}
    rows = (
        _ntriples(path, report, names)
        if fmt == "nt"
        else _delimited(path, fmt, header, comment_prefix, report)
    )
    seen: set[LabeledTriple] = set()
    triples: list[LabeledTriple] = []
    for triple in rows:
        if triple in seen:
            report.duplicates += 1
            continue
        seen.add(triple)
        triples.append(triple)
    if not triples:
        raise _empty_error(path, "triples", report)
    labels = {label for triple in triples for label in triple} | set(names.values())
    report.control_labels = count_control_labels(labels)
    if names:
        report.notes.append(f"{len(names)} rdfs:label names")
    return triples, report, names


def read_kg(
    path: str | os.PathLike,
    fmt: str = "auto",
    header: str = "auto",
    name: str | None = None,
    comment_prefix: str | None = None,
) -> tuple[KnowledgeGraph, ReadReport]:
    """Read a triples file into a :class:`KnowledgeGraph` (names attached when present)."""
    triples, report, names = read_triples(path, fmt, header, comment_prefix)
    kg = KnowledgeGraph.from_labeled_triples(triples, name=name or Path(path).stem)
    if names:
        kg.attributes = EntityAttributes(names=[names.get(e) for e in kg.entities.labels])
    return kg, report


def write_triples(path: str | os.PathLike, triples: list[LabeledTriple]) -> None:
    """Write a header-less TSV; a label with a tab or line break is refused (it would not
    read back as the same triple)."""
    for triple in triples:
        for label in triple:
            if "\t" in label or len(f"x{label}x".splitlines()) != 1:
                raise ValueError(
                    f"label {label!r} contains a tab or line break; a TSV row cannot hold it"
                )
    with open(path, "w", encoding="utf-8") as fh:
        for h, r, t in triples:
            fh.write(f"{h}\t{r}\t{t}\n")


# --------------------------------------------------------------------------- questions
def _expect(cond: bool, path: os.PathLike | str, lineno: int, msg: str) -> None:
    if not cond:
        raise DataFormatError(f"{_where(path, lineno)}: {msg}")


def _check_labels(value: object, key: str, path: os.PathLike | str, lineno: int) -> list[str]:
    """``value`` as a list of non-blank strings, or an error naming the bad element."""
    _expect(isinstance(value, list), path, lineno, f"'{key}' is {_kind(value)}; expected a list")
    for i, item in enumerate(value):  # type: ignore[arg-type]
        _expect(
            isinstance(item, str) and item.strip() != "",
            path,
            lineno,
            f"'{key}'[{i}] is {_kind(item)}; expected a non-empty string",
        )
    return value  # type: ignore[return-value]


def _kind(value: object) -> str:
    """A short, one-line description of a JSON value for an error message."""
    if isinstance(value, str):
        return "an empty string" if not value.strip() else f"the string {value[:40]!r}"
    if value is None:
        return "null"
    return f"{type(value).__name__} {json.dumps(value)[:40]}"


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    if dup is not None:
        raise ValueError(f"duplicate key {dup!r}")
    return dict(pairs)


def _json_object(path: os.PathLike | str, lineno: int, text: str) -> dict:
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as err:
        raise DataFormatError(
            f"{_where(path, lineno)}: invalid JSON ({err.msg} at column {err.colno}); "
            "expected one JSON object per line"
        ) from None
    except ValueError as err:  # a duplicate key
        raise DataFormatError(
            f"{_where(path, lineno)}: {err}; expected each key once per object"
        ) from None
    _expect(isinstance(obj, dict), path, lineno, f"{_kind(obj)}; expected a JSON object")
    return obj


def _unknown_key(key: str) -> str:
    """``unknown key 'answer' (did you mean 'answers'?); expected keys ...``."""
    close = difflib.get_close_matches(key, QUESTION_KEYS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    shown = repr(key if len(key) <= 40 else key[:40] + "...")
    optional = [k for k in QUESTION_KEYS if k not in REQUIRED_QUESTION_KEYS]
    return (
        f"unknown key {shown}{hint}; expected keys {', '.join(REQUIRED_QUESTION_KEYS)} and "
        f"optionally {', '.join(optional)}"
    )


def _question_id(obj: dict, path: os.PathLike | str, lineno: int) -> str:
    """The id of question object ``obj`` after its keys are checked: none unknown, none of
    the required ones missing."""
    unknown = next((k for k in obj if k not in QUESTION_KEYS), None)
    if unknown is not None:
        raise DataFormatError(f"{_where(path, lineno)}: {_unknown_key(unknown)}")
    missing = [k for k in REQUIRED_QUESTION_KEYS if k not in obj]
    _expect(not missing, path, lineno, f"missing key(s) {missing}")
    qid = obj["id"]
    _expect(
        isinstance(qid, (str, int)) and not isinstance(qid, bool) and str(qid).strip() != "",
        path,
        lineno,
        f"'id' is {_kind(qid)}; expected a non-empty string or integer",
    )
    return str(qid)


def _check_new_id(
    qid: str,
    first_line: Mapping[str, int],
    taken_ids: Mapping[str, str] | None,
    path: os.PathLike | str,
    lineno: int,
) -> None:
    """An error naming the line when ``qid`` was used on an earlier line or elsewhere."""
    if qid in first_line:
        raise DataFormatError(
            f"{_where(path, lineno)}: duplicate id {qid!r} (first on line "
            f"{first_line[qid]}); expected unique ids"
        )
    if taken_ids and qid in taken_ids:
        raise DataFormatError(
            f"{_where(path, lineno)}: duplicate id {qid!r} (also in "
            f"{taken_ids[qid]}); expected unique ids"
        )


def _question(obj: dict, qid: str, path: os.PathLike | str, lineno: int) -> Question:
    """The :class:`Question` of object ``obj`` (its keys and id checked), or an error naming
    the line and the mistyped key."""
    text = obj["question"]
    _expect(
        isinstance(text, str) and text.strip() != "",
        path,
        lineno,
        f"'question' is {_kind(text)}; expected a non-empty string",
    )
    answers = obj.get("answers")  # absent or null: no gold answer (answering only)
    answers = [] if answers is None else _check_labels(answers, "answers", path, lineno)
    topics = _check_labels(obj["topic_entities"], "topic_entities", path, lineno)
    _expect(
        len(topics) > 0,
        path,
        lineno,
        "'topic_entities' is an empty list; expected at least one topic entity",
    )
    gold = obj.get("gold_path", [])
    _expect(
        isinstance(gold, list)
        and all(
            isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) and x for x in t)
            for t in gold
        ),
        path,
        lineno,
        "'gold_path' must be a list of [head, relation, tail] string triples",
    )
    return Question(
        id=qid,
        text=text.strip(),
        answers=tuple(answers),
        topic_entities=tuple(topics),
        gold_path=tuple(tuple(t) for t in gold),
    )


def read_questions(
    path: str | os.PathLike,
    kg: KnowledgeGraph | None = None,
    taken_ids: Mapping[str, str] | None = None,
    *,
    mixed_answers: bool = False,
) -> tuple[list[Question], ReadReport]:
    """Read questions JSONL (``id``, ``question``, ``topic_entities``, optional ``answers``
    and ``gold_path``; :data:`QUESTION_KEYS`).

    Duplicate ids, missing, unknown (a misspelt ``answer``) or mistyped keys (an empty or
    non-string topic entity among them), invalid JSON and empty files are errors naming the
    line.  A topic entity that is not in ``kg`` is not an input error (the question is
    answered without evidence); the report counts such questions.

    ``answers`` absent, ``null`` or ``[]``: the question has no gold answer (``answers ==
    ()``). A file is either answered (every record has answers: it can train and be scored)
    or for answering only (no record has any; the report says so). A file that mixes the
    two is an error naming its first record unlike the first one, unless ``mixed_answers``
    (the package's own prepared split files, where a source may keep unanswerable
    questions): a forgotten ``answers`` is a typo, not a question to leave unscored.

    Args:
        path: the JSONL file.
        kg: the graph the questions are asked over (for the count of unknown topic entities).
        taken_ids: ids already used elsewhere (id -> where, e.g. ``"split 'train'"``); reusing
            one is an error naming this line.
        mixed_answers: accept answered and unanswered records in one file.
    """
    path = check_input_file(path)
    report = ReadReport(str(path))
    questions: list[Question] = []
    first_line: dict[str, int] = {}
    unknown_topics: list[tuple[int, str]] = []
    for lineno, text in _lines(path):
        report.lines = lineno
        if not text.strip():
            report.blank += 1
            continue
        obj = _json_object(path, lineno, text)
        qid = _question_id(obj, path, lineno)
        _check_new_id(qid, first_line, taken_ids, path, lineno)
        first_line[qid] = lineno
        question = _question(obj, qid, path, lineno)
        if kg is not None:
            unknown_topics += [(lineno, t) for t in question.topic_entities if t not in kg.entities]
        if questions and not mixed_answers:
            _check_like_first(question, questions[0], first_line, path, lineno)
        report.control_questions += bool(CONTROL_CHARACTERS.search(question.text))
        questions.append(question)
        report.records += 1
    if not questions:
        raise _empty_error(path, "questions", report)
    if unanswered := sum(not q.answers for q in questions):
        report.notes.append(
            "no question has gold answers (answering only: answer metrics n/a)"
            if unanswered == len(questions)
            else f"{unanswered} questions without gold answers (left out of the answer metrics)"
        )
    if unknown_topics:
        lineno, label = unknown_topics[0]
        n = len({line for line, _ in unknown_topics})
        report.notes.append(
            f"{n} question(s) with a topic entity not in the KG, no evidence for it "
            f"(first: line {lineno}, {label!r})"
        )
    return questions, report


def _check_like_first(
    question: Question,
    first: Question,
    first_line: Mapping[str, int],
    path: os.PathLike | str,
    lineno: int,
) -> None:
    """An error naming the line when ``question`` has gold answers and the file's first
    question ``first`` has none, or the other way round (:func:`read_questions`)."""
    if bool(question.answers) == bool(first.answers):
        return
    this, that = ("has no", "has") if first.answers else ("has", "has none")
    raise DataFormatError(
        f"{_where(path, lineno)}: question {question.id!r} {this} 'answers' but the first "
        f"(line {first_line[first.id]}, {first.id!r}) {that}; expected answers on every record "
        "(to train and score) or on none (answering only); put unanswered questions in a "
        "file of their own (data.source.split_paths.test)"
    )


def write_questions(path: str | os.PathLike, questions: list[Question]) -> None:
    """Write questions JSONL atomically (temp file + rename)."""
    path = Path(path)
    with atomic_file(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")


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
    path = check_input_file(path)
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
        _expect(question != "", path, lineno, "empty question; expected the question text")
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
            len(elems) >= 3 and len(elems) % 2 == 1 and all(e.strip() for e in elems),
            path,
            lineno,
            f"path {path_field[:60]!r}; expected 'subject#rel#entity[#rel#entity...]'",
        )
        gold = tuple((elems[i], elems[i + 1], elems[i + 2]) for i in range(0, len(elems) - 2, 2))
        if kg is not None:
            missing = [t for t in gold if t[0] not in kg.entities or t[2] not in kg.entities]
            if missing:
                raise DataFormatError(
                    f"{_where(path, lineno)}: gold path triple {missing[0]} has an entity that "
                    "is not in the KG; expected every gold path entity in the KB"
                )
        report.control_questions += bool(CONTROL_CHARACTERS.search(question))
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
        raise _empty_error(path, "questions", report)
    return questions, report
