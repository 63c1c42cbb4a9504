"""Stop a training on SIGTERM with a checkpoint, and resume it with the same command.

A cluster sends SIGTERM before it preempts a job (SLURM; ``hydra/launcher=slurm`` through
submitit), and SIGKILL a little later.  Lightning's own handler only raises a flag that its
loops check at the next batch boundary, and leaves through ``SIGTERMException``, a bare
``SystemExit``: exit status 0, nothing saved, as if the run had finished.  Here, while
``train.py`` runs (:func:`lokg.train.run`):

- in the fit, Lightning's handler stops the loop at the next batch boundary and
  :class:`ResumeCheckpoint` saves the trainer's whole state (weights, optimizer, loop
  progress, callbacks) to :func:`resume_path`, atomically;
- outside it (data preparation, entity-name embeddings, test, export) :class:`StopOnSigterm`
  raises :class:`~lokg.errors.Interrupted` at once.  Artifacts are written atomically
  (:func:`lokg.atomic_io.atomic_directory`, the embedding cache's shards), so nothing
  half-written is left; after a finished fit its checkpoint is saved first, so the rerun
  does not train again;
- the job exits 143 (128 + SIGTERM) with one line on stderr (:mod:`lokg.cli`)::

      interrupted by SIGTERM: checkpoint <path>; run the same command to resume

The same command finds the checkpoint: :func:`resume_path` is keyed by what the fit depends
on, not by the timestamped run directory.  It resumes from it (``resumed from <path>: epoch
E, step S``), writes its epoch checkpoints on in the interrupted run's checkpoint directory
(so the best epoch is chosen over both parts: Lightning keeps only ``best_model_path`` of a
``ModelCheckpoint`` whose directory changed), and deletes it once the stage is exported.  A
run whose seed is drawn (``seed=null``) is a new run each time: pass the logged seed.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf
from pytorch_lightning.callbacks import Callback, ModelCheckpoint
from pytorch_lightning.trainer.states import TrainerFn
from pytorch_lightning.utilities.exceptions import SIGTERMException

from lokg.artifacts import config_key
from lokg.atomic_io import atomic_file
from lokg.callbacks import stopping_nodes
from lokg.errors import Interrupted
from lokg.manifest import check_file, sidecar

__all__ = [
    "ResumeCheckpoint",
    "StopOnSigterm",
    "discard",
    "interrupted",
    "keeps_finished_fit",
    "resume_path",
    "save_checkpoint",
    "stops_fit",
]

#: trainer settings that say where and how a run reports, not what it trains
RUN_LOCAL_TRAINER_KEYS = ("default_root_dir", "enable_progress_bar")


class StopOnSigterm:
    """While active, the first SIGTERM raises :class:`~lokg.errors.Interrupted` in the main
    thread -- unless another handler has taken SIGTERM over and chains to this one, as
    Lightning's does during ``fit``/``test``: that one stops its loop at a batch boundary.

    ``received`` tells whether SIGTERM arrived (a signal that lands after Lightning's last
    check still stops the job).  Further SIGTERMs are only recorded, so saving the checkpoint
    is not cut short.  Outside the main thread (where Python delivers no signals) it does
    nothing.  The previous handler is restored on exit.
    """

    def __init__(self) -> None:
        self.received = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> StopOnSigterm:
        self._installed = threading.current_thread() is threading.main_thread()
        if self._installed:
            self._previous = signal.signal(signal.SIGTERM, self)
        return self

    def __call__(self, signum: int, frame: Any) -> None:
        first = not self.received
        self.received = True
        if first and signal.getsignal(signal.SIGTERM) is self:
            raise Interrupted("interrupted by SIGTERM before training; run the same command")

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            previous = signal.SIG_DFL if self._previous is None else self._previous
            signal.signal(signal.SIGTERM, previous)


def resume_path(cfg: DictConfig, artifact_dir: Path, stage: str, seed: int) -> Path:
    """``<dataset artifacts>/resume/<stage>-<key>.ckpt``: where an interrupted fit of this
    command leaves its checkpoint.

    ``key`` hashes what the fit depends on -- data, model, trainer, embedder and SCOS
    settings, the seed and ``ckpt_path`` -- and not where it reports (the run directory,
    loggers, the progress bar), so the same command finds it again.
    """

    def plain(node: Any) -> Any:
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node

    trainer = {k: plain(cfg.trainer[k]) for k in cfg.trainer if k not in RUN_LOCAL_TRAINER_KEYS}
    key = config_key(
        cfg.data, cfg.model, trainer, cfg.get("embedder"), cfg.get("scos"), seed,
        cfg.get("ckpt_path"), *stopping_nodes(cfg),
    )  # fmt: skip
    return Path(artifact_dir) / "resume" / f"{stage}-{key}.ckpt"


def save_checkpoint(trainer: pl.Trainer, path: Path) -> None:
    """``trainer.save_checkpoint`` to ``path`` atomically (a temporary file, then a rename):
    a run killed while saving leaves the previous checkpoint, never half of one. Its sidecar
    manifest (``<name>.ckpt.manifest.json``, :mod:`lokg.manifest`) lets the resume check it
    (:func:`check_resume`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not trainer.is_global_zero:  # trainer=ddp: rank zero writes; the others join the call
        trainer.save_checkpoint(path)
        return
    with atomic_file(path, manifest=True) as tmp:
        trainer.save_checkpoint(tmp)


def check_resume(resume: Path) -> None:
    """Refuse a resume checkpoint that fails its manifest check: one line naming it (a
    checkpoint from before manifests existed is resumed unchecked)."""
    check_file(resume, remedy="delete it: the same command then trains from the start")


def discard(resume: Path) -> None:
    """Delete the resume checkpoint of a finished run (and ``resume/`` when left empty)."""
    resume.unlink(missing_ok=True)
    sidecar(resume).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # another run's checkpoint is still there
        resume.parent.rmdir()


def interrupted(resume: Path | None) -> Interrupted:
    """The one line for a job stopped by SIGTERM, naming the checkpoint when there is one."""
    if resume is not None and resume.is_file():
        return Interrupted(
            f"interrupted by SIGTERM: checkpoint {resume}; run the same command to resume"
        )
    return Interrupted(
        "interrupted by SIGTERM before any checkpoint was written; run the same command"
    )


@contextlib.contextmanager
def stops_fit(resume: Path | None) -> Iterator[None]:
    """Around ``trainer.fit``: a stop on SIGTERM leaves as :func:`interrupted` (exit 143),
    naming the checkpoint :class:`ResumeCheckpoint` wrote (or the one the fit started from,
    when SIGTERM came before Lightning took it over)."""
    try:
        yield
    except (SIGTERMException, Interrupted):
        raise interrupted(resume) from None


@contextlib.contextmanager
def keeps_finished_fit(
    trainer: pl.Trainer, resume: Path | None, sigterm: StopOnSigterm
) -> Iterator[None]:
    """Around what follows a fit (test, export): on SIGTERM -- here, or in the fit after
    Lightning's last check -- save the finished fit to ``resume`` first, so the rerun goes
    straight to what was cut short.  Under DDP the other ranks have left: nothing is saved."""
    try:
        if sigterm.received:
            raise Interrupted("interrupted by SIGTERM")
        yield
    except (SIGTERMException, Interrupted):
        if resume is not None and trainer.world_size == 1:
            save_checkpoint(trainer, resume)
        raise interrupted(resume) from None


class ResumeCheckpoint(Callback):
    """Save the trainer's state to ``path`` when Lightning stops a fit on SIGTERM; on
    resuming from it, write epoch checkpoints on where the interrupted run wrote them.

    Args:
        path: the resume checkpoint (:func:`resume_path`).
        resuming: whether this fit starts from ``path``.
    """

    def __init__(self, path: Path, resuming: bool = False) -> None:
        self.path = Path(path)
        self.resuming = resuming

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        # only Lightning's stop at a batch boundary leaves a state worth resuming from
        if isinstance(exception, SIGTERMException) and trainer.state.fn == TrainerFn.FITTING:
            save_checkpoint(trainer, self.path)

    def on_load_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        if not self.resuming:
            return
        states = checkpoint.get("callbacks") or {}
        dirs = []
        for cb in trainer.checkpoint_callbacks:
            state = states.get(cb.state_key)
            if isinstance(cb, ModelCheckpoint) and state and state.get("dirpath"):
                cb.dirpath = state["dirpath"]  # set before ModelCheckpoint reloads its state
                dirs.append(cb.dirpath)
        if trainer.is_global_zero:
            where = f"; checkpoints continue in {dirs[0]}" if dirs else ""
            print(
                f"resumed from {self.path}: epoch {checkpoint['epoch']}, "
                f"step {checkpoint['global_step']}{where}",
                flush=True,
            )
