"""The entry points fail in one line: ``error: <message>`` on stderr, exit status 2.

Each case of the corpus is a mistake a user makes on the command line or in a file: a typo
in a config group option (which ``optional`` defaults once swallowed, silently changing the
experiment), a key no schema declares, a value of the wrong type or out of range, a missing,
empty or malformed file. They run through ``train.py`` / ``evaluate.py`` in process (the
script run as ``__main__``, as the interpreter would), and two of them as real subprocesses.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lokg import cli
from lokg.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
TSV_BAD_ROW = "alice\tspouse\tbob\ncarol\tspouse\n"
QUESTIONS = '{"id": "1", "question": "who is alice\'s spouse?", "answers": ["bob"], ' \
    '"topic_entities": ["alice"]}\n'  # fmt: skip


def _files(tmp: Path) -> dict[str, str]:
    """The custom-data files the corpus points at (written under ``tmp``)."""
    (tmp / "kg_dir").mkdir(exist_ok=True)
    (tmp / "empty.tsv").write_text("")
    (tmp / "bad.tsv").write_text(TSV_BAD_ROW)
    (tmp / "q.jsonl").write_text(QUESTIONS)
    return {"tmp": str(tmp)}


def custom(kg_path: str) -> list[str]:
    return ["data=custom", f"data.source.kg_path={kg_path}",
            "data.source.questions_path={tmp}/q.jsonl"]  # fmt: skip


# (id, script, overrides, a piece of the one line: the key, option or file it names)
CORPUS = [
    # config group typos, listing the options (were silently ignored under `optional`)
    ("scos-typo", "evaluate", ["scos=defualt"],
     "Could not find 'scos/defualt'. Available options: default, lokg, off"),
    ("experiment-typo", "evaluate", ["experiment=papr"],
     "Could not find 'experiment/papr'. Available options: adapt_walk, import_transe, lokg,"),
    ("retriever-typo", "evaluate", ["retriever=taimrr"], "Could not find 'retriever/taimrr'"),
    ("data-typo", "evaluate", ["data=pq9h"], "Could not find 'data/pq9h'"),
    ("encoder-typo", "evaluate", ["encoder=itc"], "Could not find 'encoder/itc'"),
    ("llm-typo", "evaluate", ["llm=gpt5"], "Could not find 'llm/gpt5'"),
    ("ablation-typo", "evaluate", ["ablation=no_foo"], "Could not find 'ablation/no_foo'"),
    ("debug-typo", "evaluate", ["debug=fdrr"], "Could not find 'debug/fdrr'"),
    ("train-scos-typo", "train", ["scos=defualt"],
     "In 'train': Could not find 'scos/defualt'. Available options: default, lokg, off"),
    ("train-experiment-typo", "train", ["experiment=papr"], "Could not find 'experiment/papr'"),
    # train.yaml composes only what training reads: no retriever, encoder or llm group
    ("train-retriever-not-read", "train", ["retriever=taimr"],
     "Could not override 'retriever'. No match in the defaults list"),
    ("train-llm-not-read", "train", ["llm=extractive"],
     "Could not override 'llm'. No match in the defaults list"),
    ("train-model-typo", "train", ["model=tranze"],
     "Could not find 'model/tranze'. Available options: gat, qgat, rerank, transe"),
    ("train-debug-typo", "train", ["debug=fdrr"], "Could not find 'debug/fdrr'"),
    # keys no schema declares
    ("train-added-key", "train", ["+epochs=3"], "Key 'epochs' not in 'TrainConfig'"),
    ("added-key", "evaluate", ["+epochs=3"], "Key 'epochs' not in 'EvaluateConfig'"),
    ("force-added-key", "evaluate", ["++buget=10"], "Key 'buget' not in 'EvaluateConfig'"),
    ("unknown-key", "train", ["epochs=3"], "Key 'epochs' not in 'TrainConfig'"),
    ("group-key", "evaluate", ["+encoder.foo=1"], "encoder.foo: not a setting of ITTCEncoder"),
    ("builder-key", "evaluate", ["baseline=kaping", "+retriever.top_kk=3"],
     "retriever.top_kk: not a setting of build_kaping"),
    ("train-group-key", "train", ["experiment=train_transe", "+model.dimm=3"],
     "model.dimm: not a setting of TransEModule"),
    ("bad-override", "evaluate", ["budget==3"], "Error parsing override 'budget==3'"),
    # values
    ("seed-type", "train", ["seed=abc"], "could not be converted to Integer (key seed)"),
    ("budget-type", "evaluate", ["budget=abc"], "could not be converted to Integer (key budget)"),
    ("verbose-type", "evaluate", ["verbose=maybe"],
     "Value 'maybe' is not a valid bool (type str) (key verbose)"),
    ("budget-zero", "evaluate", ["budget=0"],
     "budget=0; expected a positive whole number of tokens"),
    ("budget-negative", "evaluate", ["budget=-1"], "budget=-1; expected a positive whole number"),
    ("split", "evaluate", ["split=dev"], "split='dev'; expected one of"),
    ("limit-zero", "evaluate", ["limit=0"], "limit=0; expected a positive number of questions"),
    ("limit-negative", "evaluate", ["limit=-5"], "limit=-5"),
    ("budget-scope", "evaluate", ["budget_scope=all"],
     "budget_scope='all'; expected one of ['evidence', 'prompt']"),
    # issue 43 s4: a deleted key, a number for a bool, an epoch count Lightning misreads, a
    # base_url no request can go to (each was a traceback or silently accepted)
    ("deleted-key", "evaluate", ["~budget"],
     "~budget: 'budget' of 'EvaluateConfig' was deleted, but the job reads it; expected a value"),
    ("train-deleted-key", "train", ["~train"], "~train: 'train' of 'TrainConfig' was deleted"),
    ("bool-number", "evaluate", ["answer_without_evidence=2"],
     "answer_without_evidence=2; expected true or false"),
    ("bool-string", "evaluate", ["retry_failed='2'"], "retry_failed='2'; expected true or false"),
    ("train-bool-number", "train", ["test=-1"], "test=-1; expected true or false"),
    ("max-epochs", "train", ["experiment=train_walk", "trainer.max_epochs=-2"],
     "trainer.max_epochs=-2; expected -1 (no epoch limit), null (Lightning's default) or a "
     "whole number >= 0"),
    ("max-epochs-type", "train", ["trainer.max_epochs=2.5"], "trainer.max_epochs=2.5; expected"),
    ("base-url", "evaluate", ["llm=openai", "llm.client.base_url='not a url'"],
     "llm.client.base_url='not a url'; expected an http:// or https:// URL with a host"),
    ("base-url-scheme", "evaluate", ["llm=deepseek", "llm.client.base_url=ftp://x/v1"],
     "llm.client.base_url='ftp://x/v1'; expected an http:// or https:// URL"),
    # files
    ("kg-path-unset", "evaluate", ["data=custom"], "data.source.kg_path"),
    ("kg-path-missing", "evaluate", custom("{tmp}/missing.tsv"), "missing.tsv"),
    ("kg-path-empty", "evaluate", custom(""), "kg_path"),
    ("kg-path-directory", "evaluate", custom("{tmp}/kg_dir"), "kg_dir"),
    ("kg-file-empty", "evaluate", custom("{tmp}/empty.tsv"), "empty.tsv"),
    ("kg-bad-row", "evaluate", custom("{tmp}/bad.tsv"), "bad.tsv:2:"),
    # the environment
    ("api-key-unset", "evaluate", ["llm=openai"], "OPENAI_API_KEY is not set"),
]  # fmt: skip


@pytest.fixture
def entry(tmp_path, monkeypatch, capsys):
    """Run ``<script>.py <overrides>`` in process as ``__main__``; returns (status, stderr)."""
    monkeypatch.setenv("LOKG_ROOT", str(tmp_path))
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # cli.main installs its own
    fmt = _files(tmp_path)

    def run(script: str, overrides: list[str]) -> tuple[int, str]:
        args = [a.format(**fmt) for a in overrides]
        if script == "evaluate" and not any(a.startswith("llm=") for a in args):
            args = ["llm=extractive", *args]  # no server to start before the input is read
        path = ROOT / f"{script}.py"
        monkeypatch.setattr(sys, "argv", [str(path), *args])
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            runpy.run_path(str(path), run_name="__main__")
        return stop.value.code, capsys.readouterr().err

    return run


def test_the_corpus_is_large_and_every_id_unique():
    ids = [c[0] for c in CORPUS]
    assert len(ids) >= 20 and len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    ("case", "script", "overrides", "names"), CORPUS, ids=[c[0] for c in CORPUS]
)
def test_input_mistake_is_one_line_and_exit_2(entry, tmp_path, case, script, overrides, names):
    status, err = entry(script, overrides)
    assert status == cli.EXIT_INPUT_ERROR, err
    (line,) = err.splitlines()  # exactly one line: no traceback, no Hydra banner
    assert line.startswith("error: ")
    assert names.format(tmp=tmp_path) in line
    # nothing half-written: a run stopped by its input recorded no results
    assert not (tmp_path / "logs" / "evaluate" / "results").exists()


@pytest.mark.parametrize(
    ("overrides", "last"),
    [
        (["budget=0"], "error: budget=0; expected a positive whole number of tokens"),
        (["scos=defualt"], "error: In 'evaluate': Could not find 'scos/defualt'."),
    ],
)
def test_verbose_shows_the_traceback_then_the_line(entry, overrides, last):
    status, err = entry("evaluate", ["verbose=true", *overrides])
    assert status == 2
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1].startswith(last)


def test_hydra_full_error_shows_the_traceback(entry, monkeypatch):
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    status, err = entry("train", ["+epochs=3"])
    assert status == 2 and "Traceback (most recent call last):" in err
    assert err.splitlines()[-1].startswith("error: Key 'epochs' not in 'TrainConfig'")
    assert os.environ["HYDRA_FULL_ERROR"] == "1"  # left as the user set it


def _raises(error: BaseException):
    def fails(*_cfg):
        raise error

    return fails


def test_a_bug_still_raises_with_its_traceback(monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    for bug in (TypeError("bug"), AttributeError("bug"), RuntimeError("bug"), KeyError("bug")):
        with pytest.raises(type(bug)):
            cli.main(_raises(bug), argv=[])
    # inside the job too: Hydra's runner sees it (only input errors are carried past it)
    with pytest.raises(TypeError, match="^bug$"):
        cli.run_job(_raises(TypeError("bug")), OmegaConf.create({"verbose": False}))


def test_secrets_from_the_environment_are_never_printed(monkeypatch, capsys):
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-double-0123456789")
    monkeypatch.setenv("HF_TOKEN", "hf_double_token")
    message = "401 from server: key sk-test-double-0123456789 (hf_double_token) rejected"
    with pytest.raises(SystemExit) as stop:
        cli.main(_raises(InputError(message)), argv=[])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err == "error: 401 from server: key <$OPENAI_API_KEY> (<$HF_TOKEN>) rejected\n"
    # a bug's traceback goes through the hook cli.main installs: redacted too
    try:
        cli.main(_raises(RuntimeError(message)), argv=[])
    except RuntimeError as bug:
        sys.excepthook(type(bug), bug, bug.__traceback__)
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError" in err
    assert "sk-test-double" not in err and "hf_double_token" not in err


def _subprocess(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["LOKG_ROOT"] = str(tmp_path)
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *overrides],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.slow
def test_evaluate_py_with_a_config_typo_prints_one_line(tmp_path):
    done = _subprocess(tmp_path, "scos=defualt")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "error: In 'evaluate': Could not find 'scos/defualt'. "
        "Available options: default, lokg, off\n"
    )


@pytest.mark.slow
def test_evaluate_py_with_a_bad_file_prints_one_line(tmp_path):
    _files(tmp_path)
    done = _subprocess(tmp_path, "llm=extractive", *[a.format(tmp=tmp_path) for a in custom(
        "{tmp}/bad.tsv")])  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {tmp_path}/bad.tsv:2: ")
