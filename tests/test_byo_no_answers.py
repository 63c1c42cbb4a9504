"""Bring your own KG with questions and no answers (issue 40 s2), end to end with the real
components: the README quick start's two commands, run as a user runs them (``python
train.py ...`` then ``python evaluate.py ...`` in a directory holding a 20-line KG and five
questions without ``answers``), write answers and evidence for every question and report the
answer metrics as "n/a (no gold answers)"; the walk model's training refuses the set in one
line (exit 2), TransE + SCOS train on the KG alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lokg.cli import EXIT_INPUT_ERROR
from lokg.eval.metrics import ANSWER_METRICS, NO_GOLD

pytestmark = pytest.mark.slow  # TransE on 20 triples, MiniLM, three interpreter starts

ROOT = Path(__file__).resolve().parent.parent
#: the README's quick-start KG: one ``head<TAB>relation<TAB>tail`` row per fact
KG = """\
Inception	directed_by	Christopher Nolan
Interstellar	directed_by	Christopher Nolan
Oppenheimer	directed_by	Christopher Nolan
Titanic	directed_by	James Cameron
Avatar	directed_by	James Cameron
Inception	starring	Leonardo DiCaprio
Titanic	starring	Leonardo DiCaprio
Interstellar	starring	Matthew McConaughey
Oppenheimer	starring	Cillian Murphy
Christopher Nolan	born_in	London
James Cameron	born_in	Kapuskasing
Leonardo DiCaprio	born_in	Los Angeles
Matthew McConaughey	born_in	Uvalde
Cillian Murphy	born_in	Cork
London	located_in	United Kingdom
Kapuskasing	located_in	Canada
Los Angeles	located_in	United States
Uvalde	located_in	United States
Cork	located_in	Ireland
Inception	released_in	2010
"""
#: and its questions: an id, the text, the topic entities; no answers
QUESTIONS = [
    {"id": "q1", "question": "Who directed Inception?", "topic_entities": ["Inception"]},
    {"id": "q2", "question": "Where was the director of Titanic born?",
     "topic_entities": ["Titanic"]},
    {"id": "q3", "question": "In which country was the star of Interstellar born?",
     "topic_entities": ["Interstellar"]},
    {"id": "q4", "question": "Which films did Christopher Nolan direct?",
     "topic_entities": ["Christopher Nolan"]},
    {"id": "q5", "question": "Where was Cillian Murphy born?",
     "topic_entities": ["Cillian Murphy"]},
]  # fmt: skip
DATA = ["data=custom", "data.source.kg_path=kg.tsv", "data.source.questions_path=questions.jsonl"]
#: the quick start: what needs no answers is trained, then the questions are answered
TRAIN = ["train.py", "experiment=train_transe", *DATA]
EVALUATE = ["evaluate.py", *DATA, "retriever=taimr_linked", "llm=extractive"]


def python(cwd: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    """``python <script> <args>`` from ``cwd`` (the user's directory, LOKG_ROOT)."""
    env = {**os.environ, "LOKG_ROOT": str(cwd), "HYDRA_FULL_ERROR": ""}
    return subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory) -> Path:
    """A directory holding the quick start's two files, and nothing else."""
    cwd = tmp_path_factory.mktemp("byo")
    (cwd / "kg.tsv").write_text(KG, encoding="utf-8")
    lines = "".join(json.dumps(q) + "\n" for q in QUESTIONS)
    (cwd / "questions.jsonl").write_text(lines, encoding="utf-8")
    return cwd


def test_the_quick_start_files_are_what_the_readme_shows():
    assert len(KG.splitlines()) == 20 and all(r.count("\t") == 2 for r in KG.splitlines())
    assert len(QUESTIONS) == 5 and not any("answers" in q for q in QUESTIONS)


def test_two_commands_answer_every_question_with_evidence_and_no_metric(user_dir):
    train = python(user_dir, *TRAIN)
    assert train.returncode == 0, train.stderr[-3000:]
    assert "questions: train 0 / val 0 / test 5" in train.stdout
    assert "SCOS artifacts" in train.stderr + train.stdout

    run = python(user_dir, *EVALUATE)
    assert run.returncode == 0, run.stderr[-3000:]
    table = run.stdout.splitlines()
    for key in ("hits@1", "hit", "f1", "coverage"):
        assert f"  {key:<24s} {NO_GOLD}" in table
    assert f"  {'n':<24s} 5" in table and f"  {'gold_n':<24s} 0" in table
    (results,) = (user_dir / "logs" / "evaluate" / "results" / "custom").glob("*/results.jsonl")
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["q1", "q2", "q3", "q4", "q5"]
    for r in records:
        assert r["status"] == "ok" and r["gold"] == [] and r["predictions"], r["id"]
        assert r["context"] and r["t_after"] > 0, r["id"]
    # the evidence is the KG's facts about the topic: q1's names its director
    assert "Inception | directed by | Christopher Nolan" in records[0]["context"]
    assert records[0]["predictions"][0] == "Christopher Nolan"
    summary = json.loads((results.parent / "summary.json").read_text(encoding="utf-8"))
    assert all(summary["metrics"][k] is None for k in ANSWER_METRICS)
    assert summary["metric_notes"] == dict.fromkeys(ANSWER_METRICS, NO_GOLD)
    assert summary["metrics"]["n"] == 5 and summary["metrics"]["gold_n"] == 0


def test_training_the_walk_on_them_stops_in_one_line(user_dir):
    run = python(user_dir, "train.py", "experiment=train_walk", *DATA)
    assert run.returncode == EXIT_INPUT_ERROR, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    (line,) = [x for x in run.stderr.splitlines() if x.startswith("error: ")]
    assert line.startswith("error: the questions file questions.jsonl has no answers; the walk "
                           "model (experiment=train_walk) trains on gold answers")  # fmt: skip


def test_the_walk_adapts_to_the_kg_without_answers_and_is_used_by_default(user_dir):
    """``experiment=adapt_walk`` fine-tunes the shipped walk on chains generated over the KG
    (no answers read; a short run here), and ``retriever=learned`` then finds it by the KG's
    fingerprint and says so, where it would fall back to the shipped walk."""
    from lokg.taimr.walk.artifact import ADAPTED

    base = [
        f"data.source.base.source.{k}" for k in ("kg_path=kg.tsv", "questions_path=questions.jsonl")
    ]
    # synonyms and unrelated words off: their lexicon embeds the encoder's 21k words (about a
    # minute here); tests/data/test_kg_chains.py checks both on a small vocabulary
    adapt = python(user_dir, "train.py", "experiment=adapt_walk", *base,
                   "data.source.questions=120", "data.source.synonyms=0", "data.source.unnamed=0",
                   "trainer.max_epochs=1")  # fmt: skip
    assert adapt.returncode == 0, adapt.stderr[-3000:]
    assert "none from the 5 topic entities of its test/val questions" in adapt.stdout
    run = python(user_dir, "evaluate.py", *DATA, "retriever=learned", "scos=off", "llm=extractive")
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"walk: {ADAPTED}" in run.stderr
    runs = (user_dir / "logs" / "evaluate" / "results" / "custom").glob("*/summary.json")
    newest = max(runs, key=lambda p: p.stat().st_mtime_ns)  # the quick start's run is older
    summary = json.loads(newest.read_text(encoding="utf-8"))
    assert summary["walk"].startswith(f"{ADAPTED}: kg_chains_custom-")


def test_the_walk_self_trains_on_the_questions_to_answer_and_is_used_by_default(user_dir):
    """``experiment=self_train_walk`` labels the user's own questions (all in test: a file
    without answers) with the shipped walk's answers and paths, fine-tunes it on them, and
    ``retriever=learned`` then uses it, the newest walk trained without answers on the KG."""
    from lokg.taimr.walk.artifact import ADAPTED, PRETRAINED_DIR

    base = [
        f"data.source.base.source.{k}" for k in ("kg_path=kg.tsv", "questions_path=questions.jsonl")
    ]
    train = python(user_dir, "train.py", "experiment=self_train_walk", *base,
                   f"data.source.walk={PRETRAINED_DIR}", "data.source.splits=[test]",
                   "trainer.max_epochs=1")  # fmt: skip
    assert train.returncode == 0, train.stderr[-3000:]
    assert "5 of custom's 5 test questions labelled by" in train.stdout
    run = python(user_dir, "evaluate.py", *DATA, "retriever=learned", "scos=off", "llm=extractive")
    assert run.returncode == 0, run.stderr[-3000:]
    runs = (user_dir / "logs" / "evaluate" / "results" / "custom").glob("*/summary.json")
    newest = max(runs, key=lambda p: p.stat().st_mtime_ns)
    summary = json.loads(newest.read_text(encoding="utf-8"))
    assert summary["walk"].startswith(f"{ADAPTED}: self_labels_custom-")
