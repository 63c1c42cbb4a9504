"""Readers: one LLM call per question, or the extractive (no-LLM) reader."""

from __future__ import annotations

import pytest

from lokg.llm import EXTRACTIVE_LABEL, ChatClient, ExtractiveReader, LLMCallFailed, LLMReader
from lokg.llm.prompt import render_answer_prompt_without_evidence
from lokg.tokens import count_tokens


def test_llm_reader_makes_one_call_and_parses_ranked_answers(scripted_server):
    scripted_server.script = [("ok", "1. united_kingdom\n2. hanover")]
    client = ChatClient("double-model", scripted_server.base_url, name="double")
    out = LLMReader(client).answer("nationality?", "(ernest, nationality, united_kingdom)")
    assert out.answers == ["united_kingdom", "hanover"]
    assert out.reader == "llm:double"
    assert out.accounting["calls"] == 1
    assert out.accounting["prompt_tokens"] == 11 and out.accounting["completion_tokens"] == 3
    assert scripted_server.requests[0]["messages"] == out.messages
    assert "(ernest, nationality, united_kingdom)" in out.messages[0]["content"]


def test_llm_reader_propagates_call_failure(scripted_server):
    scripted_server.script = [("status", 503)]
    client = ChatClient("m", scripted_server.base_url, max_attempts=2, backoff_base_s=0.0)
    with pytest.raises(LLMCallFailed):
        LLMReader(client).answer("q?", "e")


def test_extractive_reader_returns_ranked_candidates_without_calls():
    reader = ExtractiveReader(max_answers=2)
    evidence = "x | r | bob\nx | s | ann\nx | t | cy"
    out = reader.answer("q?", evidence, candidates=["ann", "bob", "ann", "cy"])
    assert out.answers == ["ann", "bob"]
    assert out.reader == EXTRACTIVE_LABEL and "no LLM" in out.reader
    assert out.accounting["calls"] == 0 and out.messages == []
    assert not reader.uses_llm


def test_extractive_reader_answers_only_what_the_evidence_names():
    reader = ExtractiveReader()
    evidence = "Frederica | spouse | Ernest_Augustus\nErnest Augustus | nationality | UK"
    # the retriever's order among the named ones; "ukraine" is not "uk", "germany" is absent
    out = reader.answer("q?", evidence, candidates=["germany", "ukraine", "uk", "ernest augustus"])
    assert out.answers == ["uk", "ernest augustus"]
    assert reader.answer("q?", "", candidates=["uk"]).answers == []


@pytest.mark.parametrize("cls", [ExtractiveReader])
def test_max_answers_must_be_positive(cls):
    with pytest.raises(ValueError, match="max_answers"):
        cls(max_answers=0)


def test_reader_counts_its_prompt_as_the_client_does(scripted_server):
    # prompt_tokens is the whole prompt (template + question + evidence) as sent; it equals
    # the client's prompt_tokens_cl100k of the call, which is what a record stores
    scripted_server.script = [("ok", "united_kingdom")]
    reader = LLMReader(ChatClient("double-model", scripted_server.base_url, name="double"))
    question, evidence = "nationality?", "(ernest, nationality, city_1_(A|))"
    predicted = reader.prompt_tokens(question, evidence)
    out = reader.answer(question, evidence)
    assert predicted == count_tokens(out.messages[0]["content"])
    assert predicted == out.accounting["prompt_tokens_cl100k"]
    overhead = reader.prompt_overhead(question)
    assert 0 < overhead < predicted
    assert overhead == count_tokens(render_answer_prompt_without_evidence(question))


def test_extractive_reader_has_no_prompt_to_count():
    assert ExtractiveReader().prompt_tokens("q?", "evidence") == 0
    assert ExtractiveReader().prompt_overhead("q?") == 0
