"""How ``train.py`` and ``evaluate.py`` fail: one line for the user's mistakes, a traceback
for ours.

    $ python evaluate.py scos=defualt
    error: In 'evaluate': Could not find 'scos/defualt'. Available options: default, off
    $ echo $?
    2

A mistake in the user's input — a config group option, key or value, a file or a line of
it — prints ``error: <message>`` on stderr, one line that names the key or file and what was
expected, and exits 2. ``HYDRA_FULL_ERROR=1`` or ``verbose=true`` prints the traceback above
that line. Anything else is a bug and raises with its traceback (exit 1). Values of
environment variables named ``*_API_KEY`` / ``*_TOKEN`` are redacted from everything printed
here, tracebacks included.

Input errors are: :class:`lokg.errors.InputError` and any ``ValueError`` (a corrupt artifact,
:class:`lokg.errors.CorruptArtifact`, included); a missing file or directory
(``FileNotFoundError``, ``IsADirectoryError``, ``NotADirectoryError``); the operating
system refusing a read or write (:data:`OS_REFUSALS`: a full disk, a read-only file system,
an I/O error, no permission), printed as ``error: <path>: <what>; <what to do>`` (the atomic
writes, :mod:`lokg.atomic_io`, name the path and leave nothing half-written); OmegaConf's
``ValidationError``, ``ConfigKeyError`` and ``MissingMandatoryValue``; Hydra's composition
errors (``ConfigCompositionException``, ``MissingConfigException``,
``OverrideParseException``, ...); a config group's
constructor refusing its keys (an unknown ``_target_``, an unexpected or missing keyword
argument); and what the LLM layer says stops a run before any question could be answered
(``MissingAPIKeyError``, ``LLMFatalError``: a refused key, an unknown model or endpoint;
``LocalServerError``: no local model or server), which is the user's setup too. Wrapped
errors are judged by their cause.

A job stopped by SIGTERM (:class:`lokg.errors.Interrupted`: a cluster preempting it) prints
its one line on stderr, ``interrupted by SIGTERM: checkpoint <path>; run the same command to
resume``, and exits 143 (lokg.preemption).

A job that ran to its end but did not do all it was asked returns ``{"exit_status": n, ...}``
and the process exits ``n`` once Hydra has finished the job: 1
(:data:`lokg.evaluate.EXIT_QUESTIONS_FAILED`) from ``evaluate.py`` when a question ended failed
or truncated, unless ``allow_failures=true``; its results and summary are written as for any
run. So the exit status says: 0 done, 1 done with failed questions (one WARNING line counts
them; a 1 after a traceback is a bug), 2 the input is wrong, 143 stopped by SIGTERM.

Hydra's ``@hydra.main`` reports exceptions itself (a trimmed traceback, exit 1), and its job
runner prints ``Error executing job with overrides`` before re-raising. So :func:`main` runs
the decorated function with Hydra's errors passed through (``HYDRA_FULL_ERROR=1`` while it
runs) and reports them here, and :func:`run_job` carries an input error out of the job
past Hydra's runner. The root scripts stay thin::

    @hydra.main(version_base="1.3", config_path="configs", config_name="evaluate")
    def main(cfg: DictConfig) -> None:
        cli.run_job(run, cfg)

    if __name__ == "__main__":
        cli.main(main)
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

from hydra.errors import (
    CompactHydraException,
    InstantiationException,
    MissingConfigException,
    OverrideParseException,
)
from omegaconf.errors import ConfigKeyError, MissingMandatoryValue, OmegaConfBaseException

from lokg.config import check_schema_keys, warn_deprecated_options
from lokg.errors import Interrupted
from lokg.llm.errors import LLMFatalError, LocalServerError, MissingAPIKeyError
from lokg.manifest import set_full_check

__all__ = [
    "EXIT_INPUT_ERROR",
    "describe",
    "input_error",
    "main",
    "redact",
    "report",
    "run_job",
]

#: exit status of a run stopped by the user's input (argparse's convention for usage errors)
EXIT_INPUT_ERROR = 2
#: the exit statuses the jobs of this process asked for (``@hydra.main`` drops a job's
#: return value; :func:`run_job` keeps its ``exit_status`` here for :func:`main`)
_job_exit_statuses: list[int] = []
#: exception types that mean "the user's input is wrong" (InputError is a ValueError)
INPUT_ERRORS = (
    ValueError,
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
    ConfigKeyError,
    MissingMandatoryValue,
    MissingAPIKeyError,
    LLMFatalError,
    LocalServerError,
)
#: errno -> what to do, for the operating system's refusals that are the machine's setup, not
#: a bug (``PermissionError`` is EACCES / EPERM)
OS_REFUSALS = {
    errno.ENOSPC: "free space there, or point LOKG_ROOT (or paths.log_dir / "
    "paths.artifacts_dir) elsewhere, then rerun the same command: finished work is kept",
    errno.EDQUOT: "free space in your quota, or point LOKG_ROOT elsewhere, then rerun the same "
    "command: finished work is kept",
    errno.EROFS: "set LOKG_ROOT (or paths.*) to a writable directory",
    errno.EACCES: "check its permissions, or set LOKG_ROOT (or paths.*) to a directory you can "
    "write",
    errno.EPERM: "check its permissions, or set LOKG_ROOT (or paths.*) to a directory you can "
    "write",
    errno.EIO: "the device reported an I/O error: check the disk, copy the file to a healthy "
    "one and rerun",
}
#: environment variables whose values are never printed
SECRET_VARIABLE = re.compile(r"(?:^|_)(?:API_KEY|TOKEN)$", re.IGNORECASE)
#: shorter values are not redacted (a 1-character "token" would blank the message)
_MIN_SECRET_LENGTH = 4
_VERBOSE = re.compile(r"^\+{0,2}verbose=(?:true|yes|on|1)$", re.IGNORECASE)
# a target's constructor refusing the config's keys: a config mistake, not a bug
_SIGNATURE_MISMATCH = re.compile(r"unexpected keyword argument|missing \d+ required")


def input_error(exc: BaseException) -> BaseException | None:
    """The user-input error behind ``exc`` (itself or a cause), or ``None`` for a bug."""
    seen: set[int] = set()
    err: BaseException | None = exc
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, InstantiationException):
            cause = err.__cause__
            if isinstance(cause, ImportError) or str(err).startswith("Error locating target"):
                return err  # an unknown _target_ in a config file
            if isinstance(cause, TypeError) and _SIGNATURE_MISMATCH.search(str(cause)):
                return err
            err = cause
            continue
        if isinstance(err, (CompactHydraException, *INPUT_ERRORS)):
            return err
        if isinstance(err, OSError) and err.errno in OS_REFUSALS:
            return err
        return None
    return None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _omegaconf_line(err: OmegaConfBaseException) -> str:
    lines = _lines(str(err))
    head = lines[0] if lines else type(err).__name__
    key = getattr(err, "full_key", None)
    return head if not key or key in head else f"{head} (key {key})"


def describe(err: BaseException) -> str:
    """One line for an input error (see :func:`input_error`): the useful line of the chain."""
    lines = _lines(str(err)) or [type(err).__name__]
    if isinstance(err, MissingConfigException):
        options = getattr(err, "options", None)
        head = lines[0]
        return f"{head}. Available options: {', '.join(options)}" if options else head
    if isinstance(err, OverrideParseException):
        return ": ".join(lines[:2])
    if isinstance(err, InstantiationException):
        cause = err.__cause__
        head = lines[0].split(", set env var HYDRA_FULL_ERROR")[0].rstrip(":")
        key = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("full_key:")), "")
        if isinstance(cause, TypeError):
            head = str(cause)
        return f"{key}: {head}" if key else head
    if isinstance(err, CompactHydraException):
        head = lines[0].rstrip(".")
        cause = err.__cause__
        if isinstance(cause, OmegaConfBaseException):
            return f"{head}: {_omegaconf_line(cause)}"
        if cause is not None and _lines(str(cause)):
            return f"{head}: {_lines(str(cause))[0]}"
        if head.endswith(":") and len(lines) > 1:  # "... raised while composing config:"
            return f"{head} {lines[1]}"  # the next line says what is wrong
        return head
    if isinstance(err, OmegaConfBaseException):
        return _omegaconf_line(err)
    if isinstance(err, OSError) and err.errno in OS_REFUSALS:
        return _os_refusal_line(err)
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        name = err.filename if str(err.filename) else "(empty path)"
        return f"{name}: {err.strerror.lower()}"
    if isinstance(err, KeyError) and len(err.args) == 1:
        return str(err.args[0])
    return " ".join(lines)


#: the refusals of a write, where a copy's destination (``filename2``) is the path to name
_WRITE_REFUSALS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def _os_refusal_line(err: OSError) -> str:
    """``<path>: <what>; <what to do>`` for one of :data:`OS_REFUSALS`: a copy's destination
    for a write refused (a ``shutil.move`` across file systems fails writing it), else the
    file (``<source> -> <destination>`` for a copy)."""
    what = (err.strerror or os.strerror(err.errno)).lower()
    names = [str(n) for n in (err.filename, err.filename2) if n is not None and str(n)]
    if err.filename2 is not None and err.errno in _WRITE_REFUSALS:
        names = [str(err.filename2)]
    where = f"{' -> '.join(names)}: " if names else ""
    return f"{where}{what}; {OS_REFUSALS[err.errno]}"


def remove_half_written(err: BaseException) -> None:
    """Delete the destination a copy was writing when the disk filled (``filename2`` of an
    ``ENOSPC``/``EDQUOT`` error: Lightning's checkpoint save copies its temporary file into
    place), so that nothing half-written is left; its source is still whole."""
    if not isinstance(err, OSError) or err.errno not in (errno.ENOSPC, errno.EDQUOT):
        return
    if err.filename2 is not None and os.path.isfile(err.filename2):
        with contextlib.suppress(OSError):
            os.unlink(err.filename2)


def redact(text: str, environ: dict[str, str] | None = None) -> str:
    """``text`` with the value of every ``*_API_KEY`` / ``*_TOKEN`` variable replaced."""
    env = os.environ if environ is None else environ
    secrets = sorted(
        (
            (v, k)
            for k, v in env.items()
            if SECRET_VARIABLE.search(k) and len(v) >= _MIN_SECRET_LENGTH
        ),
        key=lambda kv: -len(kv[0]),
    )
    for value, name in secrets:
        text = text.replace(value, f"<${name}>")
    return text


class _JobInputError(BaseException):
    """An input error raised inside the job, carried past Hydra's job runner.

    Hydra's runner catches ``Exception`` and prints ``Error executing job with overrides``
    before re-raising it; a ``BaseException`` passes it as ``SystemExit`` would.
    """

    def __init__(self, error: BaseException, verbose: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.verbose = verbose


def run_job(job: Callable[[Any], Any], cfg: Any) -> Any:
    """Run ``job(cfg)`` as the task of ``@hydra.main``, for :func:`main` to report.

    Refuses top-level keys the schema does not declare (``+epochs=3``) first; an input error
    leaves as a carrier that :func:`main` prints in one line; a bug propagates unchanged. A
    result ``{"exit_status": n}`` with ``n != 0`` is kept for :func:`main` to exit with.
    """
    try:
        check_schema_keys(cfg)
        warn_deprecated_options()
        set_full_check(bool(cfg.get("verify", False)))  # verify=true: hash every artifact file
        result = job(cfg)
    except Exception as exc:
        if input_error(exc) is None:
            raise
        raise _JobInputError(exc, verbose=bool(cfg.get("verbose", False))) from exc
    if isinstance(result, Mapping) and result.get("exit_status"):
        _job_exit_statuses.append(int(result["exit_status"]))
    return result


@contextmanager
def _hydra_passes_errors_through() -> Iterator[None]:
    """Hydra re-raises instead of printing its own report while this is active."""
    before = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = before


def _report(exc: BaseException, err: BaseException, show_traceback: bool) -> NoReturn:
    remove_half_written(err)
    if show_traceback:
        sys.stderr.write(redact("".join(traceback.format_exception(exc))))
    sys.stderr.write(f"error: {redact(describe(err))}\n")
    sys.stderr.flush()
    raise SystemExit(EXIT_INPUT_ERROR)


def report(exc: BaseException, show_traceback: bool = False) -> NoReturn:
    """What the entry points do with an exception: an input error is printed as one line,
    ``error: <message>``, on stderr and exits with :data:`EXIT_INPUT_ERROR`; a bug is
    re-raised with its traceback."""
    err = input_error(exc)
    if err is None:
        raise exc
    _report(exc, err, show_traceback)


def _redacting_excepthook(kind, value, tb) -> None:
    sys.stderr.write(redact("".join(traceback.format_exception(kind, value, tb))))
    sys.stderr.flush()


def main(hydra_main: Callable[[], Any], argv: Sequence[str] | None = None) -> None:
    """Run a ``@hydra.main`` function whose task calls :func:`run_job`; report its errors.

    ``argv`` (default ``sys.argv[1:]``; Hydra itself reads ``sys.argv``) is only searched for
    ``verbose=true``, which must take effect before the config exists.

    Raises:
        SystemExit: with :data:`EXIT_INPUT_ERROR` after printing an input error; with the
            ``exit_status`` a finished job returned (:func:`run_job`) when not 0;
            :class:`~lokg.errors.Interrupted` (exit 143) after printing its line.
    """
    sys.excepthook = _redacting_excepthook  # bugs: the traceback, secrets redacted
    args = sys.argv[1:] if argv is None else list(argv)
    full = os.environ.get("HYDRA_FULL_ERROR") == "1"
    _job_exit_statuses.clear()
    try:
        with _hydra_passes_errors_through():
            hydra_main()
    except _JobInputError as carried:
        _report(carried.error, input_error(carried.error), full or carried.verbose)
    except Interrupted as stop:  # a SystemExit: its code (143 for SIGTERM) is the exit status
        sys.stderr.write(f"{redact(str(stop))}\n")
        sys.stderr.flush()
        raise
    except Exception as exc:
        err = input_error(exc)
        if err is None:
            raise
        _report(exc, err, full or any(_VERBOSE.match(a) for a in args))
    if _job_exit_statuses:  # a finished job that did not do all it was asked (multirun: the worst)
        sys.stdout.flush()
        raise SystemExit(max(_job_exit_statuses))
