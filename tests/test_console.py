"""configure_console: library INFO chatter goes to WARNING unless verbose."""

from __future__ import annotations

import logging
import warnings

import pytest

from lokg.console import QUIET_LOGGERS, configure_console


@pytest.fixture(autouse=True)
def restore_logging():
    """Put the quieted loggers' levels and the warning filters back after each test."""
    levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    with warnings.catch_warnings():
        yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_quiet_console_raises_httpx_to_warning():
    logging.getLogger("httpx").setLevel(logging.NOTSET)
    logging.getLogger("lokg").setLevel(logging.NOTSET)
    configure_console(False)
    assert logging.getLogger("httpx").level == logging.WARNING
    assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)
    assert logging.getLogger("pytorch_lightning.utilities.rank_zero").getEffectiveLevel() >= (
        logging.WARNING
    )
    assert logging.getLogger("lokg").level == logging.NOTSET  # our own INFO lines stay


def test_verbose_console_leaves_httpx_alone():
    logging.getLogger("httpx").setLevel(logging.INFO)
    configure_console(True)
    assert logging.getLogger("httpx").level == logging.INFO


def test_quiet_console_keeps_warnings_and_errors():
    configure_console(False)
    assert logging.getLogger("pytorch_lightning").isEnabledFor(logging.WARNING)
    assert logging.getLogger("httpx").isEnabledFor(logging.ERROR)


def test_quiet_console_drops_only_the_dataloader_workers_advice():
    configure_console(False)
    with warnings.catch_warnings(record=True) as caught:
        advice = "The 'train_dataloader' does not have many workers which may be a bottleneck."
        warnings.warn(advice, UserWarning, stacklevel=1)
        warnings.warn("a real problem", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["a real problem"]
