"""Questions without answers (issue 40 s2): a questions file whose records carry no
``answers`` is read for answering only (every question in test), a file mixing answered and
unanswered records is one error naming the line, and the jobs that train on gold answers
refuse such a set in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lokg.data import CustomSource, KGQADataModule
from lokg.errors import InputError
from lokg.kg.io import DataFormatError, read_questions

KG = "paris\tcapital_of\tfrance\nberlin\tcapital_of\tgermany\n"


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def row(i: int, answers=..., topic: str = "france") -> dict:
    """Question ``q<i>``; ``answers=...`` leaves the key out."""
    out = {"id": f"q{i}", "question": f"capital of {topic}, asked {i}?", "topic_entities": [topic]}
    if answers is not ...:
        out["answers"] = answers
    return out


def prepared(source: CustomSource, tmp_path: Path) -> KGQADataModule:
    dm = KGQADataModule(source, artifacts_dir=str(tmp_path / "artifacts"))
    dm.prepare_data()
    dm.setup("fit")
    return dm


@pytest.mark.parametrize("absent", [..., None, []], ids=["key-left-out", "null", "empty-list"])
def test_records_without_answers_read_as_questions_without_gold(tmp_path, absent):
    path = write_rows(tmp_path / "q.jsonl", [row(1, absent), row(2, absent, "germany")])
    questions, report = read_questions(path)
    assert [(q.id, q.answers, q.topic_entities) for q in questions] == [
        ("q1", (), ("france",)),
        ("q2", (), ("germany",)),
    ]
    assert "no question has gold answers (answering only: answer metrics n/a)" in report.summary()


def test_a_file_mixing_answered_and_unanswered_records_names_the_first_unlike_line(tmp_path):
    path = write_rows(tmp_path / "q.jsonl", [row(1, ["paris"]), row(2, ["paris"]), row(3)])
    with pytest.raises(DataFormatError) as err:
        read_questions(path)
    assert str(err.value) == (
        f"{path}:3: question 'q3' has no 'answers' but the first (line 1, 'q1') has; expected "
        "answers on every record (to train and score) or on none (answering only); put "
        "unanswered questions in a file of their own (data.source.split_paths.test)"
    )
    path = write_rows(tmp_path / "r.jsonl", [row(1), row(2, ["paris"])])
    with pytest.raises(DataFormatError, match=r"r.jsonl:2: question 'q2' has 'answers' but the "
                       r"first \(line 1, 'q1'\) has none; expected"):  # fmt: skip
        read_questions(path)


def test_prepared_split_files_may_mix_them(tmp_path):
    """The package's own split files (a source may keep unanswerable questions, as the
    WebQSP evidence set does) are read with ``mixed_answers``; the count is reported."""
    path = write_rows(tmp_path / "q.jsonl", [row(1, ["paris"]), row(2), row(3)])
    questions, report = read_questions(path, mixed_answers=True)
    assert [q.answers for q in questions] == [("paris",), (), ()]
    assert "2 questions without gold answers (left out of the answer metrics)" in report.summary()


def test_an_answer_less_file_puts_every_question_in_test(tmp_path):
    """Three questions are too few for an 8:1:1 split; without answers they need none."""
    kg = tmp_path / "kg.tsv"
    kg.write_text(KG, encoding="utf-8")
    q = write_rows(tmp_path / "q.jsonl", [row(1), row(2, topic="germany"), row(3)])
    dm = prepared(CustomSource("mine", str(kg), str(q)), tmp_path)
    assert {s: [x.id for x in qs] for s, qs in dm.questions.items()} == {
        "train": [],
        "val": [],
        "test": ["q1", "q2", "q3"],
    }
    assert dm.summary()["questions"] == {"train": 0, "val": 0, "test": 3}
    assert f"{q}: answering only: all 3 in test" in dm.summary()["read"]
    split = json.loads((dm.artifact_dir / "split.json").read_text())
    assert split["source_split"] is True and split["ratios"] is None


@pytest.mark.parametrize(
    "job", ["the walk model (experiment=train_walk)", "the GAT (experiment=train_gat)"]
)
def test_training_on_an_answer_less_file_is_one_line_naming_the_file(tmp_path, job):
    kg = tmp_path / "kg.tsv"
    kg.write_text(KG, encoding="utf-8")
    q = write_rows(tmp_path / "q.jsonl", [row(i) for i in range(20)])
    dm = prepared(CustomSource("mine", str(kg), str(q)), tmp_path)
    with pytest.raises(InputError) as err:
        dm.require_answers(job)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        f"the questions file {q} has no answers; {job} trains on gold answers: add "
        '"answers" to the train and val records, or skip it'
    )
    assert "experiment=train_transe" in message and "retriever=taimr_linked" in message


def test_answered_train_and_val_with_an_answer_less_test_file_can_train(tmp_path):
    """The set a demanding user has: labelled questions to train on, unlabelled ones to
    answer, each in its own file (data.source.split_paths)."""
    kg = tmp_path / "kg.tsv"
    kg.write_text(KG, encoding="utf-8")
    paths = {
        "train": write_rows(tmp_path / "train.jsonl", [row(i, ["paris"]) for i in range(4)]),
        "val": write_rows(tmp_path / "val.jsonl", [row(9, ["paris"])]),
        "test": write_rows(tmp_path / "test.jsonl", [row(10), row(11, topic="germany")]),
    }
    dm = prepared(CustomSource("mine", str(kg), split_paths={k: str(p) for k, p in paths.items()}),
                  tmp_path)  # fmt: skip
    dm.require_answers("the walk model (experiment=train_walk)")  # no error
    assert [q.answers for q in dm.questions["test"]] == [(), ()]


def test_an_answer_less_train_file_is_named_by_its_key(tmp_path):
    kg = tmp_path / "kg.tsv"
    kg.write_text(KG, encoding="utf-8")
    train = write_rows(tmp_path / "train.jsonl", [row(i) for i in range(3)])
    test = write_rows(tmp_path / "test.jsonl", [row(9, ["paris"])])
    splits = {"train": str(train), "val": None, "test": str(test)}
    dm = prepared(CustomSource("mine", str(kg), split_paths=splits), tmp_path)
    with pytest.raises(InputError, match=r"^data.source.split_paths.train \(.*train.jsonl\) has "
                       "no answers; the walk model"):  # fmt: skip
        dm.require_answers("the walk model (experiment=train_walk)")
