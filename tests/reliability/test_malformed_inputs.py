"""The malformed-input corpus, at reader and source level: every case is an ``InputError`` whose
message is one line naming the file and line (or the file, or the config key).

Each case writes its files into ``tmp_path``, runs one reader or source, and states the exact
start of the message (``<tmp>/kg.nt:3: ``) plus a fragment of what it says.  The entry points
print that message as ``error: <message>`` and exit 2 (tested with the entry points).  Then:
a failed preparation leaves no ``artifacts/data/...`` directory behind; what is accepted on
purpose is said (a split given as ``null`` logs one WARNING line; a label holding a control
character is counted in the read report and rendered as an escape, never raw; a question
text holding one is counted and kept as written).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from lokg.cli import EXIT_INPUT_ERROR, report
from lokg.data import CustomSource, KGQADataModule, PathQuestionSource, RoGSource
from lokg.errors import InputError
from lokg.ittc.encoder import ITTCEncoder, NaiveEncoder
from lokg.ittc.render import GRANULARITIES, TripleRenderer
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.io import read_kg, read_pathquestion, read_questions, read_triples

KG = KnowledgeGraph.from_labeled_triples([("paris", "capital_of", "france"), ("a", "r", "b")])
GOOD_NT = "<http://x/a> <http://x/p> <http://x/b> .\n# a comment\n"
GOOD_Q = {"id": "q0", "question": "capital?", "answers": ["paris"], "topic_entities": ["france"]}
GOOD_ROG = {"id": "r1", "question": "q?", "answer": ["b"], "q_entity": ["a"], "graph": []}


@dataclass
class Case:
    """One malformed input.

    Attributes:
        files: name -> content written under ``tmp_path`` (bytes written as they are).
        run: reads them (gets ``tmp_path``); must raise :class:`InputError`.
        where: exact start of the message, ``{tmp}`` standing for ``tmp_path``.
        says: a fragment the message contains.
        links: name -> target of symbolic links made under ``tmp_path`` (after ``files``).
    """

    id: str
    files: dict[str, str | bytes]
    run: Callable[[Path], object]
    where: str
    says: str
    links: dict[str, str] = field(default_factory=dict)


def q(**kw) -> str:
    row = {**GOOD_Q, **kw}
    return json.dumps({k: v for k, v in row.items() if v is not ...})


def rog(**kw) -> str:
    return json.dumps({k: v for k, v in {**GOOD_ROG, **kw}.items() if v is not ...})


def questions_of(n: int, paths: int | None = None) -> str:
    """``n`` questions, each its own text; with ``paths``, ``paths`` distinct relation chains
    from one topic (so ``paths`` groups)."""
    rows = []
    for i in range(n):
        gold = [] if paths is None else [["a", f"r{i % paths}", "b"]]
        rows.append(
            q(id=f"q{i}", question=f"capital {i}?", topic_entities=["a"], answers=["b"],
              gold_path=gold)
        )  # fmt: skip
    return "\n".join(rows) + "\n"


# ------------------------------------------------------------------ runners
def triples(name: str, **kw) -> Callable[[Path], object]:
    return lambda tmp: read_triples(tmp / name, **kw)


def questions(name: str = "q.jsonl") -> Callable[[Path], object]:
    return lambda tmp: read_questions(tmp / name, KG)


def pathquestion(name: str = "pq.txt") -> Callable[[Path], object]:
    return lambda tmp: read_pathquestion(tmp / name, prefix="pq", kg=KG)


def rog_source(**files: str) -> Callable[[Path], object]:
    return lambda tmp: RoGSource("r", files={s: str(tmp / f) for s, f in files.items()}).load()


def reading(name: str, runner: Callable[[str], Callable[[Path], object]]) -> Callable[..., Case]:
    """A maker of the cases that write ``content`` to the one file ``name`` and read it with
    ``runner(name)`` (or the ``run`` given): the message starts ``<tmp>/<name>:<line>: ``."""

    def case(id: str, content: str | bytes, line: int, says: str, run=None) -> Case:
        return Case(id, {name: content}, run or runner(name), f"{{tmp}}/{name}:{line}: ", says)

    return case


tsv = reading("kg.tsv", triples)
csv = reading("kg.csv", triples)
nt = reading("kg.nt", triples)
qs = reading("q.jsonl", questions)
pq = reading("pq.txt", pathquestion)
rog_case = reading("test.jsonl", lambda name: rog_source(test=name))


def prepare(
    kg_path: str, questions_path: str | None, split_paths: dict[str, str] | None = None, **kw
) -> Callable[[Path], object]:
    """Prepare a custom dataset (``kw``: DataModule options); ``{tmp}`` in a path stands for
    ``tmp_path``."""

    def run(tmp: Path) -> None:
        def fill(p):
            return p if p is None else p.format(tmp=tmp)

        splits = None if split_paths is None else {s: fill(p) for s, p in split_paths.items()}
        src = CustomSource("c", fill(kg_path), fill(questions_path), split_paths=splits)
        KGQADataModule(src, artifacts_dir=str(tmp / "artifacts"), **kw).prepare_data()

    return run


TSV_OK = "a\tr\tb\n"
QS_OK = questions_of(20)

CASES = [
    # ----------------------------------------------------------- TSV
    tsv("tsv-2-columns", "a\tr\tb\na\tr\n", 2, "2 tab-separated columns; expected 3"),
    tsv("tsv-4-columns", "a\tr\tb\tc\n", 1, "4 tab-separated columns"),
    tsv("tsv-trailing-tab", "a\tr\tb\n\nx\ty\tz\t\n", 3, "4 tab-separated columns"),
    tsv("tsv-empty-head", "\tr\tb\n", 1, "empty head"),
    tsv("tsv-blank-relation", "a\t \tb\n", 1, "empty relation"),
    tsv("tsv-empty-tail", "a\tr\tb\na\tr\t\n", 2, "empty tail"),
    tsv("tsv-hash-comment-is-data", "# my notes\na\tr\tb\n", 1, "TSV has no comments"),
    tsv("tsv-commas", "a,r,b\n", 1, "1 tab-separated columns"),
    tsv("tsv-bad-utf8", b"a\tr\tb\nc\tr\td\nc\tr\t\xffd\n", 3,
        "not valid UTF-8 (byte 0xff at column 5)"),
    tsv("tsv-latin1", "caf\u00e9\tr\tb\n".encode("latin-1"), 1, "not valid UTF-8 (byte 0xe9"),
    tsv("tsv-utf16", "a\tr\tb\n".encode("utf-16"), 1, "not valid UTF-8"),
    tsv("tsv-empty-file", "", 1, "file has no triples"),
    tsv("tsv-only-blank", "\n  \n\t\n", 1, "file has no triples (3 lines, 3 blank)"),
    tsv("tsv-only-header", "head\trelation\ttail\n", 1, "file has no triples (1 lines, a header)"),
    tsv("tsv-only-comments", "# x\n#y\n", 1, "file has no triples (2 lines, 2 comments ('#'))",
        triples("kg.tsv", comment_prefix="#")),
    # ----------------------------------------------------------- CSV with a header
    csv("csv-h-2-columns", "head,relation,tail\na,r\n", 2, "2 comma-separated columns; expected 3"),
    csv("csv-h-empty-field", "subject,predicate,object\na,,b\n", 2, "empty relation"),
    csv("csv-h-unbalanced-quote", 'h,r,t\n"a,r,b\n', 2, "1 comma-separated columns"),
    csv("csv-h-4-columns", "h,r,t\na,r,b\na,r,b,c\n", 3, "4 comma-separated columns"),
    csv("csv-h-only-header", "head,relation,tail\n\n", 1, "file has no triples"),
    csv("csv-h-bad-utf8", b"h,r,t\na,\xc3(,b\n", 2, "not valid UTF-8"),
    csv("csv-h-present-but-data-short", "a,r,b\nx,y\n", 2, "2 comma-separated columns",
        triples("kg.csv", header="present")),
    # ----------------------------------------------------------- CSV without a header
    csv("csv-2-columns", "a,r\n", 1, "2 comma-separated columns"),
    csv("csv-4-columns", "a,r,b\na,r,b,c\n", 2, "4 comma-separated columns"),
    csv("csv-empty-head", ",r,b\n", 1, "empty head"),
    csv("csv-hash-row-short", "a,r,b\n#x,y\n", 2, "CSV has no comments"),
    csv("csv-semicolons", "a;r;b\n", 1, "1 comma-separated columns"),
    csv("csv-empty-quoted-tail", 'a,r,""\n', 1, "empty tail", triples("kg.csv", header="none")),
    # ----------------------------------------------------------- N-Triples
    nt("nt-bad-hex-escape", GOOD_NT + '<http://x/a> <http://x/p> "a\\uZZZZ" .\n', 3,
       r"bad escape \uZZZZ in literal"),
    nt("nt-beyond-unicode", GOOD_NT + '<http://x/a> <http://x/p> "\\UFFFFFFFF" .\n', 3,
       "is beyond U+10FFFF"),
    nt("nt-lone-high-surrogate", GOOD_NT + '<http://x/a> <http://x/p> "\\uD800" .\n', 3,
       "is a lone surrogate"),
    nt("nt-lone-low-surrogate", GOOD_NT + '<http://x/a> <http://x/p> "x\\uDC00" .\n', 3,
       "is a lone surrogate"),
    nt("nt-short-U-escape", GOOD_NT + '<http://x/a> <http://x/p> "\\U0041" .\n', 3,
       r"expected \U followed by 8 hex digits"),
    nt("nt-unknown-escape", GOOD_NT + '<http://x/a> <http://x/p> "\\q" .\n', 3,
       r"bad escape \q in literal"),
    nt("nt-space-in-iri", GOOD_NT + "<a b> <http://x/p> <http://x/c> .\n", 3,
       "IRI <a b> contains a space"),
    nt("nt-empty-iri", GOOD_NT + "<> <http://x/p> <http://x/c> .\n", 3, "empty IRI <>"),
    nt("nt-empty-object-iri", "<http://x/a> <http://x/p> <> .\n", 1, "empty IRI <>"),
    nt("nt-quote-in-iri", '<http://x/a> <http://x/p> <http://x/"c> .\n', 1, "contains '\"'"),
    nt("nt-brace-in-iri", "<http://x/{a}> <http://x/p> <http://x/c> .\n", 1, "contains '{'"),
    nt("nt-pipe-in-iri", "<http://x/a> <http://x/p|q> <http://x/c> .\n", 1, "contains '|'"),
    nt("nt-caret-in-iri", "<http://x/a^> <http://x/p> <http://x/c> .\n", 1, "contains '^'"),
    nt("nt-backquote-in-iri", "<http://x/a> <http://x/p> <http://x/`c> .\n", 1, "contains '`'"),
    nt("nt-tab-in-iri", "<http://x/a\tb> <http://x/p> <http://x/c> .\n", 1, r"contains '\t'"),
    nt("nt-escaped-space-in-iri", "<http://x/a\\u0020b> <http://x/p> <http://x/c> .\n", 1,
       "contains a space"),
    nt("nt-echar-in-iri", "<http://x/a\\nb> <http://x/p> <http://x/c> .\n", 1,
       r"bad escape \n in IRI"),
    nt("nt-no-final-dot", GOOD_NT + "<http://x/a> <http://x/p> <http://x/c>\n", 3,
       "not an N-Triples statement"),
    nt("nt-two-terms", "<http://x/a> <http://x/p> .\n", 1, "not an N-Triples statement"),
    nt("nt-unterminated-literal", '<http://x/a> <http://x/p> "abc .\n', 1,
       "not an N-Triples statement"),
    nt("nt-empty-language-tag", '<http://x/a> <http://x/p> "abc"@ .\n', 1,
       "not an N-Triples statement"),
    nt("nt-literal-subject", '"a" <http://x/p> <http://x/c> .\n', 1,
       "literal in subject or predicate"),
    nt("nt-blank-node-predicate", "<http://x/a> _:p <http://x/c> .\n", 1,
       "blank node as predicate"),
    nt("nt-bad-datatype-iri", '<http://x/a> <http://x/p> "1"^^<a b> .\n', 1,
       "IRI <a b> contains a space"),
    nt("nt-bad-utf8", GOOD_NT.encode() + b"<http://x/\xfe> <http://x/p> <x> .\n", 3,
       "not valid UTF-8"),
    nt("nt-only-comments", "# nothing\n\n", 1, "file has no triples"),
    Case("nt-forced-format-on-tsv", {"kg.txt": TSV_OK}, triples("kg.txt", fmt="nt"),
         "{tmp}/kg.txt:1: ", "not an N-Triples statement"),
    # ----------------------------------------------------------- questions JSONL
    qs("q-invalid-json", q() + "\n{not json\n", 2, "invalid JSON"),
    qs("q-array", q() + "\n[1, 2]\n", 2, "expected a JSON object"),
    qs("q-answers-on-some-records", q() + "\n" + q(id="q1", answers=...), 2,
       "question 'q1' has no 'answers' but the first (line 1, 'q0') has; expected answers on "
       "every record (to train and score) or on none (answering only)"),
    qs("q-missing-topics", q(id="q1", topic_entities=...), 1,
       "missing key(s) ['topic_entities']"),
    qs("q-empty-id", q(id=""), 1, "'id' is an empty string"),
    qs("q-bool-id", q(id=True), 1, "'id' is bool true"),
    qs("q-float-id", q(id=1.5), 1, "'id' is float 1.5"),
    qs("q-empty-question", q(question="  "), 1, "'question' is an empty string"),
    qs("q-numeric-question", q(question=42), 1, "'question' is int 42"),
    qs("q-answers-string", q(answers="paris"), 1,
       "'answers' is the string 'paris'; expected a list"),
    qs("q-empty-answer", q(answers=["paris", ""]), 1, "'answers'[1] is an empty string"),
    qs("q-no-topic", q(topic_entities=[]), 1, "'topic_entities' is an empty list"),
    qs("q-empty-topic", q() + "\n" + q(id="q1", topic_entities=[""]), 2,
       "'topic_entities'[0] is an empty string"),
    qs("q-blank-topic", q(topic_entities=["france", "   "]), 1,
       "'topic_entities'[1] is an empty string"),
    qs("q-numeric-topic", q(topic_entities=[7]), 1, "'topic_entities'[0] is int 7"),
    qs("q-null-topic", q(topic_entities=[None]), 1, "'topic_entities'[0] is null"),
    qs("q-topic-string", q(topic_entities="france"), 1,
       "'topic_entities' is the string 'france'; expected a list"),
    qs("q-bad-gold-path", q(gold_path=[["a", "r"]]), 1,
       "'gold_path' must be a list of [head, relation, tail]"),
    qs("q-duplicate-id", q() + "\n\n" + q() + "\n", 3, "duplicate id 'q0' (first on line 1)"),
    qs("q-duplicate-key", '{"id": "a", "id": "b"}\n', 1, "duplicate key 'id'"),
    qs("q-empty-file", "\n\n", 1, "file has no questions"),
    qs("q-bad-utf8", q().encode() + b"\n\x80\n", 2, "not valid UTF-8"),
    qs("q-unknown-key-answer", q() + "\n" + q(id="q1", answer=["paris"]) + "\n", 2,
       "unknown key 'answer' (did you mean 'answers'?); expected keys id, question, "
       "topic_entities and optionally answers, gold_path"),
    qs("q-unknown-key-gold-paths", q(gold_paths=[["france", "r", "paris"]]), 1,
       "unknown key 'gold_paths' (did you mean 'gold_path'?)"),
    qs("q-unknown-key-no-hint", q(meta={"source": "web"}), 1,
       "unknown key 'meta'; expected keys id, question, topic_entities"),
    qs("q-unknown-key-with-nul", q(**{"x\x00": 1}), 1, "unknown key 'x\\x00'"),
    # ----------------------------------------------------------- PathQuestion format
    pq("pq-2-columns", "q\tb(b/)\n", 1, "2 tab-separated columns; expected 3"),
    pq("pq-4-columns", "q\tb(b/)\ta#r#b\tx\n", 1, "4 tab-separated columns"),
    pq("pq-bad-answer-column", "q\tb\ta#r#b\n", 1, "answer column 'b'; expected 'first(a1/a2/)'"),
    pq("pq-short-path", "q\tb(b/)\ta#r\n", 1, "path 'a#r'; expected"),
    pq("pq-empty-path-element", "q\tb(b/)\ta##b\n", 1, "path 'a##b'; expected"),
    pq("pq-empty-question", "q\tb(b/)\ta#r#b\n \tb(b/)\ta#r#b\n", 2, "empty question"),
    pq("pq-gold-entity-not-in-kb", "q\tzz(zz/)\ta#r#zz\n", 1,
       "has an entity that is not in the KG"),
    pq("pq-empty-file", "\n", 1, "file has no questions"),
    # ----------------------------------------------------------- RoG format
    rog_case("rog-missing-graph", rog(graph=...), 1, "missing RoG field(s) ['graph']"),
    rog_case("rog-empty-topic", rog(q_entity=[""]), 1, "'q_entity'[0] is ''"),
    rog_case("rog-invalid-json", rog() + "\n{oops\n", 2, "invalid JSON"),
    rog_case("rog-bad-graph", rog(graph=[["a", "r"]]), 1,
             "'graph' must be a list of [head, relation, tail]"),
    Case("rog-not-gzip", {"test.jsonl.gz": b"plain text"}, rog_source(test="test.jsonl.gz"),
         "{tmp}/test.jsonl.gz:1: ", "not a readable gzip file"),
    # ----------------------------------------------------------- paths
    Case("path-kg-empty", {"q.jsonl": QS_OK}, prepare("", "{tmp}/q.jsonl"),
         "data.source.kg_path is empty", "expected the path of a file"),
    Case("path-kg-blank", {"q.jsonl": QS_OK}, prepare("  ", "{tmp}/q.jsonl"),
         "data.source.kg_path is empty", "expected the path of a file"),
    Case("path-kg-directory", {"q.jsonl": QS_OK, "kgdir/x": ""},
         prepare("{tmp}/kgdir", "{tmp}/q.jsonl"), "{tmp}/kgdir: ",
         "is a directory, expected a file (data.source.kg_path)"),
    Case("path-kg-missing", {"q.jsonl": QS_OK}, prepare("{tmp}/nope.tsv", "{tmp}/q.jsonl"),
         "{tmp}/nope.tsv: ", "no such file (data.source.kg_path)"),
    Case("path-questions-empty", {"kg.tsv": TSV_OK}, prepare("{tmp}/kg.tsv", ""),
         "data.source.questions_path is empty", "expected the path of a file"),
    Case("path-questions-directory", {"kg.tsv": TSV_OK, "qdir/x": ""},
         prepare("{tmp}/kg.tsv", "{tmp}/qdir"), "{tmp}/qdir: ",
         "is a directory, expected a file (data.source.questions_path)"),
    Case("path-split-missing", {"kg.tsv": TSV_OK, "q.jsonl": QS_OK},
         prepare("{tmp}/kg.tsv", None, split_paths={"train": "{tmp}/q.jsonl", "val": "{tmp}/v",
                                                    "test": None}),
         "{tmp}/v: ", "no such file (data.source.split_paths.val)"),
    Case("path-kg-symlink-loop", {"q.jsonl": QS_OK}, prepare("{tmp}/a", "{tmp}/q.jsonl"),
         "{tmp}/a: ", "is a symbolic-link loop, expected a file (data.source.kg_path)",
         links={"a": "b", "b": "a"}),
    Case("path-kg-self-link", {"q.jsonl": QS_OK}, prepare("{tmp}/a", "{tmp}/q.jsonl"),
         "{tmp}/a: ", "is a symbolic-link loop, expected a file (data.source.kg_path)",
         links={"a": "a"}),
    Case("path-kg-under-symlink-loop", {"q.jsonl": QS_OK},
         prepare("{tmp}/a/kg.tsv", "{tmp}/q.jsonl"), "{tmp}/a/kg.tsv: ",
         "is a symbolic-link loop, expected a file (data.source.kg_path)",
         links={"a": "b", "b": "a"}),
    Case("path-questions-symlink-loop", {"kg.tsv": TSV_OK}, prepare("{tmp}/kg.tsv", "{tmp}/a"),
         "{tmp}/a: ", "is a symbolic-link loop, expected a file (data.source.questions_path)",
         links={"a": "b", "b": "a"}),
    Case("path-kg-broken-link", {"q.jsonl": QS_OK}, prepare("{tmp}/a", "{tmp}/q.jsonl"),
         "{tmp}/a: ", "no such file (a broken symbolic link) (data.source.kg_path)",
         links={"a": "gone.tsv"}),
    Case("path-rog-missing", {}, rog_source(test="none.jsonl"), "{tmp}/none.jsonl: ",
         "no such file (data.source.files.test)"),
    Case("path-pathquestion-root", {},
         lambda tmp: PathQuestionSource("PQ-2H", root=str(tmp)).load(), "{tmp}/PQ-2H.txt: ",
         "no such file (data.source.root)"),
    Case("path-reader-directory", {"d/x": ""}, triples("d"), "{tmp}/d: ",
         "is a directory, expected a file"),
    # ----------------------------------------------------------- split files
    Case("split-paths-no-val", {"kg.tsv": TSV_OK, "q.jsonl": QS_OK},
         prepare("{tmp}/kg.tsv", None, split_paths={"train": "{tmp}/q.jsonl",
                                                    "test": "{tmp}/q.jsonl"}),
         "data.source.split_paths has no val (keys ['test', 'train']); ",
         "expected train, val and test (a questions JSONL each, or null for a split left empty)"),
    Case("split-paths-only-train", {"kg.tsv": TSV_OK, "q.jsonl": QS_OK},
         prepare("{tmp}/kg.tsv", None, split_paths={"train": "{tmp}/q.jsonl"}),
         "data.source.split_paths has no val, test (keys ['train']); ",
         "expected train, val and test"),
    Case("split-paths-unknown-split", {"kg.tsv": TSV_OK, "q.jsonl": QS_OK},
         prepare("{tmp}/kg.tsv", None, split_paths={"train": "{tmp}/q.jsonl", "val": None,
                                                    "test": None, "dev": "{tmp}/q.jsonl"}),
         "data.source.split_paths has unknown split(s) ['dev'] ", "expected train, val and test"),
    Case("split-paths-all-null", {"kg.tsv": TSV_OK},
         prepare("{tmp}/kg.tsv", None, split_paths={"train": None, "val": None, "test": None}),
         "data.source.split_paths gives no file (all three are null); ",
         "expected train, val and test"),
    # ----------------------------------------------------------- splits
    Case("split-3-questions", {"kg.tsv": TSV_OK, "q.jsonl": questions_of(3)},
         prepare("{tmp}/kg.tsv", "{tmp}/q.jsonl"), "{tmp}/q.jsonl: ",
         "3 questions in 3 groups (questions sharing a text or a topic and relation chain stay "
         "together) give "
         "train 2 / val 1 / test 0 with ratios 0.8/0.1/0.1"),
    Case("split-1-question", {"kg.tsv": TSV_OK, "q.jsonl": questions_of(1)},
         prepare("{tmp}/kg.tsv", "{tmp}/q.jsonl"), "{tmp}/q.jsonl: ",
         "give train 1 / val 0 / test 0"),
    Case("split-2-gold-paths", {"kg.tsv": TSV_OK, "q.jsonl": questions_of(30, paths=2)},
         prepare("{tmp}/kg.tsv", "{tmp}/q.jsonl"), "{tmp}/q.jsonl: ",
         "30 questions in 2 groups"),
    Case("split-question-level", {"kg.tsv": TSV_OK, "q.jsonl": questions_of(1)},
         prepare("{tmp}/kg.tsv", "{tmp}/q.jsonl", split_ratios=(0.5, 0.5, 0.0),
                 split_group_by="question", split_seed=3),
         "{tmp}/q.jsonl: ", "train 1 / val 0 / test 0 with ratios 0.5/0.5/0 (seed 3, "
         "group_by=question); 2 or more questions"),
]  # fmt: skip


def _write(tmp: Path, files: dict[str, str | bytes], links: dict[str, str] | None = None) -> None:
    for name, content in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    for name, target in (links or {}).items():
        os.symlink(target, tmp / name)


def test_the_corpus_is_large_and_every_id_unique():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_input_is_one_line_naming_file_and_line(tmp_path, capsys, case):
    _write(tmp_path, case.files, case.links)
    where = case.where.format(tmp=tmp_path)
    with pytest.raises(InputError, match="^" + re.escape(where)) as err:
        case.run(tmp_path)
    msg = str(err.value)
    assert msg.splitlines() == [msg] and msg.isprintable(), msg
    assert case.says in msg, msg
    assert not (tmp_path / "artifacts" / "data").exists()  # nothing prepared, nothing half-made
    # what train.py / evaluate.py print for it: this one line on stderr, exit code 2
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        report(err.value)
    assert stop.value.code == EXIT_INPUT_ERROR == 2
    assert capsys.readouterr().err == f"error: {msg}\n"


# ----------------------------------------------------------------- nothing is half-written
def _custom(tmp: Path, kg_text: str = TSV_OK, q_text: str = QS_OK) -> KGQADataModule:
    (tmp / "kg.tsv").write_text(kg_text)
    (tmp / "q.jsonl").write_text(q_text)
    src = CustomSource("c", str(tmp / "kg.tsv"), str(tmp / "q.jsonl"))
    return KGQADataModule(src, artifacts_dir=str(tmp / "artifacts"))


def _leftovers(tmp: Path) -> list[str]:
    data = tmp / "artifacts" / "data"
    return sorted(p.name for p in data.iterdir()) if data.exists() else []


@pytest.mark.parametrize("stage", ["kg", "questions", "stats"])
def test_a_preparation_that_fails_while_writing_leaves_nothing(tmp_path, monkeypatch, stage):
    dm = _custom(tmp_path)

    def boom(*args, **kwargs):
        raise OSError(28, "No space left on device")

    target = {
        "kg": (KnowledgeGraph, "save"),
        "questions": ("lokg.data.datamodule.write_questions", None),
        "stats": (Path, "write_text"),
    }[stage]
    if target[1] is None:
        monkeypatch.setattr(target[0], boom)
    else:
        monkeypatch.setattr(*target, boom)
    with pytest.raises(OSError, match="No space left"):
        dm.prepare_data()
    monkeypatch.undo()
    assert _leftovers(tmp_path) == []  # neither the dataset directory nor its temporary copy
    dm.prepare_data()  # and the next run prepares from scratch
    dm.setup()
    assert _leftovers(tmp_path) == [dm.artifact_dir.name]
    assert sum(len(v) for v in dm.questions.values()) == 20


def test_a_preparation_that_fails_on_its_input_creates_no_directory(tmp_path):
    dm = _custom(tmp_path, q_text=questions_of(2))
    with pytest.raises(InputError, match="give train"):
        dm.prepare_data()
    assert not (tmp_path / "artifacts").exists()
    dm = _custom(tmp_path, kg_text="a\tr\n")
    with pytest.raises(InputError, match=r"kg\.tsv:1: "):
        dm.prepare_data()
    assert not (tmp_path / "artifacts").exists()


# ----------------------------------------------------------------- a split left empty on purpose
def _split_files(tmp: Path, **splits: str | None) -> CustomSource:
    """A custom source over ``kg.tsv``; each split a file of 5 questions or ``None`` (null)."""
    (tmp / "kg.tsv").write_text(TSV_OK)
    for name in {n for n in splits.values() if n is not None}:
        rows = [q(id=f"{name}-{j}", topic_entities=["a"], answers=["b"]) for j in range(5)]
        (tmp / name).write_text("\n".join(rows) + "\n")
    paths = {s: None if name is None else str(tmp / name) for s, name in splits.items()}
    return CustomSource("c", str(tmp / "kg.tsv"), split_paths=paths)


def test_val_given_as_null_is_one_warning_line_and_an_empty_val_split(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="lokg.data.sources"):
        src = _split_files(tmp_path, train="train.jsonl", val=None, test="test.jsonl")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "data.source.split_paths.val is null: no val questions; model selection on val is "
        "impossible"
    ]
    dm = KGQADataModule(src, artifacts_dir=str(tmp_path / "artifacts"))
    dm.prepare_data()
    dm.setup()
    assert {s: len(v) for s, v in dm.questions.items()} == {"train": 5, "val": 0, "test": 5}


def test_a_null_split_and_a_given_one_are_different_datasets(tmp_path):
    a = _split_files(tmp_path, train="t.jsonl", val=None, test="x.jsonl")
    b = _split_files(tmp_path, train="t.jsonl", val="x.jsonl", test=None)
    assert a.files() == b.files()  # the same three files ...
    assert a.fingerprint() != b.fingerprint()  # ... in other roles: prepared apart


# ----------------------------------------------------------------- control characters in labels
NUL_KG = {
    "kg.tsv": "al\x00ice\tspo\x7fuse\tbob\nbob\tspouse\tca\x1brol\nal\x00ice\tspo\x7fuse\tbob\n",
    "kg.csv": "al\x00ice,spo\x7fuse,bob\nbob,spouse,ca\x1brol\n",
    "kg.nt": '<http://x/alice> <http://x/spouse> "al\\u0000ice" .\n'
    '<http://x/bob> <http://x/spouse> "ca\\u001Brol\\u007F" .\n',
}


@pytest.mark.parametrize("name", sorted(NUL_KG))
def test_a_control_character_in_a_label_is_counted_and_rendered_escaped(tmp_path, name):
    (tmp_path / name).write_text(NUL_KG[name], encoding="utf-8")
    kg, read = read_kg(tmp_path / name)
    labels = kg.entities.labels + kg.relations.labels
    raw = [label for label in labels if any(c in label for c in "\x00\x1b\x7f")]
    assert "al\x00ice" in raw  # loaded as it is, NUL included
    assert read.control_labels == len(raw) >= 2
    assert f"{len(raw)} labels with control characters (escaped when rendered)" in read.summary()
    renderer = TripleRenderer()
    every_triple = np.arange(kg.num_triples)
    contexts = ["".join(renderer.naive_lines(kg, kg.triples_np))]
    contexts += ["".join(renderer.lines(kg, kg.triples_np, "rso", g)) for g in GRANULARITIES]
    query = kg.entities.index["al\x00ice"]
    for encoder in (ITTCEncoder(), NaiveEncoder()):
        contexts.append(encoder.encode(kg, every_triple, 512, [query]).text)
    for context in contexts:
        assert not any(c in context for c in "\x00\x1b\x7f"), repr(context)
        assert "al\\x00ice" in context, repr(context)  # NUL written as the escape \x00
        assert "ca\\x1brol" in context, repr(context)


def test_a_file_without_control_characters_reports_none(tmp_path):
    (tmp_path / "kg.tsv").write_text("alice\tspouse\tbob\n")
    _, read = read_kg(tmp_path / "kg.tsv")
    assert read.control_labels == 0 and "control characters" not in read.summary()


# ----------------------------------------------------- control characters in question text
def test_a_control_character_in_a_question_text_is_counted_and_kept(tmp_path):
    """Issue 43 s4: as a label holding a control character is, a question text holding one
    (a NUL, an ESC, a tab) is kept as written and counted in the read report, by each of the
    three question readers."""
    rows = [q(id="1", question="capital\x00 of a?"), q(id="2", question="plain?"),
            q(id="3", question="capital\tof\x1b a?")]  # fmt: skip
    (tmp_path / "q.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    asked, read = read_questions(tmp_path / "q.jsonl", KG)
    assert [x.text for x in asked] == ["capital\x00 of a?", "plain?", "capital\tof\x1b a?"]
    assert read.control_questions == 2
    assert "2 questions with control characters in their text (kept as written)" in read.summary()

    pq = "capital\x1b of paris?\tfrance(france/)\tparis#capital_of#france\nplain?\tb(b/)\ta#r#b\n"
    (tmp_path / "pq.txt").write_text(pq, encoding="utf-8")
    asked, read = read_pathquestion(tmp_path / "pq.txt", prefix="pq", kg=KG)
    assert asked[0].text == "capital\x1b of paris?" and read.control_questions == 1
    assert "1 questions with control characters in their text" in read.summary()

    (tmp_path / "test.jsonl").write_text(rog(question="q\x00?") + "\n" + rog(id="r2") + "\n")
    raw = rog_source(test="test.jsonl")(tmp_path)
    assert raw.questions["test"][0].text == "q\x00?"
    assert any("1 questions with control characters in their text" in r for r in raw.reports)


def test_question_texts_without_control_characters_report_none(tmp_path):
    (tmp_path / "q.jsonl").write_text(q(id="1", question="plain?") + "\n", encoding="utf-8")
    _, read = read_questions(tmp_path / "q.jsonl", KG)
    assert read.control_questions == 0 and "control characters" not in read.summary()
