"""Your own questions, answered by a walk, as its next training data: self-training on a KG
with questions and no answers (beyond the paper; issue 40; docs/design/taimr.md item 30).
``data=self_labels data@data.source.base=<your data config> data.source.walk=<a walk>``.

Why: a walk adapted to a KG on generated chain questions (:mod:`lokg.data.kg_chains`,
``experiment=adapt_walk``) knows the KG's relation names but not how *your* questions word
them.  Your questions carry that wording, and their answers are not needed to learn it: the
walk answers them, and it is fine-tuned to follow, for each question, the path it walked
(``python train.py experiment=self_train_walk``).  Where one wording is read right for most
questions, the others that share it are pulled along; run it again from the walk it trained
for a second round.

A self-labelled question is a question of the base set's ``splits`` (default the training
split: the val and test questions a walk is measured on are never trained on, even without
answers) with

- **answers**: the walk's top answer (by default among the paths of the hop count it
  believes: ``path`` below; :class:`~lokg.taimr.walk.retriever.WalkRetriever`), with any
  answer tied with it;
- **gold path**: the path the walk took to it: the walk model is trained to follow a gold
  path's relations at its length, so a self-labelled question teaches the hops the walk took,
  not the shortest path to the answer (without it, a 3-hop question whose answer is one hop
  away by another relation teaches a 1-hop walk: measured on PQ-3H val, Hits@1 0.82 -> 0.43);
- the question's own text and topic entities.  Its gold answers are never read, unless
  ``answered`` says it is one of the questions a user answered: those keep their own.

Which path (``path``): ``length`` (the default, chosen on val) first reads how many hops the
walk believes the question asks for, ``h* = argmax_h P(|p| = h | q)`` from its stop
distribution (under ``normalization="node"``, the beam's mass per length), then labels the
answer with the most mass over the kept paths of ``h*`` hops, with its best such path
(:meth:`~lokg.taimr.walk.retriever.WalkRetriever.answers_at_length`); a question with no
kept path of ``h*`` hops is left out.  ``likeliest`` labels the answer with the highest
``log P(a | q)`` and its most probable path.  Why not that: a most probable path is a short
one (each hop multiplies in a probability below one), so where a question's wording is read
with a flat hop distribution, ``likeliest`` labels a one-hop stop and self-training teaches
the stop (PQL; val Hits@1 after two rounds, likeliest -> length: PQ-2H 0.905 -> 0.968,
PQ-3H 0.931 -> 0.985, PQL-2H 0.886 -> 0.968, PQL-3H 0.680 -> 0.825; taimr.md item 30).
Several topic entities the retriever joins (``retriever.anchors=join``) are labelled
``likeliest``.

A question whose top answer has ``P(a | q) < min_prob``, or which the walk cannot answer,
is left out.  Split: ``val_fraction`` to val (the checkpoint is chosen on self-labelled
questions), the rest to train, none to test.  The graph is the base set's own part (no added
inverse edges: the walk takes every triple both ways), as for :mod:`lokg.data.kg_chains`, so
``retriever=learned`` on the base set finds the walk by itself (the newest adapted one).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lokg.data.kg_chains import SPLITS, base_questions, split_off_val
from lokg.data.sources import DatasetSource, RawDataset
from lokg.errors import InputError
from lokg.retrieval import RetrievedPath
from lokg.taimr.walk.artifact import META_FILE, SELF_LABELS_PREFIX
from lokg.typing import Question

if TYPE_CHECKING:
    from lokg.taimr.walk.retriever import LengthAnswers

__all__ = ["SelfLabelSource", "resolve_newest_walk", "self_label"]

#: answers whose log-probability is within this of the top answer's are tied with it
TIE = 1e-4
#: data.source.path: which answer and path label a question (module doc)
LABEL_PATHS = ("likeliest", "length")
#: data.source.answered: every question that has answers keeps them
ANSWERED_ALL = "all"
#: data.source.walk's default: the newest walk adapted or self-trained on the base set's graph
NEWEST = "newest"


class SelfLabelSource(DatasetSource):
    """The base set's questions, answered and labelled by ``walk`` (module doc).

    Args:
        base: the base dataset, a :class:`~lokg.data.datamodule.KGQADataModule`.
        walk: the walk that answers them: a ``qgat-*`` directory (``experiment=adapt_walk``'s
            or a previous round's; ``train.py`` resolves the config's ``newest`` to one,
            :func:`resolve_newest_walk`).
        name: the dataset's name, always ``self_labels_``-prefixed (default
            ``self_labels_<base name>``): ``retriever=learned`` looks for walks under it.
        splits: the base set's splits whose questions are labelled (default ``[train]``; a
            questions file without answers puts every question in ``test``: ``[test]``
            trains on the very questions you then answer).
        min_prob: least ``P(a | q)`` of a kept question's top answer (0: every answered one).
        path: ``likeliest`` or ``length``: which answer and path label a question (module doc).
        max_hops: the walk's L.  val_fraction: share of the questions in val.  seed: the draw.
        answered: how many of the questions (the first, in the base set's order: the ones
            ``+data.train_limit=N`` trains on) keep their own answers and gold path instead of
            the walk's, for a user who answered a few of their questions (0, the default:
            no gold answer is read); ``all``: every question that has answers keeps them.
    """

    paper_setting = False
    inverse = "never"  # the base graph as given; the base set adds its own at inference

    def __init__(
        self,
        base,
        walk: str | None = None,
        name: str | None = None,
        splits: Sequence[str] = ("train",),
        min_prob: float = 0.0,
        path: str = "length",
        max_hops: int = 3,
        val_fraction: float = 0.1,
        seed: int = 0,
        answered: int | str = 0,
    ):
        if walk is None or not (Path(str(walk)) / META_FILE).is_file():
            said = " (train.py resolves it; here give the directory)" if walk == NEWEST else ""
            raise InputError(
                f"data.source.walk={walk}{said}; expected a trained walk's qgat-* directory "
                "(the one `python train.py experiment=adapt_walk ...` printed)"
            )
        if isinstance(splits, str):
            splits = [splits]
        unknown = [x for x in (splits or []) if x not in SPLITS]
        if not splits or unknown:
            raise InputError(
                f"data.source.splits={list(splits or [])}; expected some of {', '.join(SPLITS)}"
            )
        if not isinstance(min_prob, int | float) or not 0.0 <= min_prob <= 1.0:
            raise InputError(f"data.source.min_prob={min_prob}; expected 0 <= x <= 1")
        if path not in LABEL_PATHS:
            raise InputError(f"data.source.path={path}; expected one of {', '.join(LABEL_PATHS)}")
        if not isinstance(max_hops, int) or max_hops < 1:
            raise InputError(f"data.source.max_hops={max_hops}; expected a whole number >= 1")
        if not isinstance(val_fraction, int | float) or not 0.0 < val_fraction < 1.0:
            raise InputError(f"data.source.val_fraction={val_fraction}; expected 0 < x < 1")
        if answered != ANSWERED_ALL and (
            isinstance(answered, bool) or not isinstance(answered, int) or answered < 0
        ):
            raise InputError(
                f"data.source.answered={answered!r}; expected a whole number >= 0 or {ANSWERED_ALL}"
            )
        self.base = base
        self.walk = Path(str(walk)).resolve()
        name = name or base.source.name
        self.name = name if name.startswith(SELF_LABELS_PREFIX) else SELF_LABELS_PREFIX + name
        self.settings = {
            "splits": sorted(set(splits)), "min_prob": float(min_prob),
            "max_hops": int(max_hops), "val_fraction": float(val_fraction), "seed": int(seed),
        }  # fmt: skip
        if path != "likeliest":  # only then: the labels made before the option keep their name
            self.settings["path"] = path
        if answered:  # likewise
            self.settings["answered"] = answered

    def files(self) -> list[Path]:
        # the walk's weights are what labels the questions: a retrained walk, other labels
        # (its qgat.json records the training's checkpoint path and best val value)
        return [*self.base.source.files(), self.walk / META_FILE]

    def config(self) -> dict:
        walk = f"{self.walk.parent.name}/{self.walk.name}"
        return {**super().config(), "base": self.base.fingerprint(), "walk": walk,
                **self.settings}  # fmt: skip

    def load(self) -> RawDataset:
        from lokg.embed import SentenceEncoder
        from lokg.taimr.walk.retriever import build_learned

        s = self.settings
        dm = self.base
        asked = base_questions(dm, s["splits"])
        if not asked:
            raise InputError(
                f"data.source.splits={s['splits']}: {dm.source.name} has no question there "
                "(a questions file without answers puts every question in test: splits=[test])"
            )
        # by_length off: `likeliest` is the walk's own ranking; anchor_answers as when the
        # labels were measured (taimr.md item 32: `last` for labels is not measured yet, and
        # the cached label sets are keyed by these settings, not by the retriever's)
        retriever = build_learned(
            dm.kg, SentenceEncoder(), self.walk, max_hops=s["max_hops"], fallback="none",
            by_length=False, anchor_answers="scored",
        )  # fmt: skip
        path = s.get("path", "likeliest")
        keep = _answered(asked, s.get("answered", 0))
        labelled = [
            q if i in keep else self_label(retriever, q, s["min_prob"], path)
            for i, q in enumerate(asked)
        ]
        labelled = [q for q in labelled if q is not None]
        if len(labelled) < 2:
            raise InputError(
                f"data.source.walk: it answered {len(labelled)} of {dm.source.name}'s "
                f"{len(asked)} questions with P >= {s['min_prob']}; training needs two at least"
            )
        train, val = split_off_val(labelled, s["val_fraction"], s["seed"])
        gold = f"{len(keep)} with their own answers" if keep else "no gold answer read"
        report = (
            f"{self.name}: {len(labelled)} of {dm.source.name}'s {len(asked)} "
            f"{'/'.join(s['splits'])} questions labelled by {self.walk.parent.name}/"
            f"{self.walk.name} ({path} path; {gold})"
        )
        return RawDataset(dm.kg.own_part(), {"train": train, "val": val, "test": []},
                          presplit=True, reports=[report])  # fmt: skip


def _answered(asked: Sequence[Question], answered: int | str) -> set[int]:
    """The indices of the questions of ``asked`` that keep their own answers (``answered``:
    the first N, or ``all``; only questions that have answers)."""
    upto = len(asked) if answered == ANSWERED_ALL else int(answered)
    return {i for i, q in enumerate(asked[:upto]) if q.answers}


def resolve_newest_walk(cfg) -> None:
    """``data.source.walk=newest`` (the default of ``data=self_labels``) set, in place, to the
    newest walk adapted or self-trained without answers on the base set's graph
    (:func:`~lokg.taimr.walk.artifact.adapted_walk`: the one ``retriever=learned`` would use
    there), so that running ``experiment=self_train_walk`` again starts from the walk the
    last run trained; ``model.init`` follows it (``${data.source.walk}``).  One line names it.

    Raises:
        InputError: no such walk yet (run ``experiment=adapt_walk`` on the KG first).
    """
    import hydra

    from lokg.taimr.walk.artifact import adapted_walk

    source = (cfg.get("data") or {}).get("source") or {}
    if source.get("_target_") != f"{__name__}.SelfLabelSource" or source.get("walk") != NEWEST:
        return
    base = hydra.utils.instantiate(source.base)
    base.prepare_data()
    base.setup("fit")
    walk = adapted_walk(base.artifact_dir.parent, base.kg.own_part().fingerprint())
    if walk is None:
        raise InputError(
            f"data.source.walk=newest: no walk adapted to {base.name}'s graph yet under "
            f"{base.artifact_dir.parent}; run `python train.py experiment=adapt_walk` with the "
            "same data.source.base first, or give data.source.walk=<a qgat-* directory>"
        )
    cfg.data.source.walk = str(walk)
    print(f"self-training from the newest walk adapted to {base.name}: {walk}", flush=True)


def self_label(
    retriever, question: Question, min_prob: float = 0.0, path: str = "length"
) -> Question | None:
    """``question`` labelled by ``retriever`` (a walk): its top answer and any tied with it as
    answers, the top answer's path as gold path (``path``: ``likeliest`` or ``length``, module
    doc); ``None`` when it has no answer, no path, or ``P(a | q) < min_prob`` (under
    ``length``, ``P(a, |p| = h* | q)``).  The question's own answers are not read."""
    asked = dataclasses.replace(question, answers=(), gold_path=())
    at = retriever.answers_at_length(asked) if path == "length" else None
    if at is not None:
        return _label_at_length(at, asked, retriever.kg, min_prob)
    result = retriever.retrieve(asked)  # likeliest, or several anchors joined
    if not result.answers:
        return None
    top = result.answers[0]
    if top.path is None or not top.path.relations or math.exp(top.score) < min_prob:
        return None
    answers = tuple(a.label for a in result.answers if a.score >= top.score - TIE)
    return _labelled(asked, result.kg, answers, top.path)


def _label_at_length(at: LengthAnswers, asked: Question, kg, min_prob: float) -> Question | None:
    """``path="length"``: the answer with the most mass over the beam's paths of the walk's
    believed length, any tied with it, and its best such path."""
    if not at.log_mass:
        return None
    top = max(at.log_mass.values())
    if math.exp(top) < min_prob:
        return None
    mass = at.log_mass
    tied = sorted((a for a, m in mass.items() if m >= top - TIE), key=lambda a: (-mass[a], a))
    return _labelled(asked, kg, tuple(kg.entities.label(a) for a in tied), at.paths[tied[0]])


def _labelled(asked: Question, kg, answers: tuple[str, ...], path: RetrievedPath) -> Question:
    """``asked`` with ``answers`` and ``path``'s triples as its gold path."""
    gold = tuple(
        (kg.entities.label(path.entities[i]), kg.relations.label(path.relations[i]),
         kg.entities.label(path.entities[i + 1]))
        for i in range(len(path.relations))
    )  # fmt: skip
    return dataclasses.replace(asked, answers=answers, gold_path=gold)
