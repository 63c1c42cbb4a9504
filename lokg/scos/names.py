"""Relation names as a fourth piece of evidence for SCOS (beyond the paper): the name guard
``scos.min_name_cosine``.

Eq. (3) reads the graph alone, and some pairs the graph cannot tell from a split synonym:
``religion.religion.beliefs`` and ``religion.religion.holidays`` share one religion, state no
fact in common and have the same (head type, tail type) distribution (NMI 0.92) and close
TransE vectors (cos 0.93), exactly what one relation split under two names looks like
(docs/design/scos.md "Contradiction").  Their names say what the graph cannot: beliefs are not
holidays.  With ``scos.min_name_cosine`` set, two clusters merge only if the names of their
members mean alike: the cosine of the sentence embeddings of their property words
(:func:`name_words`), at least ``min_name_cosine`` for every pair of members across the two
clusters (complete linkage: every merged pair of relations is then one whose names agree, the
pairs the falsemerge bench counts).

A name's words are those of its property, the label's last hierarchy segment with ``_`` as a
space (``people.person.place_of_birth`` -> "place of birth"), as
:func:`lokg.data.restyle.relation_words` writes a relation with one segment: the domain part
(``people.person``) is already what the NMI term sees through entity types
(:func:`lokg.scos.entity_types.domain_types`), and it is shared by every relation of a type,
so it would raise the cosine of ``beliefs`` and ``holidays`` alike.  A name without a word of
two letters is a code (``r012``, ``P31``): it says nothing, and a pair with a code on either
side is left to the graph (:func:`is_code`); a cluster pair whose member pairs all involve
a code passes.

The embeddings come from the run's sentence encoder (``embedder``; the bundled MiniLM
offline): :func:`name_embeddings` encodes the words once per relation.  The threshold is
embedder-specific, chosen with MiniLM (docs/DESIGN.md, "Name guard").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from lokg.kg.graph import label_as_words

__all__ = ["is_code", "name_cosine", "name_embeddings", "name_words"]

#: hierarchy separators of relation labels (Freebase ``.``, PathQuestion ``__``, ``/``, ``:``),
#: as lokg.data.restyle splits them
_SEGMENT = re.compile(r"__|[./:]")
#: a word of two letters at least: what a name must have not to be a code
_WORD = re.compile(r"[^\W\d_]{2}")


def name_words(label: str) -> str:
    """The property words of a relation label: its last hierarchy segment, ``_`` as spaces.

    ``people.person.place_of_birth`` and ``__people__person__place_of_birth`` give
    ``"place of birth"``; ``gender`` gives ``"gender"``; ``r012`` gives ``"r012"``.
    """
    parts = [p for p in _SEGMENT.split(label) if p.strip("_ ")]
    last = parts[-1] if parts else label
    return " ".join(label_as_words(last).split()) or label


def is_code(label: str) -> bool:
    """True when ``label``'s property has no word of two letters (``r012``, ``P31``)."""
    return _WORD.search(name_words(label)) is None


def name_embeddings(labels: Sequence[str], embedder) -> np.ndarray:
    """``[R, d]`` float64 unit rows: ``embedder`` over :func:`name_words` of each label
    (``embedder``: a :class:`lokg.embed.SentenceEncoder`, or anything with its ``encode``)."""
    words = [name_words(label) for label in labels]
    vecs = np.asarray(embedder.encode(words, kind="passage"), dtype=np.float64)
    if vecs.shape[0] != len(labels):
        raise ValueError(f"the embedder gave {vecs.shape[0]} vectors for {len(labels)} names")
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms > 0, norms, 1.0)


def name_cosine(
    names: np.ndarray, coded: np.ndarray, left: Sequence[int], right: Sequence[int]
) -> float | None:
    """The smallest name cosine between a member of ``left`` and one of ``right`` (relation
    ids), over the pairs where neither name is a code; ``None`` when there is no such pair.

    Args:
        names: ``[R, d]`` unit rows (:func:`name_embeddings`).
        coded: ``[R]`` bool, :func:`is_code` of each relation.
    """
    a = [r for r in left if not coded[r]]
    b = [r for r in right if not coded[r]]
    if not a or not b:
        return None
    return float((names[a] @ names[b].T).min())
