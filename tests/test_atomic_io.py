"""lokg.atomic_io: a write that fails part-way leaves the old file (or directory) intact and
no temporary sibling behind."""

import numpy as np
import pytest

from lokg.atomic_io import atomic_directory, atomic_file, write_atomic


def test_write_atomic_writes_text_and_bytes(tmp_path):
    target = tmp_path / "a.json"
    assert write_atomic(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    write_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_failure_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError, match="disk full"), atomic_file(target) as tmp:
        tmp.write_text("half of the n", encoding="utf-8")
        raise RuntimeError("disk full")
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_failure_before_anything_is_written_is_the_writers_error(tmp_path):
    with pytest.raises(KeyboardInterrupt), atomic_file(tmp_path / "a.txt"):
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_temporary_name_is_a_hidden_sibling_with_the_given_suffix(tmp_path):
    target = tmp_path / "cache.npz"
    with atomic_file(target, suffix=".npz") as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".cache.npz.")
        assert tmp.suffix == ".npz" and not tmp.exists()
        np.savez(tmp, x=np.arange(3))  # np.savez keeps a name ending in .npz
    with np.load(target) as data:
        assert data["x"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.npz"]


def test_a_missing_directory_is_the_same_error_as_a_plain_write(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "no" / "a.txt", "x")
    assert list(tmp_path.iterdir()) == []


def test_atomic_directory_failure_keeps_the_old_directory(tmp_path):
    target = tmp_path / "art"
    with atomic_directory(target) as tmp:
        (tmp / "f").write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "f").write_text("new", encoding="utf-8")
        raise RuntimeError
    assert (target / "f").read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["art"]
