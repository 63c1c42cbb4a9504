"""Readers: every malformed input is a one-line error naming file and line."""

import json

import pytest

from lokg.kg import KnowledgeGraph
from lokg.kg.io import (
    DataFormatError,
    read_kg,
    read_pathquestion,
    read_questions,
    read_triples,
    write_questions,
)
from lokg.typing import Question


def write(path, text, mode="w"):
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    return msg


# ----------------------------------------------------------------------------- triples
def test_tsv_without_header(tmp_path):
    p = write(tmp_path / "kg.tsv", "a\tr\tb\nb\tr\tc\n")
    triples, report, names = read_triples(p)
    assert triples == [("a", "r", "b"), ("b", "r", "c")]
    assert (report.records, report.header, names) == (2, False, {})


def test_csv_with_header_and_quoted_fields(tmp_path):
    p = write(tmp_path / "kg.csv", 'head,relation,tail\n"Smith, J.",born_in,Paris\n')
    triples, report, _ = read_triples(p)
    assert triples == [("Smith, J.", "born_in", "Paris")]
    assert report.header


def test_header_mode_none_keeps_a_header_looking_row(tmp_path):
    p = write(tmp_path / "kg.tsv", "head\trelation\ttail\n")
    triples, _, _ = read_triples(p, header="none")
    assert triples == [("head", "relation", "tail")]


def test_blank_comment_and_duplicate_lines_are_counted(tmp_path):
    p = write(tmp_path / "kg.tsv", "# comment\na\tr\tb\n\na\tr\tb\n")
    triples, report, _ = read_triples(p)
    assert triples == [("a", "r", "b")]
    assert (report.comments, report.blank, report.duplicates) == (1, 1, 1)
    assert "1 exact duplicates kept once" in report.summary()


def test_wrong_column_count_names_file_and_line(tmp_path):
    p = write(tmp_path / "kg.tsv", "a\tr\tb\na\tr\n")
    with pytest.raises(DataFormatError) as err:
        read_triples(p)
    assert one_line(err) == f"{p}:2: 2 tab-separated columns; expected 3 (head, relation, tail)"


def test_empty_field_is_an_error(tmp_path):
    p = write(tmp_path / "kg.tsv", "a\t\tb\n")
    with pytest.raises(DataFormatError, match=r"kg.tsv:1: empty relation"):
        read_triples(p)


def test_empty_file_is_an_error(tmp_path):
    p = write(tmp_path / "kg.tsv", "")
    with pytest.raises(DataFormatError, match=r"kg.tsv:1: file has no triples"):
        read_triples(p)


def test_non_utf8_bytes_name_line_and_column(tmp_path):
    p = write(tmp_path / "kg.tsv", b"a\tr\tb\nc\tr\t\xffd\n", mode="wb")
    with pytest.raises(DataFormatError) as err:
        read_triples(p)
    assert (
        one_line(err)
        == f"{p}:2: not valid UTF-8 (byte 0xff at column 5); expected a UTF-8 text file"
    )


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_triples(tmp_path / "nope.tsv")
    p = write(tmp_path / "kg.tsv", "a\tr\tb\n")
    with pytest.raises(ValueError, match="expected one of"):
        read_triples(p, fmt="xml")


def test_ntriples_with_literals_and_labels(tmp_path):
    p = write(
        tmp_path / "kg.nt",
        "<http://x/a> <http://x/knows> <http://x/b> .\n"
        '<http://x/a> <http://www.w3.org/2000/01/rdf-schema#label> "Alice \\"A\\"" .\n'
        '<http://x/a> <http://x/born> "1900"^^<http://www.w3.org/2001/XMLSchema#gYear> .\n'
        "_:n1 <http://x/knows> <http://x/a> . # trailing comment\n",
    )
    kg, report = read_kg(p)
    assert report.records == 4
    assert kg.num_triples == 3  # the label became a name, not an edge
    assert ("http://x/a", "http://x/born", "1900") in [kg.labeled(i) for i in range(3)]
    assert kg.entity_name(kg.entities["http://x/a"]) == 'Alice "A"'


def test_ntriples_syntax_error(tmp_path):
    p = write(tmp_path / "kg.nt", "<http://x/a> <http://x/knows> .\n")
    with pytest.raises(DataFormatError, match=r"kg.nt:1: not an N-Triples statement"):
        read_triples(p)


# ----------------------------------------------------------------------------- questions
@pytest.fixture
def kg():
    return KnowledgeGraph.from_labeled_triples([("paris", "capital_of", "france")])


def qline(**kw):
    row = {"id": "q1", "question": "capital?", "answers": ["paris"], "topic_entities": ["france"]}
    row.update(kw)
    return json.dumps({k: v for k, v in row.items() if v is not ...})


def test_questions_roundtrip(tmp_path, kg):
    q = Question("q1", "what?", ("paris",), ("france",), (("paris", "capital_of", "france"),))
    write_questions(tmp_path / "q.jsonl", [q])
    loaded, report = read_questions(tmp_path / "q.jsonl", kg)
    assert loaded == [q] and report.records == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        (qline(answers=...), "missing key(s) ['answers']"),
        (qline(id=""), "'id' is ''"),
        (qline(question=" "), "'question' must be a non-empty string"),
        (qline(answers="paris"), "'answers' must be a list"),
        (qline(topic_entities=[]), "'topic_entities' must be a non-empty list"),
        (qline(topic_entities=["atlantis"]), "unknown topic entity ['atlantis']"),
        (qline(gold_path=[["a", "b"]]), "'gold_path' must be a list of [head, relation, tail]"),
    ],
)
def test_malformed_question_lines(tmp_path, kg, line, message):
    p = write(tmp_path / "q.jsonl", qline().replace('"q1"', '"q0"') + "\n" + line + "\n")
    with pytest.raises(DataFormatError) as err:
        read_questions(p, kg)
    msg = one_line(err)
    assert msg.startswith(f"{p}:2: ") and message in msg


def test_duplicate_question_ids_name_both_lines(tmp_path, kg):
    p = write(tmp_path / "q.jsonl", qline() + "\n\n" + qline() + "\n")
    with pytest.raises(DataFormatError, match=r"q.jsonl:3: duplicate id 'q1' \(first on line 1\)"):
        read_questions(p, kg)


def test_empty_question_file(tmp_path):
    p = write(tmp_path / "q.jsonl", "\n\n")
    with pytest.raises(DataFormatError, match="file has no questions"):
        read_questions(p)


# ----------------------------------------------------------------------------- PathQuestion
def test_pathquestion_line_parsing(tmp_path):
    p = write(
        tmp_path / "pq.txt",
        "who is a 's father ?\tb(b/)\ta#parents#b#<end>#b\n"
        " what is x of y ?\tPG_(USA)(PG_(USA)/z/)\ty#r1#m#r2#PG_(USA)\n",
    )
    qs, report = read_pathquestion(p, prefix="pq")
    assert report.records == 2
    assert qs[0] == Question(
        "pq-00001", "who is a 's father ?", ("b",), ("a",), (("a", "parents", "b"),)
    )
    assert qs[1].answers == ("PG_(USA)", "z") and qs[1].text == "what is x of y ?"
    assert qs[1].gold_path == (("y", "r1", "m"), ("m", "r2", "PG_(USA)"))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q\tb(b/)", "2 tab-separated columns; expected 3"),
        ("q\tb\ta#r#b", "answer column 'b'; expected 'first(a1/a2/)'"),
        ("q\tb(b/)\ta#r", "path 'a#r'; expected 'subject#rel#entity"),
    ],
)
def test_pathquestion_malformed(tmp_path, line, message):
    p = write(tmp_path / "pq.txt", line + "\n")
    with pytest.raises(DataFormatError) as err:
        read_pathquestion(p, prefix="pq")
    assert one_line(err).startswith(f"{p}:1: ") and message in str(err.value)


def test_pathquestion_gold_entity_missing_from_kg(tmp_path, kg):
    p = write(tmp_path / "pq.txt", "q\tb(b/)\tparis#r#b\n")
    with pytest.raises(DataFormatError, match="has an entity that is not in the KG"):
        read_pathquestion(p, prefix="pq", kg=kg)
