"""What ``train.py`` and ``evaluate.py`` print: our own lines, progress bars, and real problems.

Libraries log a line per HTTP request (httpx, httpcore, urllib3, openai), per lock
(filelock), per JIT compilation (numba), and Lightning prints tips, the hardware it did not
find (``GPU available: False``, ``TPU available``, ``HPU available``) and ``LOCAL_RANK``
lines at INFO.  :func:`configure_console` lowers all of that to WARNING unless
``verbose=true``; warnings and errors still show.

Warnings are fixed at their source where we can (e.g. the trainer's arguments); the one
filtered here is Lightning's advice to add dataloader workers, which does not apply to the
in-memory batches built here (workers would only add start-up cost on a few cores).
"""

from __future__ import annotations

import logging
import warnings

__all__ = ["QUIET_LOGGERS", "configure_console", "format_stats"]

#: Loggers whose INFO lines are chatter for a user of ``train.py`` / ``evaluate.py``.
QUIET_LOGGERS = (
    "httpx",
    "httpcore",
    "urllib3",
    "openai",
    "filelock",
    "numba",
    # Lightning: tips, litlogger/litmodels adverts, "GPU/TPU/HPU available", LOCAL_RANK
    "lightning",
    "lightning_fabric",
    "pytorch_lightning",
    "lightning.pytorch",
)

#: Warnings we cannot fix at the source (message regexes, as ``warnings.filterwarnings``).
_UNFIXABLE_WARNINGS = (
    # PossibleUserWarning: "The '<x>_dataloader' does not have many workers which may be a
    # bottleneck": batches are built in memory; workers would not speed them up here.
    r".*does not have many workers which may be a bottleneck.*",
    # pytorch_lightning 2.6's own pytree helper builds torch 2.13's deprecated LeafSpec on
    # every batch (Lightning's code, not ours)
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
    # the GAT module owns transfer_batch_to_device (question batches stay on the host) so that
    # it also trains from plain DataLoaders of questions; with our DataModule Lightning notes
    # that the module's hook is used, which is what we want
    r"You have overridden `transfer_batch_to_device` in `LightningModule`",
    # a fit stopped by SIGTERM between two batches resumes there (lokg.preemption): the rest
    # of that epoch is drawn afresh from the shuffled loader, which is what a resume means here
    r"You're resuming from a checkpoint that ended before the epoch ended",
)


def configure_console(verbose: bool = False) -> None:
    """Quiet library INFO chatter (to WARNING) unless ``verbose``; ``verbose`` changes nothing.

    Only the named libraries' loggers are raised, so ``lokg``'s own INFO lines (seed, where
    artifacts went) still reach the console through Hydra's handler.
    """
    if verbose:
        return
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:  # NOTSET (inherit) or lower: set it here
            logger.setLevel(logging.WARNING)
    for pattern in _UNFIXABLE_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)


def format_stats(stats: dict) -> str:
    """A small table of dataset statistics, as ``make demo`` prints it."""
    q = stats["questions"]
    lines = [
        f"dataset {stats['dataset']}"
        + (
            ""
            if stats.get("paper_setting", True)
            else "  [not the paper's setting: "
            + (
                "generated questions]"
                if stats["dataset"].startswith("beyond_")
                else "offline stand-in]"
            )
        ),
        f"  KG: {stats['entities']:,} entities, {stats['relations']:,} relations, "
        f"{stats['triples']:,} triples",
        f"  questions: train {q['train']:,} / val {q['val']:,} / test {q['test']:,}",
    ]
    lines += [f"  read: {line}" for line in stats.get("read", [])]
    return "\n".join(lines)
