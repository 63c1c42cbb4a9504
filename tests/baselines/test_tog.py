"""ToG's beam bookkeeping, prompts and fallbacks, against a scripted OpenAI-protocol test
double answering through the real ChatClient (every call and token counted by the ledger)."""

from __future__ import annotations

import pytest

from lokg.baselines.tog import (
    BeamEntry,
    Candidate,
    ToGEncoder,
    ToGRetriever,
    parse_entity_scores,
    parse_relation_selection,
    parse_sufficiency,
    prune_entities,
)
from lokg.kg.graph import KnowledgeGraph
from lokg.llm import ChatClient
from lokg.typing import Question

Q = Question("q1", "what is the nationality of alice 's spouse ?", ("france",), ("alice",))


def user_text(payload: dict) -> str:
    return payload["messages"][-1]["content"]


def router(relation: str, entity: str, reasoning: list[str]):
    """Replies by prompt kind; the reasoning replies are used in turn."""
    turns = iter(reasoning)

    def route(payload):
        text = user_text(payload)
        if "\nRelations:" in text:
            return ("ok", relation)
        if "\nEntities:" in text:
            return ("ok", entity)
        return ("ok", next(turns))

    return route


def client(double) -> ChatClient:
    return ChatClient(model="double-model", base_url=double.base_url, max_attempts=1)


def tid(kg, h, r, t) -> int:
    return kg.triples_np.tolist().index([kg.entities[h], kg.relations[r], kg.entities[t]])


def test_parsers_read_togs_formats_and_say_when_they_cannot():
    names = ["birthplace", "place of birth", "spouse"]
    text = "1. {spouse (Score: 0.7)}: yes\n2. {place of birth (Score: 0.3)}"
    got = parse_relation_selection(text, names, 3)
    assert got == [("spouse", 0.7), ("place of birth", 0.3)]
    assert parse_relation_selection("spouse (Score: 0.6), birthplace (Score: 0.4)", names, 1) == [
        ("spouse", 0.6)
    ]
    assert parse_relation_selection("Spouse, surely.", names, 3) == [("spouse", 1.0)]
    assert parse_relation_selection("no idea", names, 3) is None
    assert parse_entity_scores("0.25, 0.75\nbecause 1.0", 2) == [0.25, 0.75]
    assert parse_entity_scores("0.25", 2) is None
    assert parse_sufficiency("{Yes}. The answer is {france}.") is True
    assert parse_sufficiency("No. more is needed") is False
    assert parse_sufficiency("perhaps") is None


def test_entity_pruning_keeps_the_width_best_and_drops_zeros():
    root = BeamEntry(0, (), (0,), 1.0)
    cands = [Candidate(e, e, 0, s, root) for e, s in [(1, 0.1), (2, 0.5), (3, 0.0), (4, 0.5)]]
    assert [c.entity for c in prune_entities(cands, 3)] == [2, 4, 1]
    assert [c.entity for c in prune_entities(cands[2:3], 3)] == []


def test_two_hop_search_stops_when_sufficient(family, bag_embedder, openai_double):
    openai_double.route = router(
        "1. {spouse (Score: 0.8)}: asked.\n2. {birthplace (Score: 0.2)}", "unused",
        ["{No}. Not yet.", "{Yes}. The answer is {france}."],
    )  # fmt: skip
    out = ToGRetriever(family, bag_embedder, client(openai_double)).retrieve(Q)
    # depth 1: one relation-pruning call for alice (4 relations); spouse and birthplace reach
    # one entity each (no scoring call): bob 0.8, paris 0.2; reasoning call 1 says No.
    # depth 2: bob's only relation off the path is nationality (no call) -> france 1.0;
    # paris has none; reasoning call 2 says Yes. 3 calls, 11 + 3 tokens each (the double).
    assert out.extra["stopped"] == "sufficient" and out.extra["depth"] == 2
    assert out.extra["prompts"] == {"relation": 1, "entity": 0, "reasoning": 2}
    assert out.extra["fallbacks"] == {"relation": 0, "entity": 0, "reasoning": 0}
    assert out.accounting["calls"] == 3 == len(openai_double.requests)
    assert out.accounting["prompt_tokens"] == 33 and out.accounting["completion_tokens"] == 9
    spouse, nat = tid(family, "alice", "spouse", "bob"), tid(family, "bob", "nationality", "france")
    birth = tid(family, "alice", "birthplace", "paris")
    assert list(out.triple_ids) == [spouse, nat, birth]  # best final path first
    assert out.top_answer == "france" and out.paths[0].entities == tuple(
        family.entities[x] for x in ("alice", "bob", "france")
    )
    # the relation prompt lists alice's relations sorted; the sufficiency check sees all
    # explored triples
    first = user_text(openai_double.requests[0])
    assert "Relations: birthplace; profession; sister; spouse" in first
    last = user_text(openai_double.requests[-1])
    assert "alice, spouse, bob\nalice, birthplace, paris\nbob, nationality, france" in last


def test_malformed_answers_fall_back_and_are_counted(family, bag_embedder, openai_double):
    openai_double.route = lambda payload: ("ok", "I am not sure what you mean")
    out = ToGRetriever(family, bag_embedder, client(openai_double)).retrieve(Q)
    # relation fallback (similarity): only "spouse" shares a word with the question, so bob
    # gets 1.0 and the zero-score paris/painter are pruned; reasoning falls back to "No"
    # twice; at depth 3 france has no relation off its path: no candidates.
    assert out.extra["fallbacks"] == {"relation": 1, "entity": 0, "reasoning": 2}
    assert out.extra["stopped"] == "no_candidates" and out.extra["depth"] == 3
    assert out.accounting["calls"] == 3
    assert out.top_answer == "france"


def test_entity_scores_times_relation_score_and_big_sets_sampled(bag_embedder, openai_double):
    kids = [("alice", "child", f"kid{i:02d}") for i in range(25)]
    kg = KnowledgeGraph.from_labeled_triples([("alice", "child", "dan"), *kids])
    openai_double.route = router("unused", "0.1, 0.2, 0.3, 0.4, 0.0", ["{Yes}."])
    q = Question("q2", "which child of alice ?", ("dan",), ("alice",))
    out = ToGRetriever(kg, bag_embedder, client(openai_double), num_retain_entity=5).retrieve(q)
    # one relation (no pruning call); 26 >= 20 candidates: 5 sampled, scored in one call
    assert out.extra["prompts"] == {"relation": 0, "entity": 1, "reasoning": 1}
    listed = user_text(openai_double.requests[0]).rsplit("Entities: ", 1)[1].split("\n")[0]
    assert len(listed.split("; ")) == 5
    # scores x relation score 1.0; width 3 keeps 0.4, 0.3, 0.2 (names sorted in the prompt)
    names = listed.split("; ")
    assert [a.label for a in out.answers] == [names[3], names[2], names[1]]
    assert [a.score for a in out.answers] == pytest.approx([0.4, 0.3, 0.2])


def test_tog_encoder_writes_triplets_in_the_retrievers_order(family):
    ids = [tid(family, "alice", "spouse", "bob"), tid(family, "bob", "nationality", "france")]
    ctx = ToGEncoder().encode(family, ids, budget=100)
    assert ctx.text == "alice, spouse, bob\nbob, nationality, france"
