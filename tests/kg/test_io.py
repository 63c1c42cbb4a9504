"""Readers: every malformed input is a one-line error naming file and line."""

import json

import pytest

from lokg.errors import InputError
from lokg.kg import KnowledgeGraph
from lokg.kg.io import (
    DataFormatError,
    check_input_file,
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
    triples, report, _ = read_triples(p, comment_prefix="#")
    assert triples == [("a", "r", "b")]
    assert (report.comments, report.blank, report.duplicates) == (1, 1, 1)
    assert report.summary() == (
        f"{p}: 2 records from 4 lines, 1 blank lines skipped, 1 comment lines ('#') skipped, "
        "1 exact duplicates kept once"
    )


@pytest.mark.parametrize("suffix", ["tsv", "csv"])
def test_hash_rows_are_data_in_tsv_and_csv(tmp_path, suffix):
    sep = "\t" if suffix == "tsv" else ","
    p = write(tmp_path / f"kg.{suffix}", sep.join(["#hashtag", "tagged", "post"]) + "\n")
    triples, report, _ = read_triples(p)
    assert triples == [("#hashtag", "tagged", "post")]
    assert report.comments == 0 and "comment" not in report.summary()


def test_a_hash_row_that_is_not_a_triple_says_tsv_has_no_comments(tmp_path):
    p = write(tmp_path / "kg.tsv", "# my comment\na\tr\tb\n")
    with pytest.raises(DataFormatError) as err:
        read_triples(p)
    assert one_line(err).startswith(f"{p}:1: 1 tab-separated columns; expected 3")
    assert "TSV has no comments" in str(err.value) and "kg_comment_prefix" in str(err.value)


def test_bad_comment_prefix():
    with pytest.raises(InputError, match="comment_prefix=''; expected null or a non-blank"):
        read_triples("kg.tsv", comment_prefix="")


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


def test_a_file_of_only_comments_says_what_it_skipped(tmp_path):
    p = write(tmp_path / "kg.nt", "# one\n\n# two\n")
    with pytest.raises(DataFormatError) as err:
        read_triples(p)
    assert one_line(err) == (
        f"{p}:1: file has no triples (3 lines, 1 blank, 2 comments ('#')); expected at least one"
    )


def test_non_utf8_bytes_name_line_and_column(tmp_path):
    p = write(tmp_path / "kg.tsv", b"a\tr\tb\nc\tr\t\xffd\n", mode="wb")
    with pytest.raises(DataFormatError) as err:
        read_triples(p)
    assert (
        one_line(err)
        == f"{p}:2: not valid UTF-8 (byte 0xff at column 5); expected a UTF-8 text file"
    )


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_triples(tmp_path / "nope.tsv")
    p = write(tmp_path / "kg.tsv", "a\tr\tb\n")
    with pytest.raises(InputError, match="expected one of"):
        read_triples(p, fmt="xml")


def test_paths_empty_directory_missing(tmp_path):
    with pytest.raises(InputError, match=r"^data.source.kg_path is empty; expected the path"):
        check_input_file("", "data.source.kg_path")
    with pytest.raises(InputError, match=r"^input path is empty"):
        check_input_file(None)
    with pytest.raises(InputError) as err:
        check_input_file(tmp_path, "data.source.kg_path")
    assert str(err.value) == f"{tmp_path}: is a directory, expected a file (data.source.kg_path)"
    with pytest.raises(InputError) as err:
        check_input_file(tmp_path / "nope.tsv")
    assert str(err.value) == f"{tmp_path / 'nope.tsv'}: no such file"
    (tmp_path / "link.tsv").symlink_to(tmp_path / "gone.tsv")
    with pytest.raises(InputError, match="no such file \\(a broken symbolic link\\)"):
        check_input_file(tmp_path / "link.tsv")
    p = write(tmp_path / "kg.tsv", "a\tr\tb\n")
    assert check_input_file(str(p)) == p


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


def test_ntriples_escapes_are_decoded(tmp_path):
    p = write(
        tmp_path / "kg.nt",
        "<http://x/a> <http://x/p> "
        '"tab\\there\\nnext \\u00e9 \\U0001F600 \\uD83D\\uDE00 \\\\ \\"q\\"" .\n'
        "<http://x/caf\\u00e9> <http://x/p> <http://x/b> .\n",
    )
    triples, _, _ = read_triples(p)
    assert triples[0][2] == 'tab\there\nnext \u00e9 \U0001f600 \U0001f600 \\ "q"'
    assert triples[1][0] == "http://x/caf\u00e9"


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ('<http://x/a> <http://x/p> "\\uZZZZ" .', r"bad escape \uZZZZ in literal; expected \u "),
        ('<http://x/a> <http://x/p> "\\UFFFFFFFF" .', r"escape \UFFFFFFFF in literal is beyond"),
        ('<http://x/a> <http://x/p> "\\uD800" .', r"escape \uD800 in literal is a lone surrogate"),
        ('<http://x/a> <http://x/p> "\\uDC00\\uD800" .', "is a lone surrogate"),
        ('<http://x/a> <http://x/p> "\\q" .', r"bad escape \q in literal; expected \t \b"),
        ("<http://x/a\\n> <http://x/p> <http://x/b> .", r"bad escape \n in IRI"),
        ("<a b> <http://x/p> <http://x/c> .", "IRI <a b> contains a space"),
        ("<> <http://x/p> <http://x/c> .", "empty IRI <>"),
        ("<http://x/a> <http://x/p> <http://x/{c}> .", "contains '{'"),
        ("<http://x/a> <http://x/p> <http://x/\\u0020c> .", "contains a space"),
        ('<http://x/a> <http://x/p> "1"^^<a b> .', "IRI <a b> contains a space"),
        ("<http://x/a> _:p <http://x/c> .", "blank node as predicate"),
        ('"a" <http://x/p> <http://x/c> .', "literal in subject or predicate"),
    ],
)
def test_ntriples_bad_escapes_and_iris_name_file_and_line(tmp_path, statement, message):
    p = write(tmp_path / "kg.nt", "<http://x/a> <http://x/p> <http://x/b> .\n" + statement + "\n")
    with pytest.raises(DataFormatError) as err:
        read_triples(p)
    msg = one_line(err)
    assert msg.startswith(f"{p}:2: ") and message in msg, msg


def test_ntriples_second_label_is_counted_not_silently_dropped(tmp_path):
    label = "<http://www.w3.org/2000/01/rdf-schema#label>"
    p = write(
        tmp_path / "kg.nt",
        f'<http://x/a> {label} "Alice" .\n<http://x/a> {label} "Alicia"@es .\n'
        "<http://x/a> <http://x/p> <http://x/b> .\n",
    )
    kg, report = read_kg(p)
    assert kg.entity_name(kg.entities["http://x/a"]) == "Alice"
    assert "1 further rdfs:label literals ignored (first kept)" in report.summary()


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
        (qline(answers=...), "question 'q1' has no 'answers' but the first (line 1, 'q0') has"),
        (qline(answers=[]), "question 'q1' has no 'answers' but the first (line 1, 'q0') has"),
        (qline(question=...), "missing key(s) ['question']"),
        (qline(id=""), "'id' is an empty string; expected a non-empty string or integer"),
        (qline(question=" "), "'question' is an empty string; expected a non-empty string"),
        (qline(answers="paris"), "'answers' is the string 'paris'; expected a list"),
        (qline(answers=["paris", ""]), "'answers'[1] is an empty string"),
        (qline(topic_entities=[]), "'topic_entities' is an empty list; expected at least one"),
        (
            qline(topic_entities=[""]),
            "'topic_entities'[0] is an empty string; expected a non-empty",
        ),
        (qline(topic_entities=[" "]), "'topic_entities'[0] is an empty string"),
        (qline(topic_entities=["x", 3]), "'topic_entities'[1] is int 3; expected a non-empty"),
        (qline(topic_entities=[None]), "'topic_entities'[0] is null"),
        (
            qline(topic_entities="france"),
            "'topic_entities' is the string 'france'; expected a list",
        ),
        (qline(gold_path=[["a", "b"]]), "'gold_path' must be a list of [head, relation, tail]"),
        ('{"id": "q1", "id": "q2"}', "duplicate key 'id'; expected each key once"),
    ],
)
def test_malformed_question_lines(tmp_path, kg, line, message):
    p = write(tmp_path / "q.jsonl", qline().replace('"q1"', '"q0"') + "\n" + line + "\n")
    with pytest.raises(DataFormatError) as err:
        read_questions(p, kg)
    msg = one_line(err)
    assert msg.startswith(f"{p}:2: ") and message in msg


def test_unknown_topic_entity_is_counted_not_an_error(tmp_path, kg):
    p = write(tmp_path / "q.jsonl", qline() + "\n" + qline(id="q2", topic_entities=["atlantis"]))
    questions, report = read_questions(p, kg)
    assert [q.topic_entities for q in questions] == [("france",), ("atlantis",)]
    assert "1 question(s) with a topic entity not in the KG" in report.summary()
    assert "(first: line 2, 'atlantis')" in report.summary()


def test_id_taken_in_another_split_names_the_line(tmp_path, kg):
    p = write(tmp_path / "q.jsonl", qline(id="q0") + "\n" + qline(id="q7") + "\n")
    with pytest.raises(DataFormatError) as err:
        read_questions(p, kg, taken_ids={"q7": "split 'train'"})
    assert one_line(err) == (
        f"{p}:2: duplicate id 'q7' (also in split 'train'); expected unique ids"
    )


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
        ("q\tb(b/)\ta# #b", "path 'a# #b'; expected 'subject#rel#entity"),
        (" \tb(b/)\ta#r#b", "empty question"),
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
