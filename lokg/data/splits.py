"""Deterministic, seeded train/val/test splits that are stable across machines.

PathQuestion has no official split (the IRN paper used a random 8:1:1 split).  We split
by a SHA-256 hash of ``seed`` and a group key, never by Python's ``hash`` or a global RNG, so
the same files and seed give the same split on every machine and in every process, and the
split does not depend on the order of lines in the file.

A group is a connected set of questions (union-find) that share any of their keys:

``group_by="question"`` (the default): two lines are one question when they share the
normalised question text (:func:`normalise_text`) *or* the (topic entities, relation chain)
of their gold path.  PathQuestion writes one line per paraphrase of a path and, in PQL, one
line per answer or intermediate entity of the same question text; grouping by the whole gold
path (entities included, this module's rule before issue 26) put one question text with one
answer set in train and in test (PQL-2H 58 of 160 test questions).  Now no question text and
no (topic, chain) pair appears in two splits.

``group_by="template"``: the relation chain with the topic masked (plus the text key), so
every test chain is one no training question uses: the held-out-template split for
generalisation claims.  A question without a gold path falls back to its text key.

``group_by="topic"``: the sorted topic entities (plus the text key), whatever the path: for
question sets without gold paths whose questions are built from one seed question (CWQ
composes several questions from one WebQSP question about the same topic entity), so no
topic entity set is in two splits.  Stricter than ``question``.

A split with a positive ratio that comes out empty (too few questions, or too few distinct
groups) is an :class:`~lokg.errors.InputError` naming the sizes, never a silent empty
validation or test set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import unicodedata
from collections.abc import Sequence

from lokg.errors import InputError
from lokg.typing import Question

SPLITS = ("train", "val", "test")
GROUP_BY = ("question", "template", "topic")
#: earlier names, accepted with a deprecation line for one release
GROUP_BY_ALIASES = {"path": "question"}

log = logging.getLogger(__name__)


def _resolve(group_by: str) -> str:
    """``group_by`` with an alias replaced (silently), or an
    :class:`~lokg.errors.InputError` naming the key and the accepted values."""
    if group_by in GROUP_BY_ALIASES:
        return GROUP_BY_ALIASES[group_by]
    if group_by not in GROUP_BY:
        raise InputError(f"data.split_group_by={group_by!r}; expected one of {GROUP_BY}")
    return group_by


def canonical_group_by(group_by: str) -> str:
    """``group_by`` with a deprecated alias replaced (one WARNING line), or an
    :class:`~lokg.errors.InputError` naming the key and the accepted values."""
    new = _resolve(group_by)
    if new != group_by:
        log.warning(
            "data.split_group_by=%s is deprecated (it grouped by the whole gold path and let "
            "one question text into two splits); using %s",
            group_by,
            new,
        )
    return new


def check_split_settings(ratios: Sequence[object], group_by: str) -> tuple[float, float, float]:
    """``data.split_ratios`` as three floats and a valid ``data.split_group_by``, or an
    :class:`~lokg.errors.InputError` naming the key and what is expected."""
    _resolve(group_by)
    expected = "expected three non-negative numbers summing to 1 (train, val, test)"
    try:
        values = [float(r) for r in ratios]  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"data.split_ratios={list(ratios)!r}; {expected}") from None
    if (
        len(values) != 3
        or not all(math.isfinite(r) and r >= 0 for r in values)
        or abs(sum(values) - 1.0) > 1e-6
    ):
        raise InputError(f"data.split_ratios={list(ratios)!r}; {expected}")
    return values[0], values[1], values[2]


def normalise_text(text: str) -> str:
    """A question's text as compared for identity: NFKC, case-folded, every run of
    punctuation, underscores and spaces one space (``"Who is X_Y 's wife ?"`` ->
    ``"who is x y s wife"``)."""
    return " ".join(re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).split())


def relation_chain(q: Question) -> tuple[str, ...]:
    """The relations of ``q``'s gold path in order (empty without one)."""
    return tuple(r for _, r, _ in q.gold_path)


def question_keys(q: Question, group_by: str = "question") -> list[str]:
    """The keys that make two lines one group: the normalised text, and the (sorted topic
    entities, relation chain) of the gold path (``question``), the chain alone
    (``template``) or the sorted topic entities alone (``topic``)."""
    keys = [f"text:{normalise_text(q.text)}"]
    if group_by == "topic":
        return [*keys, "topic:" + json.dumps(sorted(q.topic_entities))]
    chain = relation_chain(q)
    if chain:
        if group_by == "template":
            keys.append("template:" + json.dumps(chain))
        else:
            keys.append("chain:" + json.dumps([sorted(q.topic_entities), chain]))
    return keys


def question_groups(
    questions: Sequence[Question], group_by: str = "question"
) -> dict[str, list[int]]:
    """Indices of ``questions`` in connected groups, keyed by the group's smallest key: two
    questions sharing any key of :func:`question_keys` are in one group (union-find, the
    smaller key always the root), so the keys do not depend on the input order."""
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    first_key: list[str] = []
    for q in questions:
        keys = question_keys(q, group_by)
        for k in keys:
            parent.setdefault(k, k)
        root = find(keys[0])
        for k in keys[1:]:
            other = find(k)
            if other != root:  # the smaller key becomes the root: order-independent names
                root, other = min(root, other), max(root, other)
                parent[other] = root
        first_key.append(keys[0])
    members: dict[str, list[int]] = {}
    for i, k in enumerate(first_key):
        members.setdefault(find(k), []).append(i)
    return members


def template_seen_share(train: Sequence[Question], test: Sequence[Question]) -> float | None:
    """The share of ``test`` questions with a gold path whose relation chain (the template,
    topic masked) is also the chain of a ``train`` question; ``None`` when no test question
    has a gold path."""
    seen = {relation_chain(q) for q in train}
    chains = [relation_chain(q) for q in test if q.gold_path]
    if not chains:
        return None
    return sum(c in seen for c in chains) / len(chains)


def split_leaks(splits: dict[str, Sequence[Question]], group_by: str = "question") -> list[str]:
    """The :func:`question_keys` found in more than one split, each as ``"<key> in
    train, test"`` (empty when the split keeps every question in one split)."""
    group_by = _resolve(group_by)
    where: dict[str, set[str]] = {}
    for name, qs in splits.items():
        for q in qs:
            for k in question_keys(q, group_by):
                where.setdefault(k, set()).add(name)
    order = {s: i for i, s in enumerate(SPLITS)}
    return [
        f"{k} in {', '.join(sorted(names, key=lambda s: order.get(s, len(order))))}"
        for k, names in sorted(where.items())
        if len(names) > 1
    ]


def split_questions(
    questions: Sequence[Question],
    ratios: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    group_by: str = "question",
    source: str = "questions",
) -> dict[str, list[Question]]:
    """Split questions into ``train``/``val``/``test`` by hashed groups.

    Groups (:func:`question_groups`) are ordered by ``sha256(f"{seed}:{key}")``, ``key`` the
    group's smallest :func:`question_keys` key, and cut at the cumulative question counts
    closest to ``ratios``; questions keep their input order inside each split.

    Raises:
        InputError: bad ratios or ``group_by``; or a split whose ratio is positive comes out
            empty (the message, prefixed with ``source``, names the sizes and how many
            questions would be enough).
    """
    ratios = check_split_settings(ratios, group_by)
    group_by = _resolve(group_by)
    groups = question_groups(questions, group_by)

    def rank(key: str) -> str:
        return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()

    ordered = sorted(groups, key=rank)
    total = len(questions)
    bounds = (ratios[0] * total, (ratios[0] + ratios[1]) * total)
    assignment: dict[int, str] = {}
    seen = 0
    for key in ordered:
        members = groups[key]
        # assign the whole group by where its midpoint falls
        mid = seen + len(members) / 2
        split = "train" if mid <= bounds[0] else ("val" if mid <= bounds[1] else "test")
        for i in members:
            assignment[i] = split
        seen += len(members)
    out: dict[str, list[Question]] = {s: [] for s in SPLITS}
    for i, q in enumerate(questions):
        out[assignment[i]].append(q)
    _check_nonempty(
        out, ratios, seed=seed, group_by=group_by, num_groups=len(groups), source=source
    )
    return out


def _check_nonempty(
    out: dict[str, list[Question]],
    ratios: tuple[float, float, float],
    *,
    seed: int,
    group_by: str,
    num_groups: int,
    source: str,
) -> None:
    """A split with a positive ratio must hold at least one question."""
    empty = [s for s, r in zip(SPLITS, ratios, strict=True) if r > 0 and not out[s]]
    if not empty:
        return
    total = sum(len(v) for v in out.values())
    # with n >= 1 / r one-question groups, a split of ratio r spans at least one question's
    # width of midpoints, so it gets one: ceil(1 / smallest positive ratio) is enough
    need = math.ceil(1 / min(r for r in ratios if r > 0) - 1e-9)
    sizes = " / ".join(f"{s} {len(out[s])}" for s in SPLITS)
    groups = (
        f" in {num_groups} groups (questions sharing a text or a "
        f"{'relation chain' if group_by == 'template' else 'topic and relation chain'} stay "
        "together)"
    )
    raise InputError(
        f"{source}: {total} questions{groups} give {sizes} with ratios "
        f"{'/'.join(f'{r:g}' for r in ratios)} (seed {seed}, group_by={group_by}); {need} or "
        "more questions in distinct groups give every split with a positive ratio at least "
        "one; or give explicit train/val/test files (data.source.split_paths)"
    )
