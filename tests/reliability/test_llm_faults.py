"""LLM faults, probed against a scripted OpenAI-protocol test double on 127.0.0.1.

Unit level: every fault class -> its outcome (answer, failed question after N attempts, or
a run-fatal stop), ``Retry-After`` honoured (the gap between requests is measured), the API
key redacted from every message and log line; a reply cut at the generation limit is
recorded as truncated and never cached; a rerun that keeps earlier failures says so in one
warning line. End to end: a real ``evaluate.py`` subprocess whose run records the questions
the server failed and goes on (exit status 1); a rerun against a healthy double answers
exactly those and re-asks no answered one; a 401 stops the run after one request without
printing the key.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
import traceback
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lokg.eval import QuestionResult, ResultsWriter, aggregate, read_results, run_questions
from lokg.llm import ChatClient, LLMCallFailed, LLMFatalError, LLMReader
from lokg.llm.client import redact, retry_after_s, status_outcome
from lokg.pipeline import BudgetExceeded
from lokg.typing import Question

ROOT = Path(__file__).resolve().parents[2]
MSG = [{"role": "user", "content": "Which city is the capital of France?"}]
KEY = "sk-proj-Zq8uX2lKp0aVb7Rn4Tt1We9Yc3Md6Fg5abcd"
KEY_ENV = "LOKG_DOUBLE_KEY"


def make_client(double, **kw) -> ChatClient:
    kw.setdefault("backoff_base_s", 0.001)
    kw.setdefault("backoff_max_s", 0.002)
    kw.setdefault("timeout_s", 2.0)
    kw.setdefault("max_attempts", 3)
    return ChatClient(model="double-model", base_url=double.base_url, **kw)


# (case, scripted reply, attempts made, expected outcome, words in the one-line reason)
TRANSIENT = [
    ("408", ("status", 408), "HTTP 408"),
    ("409", ("status", 409), "HTTP 409"),
    ("429", ("status", 429), "HTTP 429"),
    ("500", ("status", 500), "HTTP 500"),
    ("503", ("status", 503), "HTTP 503"),
    ("hang", ("hang",), "no answer within timeout_s=0.3"),
    ("reset", ("reset",), "connection failed"),
    ("garbage", ("garbage",), "body is not JSON"),
    ("non-utf8", ("non_utf8",), "body is not valid UTF-8"),
    ("truncated", ("truncated",), "body is not JSON"),
    ("empty", ("empty",), "empty answer"),
    ("no choices", ("no_choices",), "no choices"),
    ("no content", ("no_content",), "no message content"),
    ("negative usage", ("usage", "Paris", {"prompt_tokens": -5, "completion_tokens": 3}),
     "negative token usage (prompt_tokens=-5)"),
]  # fmt: skip
REJECTED = [
    ("400 context length", ("context_length",), "HTTP 400 (prompt too long, not retried)"),
    ("400 other", ("status", 400, "invalid 'messages'"), "HTTP 400 (request rejected"),
    ("413", ("status", 413, "payload too large"), "HTTP 413 (prompt too long"),
    ("422", ("status", 422, "Unprocessable"), "HTTP 422 (request rejected"),
]
FATAL = [
    ("401 bad key", ("status", 401), "HTTP 401: the endpoint requires an API key"),
    ("403", ("status", 403), "HTTP 403"),
    ("404 unknown model", ("status", 404, "model not found"), "HTTP 404: model 'double-model'"),
]


def test_200_ok_is_answered_in_one_attempt(openai_double):
    resp = make_client(openai_double).chat(MSG)
    assert resp.text == "Paris" and resp.attempts == 1 and len(openai_double.requests) == 1


@pytest.mark.parametrize(("case", "step", "reason"), TRANSIENT, ids=[c[0] for c in TRANSIENT])
def test_transient_fault_is_retried_then_fails_the_question(openai_double, case, step, reason):
    openai_double.script = [step]
    with pytest.raises(LLMCallFailed) as info:
        make_client(openai_double, timeout_s=0.3).chat(MSG)
    err = info.value
    assert err.attempts == 3 and len(openai_double.requests) == 3
    assert reason in err.reason and "\n" not in str(err) and err.retryable


@pytest.mark.parametrize(("case", "step", "reason"), TRANSIENT, ids=[c[0] for c in TRANSIENT])
def test_transient_fault_then_ok_is_answered(openai_double, case, step, reason):
    openai_double.script = [step, ("ok", "Paris")]
    resp = make_client(openai_double, timeout_s=0.3).chat(MSG)
    assert resp.text == "Paris" and resp.attempts == 2
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (11, 3)  # the good one


@pytest.mark.parametrize(("case", "step", "reason"), REJECTED, ids=[c[0] for c in REJECTED])
def test_rejected_prompt_fails_only_its_question(openai_double, case, step, reason):
    openai_double.script = [step, ("ok", "Paris")]
    client = make_client(openai_double)
    with pytest.raises(LLMCallFailed) as info:
        client.chat(MSG)
    assert info.value.attempts == 1 and len(openai_double.requests) == 1  # not retried
    assert reason in info.value.reason and "\n" not in str(info.value)
    assert client.chat([{"role": "user", "content": "next question"}]).text == "Paris"


@pytest.mark.parametrize(("case", "step", "reason"), FATAL, ids=[c[0] for c in FATAL])
def test_fatal_answer_stops_before_any_more_request(openai_double, case, step, reason):
    openai_double.script = [step, ("ok", "Paris")]
    client = make_client(openai_double, max_concurrency=1)
    with pytest.raises(LLMFatalError, match=reason) as info:
        client.chat(MSG)
    assert "\n" not in str(info.value)
    for i in range(3):  # every later question is refused without a request
        with pytest.raises(LLMFatalError, match=reason):
            client.chat([{"role": "user", "content": f"q{i}"}])
    assert len(openai_double.requests) == 1


def test_fatal_answer_in_flight_stops_the_calls_queued_behind_it(openai_double):
    openai_double.script = [("delay", 0.3, ("status", 401)), ("ok", "Paris")]
    client = make_client(openai_double, max_concurrency=1)
    raised: list[BaseException] = []

    def ask(text: str) -> None:
        try:
            client.chat([{"role": "user", "content": text}])
        except LLMFatalError as exc:
            raised.append(exc)

    first = threading.Thread(target=ask, args=("a",))
    first.start()
    time.sleep(0.1)  # "a" holds the only request slot; the others queue for it
    queued = [threading.Thread(target=ask, args=(f"b{i}",)) for i in range(3)]
    for t in queued:
        t.start()
    for t in [first, *queued]:
        t.join()
    sent = [r["messages"][0]["content"] for r in openai_double.requests]
    assert len(raised) == 4 and sent == ["a"]


@pytest.mark.parametrize("code", [429, 503])
def test_retry_after_seconds_is_honoured_instead_of_backoff(openai_double, code):
    openai_double.script = [("status", code, "slow down", {"Retry-After": "1"}), ("ok", "Paris")]
    resp = make_client(openai_double).chat(MSG)  # backoff alone would wait ~1 ms
    assert resp.text == "Paris" and resp.attempts == 2
    (gap,) = openai_double.gaps()
    assert 1.0 <= gap < 1.8


def test_retry_after_http_date_is_honoured(openai_double):
    when = datetime.now(UTC) + timedelta(seconds=3)
    # whole seconds: 2-3 s from now, so the gap stays above 1 s even when the first request
    # arrives late (with 2 s the floor could leave 1.0 s minus that delay: a flaky 0.96 s)
    header = email.utils.format_datetime(when, usegmt=True)
    openai_double.script = [("status", 429, "slow down", {"Retry-After": header}), ("ok", "P")]
    make_client(openai_double).chat(MSG)
    (gap,) = openai_double.gaps()
    assert 1.0 <= gap < 3.8


def test_retry_after_is_capped_by_retry_after_max_s(openai_double, caplog):
    openai_double.script = [("status", 429, "slow down", {"Retry-After": "3600"}), ("ok", "P")]
    with caplog.at_level(logging.WARNING, "lokg.llm.client"):
        make_client(openai_double, retry_after_max_s=0.2).chat(MSG)
    (gap,) = openai_double.gaps()
    assert 0.2 <= gap < 1.0
    assert "server asked to wait 3600.0 s; waiting retry_after_max_s=0.2 s" in caplog.text


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"retry-after": "2"}, 2.0), ({"retry-after": "0.5"}, 0.5),
     ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
     ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # in the past
     ({"retry-after": "soon"}, None), ({"retry-after": "-3"}, None), ({}, None)],
)  # fmt: skip
def test_retry_after_parsing(headers, expected):
    assert retry_after_s(headers) == expected


def test_retry_after_future_date_in_seconds():
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_s({"retry-after": "Tue, 01 Jan 2030 12:00:07 GMT"}, now=now) == 7.0


def test_status_outcomes():
    assert {c: status_outcome(c) for c in (400, 401, 402, 403, 404, 405, 408, 409, 413,
                                           422, 429, 500, 502, 503, 504)} == {
        400: "question", 401: "fatal", 402: "fatal", 403: "fatal", 404: "fatal", 405: "fatal",
        408: "retry", 409: "retry", 413: "question", 422: "question", 429: "retry",
        500: "retry", 502: "retry", 503: "retry", 504: "retry",
    }  # fmt: skip


# -- secrets ----------------------------------------------------------------------------


def test_redact_removes_the_key_its_fragments_and_masked_echoes():
    assert redact(f"Bearer {KEY} refused", KEY) == "Bearer *** refused"
    assert KEY[:14] not in redact(f"key {KEY[:14]}... was refused", KEY)  # an echoed prefix
    assert redact(f"provided: sk-\u2026{KEY[-4:]}.", KEY) == "provided: ***."
    assert redact(f"provided: sk-proj-********{KEY[-4:]}", KEY) == "provided: ***"
    assert redact("HTTP 503: upstream busy (abcd)", KEY) == "HTTP 503: upstream busy (abcd)"
    assert redact(f"x {KEY} y", None) == f"x {KEY} y"


def _all_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize(
    ("step", "error"),
    [(("echo_key", 401), LLMFatalError), (("echo_key", 401, "masked"), LLMFatalError),
     (("echo_key", 400), LLMCallFailed), (("echo_key", 500), LLMCallFailed)],
)  # fmt: skip
def test_api_key_echoed_by_the_server_never_reaches_errors_or_logs(
    openai_double, monkeypatch, caplog, step, error
):
    monkeypatch.setenv(KEY_ENV, KEY)
    openai_double.script = [step]
    with caplog.at_level(logging.DEBUG), pytest.raises(error) as info:
        make_client(openai_double, api_key_env=KEY_ENV).chat(MSG)
    text = _all_text(info.value) + caplog.text
    assert "Incorrect API key provided: ***" in str(info.value)
    assert KEY not in text and KEY[:12] not in text and KEY[-12:] not in text
    assert f"\u2026{KEY[-4:]}" not in text
    assert info.value.__context__ is None  # no chained openai error carrying the body


# -- end to end: evaluate.py against the double -----------------------------------------

E2E = ["scos=off", "retriever=bfs", "encoder=truncate", "llm=openai", "logger=csv",
       "llm.client.cache_path=null", "llm.client.max_attempts=2",
       "llm.client.backoff_base_s=0.01", "llm.client.backoff_max_s=0.02"]  # fmt: skip


def evaluate(root: Path, double, *overrides: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "evaluate.py"), f"paths.root_dir={root}",
           f"llm.client.base_url='{double.base_url}'", *E2E, *overrides]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    env.pop("LOKG_ROOT", None)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.fixture(scope="module")
def eval_root(tmp_path_factory) -> Path:
    """One project root for the end-to-end runs (the data is prepared once)."""
    return tmp_path_factory.mktemp("lokg")


def results_dir(run: subprocess.CompletedProcess) -> Path:
    """The run directory ``evaluate.py`` printed as ``results: <dir>``."""
    (line,) = [ln for ln in run.stdout.splitlines() if ln.startswith("results: ")]
    return Path(line.removeprefix("results: "))


def all_results(root: Path) -> set[Path]:
    return set((root / "logs" / "evaluate" / "results").glob("*/*/results.jsonl"))


def question_of(payload: dict) -> str:
    return payload["messages"][-1]["content"]


@pytest.mark.slow
def test_evaluate_records_failed_questions_and_a_healthy_rerun_answers_the_transient_ones(
    openai_double, eval_root
):
    replies: dict[str, tuple] = {}  # prompt -> its reply, in order of first arrival

    def faulty(payload: dict) -> tuple:
        prompt = question_of(payload)
        if prompt not in replies:
            n = len(replies)
            replies[prompt] = (
                ("context_length",) if n == 0 else ("status", 503) if n <= 2 else ("ok", "x")
            )
        return replies[prompt]

    openai_double.route = faulty
    first = evaluate(eval_root, openai_double, "limit=6", "llm.client.max_concurrency=2")
    assert first.returncode == 1, first.stderr[-3000:]  # questions failed (issue 43 s4)
    path = results_dir(first) / "results.jsonl"
    records = read_results(path).records
    assert len(records) == 6 and (path.parent / "summary-limit6.json").is_file()
    failed = {i for i, r in records.items() if r.status == "failed"}
    assert len(failed) == 3
    reasons = sorted(records[i].error for i in failed)
    assert sum("HTTP 400 (prompt too long" in r for r in reasons) == 1
    assert sum("after 2 attempt(s): HTTP 503" in r for r in reasons) == 2
    summary = json.loads((path.parent / "summary-limit6.json").read_text())
    assert summary["metrics"]["n"] == 6 and summary["metrics"]["failed"] == pytest.approx(0.5)
    assert len(openai_double.requests) == 1 + 2 * 2 + 3  # 400 once, 503 twice each, 3 ok

    openai_double.requests.clear()
    openai_double.route = lambda payload: ("ok", "x")  # the server is healthy again
    second = evaluate(eval_root, openai_double, "limit=6", "llm.client.max_concurrency=2")
    assert second.returncode == 1, second.stderr[-3000:]  # one failure kept
    assert results_dir(second) == path.parent
    assert (  # log lines go to stderr, the results to stdout
        "resuming: 3 answered, 2 failed earlier and retried now, 1 failed for good (kept)"
        in second.stderr
    )
    kept = [ln for ln in second.stderr.splitlines() if "earlier failure" in ln]
    assert len(kept) == 1 and "1 earlier failure kept (not retried): 1 ContextTooLong; " in kept[0]
    asked = [question_of(p) for p in openai_double.requests]
    transient = {i for i in failed if "HTTP 503" in records[i].error}
    rejected = failed - transient  # the prompt the server refused is not sent again
    assert len(asked) == len(transient) == 2  # only the transient failures, each once
    assert set(asked) == {prompt for prompt, reply in replies.items() if reply[0] == "status"}
    final = read_results(path)
    assert {final.records[qid].prompt[-1]["content"] for qid in transient} == set(asked)
    assert sorted(final.records) == sorted(records) and final.failed_ids == rejected
    assert final.superseded == 2 and len(path.read_text().splitlines()) == 8
    summary = json.loads((path.parent / "summary-limit6.json").read_text())
    assert summary["metrics"]["failed"] == pytest.approx(1 / 6) and summary["metrics"]["n"] == 6
    assert summary["metrics"]["truncated"] == 0


@pytest.mark.slow
def test_evaluate_stops_at_a_bad_key_after_one_request_without_printing_it(
    openai_double, eval_root
):
    openai_double.script = [("echo_key", 401)]
    before = all_results(eval_root)
    run = evaluate(eval_root, openai_double, "limit=4", "llm.client.max_concurrency=1")
    assert run.returncode != 0
    assert "HTTP 401: the API key in $OPENAI_API_KEY was refused" in run.stderr
    assert KEY not in run.stdout + run.stderr and KEY[-12:] not in run.stdout + run.stderr
    assert len(openai_double.requests) == 1  # no question was sent after the fatal answer
    new = all_results(eval_root) - before
    assert len(new) == 1 and read_results(new.pop()).records == {}  # nothing recorded


# -- a reply cut at the generation limit (finish_reason "length") ------------------------


def test_truncated_reply_is_recorded_as_truncated_and_never_cached(openai_double, tmp_path):
    openai_double.script = [("length", "Par"), ("ok", "Paris")]
    client = make_client(openai_double, cache_path=tmp_path / "cache.sqlite")
    reader = LLMReader(client)
    out = reader.answer("Which city is the capital of France?", "France capital Paris")
    assert out.answers == ["Par"] and out.accounting["truncated"] == 1
    assert len(openai_double.requests) == 1 and len(client.cache) == 0  # not retried, not kept
    again = reader.answer("Which city is the capital of France?", "France capital Paris")
    assert again.answers == ["Paris"] and again.accounting["truncated"] == 0
    assert again.accounting["cached_calls"] == 0 and len(openai_double.requests) == 2
    assert len(client.cache) == 1  # the whole answer is cached
    assert client.totals.as_dict()["truncated"] == 1
    reader.close()


def test_truncated_share_reaches_the_record_and_the_run_summary(openai_double, tmp_path):
    openai_double.route = lambda p: ("length", "Par") if "q1" in question_of(p) else ("ok", "x")
    reader = LLMReader(make_client(openai_double))
    questions = [Question(f"q{i}", f"q{i}?", ("x",), ()) for i in range(4)]

    def answer(q: Question) -> QuestionResult:
        out = reader.answer(q.text, "evidence")
        acc = out.accounting
        return QuestionResult(id=q.id, question=q.text, gold=list(q.answers),
                              predictions=out.answers, output=out.output, calls=acc["calls"],
                              truncated=acc["truncated"])  # fmt: skip

    with ResultsWriter(tmp_path / "results.jsonl") as writer:
        run_questions(questions, answer, writer, progress=False)
    records = read_results(tmp_path / "results.jsonl").records
    assert {i: r.truncated for i, r in records.items()} == {"q0": 0, "q1": 1, "q2": 0, "q3": 0}
    assert aggregate(r.score() for r in records.values())["truncated"] == pytest.approx(0.25)


def test_truncated_reply_is_asked_once_more_with_the_same_limit_when_configured(
    openai_double, tmp_path, caplog
):
    openai_double.script = [("length", "Par"), ("ok", "Paris")]
    client = make_client(openai_double, retry_truncated=True, cache_path=tmp_path / "c.sqlite")
    with caplog.at_level(logging.WARNING, "lokg.llm.client"):
        resp = client.chat(MSG, max_tokens=7)
    assert resp.text == "Paris" and not resp.truncated and resp.attempts == 2
    assert [r["max_tokens"] for r in openai_double.requests] == [7, 7]
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (22, 6)  # both paid
    assert "reply cut at max_tokens=7 (finish_reason=length); asking once more" in caplog.text
    assert len(client.cache) == 1
    hit = client.chat(MSG, max_tokens=7)  # the cache holds the whole answer at its own cost
    assert hit.cached and hit.text == "Paris" and hit.usage.prompt_tokens == 11


@pytest.mark.parametrize(
    ("second", "attempts"), [(("length", "Pa"), 2), (("status", 400, "invalid 'messages'"), 2)]
)
def test_truncated_reply_stands_when_its_one_retry_does_not_do_better(
    openai_double, tmp_path, second, attempts
):
    openai_double.script = [("length", "Par"), second, ("ok", "Paris")]
    client = make_client(openai_double, retry_truncated=True, cache_path=tmp_path / "c.sqlite")
    resp = client.chat(MSG)
    assert resp.truncated and resp.attempts == attempts
    assert len(openai_double.requests) == 2 and len(client.cache) == 0  # retried once only


# -- a rerun that keeps earlier failures --------------------------------------------------

RERUN_QS = [Question(f"q{i}", f"question q{i}?", ("x",), ()) for i in range(5)]


def rerun(double, path: Path, retry_failed: bool = True) -> None:
    reader = LLMReader(make_client(double))

    def answer(q: Question) -> QuestionResult:
        out = reader.answer(q.text, "evidence")
        return QuestionResult(id=q.id, question=q.text, gold=list(q.answers),
                              predictions=out.answers, calls=out.accounting["calls"])  # fmt: skip

    with ResultsWriter(path) as writer:
        run_questions(RERUN_QS, answer, writer, progress=False, retry_failed=retry_failed)


def asked_id(payload: dict) -> str:
    """The id of the :data:`RERUN_QS` question a request asks."""
    return re.search(r"question (q\d)\?", question_of(payload)).group(1)


def kept_lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "earlier failure" in r.getMessage()]


@pytest.mark.parametrize(
    ("retry_failed", "line", "asked"),
    [(True, "3 earlier failures kept (not retried): 2 ContextTooLong, 1 BadRequest; scored "
            "as wrong, reasons in the 'error' field of ", ["q3"]),
     (False, "4 earlier failures kept (not retried): 2 ContextTooLong, 1 BadRequest, "
             "1 ServerError; scored as wrong, reasons in the 'error' field of ", [])],
)  # fmt: skip
def test_rerun_that_keeps_earlier_failures_warns_once_with_their_classes(
    openai_double, tmp_path, caplog, retry_failed, line, asked
):
    replies = {"q0": ("context_length",), "q1": ("context_length",), "q2": ("status", 400),
               "q3": ("status", 503), "q4": ("ok", "x")}  # fmt: skip
    openai_double.route = lambda payload: replies[asked_id(payload)]
    path = tmp_path / "results.jsonl"
    with caplog.at_level(logging.WARNING):
        rerun(openai_double, path)
    assert kept_lines(caplog) == []  # a first run keeps nothing: nothing to say
    kinds = {i: r.failure_kind for i, r in read_results(path).records.items()}
    assert kinds == {"q0": "ContextTooLong", "q1": "ContextTooLong", "q2": "BadRequest",
                     "q3": "ServerError", "q4": None}  # fmt: skip

    replies.update({i: ("ok", "x") for i in replies})  # the server is healthy again
    openai_double.requests.clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        rerun(openai_double, path, retry_failed=retry_failed)
    (record,) = kept_lines(caplog)
    warning = record.getMessage()
    assert record.levelno == logging.WARNING and record.name == "lokg.eval.runner"
    assert warning.startswith(line) and str(path) in warning and "\n" not in warning
    hint = "; retry_failed=true asks the 1 transient one(s) again"
    assert warning.endswith(hint) is not retry_failed
    assert [asked_id(r) for r in openai_double.requests] == asked


def test_rerun_counts_kept_failures_of_any_class_and_older_records_as_unclassified(
    openai_double, tmp_path, caplog
):
    path = tmp_path / "results.jsonl"
    with ResultsWriter(path) as writer:
        for q in RERUN_QS[:4]:
            writer.write(QuestionResult(id=q.id, question=q.text, gold=["x"], status="failed",
                                        error="no room", extra={"retryable": False}))  # fmt: skip

    def answer(q: Question) -> QuestionResult:
        raise BudgetExceeded("evidence has 27 tokens > budget 26")

    with ResultsWriter(path) as writer:
        run_questions(RERUN_QS[3:], answer, writer, progress=False)
    assert read_results(path).records["q4"].failure_kind == "BudgetExceeded"
    assert read_results(path).records["q3"].failure_kind is None  # written before it existed
    caplog.clear()
    with caplog.at_level(logging.WARNING), ResultsWriter(path) as writer:
        run_questions(RERUN_QS, answer, writer, progress=False)
    (record,) = kept_lines(caplog)
    assert record.getMessage().startswith(
        "5 earlier failures kept (not retried): 4 unclassified, 1 BudgetExceeded; "
    )
