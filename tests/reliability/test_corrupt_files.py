"""Corrupt or truncated files (issue 43, section 2): every artifact carries a manifest (size and
blake2b, lokg/manifest.py) checked on load. An artifact that fails names itself and the
``train.py`` command that rebuilds it, in one line; a cache that fails is rebuilt, with one
WARNING counting it. Then the sweep of ``python -m lokg.tools.artifact_fuzz``: every file of a
trained artifact directory truncated, emptied and garbled, one at a time: no traceback, nothing
accepted unchecked.

The trained directory is tiny: tests/fixtures/toy_kg.py's ``COUPLES`` (eight triples), two
epochs each of TransE + SCOS, the walk model and the GAT, and one evaluation with
``retriever=taimr`` (which leaves a retriever path cache).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from lokg.artifacts import latest, load_graph_artifacts
from lokg.cli import EXIT_INPUT_ERROR, describe, input_error, report
from lokg.config import compose_config
from lokg.errors import CorruptArtifact
from lokg.manifest import HASH_LIMIT, MANIFEST, check_directory, check_file, sidecar
from lokg.tools import artifact_fuzz
from lokg.train import run as train

from ..fixtures import toy_kg

SPLITS = {
    "train": [("t1", "alice", "france"), ("t2", "dave", "spain"), ("t3", "frank", "italy")],
    "val": [("v1", "dave", "spain"), ("v2", "frank", "italy")],
    "test": [("s1", "alice", "france")],
}
TINY = [
    "trainer.max_epochs=2", "trainer.enable_progress_bar=false", "logger=csv",
    "callbacks.early_stopping=null",
]  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, list[str]]:
    """``(LOKG_ROOT, data overrides)`` of a tiny trained project (the module doc)."""
    from lokg.evaluate import run as evaluate

    root = tmp_path_factory.mktemp("trained")
    (root / "src").mkdir()
    data = toy_kg.custom_data_overrides(
        *toy_kg.write_custom_dataset(root / "src", toy_kg.COUPLES, toy_kg.spouse_questions(SPLITS))
    )
    train(compose_config("train", ["experiment=train_transe", *data, *TINY], root))
    walk = ["model.min_steps=0", "data.batch_size=1", "model.question_encoder=frozen"]
    train(compose_config("train", ["experiment=train_walk", *data, *TINY, *walk], root))
    train(compose_config("train", ["experiment=train_gat", *data, *TINY], root))
    evaluate(
        compose_config("evaluate", [*data, "llm=extractive", "split=val", "retriever=taimr"], root)
    )
    return root, data


@pytest.fixture
def project(trained, tmp_path) -> tuple[Path, list[str]]:
    """A copy of the trained project to damage (the data source files stay shared)."""
    root, data = trained
    copy = tmp_path / "copy"
    for name in ("artifacts", "cache"):
        shutil.copytree(root / name, copy / name)
    return copy, data


def _one(root: Path, pattern: str) -> Path:
    (found,) = sorted((root / "artifacts").glob(pattern))
    return found


def _datamodule(root: Path, data: list[str]):
    import hydra

    cfg = compose_config("evaluate", data, root)
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    return cfg, dm


def _walk(root: Path, data: list[str]) -> None:
    from lokg.taimr.walk.artifact import load_walk_network

    cfg, dm = _datamodule(root, data)
    art = load_graph_artifacts(cfg, dm, need_gat=False, need_walk=True)
    load_walk_network.cache_clear()
    load_walk_network(art.walk_dir.resolve())


def _scos(root: Path, data: list[str]) -> None:
    cfg, dm = _datamodule(root, data)
    load_graph_artifacts(cfg, dm, need_gat=False)


def _gat(root: Path, data: list[str]) -> None:
    cfg, dm = _datamodule(root, data)
    load_graph_artifacts(cfg, dm, need_gat=True)


def _pointer(kind: str):
    return lambda root, data: latest(_one(root, "data/custom-*"), kind)


def _pickled(path: Path) -> None:
    """``path`` replaced by a pickled object array (what ``np.load`` refuses by default)."""
    path.unlink()
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)


def _bad_utf8(path: Path) -> None:
    path.write_bytes(b"\xff\xfe" + path.read_bytes()[2:])


def _truncate(path: Path) -> None:
    artifact_fuzz.damage(path, "truncate")


def _empty(path: Path) -> None:
    artifact_fuzz.damage(path, "empty")


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00garbage\x00" * 3)


# (case id, file glob under artifacts/, damage, loader, the rebuild command the line names)
ARTIFACT_CASES = [
    ("truncated walk_model.pt", "data/*/qgat-*/walk_model.pt", _truncate, _walk, "train_walk"),
    ("empty walk_model.pt", "data/*/qgat-*/walk_model.pt", _empty, _walk, "train_walk"),
    ("bad UTF-8 in qgat.json", "data/*/qgat-*/qgat.json", _bad_utf8, _walk, "train_walk"),
    ("truncated relation_table.npy", "data/*/qgat-*/relation_table.npy", _truncate, _walk,
     "train_walk"),
    ("bad UTF-8 in transe.json", "kg/*/scos-*/transe.json", _bad_utf8, _scos, "train_transe"),
    ("short relation_embeddings_merged.npy", "kg/*/scos-*/relation_embeddings_merged.npy",
     _truncate, _scos, "train_transe"),
    ("garbage scos-*/config.yaml", "kg/*/scos-*/config.yaml", _garbage, _scos, "train_transe"),
    ("short triples.npy of SCOS's graph", "kg/*/scos-*/scos/kg/triples.npy", _truncate, _scos,
     "train_transe"),
    ("broken vocab.json of SCOS's graph", "kg/*/scos-*/scos/kg/vocab.json", _truncate, _scos,
     "train_transe"),
    ("pickled out_ptr.npy of SCOS's graph", "kg/*/scos-*/scos/kg/out_ptr.npy", _pickled, _scos,
     "train_transe"),
    ("truncated edge_log_alpha.npy", "data/*/gat-*/edge_log_alpha.npy", _truncate, _gat,
     "train_gat"),
    ("garbage qgat.latest", "data/*/qgat.latest", _garbage, _pointer("qgat"), "train_walk"),
    ("empty gat.latest", "data/*/gat.latest", _empty, _pointer("gat"), "train_gat"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("glob", "spoil", "load", "command"),
    [c[1:] for c in ARTIFACT_CASES],
    ids=[c[0] for c in ARTIFACT_CASES],
)
def test_a_damaged_artifact_is_one_line_naming_it_and_its_rebuild_command(
    project, glob, spoil, load, command
):
    root, data = project
    target = _one(root, glob)
    spoil(target)
    with pytest.raises(Exception) as caught:
        load(root, data)
    err = input_error(caught.value)
    assert err is not None, f"a traceback, not a one-line error: {caught.value!r}"
    line = describe(err)
    assert "\n" not in line and str(target) in line
    assert f"experiment={command}" in line
    with pytest.raises(SystemExit) as stop:
        report(caught.value)
    assert stop.value.code == EXIT_INPUT_ERROR


# (case id, file glob under the project, damage) of prepared data, which is rebuilt
PREPARED_CASES = [
    ("garbage split.json", "artifacts/data/*/split.json", _garbage),
    ("short triples.npy", "artifacts/data/*/kg/triples.npy", _truncate),
    ("broken vocab.json", "artifacts/data/*/kg/vocab.json", _bad_utf8),
    ("pickled out_ptr.npy", "artifacts/data/*/kg/out_ptr.npy", _pickled),
    ("empty questions file", "artifacts/data/*/questions_train.jsonl", _empty),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("glob", "spoil"), [c[1:] for c in PREPARED_CASES], ids=[c[0] for c in PREPARED_CASES]
)
def test_damaged_prepared_data_is_prepared_again_with_one_warning(project, caplog, glob, spoil):
    root, data = project
    (target,) = sorted(root.glob(glob))
    before = target.read_bytes()
    spoil(target)
    with caplog.at_level(logging.WARNING, logger="lokg.data.datamodule"):
        _, dm = _datamodule(root, data)
    (line,) = [r.getMessage() for r in caplog.records if r.name == "lokg.data.datamodule"]
    assert str(target) in line and "1 prepared dataset rebuilt from the source" in line
    assert target.read_bytes() == before and dm.kg.num_triples == len(toy_kg.COUPLES)
    assert check_directory(dm.artifact_dir) and check_directory(dm.artifact_dir / "kg")
    assert (dm.artifact_dir / "qgat.latest").is_file()  # trained artifacts beside it are kept
    assert not [p for p in dm.artifact_dir.parent.iterdir() if p.name.startswith(".")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "spoil", [_truncate, _empty, _garbage], ids=["truncated", "empty", "garbage"]
)
def test_a_damaged_embedding_cache_shard_is_discarded_and_counted(project, caplog, spoil):
    from lokg.embed import SentenceEncoder

    root, _ = project
    shards = sorted((root / "cache").rglob("shard-*.npz"))
    spoil(shards[0])
    with caplog.at_level(logging.WARNING, logger="lokg.embed"):
        encoder = SentenceEncoder(cache_dir=root / "cache")
    (line,) = [r.getMessage() for r in caplog.records if r.name == "lokg.embed"]
    assert line.startswith("1 sentence-embedding cache shard(s)") and shards[0].name in line
    assert not shards[0].exists() and not sidecar(shards[0]).exists()
    assert encoder._memory  # the other shards loaded


@pytest.mark.slow
def test_a_truncated_retriever_cache_is_rebuilt_and_counted(project, caplog):
    from lokg.evaluate import run as evaluate

    root, data = project
    (cache,) = sorted((root / "artifacts").glob("data/*/retriever_cache/*.npz"))
    _truncate(cache)
    overrides = [*data, "llm=extractive", "split=val", "retriever=taimr"]
    with caplog.at_level(logging.WARNING, logger="lokg.taimr.retriever"):
        evaluate(compose_config("evaluate", overrides, root))
    (line,) = [r.getMessage() for r in caplog.records if r.name == "lokg.taimr.retriever"]
    assert str(cache) in line and "1 retriever cache rebuilt" in line
    assert check_file(cache)  # saved again, whole


@pytest.mark.slow
def test_a_damaged_scos_artifact_is_trained_again_not_reused(project, caplog):
    root, data = project
    target = _one(root, "kg/*/scos-*/scos/mapping.npy")
    _truncate(target)
    with caplog.at_level(logging.WARNING, logger="lokg.train_stages"):
        out = train(compose_config("train", ["experiment=train_transe", *data, *TINY], root))
    assert any(str(target) in r.getMessage() and "again" in r.getMessage() for r in caplog.records)
    assert check_directory(out["scos_dir"] / "scos")  # the new one is whole


def test_a_truncated_resume_checkpoint_is_one_line_naming_it(tmp_path):
    from lokg import preemption

    class TrainerDouble:  # test double: what save_checkpoint calls on a trainer
        is_global_zero = True

        def save_checkpoint(self, path):
            Path(path).write_bytes(b"checkpoint " * 100)

    path = tmp_path / "resume" / "walk-0123456789.ckpt"
    preemption.save_checkpoint(TrainerDouble(), path)
    preemption.check_resume(path)  # whole: accepted
    _truncate(path)
    with pytest.raises(CorruptArtifact) as caught:
        preemption.check_resume(path)
    assert describe(input_error(caught.value)) == (
        f"{path}: truncated: 550 bytes, 1,100 when written; delete it: the same command then "
        "trains from the start"
    )
    preemption.discard(path)
    assert not path.exists() and not sidecar(path).exists()


def test_a_big_array_is_checked_by_size_and_header_and_hashed_with_verify(tmp_path, monkeypatch):
    from lokg import manifest
    from lokg.atomic_io import atomic_directory

    with atomic_directory(tmp_path / "kg") as tmp:
        np.save(tmp / "triples.npy", np.arange(300, dtype=np.int64).reshape(100, 3))
    entry = json.loads((tmp_path / "kg" / MANIFEST).read_text())["files"]["triples.npy"]
    assert entry["npy"] == {"shape": [100, 3], "dtype": "<i8", "fortran": False}
    monkeypatch.setattr(manifest, "HASH_LIMIT", 64)  # "big": over the limit
    path = tmp_path / "kg" / "triples.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF  # the body changed, the header and size not
    path.write_bytes(bytes(raw))
    assert check_directory(tmp_path / "kg")  # size and header only: accepted
    manifest.set_full_check(True)
    try:
        with pytest.raises(CorruptArtifact, match="checksum"):
            check_directory(tmp_path / "kg")
    finally:
        manifest.set_full_check(False)
    raw[10:20] = b"x" * 10  # the header garbled
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptArtifact, match=r"\.npy header"):
        check_directory(tmp_path / "kg")
    assert HASH_LIMIT == 64 * 2**20


def test_verify_true_hashes_every_file_for_the_job(tmp_path):
    from lokg import manifest
    from lokg.cli import run_job

    seen = []
    for overrides in (["verify=true"], []):
        cfg = compose_config("evaluate", overrides, tmp_path)
        run_job(lambda c: seen.append(manifest._state["full"]), cfg)
    assert seen == [True, False]


def test_a_directory_without_a_manifest_is_loaded_unchecked(tmp_path):
    d = tmp_path / "old"
    d.mkdir()
    (d / "a.json").write_text("{}")
    assert check_directory(d) is False


@pytest.mark.slow
def test_the_sweep_finds_no_traceback_and_nothing_accepted_unchecked(trained, capsys):
    root, _ = trained
    assert artifact_fuzz.main([str(root)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("artifact_fuzz cases=") and " tracebacks=0 silent=0 " in last
    assert "unnamed=0" in last
    n = int(last.split()[1].split("=")[1])
    files = [p for p in (root / "artifacts").rglob("*") if p.is_file()]
    files += list((root / "cache").rglob("shard-*"))
    assert n == 3 * len(files) > 100
