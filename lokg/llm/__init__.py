"""LLM layer: OpenAI-protocol client, response cache, local llama.cpp server, prompt,
answer parser and readers. Knows nothing of the method."""

from lokg.llm.accounting import CallLedger, Usage, cl100k_count
from lokg.llm.cache import ResponseCache, cache_key
from lokg.llm.client import ChatClient, ChatResponse, backoff_delay
from lokg.llm.errors import (
    LLMCallFailed,
    LLMError,
    LLMFatalError,
    LocalServerError,
    MissingAPIKeyError,
)
from lokg.llm.factory import build_reader
from lokg.llm.prompt import answer_messages, parse_answers, render_answer_prompt
from lokg.llm.reader import EXTRACTIVE_LABEL, ExtractiveReader, LLMReader, ReaderOutput
from lokg.llm.server import LocalChatClient, LocalLlamaServer, default_model_path

__all__ = [
    "EXTRACTIVE_LABEL",
    "CallLedger",
    "ChatClient",
    "ChatResponse",
    "ExtractiveReader",
    "LLMCallFailed",
    "LLMError",
    "LLMFatalError",
    "LLMReader",
    "LocalChatClient",
    "LocalLlamaServer",
    "LocalServerError",
    "MissingAPIKeyError",
    "ReaderOutput",
    "ResponseCache",
    "Usage",
    "answer_messages",
    "backoff_delay",
    "build_reader",
    "cache_key",
    "cl100k_count",
    "default_model_path",
    "parse_answers",
    "render_answer_prompt",
]
