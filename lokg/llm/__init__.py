"""LLM layer: OpenAI-protocol client, response cache, local llama.cpp server, prompt,
answer parser and readers. Knows nothing of the method.

Names are imported lazily (PEP 562): ``import lokg.llm.errors`` (what the CLI needs to
report failures) does not pull in the ``openai`` client, so training starts without it.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CallLedger": "accounting",
    "Usage": "accounting",
    "cl100k_count": "accounting",
    "ResponseCache": "cache",
    "cache_key": "cache",
    "ChatClient": "client",
    "ChatResponse": "client",
    "backoff_delay": "client",
    "LLMCallFailed": "errors",
    "LLMError": "errors",
    "LLMFatalError": "errors",
    "LocalServerError": "errors",
    "MissingAPIKeyError": "errors",
    "build_reader": "factory",
    "answer_messages": "prompt",
    "parse_answers": "prompt",
    "render_answer_prompt": "prompt",
    "EXTRACTIVE_LABEL": "reader",
    "ExtractiveReader": "reader",
    "LLMReader": "reader",
    "ReaderOutput": "reader",
    "LocalChatClient": "server",
    "LocalLlamaServer": "server",
    "default_model_path": "server",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lokg.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"lokg.llm.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
