"""Fixtures of the SCOS tests: ``bench``, ``bench/bench_scos.py`` imported as a module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def bench():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "bench_scos.py"
    sys.path.insert(0, str(path.parent))  # the bench imports its sibling _data.py
    spec = importlib.util.spec_from_file_location("lokg_bench_scos", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module
