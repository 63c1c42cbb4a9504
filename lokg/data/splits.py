"""Deterministic, seeded train/val/test splits that are stable across machines.

PathQuestion has no official split (the IRN paper used a random 8:1:1 split).  We split
by a SHA-256 hash of ``seed`` and a group key, never by Python's ``hash`` or a global RNG, so
the same files and seed give the same split on every machine and in every process, and the
split does not depend on the order of lines in the file.

``group_by="path"`` keeps every paraphrase of one annotated reasoning path (same topic
entity, relations and answer) in one split: PathQuestion generates several paraphrases per
path, and a question-level split would put paraphrases of a test path in the training set.
``group_by="question"`` is the IRN-style question-level split.

A split with a positive ratio that comes out empty (too few questions, or too few distinct
gold paths) is an :class:`~lokg.errors.InputError` naming the sizes, never a silent empty
validation or test set.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence

from lokg.errors import InputError
from lokg.typing import Question

SPLITS = ("train", "val", "test")
GROUP_BY = ("path", "question")


def check_split_settings(ratios: Sequence[object], group_by: str) -> tuple[float, float, float]:
    """``data.split_ratios`` as three floats and a valid ``data.split_group_by``, or an
    :class:`~lokg.errors.InputError` naming the key and what is expected."""
    if group_by not in GROUP_BY:
        raise InputError(f"data.split_group_by={group_by!r}; expected one of {GROUP_BY}")
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


def _group_key(q: Question, group_by: str) -> str:
    if group_by == "path" and q.gold_path:
        return json.dumps([list(t) for t in q.gold_path])
    return f"id:{q.id}"


def split_questions(
    questions: Sequence[Question],
    ratios: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    group_by: str = "path",
    source: str = "questions",
) -> dict[str, list[Question]]:
    """Split questions into ``train``/``val``/``test`` by hashed groups.

    Groups are ordered by ``sha256(f"{seed}:{key}")`` and cut at the cumulative question
    counts closest to ``ratios``; questions keep their input order inside each split.

    Raises:
        InputError: bad ratios or ``group_by``; or a split whose ratio is positive comes out
            empty (the message, prefixed with ``source``, names the sizes and how many
            questions would be enough).
    """
    ratios = check_split_settings(ratios, group_by)
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(_group_key(q, group_by), []).append(i)

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
    _check_nonempty(out, ratios, seed, group_by, len(groups), source)
    return out


def _check_nonempty(
    out: dict[str, list[Question]],
    ratios: tuple[float, float, float],
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
    groups = ""
    if group_by == "path":
        groups = f" in {num_groups} groups (questions with the same gold path stay together)"
    raise InputError(
        f"{source}: {total} questions{groups} give {sizes} with ratios "
        f"{'/'.join(f'{r:g}' for r in ratios)} (seed {seed}, group_by={group_by}); {need} or "
        "more questions in distinct groups give every split with a positive ratio at least "
        "one; or give explicit train/val/test files (data.source.split_paths)"
    )
