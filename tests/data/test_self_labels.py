"""Self-labelled questions (lokg/data/self_labels.py): a set's own questions answered by a
walk, its top answer and the path it took as their labels; the training data of
experiment=self_train_walk, for a KG with questions and no answers."""

from __future__ import annotations

import json
import math
import os

import pytest

from lokg.config import compose_config
from lokg.data.self_labels import SelfLabelSource, resolve_newest_walk, self_label
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.retrieval import RankedAnswer, RetrievalResult, RetrievedPath
from lokg.taimr.walk.artifact import META_FILE, adapted_walk, walk_origin
from lokg.taimr.walk.retriever import LengthAnswers
from lokg.typing import Question

KG = KnowledgeGraph.from_labeled_triples(
    [("ann", "parents", "bob"), ("bob", "born_in", "rome"), ("ann", "born_in", "oslo"),
     ("bob", "lived_in", "rome"), ("bob", "born_in", "milan")]
)  # fmt: skip


class StubWalk:
    """Test double of a walk retriever: returns ``answers`` (label, log P, path labels) for
    every question and records the questions it was asked."""

    def __init__(self, answers):
        self.answers, self.asked = answers, []

    def retrieve(self, question: Question) -> RetrievalResult:
        self.asked.append(question)
        ranked = []
        for label, logp, steps in self.answers:
            ents = [KG.entities.get(steps[0][0]), *(KG.entities.get(t) for _, _, t in steps)]
            rels = tuple(KG.relations.get(r) for _, r, _ in steps)
            path = RetrievedPath(tuple(ents), tuple(range(len(rels))), rels, logp)
            ranked.append(RankedAnswer(KG.entities.get(label), label, logp, path))
        return RetrievalResult(KG, answers=tuple(ranked))


QUESTION = Question("q1", "where was ann 's parent born ?", ("GOLD",), ("ann",),
                    (("ann", "parents", "bob"), ("bob", "born_in", "rome")))  # fmt: skip
TO_ROME = [("ann", "parents", "bob"), ("bob", "born_in", "rome")]
TO_MILAN = [("ann", "parents", "bob"), ("bob", "born_in", "milan")]
TO_OSLO = [("ann", "born_in", "oslo")]


def test_likeliest_labels_a_question_with_the_walks_top_answer_its_ties_and_its_path():
    """P(rome) = P(milan) = 0.4 > P(oslo) = 0.2: both tied answers kept, the top one's two
    hops as gold path (not oslo's one hop); the question's own answers and path are never
    shown to the walk and never kept."""
    walk = StubWalk([("rome", math.log(0.4), TO_ROME), ("milan", math.log(0.4), TO_MILAN),
                     ("oslo", math.log(0.2), TO_OSLO)])  # fmt: skip
    q = self_label(walk, QUESTION, path="likeliest")
    assert (walk.asked[0].answers, walk.asked[0].gold_path) == ((), ())
    assert q.answers == ("rome", "milan") and q.gold_path == tuple(TO_ROME)
    assert (q.id, q.text, q.topic_entities) == (QUESTION.id, QUESTION.text, ("ann",))


def test_a_question_below_min_prob_or_unanswered_is_left_out():
    walk = StubWalk([("oslo", math.log(0.2), TO_OSLO)])
    assert self_label(walk, QUESTION, 0.25, "likeliest") is None
    assert self_label(walk, QUESTION, 0.2, "likeliest").answers == ("oslo",)
    assert self_label(StubWalk([]), QUESTION, path="likeliest") is None


def test_a_missing_walk_or_an_unknown_split_names_the_key(tmp_path):
    with pytest.raises(InputError, match=r"^data\.source\.walk=.*qgat-\* directory"):
        SelfLabelSource(base=None, walk=str(tmp_path))
    (tmp_path / META_FILE).write_text("{}")
    with pytest.raises(InputError, match=r"^data\.source\.splits=\['dev'\]; expected some of"):
        SelfLabelSource(base=None, walk=str(tmp_path), splits=["dev"])
    with pytest.raises(InputError, match=r"^data\.source\.min_prob=2"):
        SelfLabelSource(base=None, walk=str(tmp_path), min_prob=2)
    with pytest.raises(InputError, match=r"^data\.source\.path=shortest; expected one of"):
        SelfLabelSource(base=None, walk=str(tmp_path), path="shortest")


class StubAtLength(StubWalk):
    """Test double of a walk retriever for ``path="length"``: the answers it reaches by paths
    of its believed length (``at``; ``None``: several anchors joined), and ``answers`` for
    ``retrieve`` (:class:`StubWalk`).  How a real walk computes ``at`` is tested in
    tests/taimr/test_walk.py."""

    kg = KG

    def __init__(self, at: LengthAnswers | None, answers=()):
        super().__init__(list(answers))
        self.at = at

    def answers_at_length(self, question: Question) -> LengthAnswers | None:
        self.asked.append(question)
        return self.at


def _at_two_hops(*answers) -> LengthAnswers:
    """LengthAnswers at h* = 2 from (label, P(a, |p| = 2 | q), best path labels)."""
    paths = StubWalk(list(answers)).retrieve(QUESTION).answers
    return LengthAnswers(2, {a.entity: a.score for a in paths}, {a.entity: a.path for a in paths})


def test_length_labels_the_answer_with_most_mass_at_the_believed_length_and_its_best_path():
    """At two hops rome holds 0.3 (its best path born_in), milan 0.15: rome, with that path;
    with min_prob above 0.3, or no path of two hops, left out; the gold answers unread."""
    at = _at_two_hops(("rome", math.log(0.3), TO_ROME), ("milan", math.log(0.15), TO_MILAN))
    walk = StubAtLength(at)
    q = self_label(walk, QUESTION, path="length")
    assert q.answers == ("rome",) and q.gold_path == tuple(TO_ROME)
    assert walk.asked[0].answers == () and walk.asked[0].gold_path == ()
    assert self_label(StubAtLength(at), QUESTION, 0.31, "length") is None
    assert self_label(StubAtLength(LengthAnswers(3, {}, {})), QUESTION, path="length") is None


def test_length_keeps_tied_answers_and_labels_joined_anchors_likeliest():
    """milan and rome tied at 0.2: both, the first by entity id giving the path; a walk that
    joins the question's anchors (``None``) labels its top answer instead."""
    at = _at_two_hops(("milan", math.log(0.2), TO_MILAN), ("rome", math.log(0.2), TO_ROME))
    q = self_label(StubAtLength(at), QUESTION, path="length")
    first = min(("rome", "milan"), key=KG.entities.get)
    assert q.answers == tuple(sorted(("rome", "milan"), key=KG.entities.get))
    assert q.gold_path[-1][2] == first
    joined = StubAtLength(None, [("oslo", math.log(0.5), TO_OSLO)])
    assert self_label(joined, QUESTION, path="length").gold_path == tuple(TO_OSLO)


def test_self_train_walk_starts_from_the_walk_that_labels_and_trains_as_adapt_walk(tmp_path):
    cfg = compose_config(
        "train",
        ["experiment=self_train_walk", "data@data.source.base=pq2h", "data.source.walk=/w/qgat-1"],
        tmp_path,
    )
    assert cfg.data.source._target_ == "lokg.data.self_labels.SelfLabelSource"
    assert list(cfg.data.source.splits) == ["train"] and cfg.data.source.min_prob == 0.0
    assert cfg.model.init == "/w/qgat-1"  # the labelling walk is where training starts
    assert cfg.model.relation_source == "none" and cfg.scos.mode == "off"
    adapt = compose_config("train", ["experiment=adapt_walk"], tmp_path)
    for key in ("encoder_trainable_layers", "relation_source", "min_steps"):
        assert cfg.model[key] == adapt.model[key]
    assert cfg.trainer.max_epochs == adapt.trainer.max_epochs


def _walk_dir(root, dataset: str, init: str, mtime: int, fingerprint: str = "fp1"):
    d = root / dataset / "qgat-abc"
    d.mkdir(parents=True)
    (d / META_FILE).write_text(json.dumps({"kg_fingerprint": fingerprint}))
    (d / "config.yaml").write_text(f"model:\n  init: {init}\n  relation_source: none\n")
    os.utime(d / META_FILE, ns=(mtime, mtime))
    return d


def test_walk_newest_resolves_to_the_last_walk_adapted_to_the_base_graph(tmp_path, capsys):
    """``data.source.walk=newest`` (the default): none adapted yet is one line naming the
    command to run first; then the newest adapted or self-trained walk on the base graph,
    which ``model.init`` follows, so the same command run twice trains two rounds."""
    import hydra

    (tmp_path / "kg.tsv").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in TO_ROME))
    q = {"id": "q1", "question": "where was ann 's parent born ?", "topic_entities": ["ann"]}
    (tmp_path / "q.jsonl").write_text(json.dumps(q) + "\n")
    base = [f"data.source.base.source.kg_path={tmp_path / 'kg.tsv'}",
            f"data.source.base.source.questions_path={tmp_path / 'q.jsonl'}"]  # fmt: skip
    cfg = compose_config("train", ["experiment=self_train_walk", *base], tmp_path)
    assert cfg.data.source.walk == "newest"
    with pytest.raises(
        InputError,
        match=r"^data\.source\.walk=newest: no walk adapted to "
        r"custom's graph yet under .*; run `python train.py experiment=adapt_walk",
    ):
        resolve_newest_walk(cfg)
    dm = hydra.utils.instantiate(cfg.data.source.base)
    dm.prepare_data()
    dm.setup("fit")
    fp, root = dm.kg.own_part().fingerprint(), dm.artifact_dir.parent
    adapted = _walk_dir(root, "kg_chains_custom-1", "pretrained", 1_000, fp)
    _walk_dir(root, "kg_chains_other-2", "pretrained", 3_000, "another graph")
    resolve_newest_walk(cfg)
    assert cfg.data.source.walk == str(adapted) and cfg.model.init == str(adapted)
    assert (
        f"self-training from the newest walk adapted to custom: {adapted}"
        in capsys.readouterr().out
    )


def test_the_newest_walk_trained_without_answers_on_the_kg_is_the_one_used(tmp_path):
    """A self-trained walk (self_labels_*) is found as an adapted one (kg_chains_*), the newer
    first; a walk trained from scratch, or on another graph, is not."""
    adapted = _walk_dir(tmp_path, "kg_chains_x-1", "pretrained", 1_000)
    assert adapted_walk(tmp_path, "fp1") == adapted
    selftrained = _walk_dir(tmp_path, "self_labels_x-2", str(adapted), 2_000)
    _walk_dir(tmp_path, "self_labels_x-3", "scratch", 3_000)
    assert adapted_walk(tmp_path, "fp1") == selftrained
    assert adapted_walk(tmp_path, "fp2") is None
    assert walk_origin(selftrained).endswith("self_labels_x-2/qgat-abc")


def test_answered_questions_keep_their_own_answers_and_the_rest_the_walks(tmp_path, monkeypatch):
    """``data.source.answered=N``: the first N labelled questions (those +data.train_limit=N
    trains on) keep their own answers and gold path, the others get the walk's; ``all``: every
    question with answers keeps them; 0 (absent): none is read."""
    import hydra

    import lokg.embed
    import lokg.taimr.walk.retriever

    (tmp_path / "kg.tsv").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in TO_ROME))
    asked = [
        {"id": f"q{i}", "question": f"where was ann 's parent born ? {i}",
         "topic_entities": ["ann"], "answers": ["rome"], "gold_path": TO_ROME}
        for i in range(3)
    ]  # fmt: skip
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in asked))
    base = [f"data.source.base.source.kg_path={tmp_path / 'kg.tsv'}",
            f"data.source.base.source.questions_path={tmp_path / 'q.jsonl'}",
            "data.source.base.split_ratios=[1.0,0.0,0.0]"]  # fmt: skip
    cfg = compose_config("train", ["experiment=self_train_walk", *base], tmp_path)
    dm = hydra.utils.instantiate(cfg.data.source.base)
    walk = tmp_path / "qgat-w"
    walk.mkdir()
    (walk / META_FILE).write_text("{}")
    at = _at_two_hops(("milan", math.log(0.5), TO_MILAN))
    monkeypatch.setattr(lokg.embed, "SentenceEncoder", lambda: None)
    monkeypatch.setattr(
        lokg.taimr.walk.retriever, "build_learned", lambda *a, **k: StubAtLength(at)
    )

    def labels(answered) -> dict[str, tuple]:
        raw = SelfLabelSource(base=dm, walk=str(walk), answered=answered).load()
        return {
            q.id: (q.answers, q.gold_path)
            for split in ("train", "val") for q in raw.questions[split]
        }  # fmt: skip

    own, walks = (("rome",), tuple(TO_ROME)), (("milan",), tuple(TO_MILAN))
    none_kept = labels(0)  # the base set is set up by the first load
    order = [q.id for q in dm.questions["train"]]
    first = order[0]
    assert len(order) == 3 and none_kept == dict.fromkeys(order, walks)
    assert labels(1) == {q: own if q == first else walks for q in order}
    assert labels("all") == dict.fromkeys(order, own)
    with pytest.raises(InputError, match=r"^data\.source\.answered=-1; expected a whole number"):
        SelfLabelSource(base=dm, walk=str(walk), answered=-1)
