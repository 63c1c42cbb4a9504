"""What ``evaluate.py``'s exit status and its two output streams say (issue 43 s4).

- Exit status 0 when every question was answered; 1 when any ended failed or with a reply
  cut at the generation limit (one WARNING line counts them), so scripts and CI can tell;
  ``allow_failures=true`` keeps 0; 2 stays a mistake in the input (tests/reliability/
  test_entry_points.py). The results and the summary are written whatever the status.
- stdout carries what the run reports (dataset statistics, the metrics table,
  ``results: <dir>``); log lines (INFO, WARNING) go to stderr, as a command-line tool's do.

Unit level: :func:`lokg.evaluate.exit_status` over hand-made records, and ``cli.main``
exiting with the status a finished job returned. End to end: real ``evaluate.py``
subprocesses against the scripted OpenAI-protocol test double.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from lokg import cli
from lokg.eval import QuestionResult, read_results
from lokg.evaluate import EXIT_QUESTIONS_FAILED, exit_status

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-exit-status-double-0123456789"
#: a line written by a logger through Hydra's console handler
LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+\]\[[\w.]+\]\[(?:DEBUG|INFO|WARNING|ERROR)\]")


def record(i: int, status: str = "ok", truncated: int = 0) -> QuestionResult:
    return QuestionResult(id=f"q{i}", question=f"q{i}?", gold=["x"], status=status,
                          truncated=truncated)  # fmt: skip


@pytest.mark.parametrize(
    ("records", "allow", "status", "line"),
    [
        ([record(0), record(1)], False, 0, None),
        ([record(0), record(1, "failed")], False, 1,
         "1 of 2 questions failed and 0 were answered from a truncated reply: exit status 1 "
         "(allow_failures=true exits 0)"),
        ([record(0, truncated=1), record(1), record(2)], False, 1,
         "0 of 3 questions failed and 1 were answered from a truncated reply: exit status 1"),
        ([record(0, "failed", truncated=1), record(1, truncated=2)], False, 1,
         "1 of 2 questions failed and 1 were answered from a truncated reply"),
        ([record(0, "failed"), record(1, truncated=1)], True, 0,
         "1 of 2 questions failed and 1 were answered from a truncated reply: exit status 0 "
         "(allow_failures=true)"),
        ([record(0)], True, 0, None),
    ],
)  # fmt: skip
def test_exit_status_is_1_when_a_question_failed_or_was_truncated(
    caplog, records, allow, status, line
):
    with caplog.at_level(logging.WARNING, "lokg.evaluate"):
        assert exit_status(records, allow_failures=allow) == status
    lines = [r.getMessage() for r in caplog.records]
    if line is None:
        assert lines == []
    else:
        (said,) = lines
        assert said.startswith(line) and caplog.records[0].levelno == logging.WARNING


def test_cli_main_exits_with_the_status_a_finished_job_returned(monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # cli.main installs its own
    cfg = OmegaConf.create({"verbose": False})
    ran = []

    def hydra_main(status: int):
        def main() -> None:  # as @hydra.main's task: run_job's return value is dropped
            ran.append(cli.run_job(lambda _cfg: {"exit_status": status, "metrics": {}}, cfg))

        return main

    with pytest.raises(SystemExit) as stop:
        cli.main(hydra_main(EXIT_QUESTIONS_FAILED), argv=[])
    assert stop.value.code == EXIT_QUESTIONS_FAILED == 1
    assert ran[-1]["exit_status"] == 1  # the job's result itself is unchanged
    cli.main(hydra_main(0), argv=[])  # 0: main returns, the process exits 0
    cli.main(lambda: cli.run_job(lambda _cfg: None, cfg), argv=[])  # a job returning nothing


# -- end to end: evaluate.py against the double -----------------------------------------
E2E = ["scos=off", "retriever=bfs", "encoder=truncate", "llm=openai", "logger=csv",
       "llm.client.cache_path=null", "llm.client.max_attempts=1", "limit=2"]  # fmt: skip


def evaluate(root: Path, double, *overrides: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "evaluate.py"), f"paths.root_dir={root}",
           f"llm.client.base_url='{double.base_url}'", *E2E, *overrides]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    env.pop("LOKG_ROOT", None)
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180, cwd=ROOT)


def results_of(run: subprocess.CompletedProcess) -> dict[str, QuestionResult]:
    (line,) = [ln for ln in run.stdout.splitlines() if ln.startswith("results: ")]
    return read_results(Path(line.removeprefix("results: ")) / "results.jsonl").records


def warnings_of(run: subprocess.CompletedProcess, text: str) -> list[str]:
    return [ln for ln in run.stderr.splitlines() if "[WARNING]" in ln and text in ln]


@pytest.mark.slow
def test_failed_questions_exit_1_allow_failures_exits_0_and_logs_go_to_stderr(
    openai_double, tmp_path
):
    openai_double.route = lambda payload: ("context_length",)  # every prompt refused
    first = evaluate(tmp_path, openai_double)
    assert first.returncode == 1, first.stderr[-3000:]
    assert "Traceback" not in first.stderr
    records = results_of(first)  # recorded and summarised all the same
    assert [r.status for r in records.values()] == ["failed", "failed"]
    assert len(warnings_of(first, "2 of 2 questions failed and 0 were answered from a "
                                  "truncated reply: exit status 1 (allow_failures=true exits "
                                  "0)")) == 1  # fmt: skip
    # the two streams: what the run reports on stdout, every log line on stderr
    assert "hits@1" in first.stdout and "dataset pq2h" in first.stdout
    assert not [ln for ln in first.stdout.splitlines() if LOG_LINE.match(ln)], first.stdout
    assert warnings_of(first, "scos=off: recorded as ablation no_scos")

    # the same run with allow_failures=true resumes the same file (the key is not part of
    # the run's identity), keeps the refused prompts (not retried) and exits 0
    second = evaluate(tmp_path, openai_double, "allow_failures=true")
    assert second.returncode == 0, second.stderr[-3000:]
    assert results_of(second).keys() == records.keys()
    assert warnings_of(second, "2 of 2 questions failed and 0 were answered from a truncated "
                               "reply: exit status 0 (allow_failures=true)")  # fmt: skip

    # replies cut at the generation limit (another budget: another results file) exit 1 too
    openai_double.route = lambda payload: ("length", "Par")
    third = evaluate(tmp_path, openai_double, "budget=1024")
    assert third.returncode == 1, third.stderr[-3000:]
    assert [r.truncated for r in results_of(third).values()] == [1, 1]
    assert warnings_of(third, "0 of 2 questions failed and 2 were answered from a truncated reply")
