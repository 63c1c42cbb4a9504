"""scripts/make_byo_standin.py on PQ-2H (bundled, 1,211 triples): the KB TSV reads back through
CustomSource with every triple, the questions JSONL holds only what a user would have (no
gold_path), and a second run into the same directory without --force stops with one line."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from lokg.cli import EXIT_INPUT_ERROR, report
from lokg.data.sources import CustomSource, PathQuestionSource
from lokg.errors import InputError

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "make_byo_standin.py"


def _load():
    spec = importlib.util.spec_from_file_location("lokg_make_byo_standin", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The script's output for ``--data pq2h`` (and the loaded script module)."""
    script = _load()
    out = tmp_path_factory.mktemp("byo") / "pq2h"
    assert script.main(["--data", "pq2h", "--out", str(out)]) == 0
    return script, out


def test_kg_tsv_reads_back_through_custom_source_with_every_triple(built):
    _, out = built
    raw = CustomSource("custom", str(out / "kg.tsv"), str(out / "questions.jsonl")).load()
    kb = PathQuestionSource("PQ-2H").load().kg
    assert raw.kg.num_triples == kb.num_triples == 1211
    assert {raw.kg.labeled(i) for i in range(raw.kg.num_triples)} == {
        kb.labeled(i) for i in range(kb.num_triples)
    }
    lines = (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(raw.questions) == len(lines) > 0


def test_questions_have_no_gold_path_and_are_asked_from_the_answer_end(built):
    _, out = built
    records = [json.loads(line) for line in (out / "questions.jsonl").open(encoding="utf-8")]
    assert all(set(r) == {"id", "question", "answers", "topic_entities"} for r in records)
    assert all(r["id"].endswith("-reverse") and len(r["topic_entities"]) == 1 for r in records)
    assert not list(out.glob(".*"))  # no temporary file left behind


def test_a_second_run_without_force_stops_with_one_line(built, capsys):
    script, out = built
    before = (out / "kg.tsv").stat().st_mtime_ns
    with pytest.raises(InputError) as caught:
        script.main(["--data", "pq2h", "--out", str(out)])
    with pytest.raises(SystemExit) as stopped:
        report(caught.value)
    assert stopped.value.code == EXIT_INPUT_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: --out {out}: not empty")
    assert "--force" in err
    assert (out / "kg.tsv").stat().st_mtime_ns == before
