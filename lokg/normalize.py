"""Answer normalisation and matching: the one implementation every metric uses.

Two strings denote the same answer when their normal forms (``normalize_answer``) are
equal. The normal form

1. applies Unicode NFKC and lower-cases,
2. turns underscores into spaces (KG labels such as ``united_kingdom``),
3. replaces every punctuation character (Unicode category ``P*``) and symbol
   (``S*``) by a space,
4. drops the English articles ``a``, ``an``, ``the`` as whole words,
5. collapses runs of whitespace into one space and strips the ends;
6. an answer made only of punctuation and symbols (PathQuestion-Large has an entity
   labelled ``.``) would be empty after 3: it keeps its NFKC, lower-cased,
   whitespace-collapsed form instead, so it still matches itself and nothing else.

This is the SQuAD-style normalisation extended with underscores, which KG labels use
as word separators. Punctuation becomes a space rather than vanishing so that
``mecklenburg-strelitz`` and ``mecklenburg strelitz`` match and ``o'neil`` does not
fuse into a different word with a neighbour.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_ARTICLES = frozenset({"a", "an", "the"})
_SPACE = re.compile(r"\s+")


def _is_separator(ch: str) -> bool:
    return ch == "_" or unicodedata.category(ch)[0] in ("P", "S")


def normalize_answer(text: str) -> str:
    """Normal form of an answer string (see the module docstring for the rules).

    >>> normalize_answer("The United_Kingdom.")
    'united kingdom'
    """
    if not isinstance(text, str):
        raise TypeError(f"normalize_answer expects a str, got {type(text).__name__}")
    text = unicodedata.normalize("NFKC", text).lower()
    spaced = "".join(" " if _is_separator(ch) else ch for ch in text)
    words = [w for w in _SPACE.split(spaced) if w and w not in _ARTICLES]
    if not words and not any(ch.isalnum() for ch in text):  # rule 6: punctuation only
        return " ".join(_SPACE.split(text.strip()))
    return " ".join(words)


def spelling_key(text: str) -> str:
    """The key under which two spellings of one entity are equal: NFKC, case-folded,
    underscores as spaces, whitespace runs collapsed, ends stripped (``"Keanu_Reeves "`` and
    ``"keanu reeves"`` -> ``"keanu reeves"``). Weaker than :func:`normalize_answer`: articles
    and punctuation stay (``The Who`` is not ``Who``), so only what differs in case,
    underscores or whitespace shares a key (candidate answers, lokg/retrieval.py).
    """
    text = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
    return " ".join(text.split())


def normalize_set(answers: Iterable[str]) -> list[str]:
    """Normal forms of ``answers``, first occurrence kept, order preserved, empties dropped."""
    seen: dict[str, None] = {}
    for a in answers:
        n = normalize_answer(a)
        if n:
            seen.setdefault(n, None)
    return list(seen)


def answers_match(prediction: str, gold: str) -> bool:
    """Whether ``prediction`` and ``gold`` have the same non-empty normal form."""
    p = normalize_answer(prediction)
    return bool(p) and p == normalize_answer(gold)


def text_contains_answer(text: str, answer: str) -> bool:
    """Whether ``answer`` occurs in ``text`` as a run of whole normalised words.

    Used for answer coverage (a gold answer appears in the injected context): ``"uk"``
    is not found inside ``"ukraine"``, but ``united_kingdom`` is found in
    ``"(x, nationality, united_kingdom)"``.
    """
    needle = normalize_answer(answer)
    if not needle:
        return False
    if not any(ch.isalnum() for ch in needle):  # rule 6: a punctuation-only answer is
        haystack = " ".join(_SPACE.split(unicodedata.normalize("NFKC", text).lower()))
        return f" {needle} " in f" {haystack} "  # found as whitespace-separated words
    haystack = normalize_answer(text)
    return f" {needle} " in f" {haystack} "
