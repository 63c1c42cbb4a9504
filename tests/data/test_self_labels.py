"""Self-labelled questions (lokg/data/self_labels.py): a set's own questions answered by a
walk, its top answer and the path it took as their labels; the training data of
experiment=self_train_walk, for a KG with questions and no answers."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from lokg.config import compose_config
from lokg.data.self_labels import SelfLabelSource, self_label
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.retrieval import RankedAnswer, RetrievalResult, RetrievedPath
from lokg.taimr.walk.artifact import META_FILE, adapted_walk, walk_origin
from lokg.taimr.walk.retriever import length_log_probs
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


def test_the_walks_length_belief_is_read_off_its_stop_distribution():
    """P_1(stop) = 0.1, P_2(stop) = 0.5, forced at L: P(|p| = 1) = 0.1,
    P(|p| = 2) = 0.9 * 0.5 = 0.45, P(|p| = 3) = 0.9 * 0.5 = 0.45; with L = 2, 0.1 and 0.9."""
    stop = np.log([0.7, 0.1, 0.5])  # entry 0 unused
    assert np.exp(length_log_probs(stop, 3)) == pytest.approx([0.1, 0.45, 0.45])
    assert np.exp(length_log_probs(stop, 2)) == pytest.approx([0.1, 0.9])


class StubBeam:
    """Test double of a walk retriever for ``path="length"``: the beam's kept paths
    (end label, log P(p | q), path labels) and the walk's length belief (``None``: node
    normalisation)."""

    anchors, max_hops, kg = "join", 3, KG

    def __init__(self, paths, lengths):
        self.paths, self.lengths = paths, lengths

    def beam_paths(self, question: Question) -> list[RetrievedPath]:
        return [StubWalk([p]).retrieve(question).answers[0].path for p in self.paths]

    def length_log_probs(self, question: Question):
        return None if self.lengths is None else np.log(self.lengths)


TO_ROME_LIVED = [("ann", "parents", "bob"), ("bob", "lived_in", "rome")]
#: oslo's one hop is the likeliest path, rome has the most mass at two hops
BEAM = [("oslo", math.log(0.3), TO_OSLO), ("rome", math.log(0.2), TO_ROME),
        ("milan", math.log(0.15), TO_MILAN), ("rome", math.log(0.1), TO_ROME_LIVED)]  # fmt: skip


def test_length_labels_the_answer_with_most_mass_at_the_walks_most_probable_length():
    """The walk believes two hops (0.7): rome (0.2 + 0.1 = 0.3 at two hops) over milan
    (0.15), its best two-hop path (born_in) as gold path; oslo's likelier one hop is not
    taken.  Believing one hop, oslo; believing three, no kept path: left out."""
    q = self_label(StubBeam(BEAM, [0.2, 0.7, 0.1]), QUESTION, path="length")
    assert q.answers == ("rome",) and q.gold_path == tuple(TO_ROME)
    q = self_label(StubBeam(BEAM, [0.6, 0.3, 0.1]), QUESTION, path="length")
    assert q.answers == ("oslo",) and q.gold_path == tuple(TO_OSLO)
    assert self_label(StubBeam(BEAM, [0.1, 0.2, 0.7]), QUESTION, path="length") is None
    assert self_label(StubBeam(BEAM, [0.2, 0.7, 0.1]), QUESTION, 0.31, "length") is None


def test_length_under_node_normalisation_reads_the_beams_mass_per_length():
    """No length belief: one hop holds 0.3 of the beam's mass, two hops 0.45: rome."""
    q = self_label(StubBeam(BEAM, None), QUESTION, path="length")
    assert q.answers == ("rome",) and q.gold_path == tuple(TO_ROME)


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


def _walk_dir(root, dataset: str, init: str, mtime: int):
    d = root / dataset / "qgat-abc"
    d.mkdir(parents=True)
    (d / META_FILE).write_text(json.dumps({"kg_fingerprint": "fp1"}))
    (d / "config.yaml").write_text(f"model:\n  init: {init}\n  relation_source: none\n")
    os.utime(d / META_FILE, ns=(mtime, mtime))
    return d


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
