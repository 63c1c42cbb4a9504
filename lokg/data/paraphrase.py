"""Paraphrases that are paraphrases (issue 26, section 7): gold paths re-asked in words that are
not the KB's relation labels.

:mod:`lokg.data.restyle`'s ``paraphrase`` style writes the relation label into the question
("Name the place of birth of the spouse of X."), so a linker that matches label words still
finds every hop.  This module asks the same gold path through a hand-written lexicon
(``lokg/resources/paraphrases/lexicon.yaml``, its header says what it is and where it comes
from) whose phrasings share no content word with the label they stand for: ``spouse`` is "who
is X married to", ``place_of_birth`` "where was X born", ``nationality`` "which country is X a
citizen of".

The rule (:func:`reused_label_words`): a label's words are the words of all its hierarchy
segments (``__people__person__place_of_birth``: people, person, place, birth); stopwords are
ignored, a trailing plural ``s`` is dropped, and two words clash when one starts with the other
(nation ~ nationality, child ~ children).  :func:`load_lexicon` refuses an entry that breaks it,
and every generated question is checked again as a whole against all relations of its path
(glue words and the other hops' phrasings included; the topic's name is exempt).

A question is composed from its gold path ``t -r1-> e1 -r2-> ... -rk-> a`` by one of the
clause templates below (:data:`TEMPLATES`), with each hop phrased by an entry of the lexicon
(``ask``: a question about the tail, ``noun``: a noun phrase for it, ``clause``: a statement
bringing it in as "someone", ``ref``: how it is named afterwards):

- ``nested``: "Where was the husband or wife of X born?"
- ``clause_first``: "X married someone; where was that individual born?"
- ``consider``: "Consider the husband or wife of X: where was that individual born?"
- ``clause_chain`` (3 hops or more): "X married someone, and that individual was born
  somewhere; which larger region is that locality part of?"
- ``name``: "Name the native town or region of the husband or wife of X."

Template and phrasings are drawn by an RNG seeded with SHA-256 of ``(seed, question id)``, so a
set is the same on every run and machine and does not depend on the order of the questions;
a draw whose text reuses a label word is drawn again.  The new question keeps the original's
answers, topic entities and gold path; its id is the original id plus ``-para``.  The topic is
written readably by default (``names="readable"``: :meth:`KnowledgeGraph.entity_name`, spaces
for underscores, "frederica of mecklenburg-strelitz"); PathQuestion's own questions write the
label verbatim ("frederica_of_mecklenburg-strelitz"), which ``names="label"`` keeps, so that a
comparison with the originals can change the relation words alone (the rule-based linker finds
the topic in the text by its label).

The lexicon covers every relation on the gold paths of PQ-2H, PQ-3H (13), PQL-2H and PQL-3H
(125 together).  No paraphrase set is stored: the set used in evaluation is built at run time
from whichever test split is current, so it follows the split::

    from lokg.data import PathQuestionSource
    from lokg.data.splits import split_questions
    from lokg.data.paraphrase import paraphrase_questions

    raw = PathQuestionSource("PQ-2H").load()
    test = split_questions(raw.questions, seed=0)["test"]  # the run's split settings
    para = paraphrase_questions(test, raw.kg, seed=0)      # same ids + "-para", same gold

A relation without an entry is an :class:`~lokg.errors.InputError` naming the relation and the
lexicon file, unless ``skip_uncovered=True`` (then the question is skipped and counted in the
:class:`ParaphraseReport`).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from omegaconf import OmegaConf

from lokg.data.sources import resource_path
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph, label_as_words
from lokg.typing import Question

__all__ = [
    "DEFAULT_LEXICON",
    "NAME_STYLES",
    "STOPWORDS",
    "TEMPLATES",
    "Lexicon",
    "ParaphraseReport",
    "Phrasings",
    "label_words",
    "lexicon_violations",
    "load_lexicon",
    "paraphrase_questions",
    "paraphrase_with_report",
    "reused_label_words",
]

#: the bundled lexicon
DEFAULT_LEXICON = resource_path("paraphrases", "lexicon.yaml")
#: how the topic is written: the graph's display name, or its label as PathQuestion writes it
NAME_STYLES = ("readable", "label")
#: suffix added to a paraphrased question's id
ID_SUFFIX = "-para"
#: draws of phrasings per template before the next template is tried
ATTEMPTS = 8
_FUNCTION_WORDS = (
    "a an the of in on at to for from by with as into onto about after before under over "
    "within along around and or nor but not no than then so is are was were be been being am "
    "has have had do does did this that these those which who whom whose what where when why "
    "how here there it its they them their he him his she her hers someone something somewhere "
    "some any one s"
)
#: function words ignored by the label-reuse rule, on both sides
STOPWORDS = frozenset(_FUNCTION_WORDS.split())
_FORMS = ("ask", "noun", "clause")
_HOLE = "{x}"
#: hierarchy separators and word joiners of relation labels
_LABEL_SPLIT = re.compile(r"__|[._/:\s-]+")
_WORD = re.compile(r"[a-z0-9]+")
#: ``[the album entry] {x}``: words written only when ``{x}`` is an entity name
_NAMED_ONLY = re.compile(r"\[([^\[\]{}]*)\]")


# ------------------------------------------------------------------ the label-reuse rule
def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _content_words(text: str) -> set[str]:
    words = _WORD.findall(text.lower().replace("_", " "))
    return {_stem(w) for w in words if w not in STOPWORDS}


def label_words(relation: str) -> frozenset[str]:
    """Content words (stemmed) of a relation label, all hierarchy segments.

    ``label_words("__people__person__place_of_birth")`` is ``{people, person, place, birth}``.
    """
    parts = [p for p in _LABEL_SPLIT.split(relation.lower()) if p]
    return frozenset(_content_words(" ".join(parts)))


def _clash(a: str, b: str) -> bool:
    short, long = sorted((a, b), key=len)
    return a == b or (len(short) >= 3 and long.startswith(short))


def reused_label_words(text: str, relations: Iterable[str], names: Iterable[str] = ()) -> set[str]:
    """Words of ``text`` that clash with a content word of one of ``relations``' labels.

    ``names`` (entity names in the text) are cut out first: a topic called "Recording" does not
    count.  Empty when ``text`` keeps the rule.
    """
    low = text.lower()
    for name in sorted({n.lower() for n in names if n}, key=len, reverse=True):
        low = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", " ", low)
    words = _content_words(low)
    forbidden = set().union(*(label_words(r) for r in relations))
    return {w for w in words if any(_clash(w, f) for f in forbidden)}


# ------------------------------------------------------------------ the lexicon
@dataclass(frozen=True)
class Phrasings:
    """One relation's entry: ``(head, relation, tail)`` asked about its tail, ``{x}`` the head.

    Attributes:
        ask: full questions whose answer is the tail.
        noun: noun phrases naming the tail.
        clause: statements bringing the tail in as an unnamed someone/something.
        ref: how the tail is named after a clause ("that individual").
    """

    ask: tuple[str, ...]
    noun: tuple[str, ...]
    clause: tuple[str, ...]
    ref: str

    def texts(self) -> tuple[str, ...]:
        """Every phrasing, ``ref`` included."""
        return (*self.ask, *self.noun, *self.clause, self.ref)

    def nouns(self, nested: bool, last: bool = False) -> tuple[str, ...]:
        """Noun phrasings usable around ``{x}``.

        A nested ``{x}`` (itself a noun phrase) takes only those ending in ``{x}`` without a
        possessive ("the husband or wife of {x}").  A phrase with words after ``{x}`` that is
        not a possessive ("the one {x} married") is used only ``last``, where punctuation
        follows it, never inside another phrase or before the verb of a question.
        """
        if nested:
            return tuple(n for n in self.noun if n.endswith(_HOLE) and f"{_HOLE}'s" not in n)
        if last:
            return self.noun
        return tuple(n for n in self.noun if n.endswith(_HOLE) or n.startswith(f"{_HOLE}'s"))

    def asks(self, nested: bool) -> tuple[str, ...]:
        """Questions usable around ``{x}``; a nested ``{x}`` takes no possessive ``{x}'s``."""
        return tuple(a for a in self.ask if not nested or f"{_HOLE}'s" not in a)


@dataclass(frozen=True)
class Lexicon:
    """Relation label -> :class:`Phrasings`, read from ``path`` by :func:`load_lexicon`."""

    path: str
    relations: Mapping[str, Phrasings]

    def __contains__(self, relation: object) -> bool:
        return relation in self.relations

    def __getitem__(self, relation: str) -> Phrasings:
        return self.relations[relation]

    def __len__(self) -> int:
        return len(self.relations)

    def uncovered(self, questions: Iterable[Question]) -> Counter[str]:
        """Gold-path relations of ``questions`` without an entry -> how many questions use them."""
        missing: Counter[str] = Counter()
        for q in questions:
            missing.update({r for _, r, _ in q.gold_path if r not in self.relations})
        return missing


def lexicon_violations(lexicon: Lexicon) -> list[str]:
    """One line per phrasing (or ``ref``) that reuses a word of its relation's label."""
    bad = []
    for relation, entry in lexicon.relations.items():
        for text in entry.texts():
            reused = reused_label_words(text.replace(_HOLE, " "), [relation])
            if reused:
                bad.append(f"{relation}: {text!r} reuses {sorted(reused)}")
    return bad


def _strings(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise InputError(f"{where} is {value!r}; expected a non-empty list of strings")
    return tuple(value)


def _entry(path: Path, relation: str, raw: object) -> Phrasings:
    where = f"{path}: relations.{relation}"
    if not isinstance(raw, dict) or set(raw) != {*_FORMS, "ref"}:
        keys = sorted(raw) if isinstance(raw, dict) else raw
        raise InputError(f"{where} has {keys!r}; expected the keys ask, clause, noun, ref")
    forms = {f: _strings(raw[f], f"{where}.{f}") for f in _FORMS}
    ref = raw["ref"]
    if not isinstance(ref, str) or not ref.strip() or _HOLE in ref:
        raise InputError(f"{where}.ref is {ref!r}; expected a phrase without {_HOLE}")
    for form, texts in forms.items():
        for text in texts:
            if text.count(_HOLE) != 1:
                raise InputError(f"{where}.{form}: {text!r}; expected {_HOLE} exactly once")
            if "[" in (rest := _NAMED_ONLY.sub("", text)) or "]" in rest:
                raise InputError(
                    f"{where}.{form}: {text!r}; expected [words] without {_HOLE} or nested brackets"
                )
    entry = Phrasings(forms["ask"], forms["noun"], forms["clause"], ref)
    if not entry.nouns(nested=True) or not entry.asks(nested=True):
        raise InputError(
            f"{where}: expected a noun phrasing ending in {_HOLE} and a question without "
            f"{_HOLE}'s (used when {_HOLE} is itself a noun phrase)"
        )
    return entry


def load_lexicon(path: str | Path | None = None) -> Lexicon:
    """Read a lexicon YAML (``None``: the bundled :data:`DEFAULT_LEXICON`) and check it.

    Raises:
        InputError: a missing or malformed file or entry, or a phrasing that reuses a word of
            its relation's label (the message names the file, the relation and the phrasing).
    """
    path = Path(path) if path is not None else DEFAULT_LEXICON
    if not path.is_file():
        raise InputError(f"paraphrase lexicon {path} not found; expected a YAML file")
    try:
        raw = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except Exception as err:  # YAML syntax: report it as the user's input
        raise InputError(f"{path}: not a readable YAML file ({type(err).__name__})") from err
    if not isinstance(raw, dict) or not isinstance(raw.get("relations"), dict):
        raise InputError(f"{path}: expected a mapping with a 'relations' mapping")
    entries = {str(r): _entry(path, str(r), v) for r, v in raw["relations"].items()}
    lexicon = Lexicon(str(path), entries)
    bad = lexicon_violations(lexicon)
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise InputError(f"{path}: {bad[0]}{more}; a phrasing must avoid its label's words")
    return lexicon


# ------------------------------------------------------------------ composing a question
def _fill(template: str, x: str, named: bool, mid: bool = False) -> str:
    """``template`` with ``{x}`` replaced by ``x``.

    Args:
        named: ``x`` is an entity name: ``[the movie] {x}`` keeps its bracketed words ("the
            movie Heathers"); otherwise they are dropped ("that movie", not "the movie that
            movie").
        mid: the text goes after ``;`` or ``:``: its first letter is lower-cased, unless it is
            ``x``.
    """
    text = _NAMED_ONLY.sub(r"\1" if named else "", template)
    text = " ".join(text.split())
    if mid and not text.startswith(_HOLE):
        text = text[:1].lower() + text[1:]
    return text.replace(_HOLE, x)


def _pick(rng: random.Random, options: Sequence[str]) -> str:
    return options[rng.randrange(len(options))]


def _noun_chain(
    rng: random.Random,
    hops: Sequence[Phrasings],
    start: str,
    start_named: bool,
    last: bool = False,
) -> tuple[str, bool]:
    """A noun phrase for the end of ``hops`` walked from ``start`` (the topic's name when
    ``start_named``, else a ``ref``), and whether it is nested (a noun phrase rather than
    ``start`` itself).  ``last``: punctuation follows the phrase (see :meth:`Phrasings.nouns`).
    """
    x, nested, named = start, False, start_named
    for hop in hops:
        x = _fill(_pick(rng, hop.nouns(nested, last)), x, named)
        nested, named = True, False
    return x, nested


def _nested(rng: random.Random, hops: Sequence[Phrasings], topic: str) -> str:
    x, nested = _noun_chain(rng, hops[:-1], topic, True)
    return _fill(_pick(rng, hops[-1].asks(nested)), x, named=not nested)


def _clause_first(rng: random.Random, hops: Sequence[Phrasings], topic: str) -> str:
    first = _fill(_pick(rng, hops[0].clause), topic, named=True)
    x, nested = _noun_chain(rng, hops[1:-1], hops[0].ref, False)
    return f"{first}; {_fill(_pick(rng, hops[-1].asks(nested)), x, named=False, mid=True)}"


def _consider(rng: random.Random, hops: Sequence[Phrasings], topic: str) -> str:
    x, _ = _noun_chain(rng, hops[:-1], topic, True, last=True)
    ask = _fill(_pick(rng, hops[-1].ask), hops[-2].ref, named=False, mid=True)
    return f"Consider {x}: {ask}"


def _clause_chain(rng: random.Random, hops: Sequence[Phrasings], topic: str) -> str:
    clauses = [_fill(_pick(rng, hops[0].clause), topic, named=True)]
    clauses += [
        _fill(_pick(rng, h.clause), prev.ref, named=False) for prev, h in pairwise(hops[:-1])
    ]
    ask = _fill(_pick(rng, hops[-1].ask), hops[-2].ref, named=False, mid=True)
    return f"{', and '.join(clauses)}; {ask}"


def _name(rng: random.Random, hops: Sequence[Phrasings], topic: str) -> str:
    return f"Name {_noun_chain(rng, hops, topic, True, last=True)[0]}."


def _chain_refs_distinct(hops: Sequence[Phrasings]) -> bool:
    refs = [h.ref for h in hops[:-1]]
    return len(hops) >= 3 and len(set(refs)) == len(refs)


#: template name -> (whether it fits the hops, composer(rng, hops, topic name) -> text)
TEMPLATES: dict[
    str,
    tuple[Callable[[Sequence[Phrasings]], bool], Callable[..., str]],
] = {
    "nested": (lambda hops: True, _nested),
    "clause_first": (lambda hops: len(hops) >= 2, _clause_first),
    "consider": (lambda hops: len(hops) >= 2, _consider),
    "clause_chain": (_chain_refs_distinct, _clause_chain),
    "name": (lambda hops: True, _name),
}


def _sentence(text: str, topic: str) -> str:
    """``text`` with its first letter capitalised, unless it starts with the topic's name
    (names are written as the KB writes them)."""
    if text.startswith(topic):
        return text
    return text[:1].upper() + text[1:]


def _rng(seed: int, qid: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}/{qid}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _entity_name(kg: KnowledgeGraph, label: str) -> str:
    idx = kg.entities.get(label)
    return kg.entity_name(idx) if idx is not None else label_as_words(label)


@dataclass
class ParaphraseReport:
    """What :func:`paraphrase_with_report` did.

    Attributes:
        kept: questions paraphrased.
        skipped: questions skipped for a relation the lexicon lacks (``skip_uncovered=True``).
        uncovered: those relations -> how many skipped questions use them.
        templates: template name -> how many questions it phrased.
    """

    kept: int = 0
    skipped: int = 0
    uncovered: Counter[str] = field(default_factory=Counter)
    templates: Counter[str] = field(default_factory=Counter)

    def __str__(self) -> str:
        top = ", ".join(f"{r} {n}" for r, n in self.uncovered.most_common(3))
        return f"paraphrase: {self.kept} kept, {self.skipped} skipped" + (
            f" (uncovered: {top})" if top else ""
        )


def _paraphrase(
    question: Question, kg: KnowledgeGraph, lexicon: Lexicon, seed: int, names: str
) -> tuple[Question, str]:
    path = question.gold_path
    if not path:
        raise InputError(f"question {question.id} has no gold path; expected one to paraphrase")
    for (_, _, tail), (head, _, _) in pairwise(path):
        if tail != head:
            raise InputError(
                f"question {question.id}: gold path breaks at {tail!r} -> {head!r}; "
                "expected a chain of triples"
            )
    relations = [r for _, r, _ in path]
    hops = [lexicon[r] for r in relations]
    topic = _entity_name(kg, path[0][0]) if names == "readable" else path[0][0]
    rng = _rng(seed, question.id)
    names = [name for name, (fits, _) in TEMPLATES.items() if fits(hops)]
    rng.shuffle(names)
    for name in names:
        compose = TEMPLATES[name][1]
        for _ in range(ATTEMPTS):
            text = _sentence(compose(rng, hops, topic), topic)
            if not reused_label_words(text, relations, names=[topic]):
                new = Question(
                    question.id + ID_SUFFIX,
                    text,
                    question.answers,
                    question.topic_entities,
                    question.gold_path,
                )
                return new, name
    raise InputError(
        f"question {question.id}: no phrasing of {relations} from {lexicon.path} avoids the "
        "labels' words; add phrasings there"
    )


def paraphrase_with_report(
    questions: Iterable[Question],
    kg: KnowledgeGraph,
    lexicon: Lexicon | None = None,
    *,
    seed: int = 0,
    skip_uncovered: bool = False,
    names: str = "readable",
) -> tuple[list[Question], ParaphraseReport]:
    """:func:`paraphrase_questions` with a :class:`ParaphraseReport`."""
    if names not in NAME_STYLES:
        raise InputError(f"names={names!r}; expected one of {NAME_STYLES}")
    lexicon = lexicon if lexicon is not None else load_lexicon()
    report = ParaphraseReport()
    out: list[Question] = []
    for q in questions:
        missing = [r for _, r, _ in q.gold_path if r not in lexicon]
        if missing:
            if not skip_uncovered:
                raise InputError(
                    f"relation {missing[0]!r} (question {q.id}) has no entry in the paraphrase "
                    f"lexicon {lexicon.path}; add one there or pass skip_uncovered=True"
                )
            report.skipped += 1
            report.uncovered.update(set(missing))
            continue
        new, template = _paraphrase(q, kg, lexicon, seed, names)
        out.append(new)
        report.kept += 1
        report.templates[template] += 1
    return out, report


def paraphrase_questions(
    questions: Iterable[Question],
    kg: KnowledgeGraph,
    lexicon: Lexicon | None = None,
    *,
    seed: int = 0,
    skip_uncovered: bool = False,
    names: str = "readable",
) -> list[Question]:
    """``questions`` re-asked from their gold paths in the lexicon's words.

    Args:
        questions: questions with connected gold paths.
        kg: the graph of the paths (entity names: :meth:`KnowledgeGraph.entity_name`).
        lexicon: relation phrasings (``None``: the bundled :data:`DEFAULT_LEXICON`).
        seed: with each question's id, seeds its template and phrasing draw (``0`` is a seed).
        skip_uncovered: skip a question with a relation the lexicon lacks (counted by
            :func:`paraphrase_with_report`) instead of raising.
        names: ``readable`` (the graph's display name of the topic, spaces for underscores) or
            ``label`` (the topic's label verbatim, as PathQuestion's questions write it).

    Returns:
        the paraphrases in input order: id ``<id>-para``, answers, topic entities and gold path
        unchanged.

    Raises:
        InputError: a question without a connected gold path; a gold-path relation without an
            entry (unless ``skip_uncovered``), naming the relation and the lexicon file; an
            unknown ``names``.
    """
    return paraphrase_with_report(
        questions, kg, lexicon, seed=seed, skip_uncovered=skip_uncovered, names=names
    )[0]
