"""A second question style, built from gold paths alone (issue 14's transfer check).

The learned walk and the rule-based linker are trained and tuned on PathQuestion's own
phrasing ("what is the X of Y 's Z ?", "Y 's Z 's X ?"), which always asks a path from its
topic end.  To see whether retrieval depends on that phrasing or on the edge direction, this
module re-asks questions that carry a gold path in two other ways:

- ``paraphrase``: the same path (same topic entities, same answers, same gold path) asked with
  English templates PathQuestion never uses ("Name the <r2> of the <r1> of <topic>.",
  "<topic> -> <r1> -> <r2>: which entity?", ...).
- ``reverse``: the path asked from its answer end.  For the gold path
  ``topic -r1-> e1 -r2-> a`` the new question's topic is ``a`` and its answers are every
  entity ``x`` with ``x -r1-> * -r2-> a`` in the graph (the original topic among them),
  e.g. "Which entity's <r1> has <r2> <a>?".  Its gold path is the original triples in reverse
  order, each triple still ``(head, relation, tail)`` as in the graph, so it is walked against
  the edge direction.

Only a question's ``gold_path`` triples, its topic and answer labels and the graph's relation
labels are read, never its text: the module works for any dataset with gold paths.  Relation
words come from the relation label (:func:`relation_words`: the last hierarchy segment of a
Freebase-like label, as words).  The template of each question is drawn by an RNG seeded with
``(seed, style, question id)``, so a restyled set is the same on every run and does not depend
on the order of the questions.  Restyled ids are the original id suffixed by ``-<style>``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.walk.net import relation_name
from lokg.typing import EntityId, Question, RelationId

__all__ = [
    "MAX_REVERSE_ANSWERS",
    "PARAPHRASE_TEMPLATES",
    "REVERSE_TEMPLATES",
    "STYLES",
    "RestyleReport",
    "Unrestylable",
    "paraphrase",
    "relation_words",
    "restyle",
    "reverse",
    "reverse_answers",
]

STYLES = ("paraphrase", "reverse")
#: a reverse question with more answers than this is skipped (too vague to ask)
MAX_REVERSE_ANSWERS = 20
#: hierarchy separators of relation labels (``people.person.nationality``,
#: ``/people/person/nationality``, ``__people__person__nationality``); a single ``_`` joins words
_SEGMENT = re.compile(r"__|[./:]")

#: why a question was not restyled (the keys of :attr:`RestyleReport.skipped`)
SKIP_REASONS = ("no_gold_path", "broken_path", "not_in_kg", "too_many_answers")

#: (topic label, relation words in path order) -> question text
Template = Callable[[str, Sequence[str]], str]


def relation_words(label: str, segments: int | None = 1) -> str:
    """A relation label as words: its last ``segments`` hierarchy segments (all when ``None``)
    through :func:`~lokg.taimr.walk.net.relation_name`.

    ``relation_words("__common__topic__notable_types")`` is ``"notable types"``;
    ``relation_words("people.person.place_of_birth", 2)`` is ``"person place of birth"``.
    """
    if segments is not None and segments < 1:
        raise ValueError(f"segments={segments}; expected a positive number or None (all)")
    parts = [p for p in _SEGMENT.split(label) if p.strip("_ ")]
    if segments is not None:
        parts = parts[-segments:]
    return relation_name(" ".join(parts)) or relation_name(label) or label


def _of_chain(words: Sequence[str], tail: str) -> str:
    """``the wk of the w(k-1) of ... the w1 of <tail>`` (``words`` in path order)."""
    return " of ".join(f"the {w}" for w in reversed(words)) + f" of {tail}"


def _then(words: Sequence[str]) -> str:
    """``w1``, ``w1, then w2``, ``w1, then w2, then w3``."""
    return ", then ".join(words)


#: forward templates: (topic, words from the topic) -> text; none of PathQuestion's forms
PARAPHRASE_TEMPLATES: tuple[Template, ...] = (
    lambda t, w: f"Name {_of_chain(w, t)}.",
    lambda t, w: f"{t} -> {' -> '.join(w)}: which entity?",
    lambda t, w: (
        f"Tell me which entity is the {w[-1]} for {_of_chain(w[:-1], t)}."
        if len(w) > 1
        else f"Tell me which entity is the {w[0]} for {t}."
    ),
    lambda t, w: f"Starting from {t}, follow {_then(w)}. Which entity do you reach?",
    lambda t, w: f"Find the entity that {t} leads to via {' followed by '.join(w)}.",
    lambda t, w: f"Which entity is reached from {t} through {_then(w)}?",
)


def _which_has(a: str, w: Sequence[str]) -> str:
    """``Which entity has w1 a?`` / ``Which entity's w1 has w2 a?`` /
    ``Which entity's w1 has a w2 whose w3 is a?``"""
    if len(w) == 1:
        return f"Which entity has {w[0]} {a}?"
    if len(w) == 2:
        return f"Which entity's {w[0]} has {w[1]} {a}?"
    middle = "".join(f" has a {x} whose" for x in w[1:-1])
    return f"Which entity's {w[0]}{middle} {w[-1]} is {a}?"


#: backward templates: (answer-end topic, words from the unknown entity) -> text
REVERSE_TEMPLATES: tuple[Template, ...] = (
    _which_has,
    lambda a, w: f"Whose {' '.join(w)} is {a}?",
    lambda a, w: f"{a} is {_of_chain(w, 'which entity')}?",
    lambda a, w: f"Name an entity from which {_then(w)} leads to {a}.",
    lambda a, w: f"{a} <- {' <- '.join(reversed(w))} <- which entity?",
    lambda a, w: f"Which entity reaches {a} by following {_then(w)}?",
)


@dataclass
class RestyleReport:
    """What :func:`restyle` did: questions kept and skipped, by reason, and the template index
    of each restyled question (restyled id -> index into the style's templates)."""

    style: str
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))
    templates: dict[str, int] = field(default_factory=dict)

    @property
    def num_skipped(self) -> int:
        return sum(self.skipped.values())

    def __str__(self) -> str:
        why = ", ".join(f"{k} {v}" for k, v in self.skipped.items() if v)
        return f"{self.style}: {self.kept} kept, {self.num_skipped} skipped" + (
            f" ({why})" if why else ""
        )


class Unrestylable(Exception):
    """A question that cannot be restyled (``reason`` is one of :data:`SKIP_REASONS`)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _rng(seed: int, style: str, qid: str) -> random.Random:
    # a str seed is hashed with SHA-512: the same on every run and platform
    return random.Random(f"{seed}/{style}/{qid}")


def _chain(question: Question) -> tuple[str, tuple[str, ...], str]:
    """(topic label, relation labels, end label) of a connected gold path."""
    path = question.gold_path
    if not path:
        raise Unrestylable("no_gold_path")
    for (_, _, tail), (head, _, _) in pairwise(path):
        if tail != head:
            raise Unrestylable("broken_path")
    return path[0][0], tuple(r for _, r, _ in path), path[-1][2]


def paraphrase(question: Question, template: int = 0, segments: int | None = 1) -> Question:
    """``question`` asked with ``PARAPHRASE_TEMPLATES[template]``.

    Topic entities, answers and gold path are kept; only the text changes.  The topic named
    in the text is the first topic entity (the gold path's head when there is none).

    Raises:
        Unrestylable: the question has no connected gold path.
    """
    head, relations, _ = _chain(question)
    topic = question.topic_entities[0] if question.topic_entities else head
    words = [relation_words(r, segments) for r in relations]
    text = PARAPHRASE_TEMPLATES[template](topic, words)
    return Question(
        f"{question.id}-paraphrase",
        text,
        question.answers,
        question.topic_entities or (head,),
        question.gold_path,
    )


def reverse_answers(
    kg: KnowledgeGraph, relations: Sequence[RelationId], end: EntityId
) -> set[EntityId]:
    """Every entity ``x`` whose relation chain ``relations`` (in path order, along the edge
    direction) reaches ``end``: ``x -r1-> * -r2-> ... -rk-> end``.

    Computed backwards from ``end``: the heads of the ``rk`` triples into ``end``, then the
    heads of the ``r(k-1)`` triples into those, and so on.
    """
    frontier = {int(end)}
    heads, rels = kg.triples_np[:, 0], kg.triples_np[:, 1]
    for r in reversed(relations):
        nxt: set[int] = set()
        for v in frontier:
            into = kg.in_triples(v)  # [n] triple ids with tail v
            nxt.update(int(h) for h in heads[into[rels[into] == r]])
        frontier = nxt
        if not frontier:
            break
    return frontier


def reverse(
    question: Question,
    kg: KnowledgeGraph,
    template: int = 0,
    max_answers: int = MAX_REVERSE_ANSWERS,
    segments: int | None = 1,
) -> Question:
    """``question``'s gold path asked from its answer end, with ``REVERSE_TEMPLATES[template]``.

    For the gold path ``t -r1-> e1 -r2-> a``: topic ``a``; answers the labels of
    :func:`reverse_answers` ``(r1, r2)`` from ``a`` (the original topic ``t`` first, then the
    others sorted); gold path the original triples in reverse order, each still
    ``(head, relation, tail)``.

    Raises:
        Unrestylable: no connected gold path (``no_gold_path``, ``broken_path``); a path label the
            graph lacks, or a path the graph does not contain (``not_in_kg``); more than
            ``max_answers`` answers (``too_many_answers``).
    """
    head, relations, end = _chain(question)
    ids = [kg.relations.get(r) for r in relations]
    t, a = kg.entities.get(head), kg.entities.get(end)
    if t is None or a is None or None in ids:
        raise Unrestylable("not_in_kg")
    found = reverse_answers(kg, ids, a)
    if t not in found:  # the gold path's triples are not all in the graph
        raise Unrestylable("not_in_kg")
    if len(found) > max_answers:
        raise Unrestylable("too_many_answers")
    others = sorted(kg.entities.label(x) for x in found if x != t)
    words = [relation_words(r, segments) for r in relations]
    text = REVERSE_TEMPLATES[template](end, words)
    return Question(
        f"{question.id}-reverse",
        text,
        (head, *others),
        (end,),
        tuple(reversed(question.gold_path)),
    )


def restyle(
    questions: Iterable[Question],
    kg: KnowledgeGraph,
    style: str,
    *,
    seed: int = 0,
    max_answers: int = MAX_REVERSE_ANSWERS,
    segments: int | None = 1,
) -> tuple[list[Question], RestyleReport]:
    """``questions`` in ``style`` (one of :data:`STYLES`), with what was skipped and why.

    Args:
        questions: questions with gold paths (others are skipped as ``no_gold_path``).
        kg: the graph the gold paths live in (its relation labels name the relations;
            ``reverse`` computes its answers on it).
        style: ``paraphrase`` or ``reverse``.
        seed: seeds each question's template draw together with its id and the style.
        max_answers: ``reverse`` skips a question with more answers than this.
        segments: hierarchy segments of a relation label used as words (:func:`relation_words`).

    Returns:
        (restyled questions in input order, :class:`RestyleReport`)
    """
    if style not in STYLES:
        raise InputError(f"style={style!r}; expected one of {STYLES}")
    if max_answers < 1:
        raise InputError(f"max_answers={max_answers}; expected a positive number")
    report = RestyleReport(style)
    out: list[Question] = []
    templates = PARAPHRASE_TEMPLATES if style == "paraphrase" else REVERSE_TEMPLATES
    for q in questions:
        i = _rng(seed, style, q.id).randrange(len(templates))
        try:
            if style == "paraphrase":
                new = paraphrase(q, i, segments)
            else:
                new = reverse(q, kg, i, max_answers, segments)
        except Unrestylable as skip:
            report.skipped[skip.reason] += 1
            continue
        out.append(new)
        report.templates[new.id] = i
        report.kept += 1
    return out, report
