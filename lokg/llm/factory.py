"""Build a reader from its ``llm`` config group, surfacing LLM errors as one line."""

from __future__ import annotations

from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate

from lokg.llm.client import check_base_url
from lokg.llm.errors import LLMError
from lokg.llm.reader import ExtractiveReader, LLMReader


def build_reader(cfg: Any) -> LLMReader | ExtractiveReader:
    """Instantiate ``cfg`` (a ``configs/llm/*.yaml`` node).

    Hydra wraps constructor errors in a multi-line ``InstantiationException``; an
    :class:`LLMError` underneath (a missing API key, a missing local model) is re-raised
    as itself so the user sees its one-line message before any work starts.  The client's
    ``base_url`` is checked first (:func:`~lokg.llm.client.check_base_url`), so a value that
    is not an http(s) URL is refused in one line naming ``llm.client.base_url`` instead of
    failing every question.
    """
    client = cfg.get("client") if hasattr(cfg, "get") else None
    if hasattr(client, "get") and client.get("base_url") is not None:
        check_base_url(client.get("base_url"), "llm.client.base_url")
    try:
        reader = instantiate(cfg)
    except InstantiationException as exc:
        cause = exc.__cause__
        while cause is not None and not isinstance(cause, LLMError):
            cause = cause.__cause__
        if isinstance(cause, LLMError):
            raise cause from None
        raise
    if not isinstance(reader, LLMReader | ExtractiveReader):
        raise TypeError(
            f"llm config built a {type(reader).__name__}; expected LLMReader or ExtractiveReader"
        )
    return reader
