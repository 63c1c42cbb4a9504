"""Generated question sets beyond chains (issue 28 §1): conjunctions, constraints, many answers.

PathQuestion asks chains from one topic entity.  The paper's main benchmarks also ask
questions that name two entities, carry a constraint or have many answers.  This module
generates such questions from any KG, with the wording PathQuestion itself uses for each
relation (never the KB's label), so the walk can be trained and measured on them:

- **conjunction**: ``{x : (A, r1, x)} ∩ {x : (B, r2, x)}`` for two anchors A != B,
  non-empty and strictly smaller than either anchor's set alone ("what is both A 's son and
  B 's son ?");
- **conjunction_2hop**: ``{x : (A, r1, m), (m, r2, x)} ∩ {x : (B, r3, x)}``, a two-hop chain
  from one anchor joined with one hop from the other, under the same conditions;
- **constraint**: a chain from A plus an attribute the KG can check,
  ``{x : (A, r1, x), (x, rc, v)}``, strictly smaller than the chain's set (v is named in the
  question, so it is a topic entity too);
- **many**: a one- or two-hop chain from A whose answer set holds
  ``MANY_MIN``-``MANY_MAX`` entities.

Wordings (:func:`mine_phrasings`): PathQuestion writes a chain as possessives and "of"
phrases around the topic entity ("which nationality is X 's couple ?", "what is the parent
of son of X ?").  Parsing those against each line's gold path gives, per relation, the noun
phrases PathQuestion uses for it ("couple", "spouse" for ``spouse``); a phrase is kept when
it occurs at least ``min_count`` times and mostly for that relation.  Relations with no
mined phrase are not asked about.  Several phrasings and several sentence templates per
kind, chosen at random, and the anchors in either order.

Splitting: each question's gold path is one supporting path per anchor to its first answer,
in a canonical order (sorted by relation chain, then anchor), so the package's split
(:mod:`lokg.data.splits`: text *or* (sorted topic entities, relation chain)) keeps one
anchor set with one relation pattern in one split whatever the wording, and
``split_group_by=template`` holds out relation patterns.

Everything is drawn from ``random.Random(seed)`` over sorted inputs: the same KG, questions
file and seed give the same questions on every machine.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lokg.errors import InputError
from lokg.typing import LabeledTriple, Question

__all__ = [
    "CONSTRAINT_MIN_SHARE",
    "GENERATOR_VERSION",
    "KINDS",
    "MANY_MAX",
    "MANY_MIN",
    "Phrasebook",
    "TripleIndex",
    "chain_phrases",
    "generate",
    "mine_phrasings",
]

#: bumped when the same inputs would generate other questions (enters the data fingerprint)
GENERATOR_VERSION = 1
KINDS = ("conjunction", "conjunction_2hop", "constraint", "many")
#: bounds of a "many answers" question's answer set (issue 28: 5-50)
MANY_MIN, MANY_MAX = 5, 50
#: a constraint's value is held by at least this many entities (an attribute such as a gender,
#: a profession or a genre, not one more entity to reach)
CONSTRAINT_MIN_SHARE = 5
#: phrases per relation kept, at most
MAX_PHRASES = 4
_ARTICLES = frozenset({"the", "a", "an"})
_COPULA = r"(?:is|are|was|were)"
_WH = r"(?:what|who|which|where)"


# --------------------------------------------------------------------------- wordings
def chain_phrases(text: str, topic: str) -> list[str] | None:
    """The noun phrases of a PathQuestion-style question, innermost relation first, or
    ``None`` when the text does not parse as possessives and "of" phrases around ``topic``.

    ``"which nationality is X 's couple ?"`` -> ``["couple", "nationality"]``;
    ``"what is the parent of son of X ?"`` -> ``["son", "parent"]``;
    ``"what is the X 's film 's notable_types ?"`` -> ``["film", "notable_types"]``.
    """
    tokens = text.strip().rstrip("?").split()
    lowered = [t.casefold() for t in tokens]
    key = topic.casefold()
    if lowered.count(key) != 1:
        return None
    at = lowered.index(key)
    left, right = " ".join(lowered[:at]), lowered[at + 1 :]
    inner: list[str] = []
    # right of the topic: "'s P1 's P2 ..." (each possessive one hop further out)
    i = 0
    while i < len(right):
        if right[i] != "'s" or i + 1 >= len(right):
            return None
        j = i + 1
        while j < len(right) and right[j] != "'s":
            j += 1
        inner.append(" ".join(right[i + 1 : j]))
        i = j
    outer: list[str] = []
    m = re.fullmatch(rf"(?:which|what)\s+(.+?)\s+{_COPULA}(?:\s+(.*))?", left)
    if m and " of " not in f" {m.group(1)} ":
        outer.append(m.group(1))
        left = m.group(2) or ""
    else:
        left = re.sub(rf"^{_WH}(?:\s+{_COPULA})?\s*", "", left)
    if left:
        if not left.endswith(" of") and left != "of":
            if left.split() and all(w in _ARTICLES for w in left.split()):
                left = ""
            else:
                return None
        segments = left.split(" of ")[::-1] if left else []
        for seg in segments:
            words = [w for w in seg.removesuffix(" of").split() if w != "of"]
            while words and words[0] in _ARTICLES:
                words = words[1:]
            if not words:
                return None
            inner.append(" ".join(words))
    phrases = inner + outer
    if not phrases or any(not p or len(p.split()) > 4 for p in phrases):
        return None
    return phrases


@dataclass(frozen=True)
class Phrasebook:
    """The phrasings mined for each relation, most frequent first.

    Attributes:
        phrases: relation label -> noun phrases ("couple", "spouse"), at most
            :data:`MAX_PHRASES`.
        counts: relation label -> how many question lines each phrase came from (same order).
        parsed: question lines whose wording parsed against their gold path.
        lines: question lines read.
    """

    phrases: dict[str, tuple[str, ...]]
    counts: dict[str, tuple[int, ...]]
    parsed: int
    lines: int

    def relations(self) -> list[str]:
        """Relations that can be asked about, sorted."""
        return sorted(self.phrases)


def mine_phrasings(
    questions: Iterable[Question], kg_triples: Iterable[LabeledTriple], min_count: int = 2
) -> Phrasebook:
    """Per relation, the noun phrases PathQuestion-style questions use for it.

    A line counts when :func:`chain_phrases` finds one phrase per hop of its gold path and
    every hop is a KG triple in the KG's own direction (a phrase read against a reversed hop
    would name the other end).  A phrase is kept for a relation when it occurs there at least
    ``min_count`` times and at least as often as for any other relation.
    """
    if min_count < 1:
        raise ValueError(f"min_count={min_count}; expected >= 1")
    stated = set(kg_triples)
    by_phrase: dict[str, Counter] = defaultdict(Counter)
    parsed = lines = 0
    for q in questions:
        lines += 1
        if not q.gold_path or not q.topic_entities:
            continue
        if any(t not in stated for t in q.gold_path):
            continue
        phrases = chain_phrases(q.text, q.topic_entities[0])
        if phrases is None or len(phrases) != len(q.gold_path):
            continue
        parsed += 1
        for phrase, (_, rel, _) in zip(phrases, q.gold_path, strict=True):
            by_phrase[phrase][rel] += 1
    per_rel: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for phrase, rels in by_phrase.items():
        best = max(rels.values())
        for rel, n in rels.items():
            if n >= min_count and n == best:
                per_rel[rel].append((n, phrase))
    phrases, counts = {}, {}
    for rel in sorted(per_rel):
        ranked = sorted(per_rel[rel], key=lambda c: (-c[0], c[1]))[:MAX_PHRASES]
        phrases[rel] = tuple(p for _, p in ranked)
        counts[rel] = tuple(n for n, _ in ranked)
    return Phrasebook(phrases, counts, parsed, lines)


# --------------------------------------------------------------------------- the graph
class TripleIndex:
    """Forward and backward lookups over labelled triples (the KG's own direction).

    Args:
        triples: ``(head, relation, tail)`` labels; duplicates are one fact.
    """

    def __init__(self, triples: Iterable[LabeledTriple]):
        self.out: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.into: dict[tuple[str, str], set[str]] = defaultdict(set)
        for h, r, t in triples:
            if h != t:
                self.out[(h, r)].add(t)
                self.into[(r, t)].add(h)
        self.tails_by_rel: dict[str, set[str]] = defaultdict(set)
        for r, t in self.into:
            self.tails_by_rel[r].add(t)

    def objects(self, head: str, rel: str) -> set[str]:
        """``{x : (head, rel, x)}``."""
        return self.out.get((head, rel), set())

    def subjects(self, rel: str, tail: str) -> set[str]:
        """``{h : (h, rel, tail)}``."""
        return self.into.get((rel, tail), set())

    def two_hop(self, head: str, r1: str, r2: str) -> dict[str, str]:
        """``{x : (head, r1, m), (m, r2, x)}`` -> the smallest such m (for the gold path)."""
        out: dict[str, str] = {}
        for m in sorted(self.objects(head, r1)):
            for x in self.objects(m, r2):
                if x != head:
                    out.setdefault(x, m)
        return out


# --------------------------------------------------------------------------- templates
_CONJ = (
    "what is both {a} 's {pa} and {b} 's {pb} ?",
    "which is the {pa} of {a} and also the {pb} of {b} ?",
    "the {pa} of {a} that is also {b} 's {pb} ?",
)
_CONSTRAINT = (
    "which {p} of {a} has {pc} {v} ?",
    "the {p} of {a} whose {pc} is {v} ?",
    "among {a} 's {p} , which one 's {pc} is {v} ?",
)
_MANY = (
    "what are all the {p} of {a} ?",
    "list every {p} of {a} .",
    "which entities are {a} 's {p} ?",
)


def _chain_text(anchor: str, phrases: Sequence[str]) -> str:
    """``A 's p1 's p2`` for a chain of phrases, innermost first."""
    return " ".join([anchor, *(f"'s {p}" for p in phrases)])


@dataclass(frozen=True)
class _Pattern:
    """One question before wording: anchors with their chains, a constraint, the answers."""

    kind: str
    arms: tuple[tuple[str, tuple[str, ...]], ...]  # (anchor, relation chain), canonical order
    answers: tuple[str, ...]
    gold_path: tuple[LabeledTriple, ...]
    constraint: tuple[str, str] | None = None  # (relation, value)

    @property
    def topics(self) -> tuple[str, ...]:
        anchors = tuple(a for a, _ in self.arms)
        return anchors + ((self.constraint[1],) if self.constraint else ())


def _arm_path(index: TripleIndex, anchor: str, chain: Sequence[str], answer: str) -> list:
    """The triples of one supporting path ``anchor -chain-> answer``."""
    if len(chain) == 1:
        return [(anchor, chain[0], answer)]
    mid = index.two_hop(anchor, chain[0], chain[1])[answer]
    return [(anchor, chain[0], mid), (mid, chain[1], answer)]


def _arm_set(index: TripleIndex, anchor: str, chain: Sequence[str]) -> set[str]:
    if len(chain) == 1:
        return index.objects(anchor, chain[0]) - {anchor}
    return set(index.two_hop(anchor, chain[0], chain[1]))


def _conjunction(index: TripleIndex, arms: list[tuple[str, tuple[str, ...]]]) -> _Pattern | None:
    """The pattern of two arms if their join is non-empty and strictly smaller than each."""
    arms = sorted(arms, key=lambda a: (a[1], a[0]))
    (a, ca), (b, cb) = arms
    if a == b:
        return None
    sa, sb = _arm_set(index, a, ca), _arm_set(index, b, cb)
    joint = (sa & sb) - {a, b}
    if not joint or len(joint) >= len(sa) or len(joint) >= len(sb):
        return None
    first = min(joint)
    path = _arm_path(index, a, ca, first) + _arm_path(index, b, cb, first)
    kind = "conjunction" if len(ca) == len(cb) == 1 else "conjunction_2hop"
    return _Pattern(kind, tuple(arms), tuple(sorted(joint)), tuple(path))


def _arms(index: TripleIndex, rels: Sequence[str]) -> Iterable[tuple[str, tuple[str, ...]]]:
    """Every (anchor, chain) of one or two hops over ``rels`` with at least 2 answers."""
    heads = sorted({h for (h, _) in index.out})
    for a in heads:
        for r1 in rels:
            if (a, r1) not in index.out:
                continue
            for chain in [(r1,)] + [(r1, r2) for r2 in rels]:
                if len(_arm_set(index, a, chain)) >= 2:
                    yield a, chain


def _candidates(kind: str, index: TripleIndex, relations: Sequence[str]) -> Iterable[_Pattern]:
    """Every pattern of ``kind`` over ``relations`` (deterministic order)."""
    rels = sorted(relations)
    if kind in ("conjunction", "conjunction_2hop"):
        for r1 in rels:
            for r2 in rels:
                for x in sorted(index.tails_by_rel[r1] & index.tails_by_rel[r2]):
                    if kind == "conjunction":
                        if r1 > r2:
                            continue
                        for a in sorted(index.subjects(r1, x)):
                            if len(index.objects(a, r1)) < 2:
                                continue
                            for b in sorted(index.subjects(r2, x)):
                                if (r1, a) < (r2, b) and len(index.objects(b, r2)) >= 2:
                                    p = _conjunction(index, [(a, (r1,)), (b, (r2,))])
                                    if p is not None:
                                        yield p
                    else:  # x reached by (m, r2, x) from a's (a, r0, m), and by (b, r1, x)
                        for m in sorted(index.subjects(r2, x)):
                            for r0 in rels:
                                for a in sorted(index.subjects(r0, m)):
                                    if len(index.two_hop(a, r0, r2)) < 2:
                                        continue
                                    for b in sorted(index.subjects(r1, x)):
                                        if len(index.objects(b, r1)) < 2:
                                            continue
                                        p = _conjunction(index, [(a, (r0, r2)), (b, (r1,))])
                                        if p is not None and p.kind == kind:
                                            yield p
    elif kind == "constraint":
        for a, chain in _arms(index, rels):
            base = _arm_set(index, a, chain)
            for rc in rels:
                if rc == chain[-1]:
                    continue
                values = {v for x in base for v in index.objects(x, rc)}
                for v in sorted(values):
                    if len(index.subjects(rc, v)) < CONSTRAINT_MIN_SHARE or v == a:
                        continue  # an attribute value many entities share, not an entity
                    kept = {x for x in base if v in index.objects(x, rc)} - {a, v}
                    if kept and len(kept) < len(base):
                        first = min(kept)
                        path = (*_arm_path(index, a, chain, first), (first, rc, v))
                        yield _Pattern(kind, ((a, chain),), tuple(sorted(kept)), path, (rc, v))
    elif kind == "many":
        for a, chain in _arms(index, rels):
            answers = _arm_set(index, a, chain)
            if MANY_MIN <= len(answers) <= MANY_MAX:
                path = tuple(_arm_path(index, a, chain, min(answers)))
                yield _Pattern(kind, ((a, chain),), tuple(sorted(answers)), path)
    else:
        raise InputError(f"question set kind {kind!r}; expected one of {list(KINDS)}")


def _word(p: _Pattern, book: Phrasebook, rng: random.Random) -> str:
    """One wording of ``p``: random phrasings and template, anchors in random order."""

    def phrase(rel: str) -> str:
        return rng.choice(book.phrases[rel])

    if p.kind in ("conjunction", "conjunction_2hop"):
        arms = list(p.arms)
        rng.shuffle(arms)
        (a, ca), (b, cb) = arms
        pa = [phrase(r) for r in ca]
        pb = [phrase(r) for r in cb]
        template = rng.choice(_CONJ)
        # a longer arm is worded as possessives on its anchor: "A 's p1" + "'s p2"
        a_text = _chain_text(a, pa[:-1]) if len(pa) > 1 else a
        b_text = _chain_text(b, pb[:-1]) if len(pb) > 1 else b
        return template.format(a=a_text, pa=pa[-1], b=b_text, pb=pb[-1])
    ((a, chain),) = p.arms
    ps = [phrase(r) for r in chain]
    a_text = _chain_text(a, ps[:-1]) if len(ps) > 1 else a
    if p.kind == "constraint":
        rc, v = p.constraint  # type: ignore[misc]
        return rng.choice(_CONSTRAINT).format(p=ps[-1], a=a_text, pc=phrase(rc), v=v)
    return rng.choice(_MANY).format(p=ps[-1], a=a_text)


def generate(
    kind: str,
    kg_triples: Iterable[LabeledTriple],
    book: Phrasebook,
    *,
    size: int,
    seed: int,
    prefix: str,
    wordings: int = 2,
) -> list[Question]:
    """Up to ``size`` questions of ``kind`` (module doc) over ``kg_triples``.

    Patterns are enumerated in a fixed order, shuffled with ``seed`` and the first ``size``
    kept (no two share their anchors and relation pattern); each is worded ``wordings`` times
    (distinct texts only), so one pattern's wordings are one group for the split.

    Args:
        kind: one of :data:`KINDS`.
        kg_triples: the KG's own triples (labels).
        book: phrasings per relation; relations without one are not asked about.
        size: patterns to keep.
        seed: the draw.
        prefix: question ids are ``<prefix>-<n>``.
        wordings: wordings per pattern.
    """
    if kind not in KINDS:
        raise InputError(f"question set kind {kind!r}; expected one of {list(KINDS)}")
    if size < 1 or wordings < 1:
        raise InputError(f"size={size}, wordings={wordings}; expected both >= 1")
    index = TripleIndex(kg_triples)
    seen: set[tuple] = set()
    patterns: list[_Pattern] = []
    for p in _candidates(kind, index, book.relations()):
        key = (p.arms, p.constraint)
        if key not in seen:
            seen.add(key)
            patterns.append(p)
    rng = random.Random(f"{kind}:{seed}")
    rng.shuffle(patterns)
    out: list[Question] = []
    for p in patterns[:size]:
        texts: list[str] = []
        for _ in range(wordings * 4):
            text = _word(p, book, rng)
            if text not in texts:
                texts.append(text)
            if len(texts) == wordings:
                break
        for text in texts:
            out.append(
                Question(
                    id=f"{prefix}-{len(out)}",
                    text=text,
                    answers=p.answers,
                    topic_entities=p.topics,
                    gold_path=p.gold_path,
                )
            )
    return out
