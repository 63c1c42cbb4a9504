"""The three renderings of a triple (Sec. 2.4, "multi-granularity encoding") and the naive one.

A rendered triple is one line: its three components in the encoding order of Eq. (8), joined
by a separator, ending in ``"\\n"``.  The context sent to the LLM is the concatenation of the
lines, so a line's cost ``c(t, k)`` of Eq. (9) is the token count of the line *with* its
newline.  Components never contain a line break, so with cl100k_base the tokens of the
concatenation are exactly the tokens of the lines (no BPE piece crosses a ``"\\n"`` that is
followed by a non-space character); the encoder checks the total anyway.

One fact is always exactly one line, whatever the labels hold (:func:`one_line`): in names,
types, descriptions and aliases whitespace runs (line breaks, U+2028/U+2029 included) collapse
to one space; then in every component a remaining line break or control character is written
as an escape (``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\u2028`` — raw labels such as the verbose
``id:`` keep their line breaks this way, visibly), and the separator's text is preceded by a
backslash (``AC\\|DC`` for ``" | "``), so ``line.split(separator)`` always gives the three
components.  Ordinary labels render unchanged.

Granularities (paper: compact = key identifiers / core name; balanced = name, type, main
description; verbose = everything, aliases and extra attributes included):

============  ========================================  =====================================
granularity   entity                                    relation
============  ========================================  =====================================
compact       name                                      last segment of the label
balanced      name (type; first sentence of description) last two segments
verbose       name (type; aka aliases; description;      all segments
              extra attributes; id: raw label)
============  ========================================  =====================================

Where the KG has no attributes (PathQuestion), ``type`` is derived from the graph: the short
name of the entity's most frequent incoming relation (``"nationality"`` for a country reached
by ``nationality`` edges), and the raw label stands in as the identifier alias.  Relation
labels are split into segments on ``__``, ``.`` and ``/`` (Freebase paths such as
``__film__cinematographer__film`` or ``people.person.gender``), underscores read as spaces;
after SCOS the label of a merged relation is its cluster's label and is treated the same way.

The naive encoding (the "w/o ITTC" uniform template and the T_naive of TCR) renders every
triple in (s, r, o) order with entity names and the full relation name, in the same line
format.

A grouped line (:meth:`TripleRenderer.grouped_line`, beyond the paper, issue 28 §4;
:mod:`lokg.ittc.group`) states the triples (s, r, o_1) .. (s, r, o_m) sharing a subject and a
relation in one line: s and r once, and in the object's slot of the order the objects joined
by :data:`OBJECT_JOINER` (``"; "``), every component at one granularity
(``Keanu Reeves | acted in | The Matrix; Speed`` in order ``sro``).  It is still three
components, so ``line.split(separator)`` still gives them; the list itself is not escaped
(a verbose object holds ``"; "`` in its parentheses), and nothing parses it back: the
encoder's record says which triples each line states (``EncodedUnits.line_index``).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence

import numpy as np

from lokg.kg.graph import KnowledgeGraph
from lokg.kg.io import CONTROL_CHARACTERS

__all__ = ["GRANULARITIES", "OBJECT_JOINER", "TripleRenderer", "one_line", "relation_segments"]

#: The K = 3 granularities, k = 0, 1, 2 in the arrays of :mod:`lokg.ittc.mckp`.
GRANULARITIES = ("compact", "balanced", "verbose")
#: Between the objects of a grouped line (:meth:`TripleRenderer.grouped_line`).
OBJECT_JOINER = "; "
_SEGMENT_SPLIT = re.compile(r"__|[./]")
_WS = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _clean(text: str) -> str:
    """One line, single spaces, no leading/trailing whitespace."""
    return _WS.sub(" ", text).strip()


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def one_line(text: str, separator: str = " | ") -> str:
    """``text`` as one component of a rendered line: line breaks and control characters
    escaped (``"a\\nb"`` -> ``"a\\\\nb"``), and the separator's text (``|`` of ``" | "``) preceded
    by a backslash, so the component holds neither a line break nor the separator."""
    out = CONTROL_CHARACTERS.sub(_escape, text)
    core = separator.strip()
    return out.replace(core, "\\" + core) if core else out


def _humanise(text: str) -> str:
    return _clean(text.replace("_", " "))


def relation_segments(label: str) -> list[str]:
    """Readable segments of a relation label (``"__film__cinematographer__film"`` -> 3)."""
    parts = [_humanise(p) for p in _SEGMENT_SPLIT.split(label)]
    parts = [p for p in parts if p]
    return parts or [_humanise(label) or label]


class TripleRenderer:
    """Deterministic strings for triples at each granularity.

    Args:
        separator: string between the three components of a line (default ``" | "``).
        max_aliases: at most this many aliases in a verbose entity.
    """

    def __init__(self, separator: str = " | ", max_aliases: int = 3):
        core = separator.strip()
        if (
            not separator
            or CONTROL_CHARACTERS.search(separator.replace("\t", ""))
            or (core and not separator[0].isspace())
            or (not core and set(separator) != {"\t"})
        ):
            raise ValueError(
                f"separator must be a non-empty one-line string, got {separator!r}; expected "
                "text with whitespace before it (' | ', ' ; ', ' -> ') or tabs, so that a "
                "label holding it can be escaped"
            )
        if max_aliases < 0:
            raise ValueError(f"max_aliases must be >= 0, got {max_aliases}")
        self.separator = separator
        self.max_aliases = max_aliases
        self._derived_types: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # ------------------------------------------------------------------ components
    def derived_types(self, kg: KnowledgeGraph) -> list[str | None]:
        """``[E]`` per-entity type from the graph: short name of the most frequent incoming
        relation (ties: the smallest relation id); None for an entity with no incoming edge.
        Only the KG's own triples count (``own_part``): an added ``r (inverse)`` edge is no
        evidence of what its tail is."""
        cached = self._derived_types.get(kg)
        if cached is not None:
            return cached
        out: list[str | None] = [None] * kg.num_entities
        tri = kg.own_part().unique_triples()
        if len(tri):
            key = tri[:, 2] * kg.num_relations + tri[:, 1]
            pairs, counts = np.unique(key, return_counts=True)
            ent, rel = pairs // kg.num_relations, pairs % kg.num_relations
            # sort by entity, then count descending, then relation ascending: first row wins
            order = np.lexsort((rel, -counts, ent))
            first = np.ones(len(order), dtype=bool)
            first[1:] = ent[order][1:] != ent[order][:-1]
            for e, r in zip(ent[order][first], rel[order][first], strict=True):
                out[int(e)] = relation_segments(kg.relations.label(int(r)))[-1]
        self._derived_types[kg] = out
        return out

    def _entity_type(self, kg: KnowledgeGraph, e: int) -> str | None:
        attrs = kg.attributes
        if attrs is not None and attrs.types is not None:
            t = attrs.types[e]
            return _clean(t) if t else None
        return self.derived_types(kg)[e]

    def entity_text(self, kg: KnowledgeGraph, e: int, granularity: str) -> str:
        """The entity ``e`` at ``granularity`` (one of :data:`GRANULARITIES`), one line."""
        return one_line(self._entity_text(kg, e, granularity), self.separator)

    def _entity_text(self, kg: KnowledgeGraph, e: int, granularity: str) -> str:
        name = _clean(kg.entity_name(e)) or kg.entities.label(e)
        if granularity == "compact":
            return name
        attrs = kg.attributes
        etype = self._entity_type(kg, e)
        desc = None
        if attrs is not None and attrs.descriptions is not None and attrs.descriptions[e]:
            desc = _clean(attrs.descriptions[e])
        parts: list[str] = []
        if granularity == "balanced":
            if etype:
                parts.append(etype)
            if desc:
                parts.append(_SENTENCE_END.split(desc, maxsplit=1)[0])
        elif granularity == "verbose":
            if etype:
                parts.append(etype)
            aliases: list[str] = []
            if attrs is not None and attrs.aliases is not None:
                aliases = [_clean(a) for a in attrs.aliases[e] or () if _clean(a)]
            aliases = [a for a in aliases if a != name][: self.max_aliases]
            if aliases:
                parts.append("aka " + ", ".join(aliases))
            if desc:
                parts.append(desc)
            if attrs is not None:
                for key in sorted(attrs.extra):
                    value = attrs.extra[key][e]
                    if value:
                        parts.append(f"{_humanise(key)}: {_clean(value)}")
            label = kg.entities.label(e)
            if label != name:
                parts.append(f"id: {label}")
        else:
            raise ValueError(f"granularity {granularity!r} is not one of {list(GRANULARITIES)}")
        return f"{name} ({'; '.join(parts)})" if parts else name

    def relation_text(self, kg: KnowledgeGraph, r: int, granularity: str) -> str:
        """The relation ``r`` at ``granularity``: last, last two, or all label segments."""
        segs = relation_segments(kg.relations.label(r))
        if granularity == "compact":
            text = segs[-1]
        elif granularity == "balanced":
            text = " ".join(segs[-2:])
        elif granularity == "verbose":
            text = " ".join(segs)
        else:
            raise ValueError(f"granularity {granularity!r} is not one of {list(GRANULARITIES)}")
        return one_line(text, self.separator)

    # ------------------------------------------------------------------ lines
    def line(self, kg: KnowledgeGraph, triple: Sequence[int], order: str, granularity: str) -> str:
        """One rendered triple, components in ``order`` (e.g. ``"rso"``), ending in ``"\\n"``."""
        s, r, o = (int(x) for x in triple)
        text = {
            "s": self.entity_text(kg, s, granularity),
            "r": self.relation_text(kg, r, granularity),
            "o": self.entity_text(kg, o, granularity),
        }
        return self.separator.join(text[c] for c in order) + "\n"

    def lines(
        self, kg: KnowledgeGraph, triples: np.ndarray, order: str, granularity: str
    ) -> list[str]:
        """Rendered lines of ``triples [N, 3]`` at one granularity."""
        return [self.line(kg, t, order, granularity) for t in triples]

    def grouped_line(
        self,
        kg: KnowledgeGraph,
        subject: int,
        relation: int,
        objects: Sequence[int],
        order: str,
        granularity: str,
    ) -> str:
        """The triples ``(subject, relation, o)`` for ``o`` in ``objects`` as one line: the
        components in ``order``, the objects (in the given order) joined by
        :data:`OBJECT_JOINER` in the object's slot, every component at ``granularity``, ending
        in ``"\\n"`` (``"Keanu Reeves | acted in | The Matrix; Speed\\n"`` for ``"sro"``).
        With one object it is :meth:`line` of that triple."""
        text = {
            "s": self.entity_text(kg, int(subject), granularity),
            "r": self.relation_text(kg, int(relation), granularity),
            "o": OBJECT_JOINER.join(self.entity_text(kg, int(o), granularity) for o in objects),
        }
        return self.separator.join(text[c] for c in order) + "\n"

    def naive_line(self, kg: KnowledgeGraph, triple: Sequence[int]) -> str:
        """Uniform template: ``name(s) | full relation | name(o)``, in (s, r, o) order."""
        s, r, o = (int(x) for x in triple)
        parts = (
            _clean(kg.entity_name(s)) or kg.entities.label(s),
            " ".join(relation_segments(kg.relations.label(r))),
            _clean(kg.entity_name(o)) or kg.entities.label(o),
        )
        return self.separator.join(one_line(p, self.separator) for p in parts) + "\n"

    def naive_lines(self, kg: KnowledgeGraph, triples: np.ndarray) -> list[str]:
        return [self.naive_line(kg, t) for t in triples]

    def __repr__(self) -> str:
        return f"TripleRenderer(separator={self.separator!r}, max_aliases={self.max_aliases})"
