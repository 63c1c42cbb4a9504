"""The operating system says no (issue 43, section 3): a full disk, a read-only LOKG_ROOT, an
I/O error reading the KG and a permission error are one ``error:`` line naming the path and
what to do, exit 2, and nothing is left half-written.

The refusals are raised by test doubles monkeypatched over the functions lokg calls
(``tempfile.mkdtemp``, ``os.replace``, a file's ``read``, ``shutil.disk_usage``): as root, in a
container, a real read-only or full file system cannot be made.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from lokg import atomic_io
from lokg.atomic_io import atomic_directory, atomic_file
from lokg.cli import EXIT_INPUT_ERROR, describe, input_error, report
from lokg.kg import io as kg_io
from lokg.kg.io import read_triples


def _reported(exc: BaseException, capsys) -> str:
    """What the entry points print for ``exc``: its one line (exit 2 checked)."""
    with pytest.raises(SystemExit) as stop:
        report(exc)
    assert stop.value.code == EXIT_INPUT_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    return err.strip()


def test_disk_full_while_writing_names_the_file_and_leaves_nothing(tmp_path, capsys):
    target = tmp_path / "artifacts" / "gat-0123456789"
    with pytest.raises(OSError) as caught, atomic_directory(target) as tmp:
        np.save(tmp / "edge_log_alpha.npy", np.zeros(3))
        raise OSError(errno.ENOSPC, "No space left on device")  # a write() fails: no file name
    assert caught.value.filename == str(target)
    line = _reported(caught.value, capsys)
    assert line.startswith(f"error: {target}: no space left on device; free space there")
    assert "rerun the same command" in line
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == []  # nothing half-written


def test_torch_reporting_a_full_disk_as_runtime_error_is_named_enospc(tmp_path, monkeypatch):
    class UsageDouble:  # test double: shutil.disk_usage of a full disk
        free = 0

    monkeypatch.setattr(atomic_io.shutil, "disk_usage", lambda path: UsageDouble())
    target = tmp_path / "walk_model.pt"
    with pytest.raises(OSError) as caught, atomic_file(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("[enforce fail at inline_container.cc] file write failed")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    assert not list(tmp_path.iterdir())
    # an input mistake raised inside a write is never taken for a full disk
    with pytest.raises(ValueError, match="bad value"), atomic_file(target):
        raise ValueError("bad value")


def test_a_read_only_root_is_one_line(tmp_path, monkeypatch, capsys):
    def mkdtemp_double(prefix, dir):  # test double: mkdtemp on a read-only file system
        raise OSError(errno.EROFS, "Read-only file system", os.path.join(dir, prefix + "x"))

    monkeypatch.setattr(atomic_io.tempfile, "mkdtemp", mkdtemp_double)
    with pytest.raises(OSError) as caught, atomic_directory(tmp_path / "data" / "custom-0"):
        pass
    line = _reported(caught.value, capsys)
    assert line == (
        f"error: {tmp_path / 'data'}: read-only file system; set LOKG_ROOT (or paths.*) to a "
        "writable directory"
    )


def test_a_replace_refused_for_permission_names_the_target(tmp_path, monkeypatch, capsys):
    def replace_double(src, dst):  # test double: os.replace without write permission
        raise PermissionError(errno.EACCES, "Permission denied")

    target = tmp_path / "gat.latest"
    monkeypatch.setattr(atomic_io.os, "replace", replace_double)
    with pytest.raises(OSError) as caught, atomic_file(target) as tmp:
        tmp.write_text("gat-0\n")
    assert not list(tmp_path.iterdir())
    line = _reported(caught.value, capsys)
    assert line == (
        f"error: {target}: permission denied; check its permissions, or set LOKG_ROOT (or "
        "paths.*) to a directory you can write"
    )


def test_an_io_error_reading_the_kg_names_the_file(tmp_path, monkeypatch, capsys):
    kg = tmp_path / "kg.tsv"
    kg.write_text("a\tr\tb\nb\tr\tc\n", encoding="utf-8")

    class FailingFileDouble:  # test double: a file whose second read fails with EIO
        def __init__(self, path, mode="r", **kw):
            self._lines = iter([b"a\tr\tb\n"])

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __iter__(self):
            return self

        def __next__(self):
            line = next(self._lines, None)
            if line is None:
                raise OSError(errno.EIO, "Input/output error")
            return line

    monkeypatch.setattr(kg_io, "open", FailingFileDouble, raising=False)
    with pytest.raises(OSError) as caught:
        read_triples(kg)
    assert caught.value.filename == str(kg)
    line = _reported(caught.value, capsys)
    assert line.startswith(f"error: {kg}: input/output error; the device reported an I/O error")


def test_disk_full_while_copying_into_place_names_the_destination_and_removes_it(tmp_path, capsys):
    src, dst = tmp_path / "tmpabc", tmp_path / "checkpoints" / "epoch_000.ckpt"
    src.write_bytes(b"whole")
    dst.parent.mkdir()
    dst.write_bytes(b"wh")  # what the copy had written when the disk filled
    # Lightning's checkpoint save: shutil.move from a temporary file, refused part-way
    err = OSError(errno.ENOSPC, "No space left on device", str(src), None, str(dst))
    line = _reported(err, capsys)
    assert line.startswith(f"error: {dst}: no space left on device; free space there")
    assert not dst.exists() and src.read_bytes() == b"whole"


def test_other_os_errors_stay_bugs():
    assert input_error(OSError(errno.EBADF, "Bad file descriptor")) is None
    err = OSError(errno.ENOSPC, "No space left on device")  # no file name: still one line
    assert describe(input_error(err)).startswith("no space left on device; free space there")
