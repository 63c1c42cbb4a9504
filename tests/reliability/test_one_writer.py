"""One writer per results file (issue 43, section 1): two runs of one configuration never
both write its ``results.jsonl``, and a file that two runs did write (an earlier version had
no lock) still reads.

End to end: a real ``evaluate.py`` asking a slow scripted OpenAI-protocol double on
127.0.0.1 is paused (SIGSTOP) while it holds the results file; a second run of the same
command refuses at once with one ``error:`` line naming the file and the first run's pid
(exit 2), a third with ``wait=true`` queues behind it, and once the first ends the third
resumes it: every question answered once, no prompt paid twice. Unit level: the
duplicate-tolerant reader, a stale lock left by a killed holder, a lock held by another
live process.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from lokg.eval import QuestionResult, ResultsWriter, read_results

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-double-not-a-real-key-0000"
LIMIT = 6
E2E = ["scos=off", "retriever=bfs", "encoder=truncate", "llm=openai", "logger=csv",
       "llm.client.cache_path=null", "llm.client.max_attempts=2", f"limit={LIMIT}",
       "llm.client.max_concurrency=2"]  # fmt: skip


def rec(qid: str, pred=("Paris",), **kw) -> QuestionResult:
    return QuestionResult(
        id=qid, question=f"q {qid}?", gold=["Paris"], predictions=list(pred), **kw
    )


def jsonl(*records: QuestionResult) -> str:
    return "".join(json.dumps(r.to_json()) + "\n" for r in records)


# -- the reader: a duplicated answer is resolved, not fatal -----------------------------


def test_a_duplicate_answer_keeps_the_first_and_is_counted_in_one_warning(tmp_path, caplog):
    path = tmp_path / "results.jsonl"
    path.write_text(
        jsonl(
            rec("a", pred=("Paris",)),
            rec("b", pred=(), status="failed", error="HTTP 503"),
            rec("a", pred=("Lyon",)),  # a second run answered 'a' again
            rec("b", pred=("Paris",)),  # supersedes b's failure
            rec("b", pred=("Nice",)),  # ... and a second run answered 'b' again
            rec("a", pred=(), status="failed", error="HTTP 500"),
        )
    )
    with caplog.at_level(logging.WARNING, "lokg.eval.results"):
        found = read_results(path)
    assert list(found.records) == ["a", "b"]
    assert found.records["a"].predictions == ["Paris"]  # the first answer wins
    assert found.records["b"].predictions == ["Paris"]
    assert found.answered_ids == {"a", "b"} and found.superseded == 1 and found.duplicates == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].getMessage() == (
        f"{path}: 3 records of 2 question ids were written after their id was answered "
        "(first at line 3: two runs wrote this file at once); the first answer of each id is kept"
    )


def test_a_writer_opens_a_file_with_duplicates_and_resumes_it(tmp_path, caplog):
    path = tmp_path / "results.jsonl"
    path.write_text(jsonl(rec("a"), rec("a", pred=("Lyon",)), rec("b")))
    with caplog.at_level(logging.WARNING, "lokg.eval.results"), ResultsWriter(path) as w:
        assert w.done_ids == {"a", "b"} and w.records["a"].predictions == ["Paris"]
        w.write(rec("c"))
    assert list(read_results(path).records) == ["a", "b", "c"]


def test_a_file_without_duplicates_reads_without_a_warning(tmp_path, caplog):
    path = tmp_path / "results.jsonl"
    path.write_text(jsonl(rec("a", pred=(), status="failed", error="e"), rec("a"), rec("b")))
    with caplog.at_level(logging.WARNING, "lokg.eval.results"):
        found = read_results(path)
    assert found.duplicates == 0 and found.superseded == 1 and not caplog.records


# -- the lock ---------------------------------------------------------------------------

#: a child that opens a writer on argv[1], says "locked <pid>", then waits for stdin to close
#: (or is killed); ``os._exit`` on "die" leaves without closing the writer
_HOLDER = """
import os, sys
from lokg.eval import ResultsWriter
w = ResultsWriter(sys.argv[1])
print("locked", os.getpid(), flush=True)
if sys.stdin.readline().strip() == "die":
    os._exit(0)
w.close()
"""


def start_holder(path: Path) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = holder.stdout.readline()
    assert line == f"locked {holder.pid}\n", holder.stderr.read()
    return holder


def test_a_second_writer_is_refused_naming_the_file_and_the_live_holder(tmp_path):
    path = tmp_path / "results.jsonl"
    holder = start_holder(path)
    try:
        with pytest.raises(ValueError) as refused:
            ResultsWriter(path)
        assert str(refused.value) == (
            f"{path}: another run (pid {holder.pid}) is writing this results file; wait for it "
            "to end, or pass wait=true to start when it does"
        )
    finally:
        holder.communicate("\n", timeout=30)
    with ResultsWriter(path) as w:  # released at close: the next writer gets it
        w.write(rec("a"))


def test_a_queued_writer_starts_when_the_holder_ends_and_sees_its_records(tmp_path, caplog):
    path = tmp_path / "results.jsonl"
    holder = start_holder(path)
    threading.Timer(0.5, holder.communicate, ("\n",)).start()
    with caplog.at_level(logging.WARNING, "lokg.eval.lock"), ResultsWriter(path, wait=True):
        assert holder.wait(timeout=30) == 0
    assert f"{path}: waiting for pid {holder.pid}, which is writing this results file" in (
        caplog.text
    )


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_a_stale_lock_of_a_dead_holder_is_taken_over_in_one_line(tmp_path, caplog, how):
    path = tmp_path / "results.jsonl"
    holder = start_holder(path)
    if how == "kill":
        holder.kill()
        holder.communicate(timeout=30)
    else:
        holder.communicate("die\n", timeout=30)  # ends without closing its writer
    lock = path.with_name("results.jsonl.lock")
    assert lock.read_text() == f"{holder.pid}\n"  # the dead holder's pid is left behind
    with caplog.at_level(logging.WARNING, "lokg.eval.lock"), ResultsWriter(path) as w:
        assert lock.read_text() == f"{os.getpid()}\n"
        w.write(rec("a"))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        f"{path}: took over the lock left by pid {holder.pid}, which ended without releasing it"
    ]
    assert lock.read_text() == ""  # a clean close leaves no holder behind
    caplog.clear()
    with caplog.at_level(logging.WARNING, "lokg.eval.lock"), ResultsWriter(path):
        assert not caplog.records  # released cleanly: nothing stale to say


# -- end to end: two real evaluate.py processes on one results file -----------------------


def command(root: Path, double, *overrides: str) -> list[str]:
    return [sys.executable, str(ROOT / "evaluate.py"), f"paths.root_dir={root}",
            f"llm.client.base_url='{double.base_url}'", *E2E, *overrides]  # fmt: skip


def environment() -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    env.pop("LOKG_ROOT", None)
    env.pop("HYDRA_FULL_ERROR", None)
    return env


def wait_until(done: Callable[[], bool], proc: subprocess.Popen, what: str, timeout: float):
    deadline = time.monotonic() + timeout
    while not done():
        assert proc.poll() is None, f"ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


class Lines:
    """The merged output of a process, read line by line on a thread."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def has(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def join(self) -> str:
        self._thread.join(timeout=60)
        return "\n".join(self.lines)


@pytest.mark.slow
def test_two_runs_on_one_results_file_one_refuses_none_pays_twice_and_the_next_resumes(
    openai_double, tmp_path
):
    openai_double.route = lambda payload: ("slow", 0.2, "x")
    cmd, env = command(tmp_path, openai_double), environment()
    pipes = {"stdout": subprocess.PIPE, "text": True, "env": env, "cwd": ROOT}
    first = subprocess.Popen(cmd, stderr=subprocess.PIPE, **pipes)
    queued = None
    try:
        # asking questions: it holds its results file; paused, it keeps holding it
        wait_until(lambda: openai_double.requests, first, "a first request", 120)
        os.kill(first.pid, signal.SIGSTOP)
        second = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT,
                                timeout=120)  # fmt: skip
        queued = subprocess.Popen([*cmd, "wait=true"], stderr=subprocess.STDOUT, **pipes)
        out = Lines(queued)
        wait_until(lambda: out.has("waiting for pid"), queued, "the 'waiting' line", 120)
    finally:
        os.kill(first.pid, signal.SIGCONT)
        if queued is None or queued.poll() is not None:
            first.kill()
    first_out, first_err = first.communicate(timeout=120)
    assert first.returncode == 0, first_err[-3000:]
    assert queued.wait(timeout=120) == 0, out.join()[-3000:]
    queued_out = out.join()

    (results,) = [ln.removeprefix("results: ") for ln in first_out.splitlines()
                  if ln.startswith("results: ")]  # fmt: skip
    path = Path(results) / "results.jsonl"
    # the second run: one line naming the file and the holder, exit 2, nothing asked
    assert second.returncode == 2, second.stderr[-3000:]
    errors = [ln for ln in second.stderr.splitlines() if ln.startswith("error: ")]
    assert errors == [
        f"error: {path}: another run (pid {first.pid}) is writing this results file; wait for "
        "it to end, or pass wait=true to start when it does"
    ]
    assert "Traceback" not in second.stderr
    # the queued run waited for the first, then resumed its file: nothing left to ask
    assert f"{path}: waiting for pid {first.pid}, which is writing this results file" in (
        queued_out
    )
    assert f"resuming: {LIMIT} answered, 0 failed earlier" in queued_out
    assert f"results: {results}" in queued_out
    # every question answered once, every prompt paid once
    ids = [json.loads(line)["id"] for line in path.read_text().splitlines()]
    assert len(ids) == LIMIT and len(set(ids)) == LIMIT
    paid = Counter(p["messages"][-1]["content"] for p in openai_double.requests)
    assert len(paid) == LIMIT and max(paid.values()) == 1
    assert read_results(path).duplicates == 0
