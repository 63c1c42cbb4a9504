"""A keyword sentence encoder (the ``embedder`` fixture) whose cosines can be computed by hand.

The tests here walk the ``family`` graph of tests/conftest.py (tests/fixtures/toy_kg.py's
``FAMILY``: alice -spouse-> bob -nationality-> france, alice -children-> carol
-nationality-> spain, bob -children-> carol)."""

from __future__ import annotations

import numpy as np
import pytest

from lokg.embed import SentenceEncoder

# Each keyword is one axis; texts with no keyword get the last axis only.
KEYWORDS = {
    "spouse": 0, "couple": 0, "wife": 0,
    "children": 1, "son": 1, "kid": 1,
    "nationality": 2, "nation": 2,
    "france": 3,
    "spain": 4,
}  # fmt: skip
DIM = 6


class KeywordEncoder(SentenceEncoder):
    """Bag of keyword axes, L2-normalised: cos(a, b) is countable by hand."""

    def _embed_batch(self, texts):
        out = np.zeros((len(texts), DIM), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().replace("?", " ").replace("_", " ").split():
                if word in KEYWORDS:
                    out[i, KEYWORDS[word]] += 1.0
            if not out[i].any():
                out[i, DIM - 1] = 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def embedder() -> KeywordEncoder:
    return KeywordEncoder(model_id="test/keywords")
