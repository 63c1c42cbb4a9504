"""Fixtures of the reliability probes: the scripted OpenAI-protocol test double.

The double itself is tests/llm/conftest.py's ``ScriptedOpenAIDouble`` (one implementation).
pytest imports conftest modules under generated names (``--import-mode=importlib``), so it
is loaded here from its file, located from this file, not from the working directory.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _load_double_module():
    path = Path(__file__).resolve().parents[1] / "llm" / "conftest.py"
    spec = importlib.util.spec_from_file_location("lokg_tests_openai_double", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_double = _load_double_module()
ScriptedOpenAIDouble = _double.ScriptedOpenAIDouble
completion_body = _double.completion_body


@pytest.fixture
def openai_double():
    """A started :class:`ScriptedOpenAIDouble` on 127.0.0.1, stopped after the test."""
    double = ScriptedOpenAIDouble().start()
    yield double
    double.stop()
