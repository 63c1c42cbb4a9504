"""Deterministic, seeded train/val/test splits that are stable across machines.

PathQuestion has no official split (the IRN paper used a random 8:1:1 split).  We split
by a SHA-256 hash of ``seed`` and a group key, never by Python's ``hash`` or a global RNG, so
the same files and seed give the same split on every machine and in every process, and the
split does not depend on the order of lines in the file.

``group_by="path"`` keeps every paraphrase of one annotated reasoning path (same topic
entity, relations and answer) in one split: PathQuestion generates several paraphrases per
path, and a question-level split would put paraphrases of a test path in the training set.
``group_by="question"`` is the IRN-style question-level split.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from lokg.typing import Question

SPLITS = ("train", "val", "test")
GROUP_BY = ("path", "question")


def _group_key(q: Question, group_by: str) -> str:
    if group_by == "path" and q.gold_path:
        return json.dumps([list(t) for t in q.gold_path])
    return f"id:{q.id}"


def split_questions(
    questions: Sequence[Question],
    ratios: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    group_by: str = "path",
) -> dict[str, list[Question]]:
    """Split questions into ``train``/``val``/``test`` by hashed groups.

    Groups are ordered by ``sha256(f"{seed}:{key}")`` and cut at the cumulative question
    counts closest to ``ratios``; questions keep their input order inside each split.
    """
    if group_by not in GROUP_BY:
        raise ValueError(f"split.group_by={group_by!r}; expected one of {GROUP_BY}")
    if len(ratios) != 3 or any(r < 0 for r in ratios) or abs(sum(ratios) - 1.0) > 1e-6:
        raise ValueError(
            f"split.ratios={list(ratios)}; expected three non-negative numbers summing to 1"
        )
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
    return out
