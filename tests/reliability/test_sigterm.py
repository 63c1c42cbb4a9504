"""SIGTERM, as a cluster sends it before preempting a job: ``train.py`` stops within seconds
with a checkpoint, exits 143 with one line, and the same command resumes from it.

The real case runs ``train.py experiment=train_walk`` as a subprocess on a hand-written KG of
eight triples (tests/fixtures/toy_kg.py's ``COUPLES``; a few tenths of a second per epoch) and
sends SIGTERM once the first epoch's checkpoint is on disk; the guard that covers the job
outside the fit is checked in process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lokg import preemption, train_stages
from lokg.atomic_io import atomic_directory
from lokg.config import compose_config
from lokg.errors import Interrupted
from lokg.train import run as train

from ..fixtures import toy_kg

ROOT = Path(__file__).resolve().parents[2]
SPLITS = {
    "train": [("t1", "alice", "france"), ("t2", "dave", "spain"), ("t3", "frank", "italy")],
    "val": [("v1", "dave", "spain"), ("v2", "frank", "italy")],
    "test": [("s1", "alice", "france")],
}
STOPPED = re.compile(
    r"^interrupted by SIGTERM: checkpoint (\S+\.ckpt); run the same command to resume$"
)
RESUMED = re.compile(r"^resumed from (\S+\.ckpt): epoch (\d+), step (\d+)", re.MULTILINE)


def _tiny_walk_training(tmp: Path, epochs: int) -> list[str]:
    """``experiment=train_walk`` overrides for a tiny custom dataset written under ``tmp``
    (a free relation table and cached question vectors: no TransE, no encoder fine-tuning)."""
    overrides = toy_kg.custom_data_overrides(
        *toy_kg.write_custom_dataset(tmp, toy_kg.COUPLES, toy_kg.spouse_questions(SPLITS))
    )
    return [
        "experiment=train_walk", *overrides, "data.batch_size=1", "scos=off",
        "model.relation_source=learned", "model.question_encoder=frozen", "model.min_steps=0",
        f"trainer.max_epochs={epochs}", "trainer.enable_progress_bar=false", "logger=csv",
        "callbacks.early_stopping=null",  # trains to max_epochs, the resumed run included
    ]  # fmt: skip


@pytest.mark.slow
def test_sigterm_stops_a_training_with_a_checkpoint_that_the_same_command_resumes(tmp_path):
    args = [sys.executable, str(ROOT / "train.py"), *_tiny_walk_training(tmp_path, epochs=40)]
    env = {**os.environ, "LOKG_ROOT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    env.pop("HYDRA_FULL_ERROR", None)
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 120
        # inside the fit: the first epoch's checkpoint is written
        while not list(tmp_path.glob("logs/train/runs/*/checkpoints/last.ckpt")):
            assert proc.poll() is None, f"train.py ended early:\n{proc.communicate()[1][-3000:]}"
            assert time.monotonic() < deadline, "no epoch finished within 120 s"
            time.sleep(0.05)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
        stopped_after = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert stopped_after < 10
    line = err.strip().splitlines()[-1]
    match = STOPPED.match(line)
    assert match, line
    checkpoint = Path(match.group(1))
    assert (
        checkpoint.is_file() and checkpoint.parent.parent.parent == tmp_path / "artifacts" / "data"
    )
    assert "walk model artifacts" not in out + err
    assert not list(tmp_path.glob("artifacts/data/*/qgat-*"))

    # the same command, later: it resumes there and completes as a normal run does
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    resumed = RESUMED.search(done.stdout)
    assert resumed, done.stdout[-3000:]
    assert Path(resumed.group(1)) == checkpoint
    assert int(resumed.group(2)) > 0 and int(resumed.group(3)) > 0
    assert "walk model: exporting the best checkpoint" in done.stdout
    assert "last epoch 39" in done.stdout  # it trained on to the configured epochs
    (walk_dir,) = tmp_path.glob("artifacts/data/*/qgat-*")
    assert (walk_dir / "walk_model.pt").is_file() and (walk_dir / "qgat.json").is_file()
    assert not checkpoint.exists()  # finished: the next run of the command starts afresh


def test_sigterm_outside_the_fit_stops_at_once_and_leaves_nothing_half_written(tmp_path):
    target = tmp_path / "artifact"
    before = signal.getsignal(signal.SIGTERM)
    with (
        pytest.raises(Interrupted) as stop,
        preemption.StopOnSigterm(),
        atomic_directory(target) as tmp,
    ):
        (tmp / "half.npy").write_bytes(b"...")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # not reached: the handler raises in the main thread
    assert stop.value.code == 143 and "interrupted by SIGTERM" in str(stop.value)
    assert not target.exists() and list(tmp_path.iterdir()) == []  # the temp dir is gone
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_sigterm_is_only_recorded_when_lightning_owns_it_or_a_stop_is_under_way():
    with preemption.StopOnSigterm() as guard:

        def lightning(signum, frame):  # Lightning's handler chains to the one it found
            guard(signum, frame)

        signal.signal(signal.SIGTERM, lightning)
        os.kill(os.getpid(), signal.SIGTERM)  # the loop stops at its next batch boundary
        assert guard.received
        signal.signal(signal.SIGTERM, guard)  # Lightning's teardown restores it
        os.kill(os.getpid(), signal.SIGTERM)  # a stop is already under way: recorded only
    assert guard.received


def _preempted_at_export(monkeypatch, stage: str, overrides: list[str], root: Path) -> Path:
    """Run the training with SIGTERM sent as ``train_stages.<stage>`` (its export) begins;
    check it stops with a kept checkpoint, restore the stage and return the checkpoint."""
    real_export = getattr(train_stages, stage)

    def preempted_export(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        return real_export(*args, **kwargs)

    monkeypatch.setattr(train_stages, stage, preempted_export)
    with pytest.raises(Interrupted) as stop:
        train(compose_config("train", overrides, root))
    match = STOPPED.match(str(stop.value))
    assert match, str(stop.value)
    assert Path(match.group(1)).is_file()
    monkeypatch.setattr(train_stages, stage, real_export)
    return Path(match.group(1))


@pytest.mark.slow
def test_sigterm_after_the_fit_keeps_it_and_the_rerun_only_exports(tmp_path, monkeypatch, capsys):
    overrides = _tiny_walk_training(tmp_path, epochs=2)
    checkpoint = _preempted_at_export(monkeypatch, "run_walk_stage", overrides, tmp_path)
    assert not list(tmp_path.glob("artifacts/data/*/qgat-*"))
    capsys.readouterr()
    out = train(compose_config("train", overrides, tmp_path))
    # restored at the end of its last epoch (3 questions, batch 1): nothing trained again
    assert f"resumed from {checkpoint}: epoch 2, step 6" in capsys.readouterr().out
    assert out["trainer"].global_step == 6
    assert (out["walk_dir"] / "walk_model.pt").is_file()
    assert not checkpoint.exists()


@pytest.mark.slow
def test_a_preempted_transe_training_resumes_from_its_own_checkpoint(tmp_path, monkeypatch, capsys):
    """TransE's checkpoint carries its optimizer partial in the hyper-parameters, which torch's
    ``weights_only`` loader refuses: the rerun must still resume from it (it once failed with
    an UnpicklingError on the CWQ stand-in)."""
    overrides = [  # PQ-2H's KB (the toy KGs hold too few triples for TransE's val split)
        "experiment=train_transe", "debug=limit", "trainer.max_epochs=2",
        "trainer.enable_progress_bar=false", "logger=csv",
    ]  # fmt: skip
    checkpoint = _preempted_at_export(monkeypatch, "run_scos_stage", overrides, tmp_path)
    capsys.readouterr()
    out = train(compose_config("train", overrides, tmp_path))
    assert f"resumed from {checkpoint}: epoch 2" in capsys.readouterr().out
    assert (out["scos_dir"] / "scos" / "mapping.npy").is_file()
    assert not checkpoint.exists()
