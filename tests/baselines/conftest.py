"""Test doubles and a hand-written graph for the baselines' unit tests.

``BagOfWordsEncoderDouble`` stands in for the sentence encoder: a text's vector is the
L2-normalised indicator of its lower-cased words (punctuation stripped) over a vocabulary
grown as texts arrive, so cosine similarities are word overlaps computable by hand
(|a ∩ b| / sqrt(|a| |b|)). ``ReaderDouble`` stands in for an LLM reader: it answers a fixed
list and reports one call with the prompt's cl100k tokens. Both are named as doubles; the
end-to-end tests use the real encoder and the real local LLM.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from lokg.kg.graph import KnowledgeGraph
from lokg.llm import ReaderOutput, answer_messages
from lokg.tokens import count_tokens

DIM = 256


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class BagOfWordsEncoderDouble:
    """Sentence-encoder test double (see the module docstring); counts the texts it embeds."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.encoded: list[str] = []

    def encode(self, texts, kind="passage", desc=None) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            self.encoded.append(text)
            for w in words(text):
                out[i, self.vocab.setdefault(w, len(self.vocab))] = 1.0
            out[i] /= max(np.linalg.norm(out[i]), 1e-12)
        return out


class ReaderDouble:
    """LLM-reader test double: answers ``answers`` and reports one call per question."""

    uses_llm = True
    label = "reader-double"
    max_concurrency = 1

    def __init__(self, answers=("bob",), template: str = "answer") -> None:
        self.answers = list(answers)
        self.template = template
        self.seen: list[tuple[str, str]] = []

    def answer(self, question, evidence, candidates=()):
        self.seen.append((question, evidence))
        messages = answer_messages(question, evidence, self.template)
        tokens = count_tokens(messages[0]["content"])
        acc = {"calls": 1, "cached_calls": 0, "attempts": 1, "prompt_tokens": tokens,
               "completion_tokens": 1, "prompt_tokens_cl100k": tokens,
               "completion_tokens_cl100k": 1, "llm_latency_s": 0.0}  # fmt: skip
        return ReaderOutput(self.answers, "\n".join(self.answers), messages, self.label, acc)

    def close(self) -> None:
        pass


@pytest.fixture
def family() -> KnowledgeGraph:
    """alice's out-edges (spouse, birthplace, profession), a second hop and an in-edge."""
    return KnowledgeGraph.from_labeled_triples(
        [
            ("alice", "spouse", "bob"),
            ("alice", "birthplace", "paris"),
            ("alice", "profession", "painter"),
            ("bob", "nationality", "france"),
            ("carol", "sister", "alice"),
        ]
    )


@pytest.fixture
def bag_embedder() -> BagOfWordsEncoderDouble:
    return BagOfWordsEncoderDouble()


@pytest.fixture
def reader_double() -> ReaderDouble:
    return ReaderDouble()


def _load_double_module():
    """tests/llm/conftest.py's ScriptedOpenAIDouble, loaded by path (as tests/reliability
    does: pytest's importlib mode makes conftest modules unimportable by name)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "llm" / "conftest.py"
    spec = importlib.util.spec_from_file_location("lokg_tests_openai_double_b", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ScriptedOpenAIDouble = _load_double_module().ScriptedOpenAIDouble


@pytest.fixture
def openai_double():
    """A started scripted OpenAI-protocol test double on 127.0.0.1 (usage: 11 prompt and 3
    completion tokens per call), stopped after the test."""
    double = ScriptedOpenAIDouble().start()
    yield double
    double.stop()
