"""Relation linking: the possessive order rule, prototypes and the training chain prior."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lokg.taimr.linking import RelationLinker, relation_readable_names, split_mentions
from lokg.typing import Question


@pytest.mark.parametrize(
    ("question", "mentions"),
    [
        ("which nationality is frederica_of_x 's couple ?", ["couple", "nationality"]),
        ("the parent of anna_of_y 's son ?", ["son", "parent"]),
        ("what is the parent of son of anna_of_y ?", ["son", "parent"]),
        ("what is the z 's other half 's father 's place of birth ?",
         ["other half", "father", "place of birth"]),
        ("what is the name of the place of birth of mother of z 's child ?",
         ["child", "mother", "place of birth"]),
    ],
)  # fmt: skip
def test_possessive_order_rule(question, mentions):
    topic = next(w for w in question.split() if w[:2] in ("fr", "an", "z"))
    got, ordered = split_mentions(question, topic, protect=["place of birth"])
    assert ordered and got == mentions


def test_unknown_topic_gives_one_unordered_mention():
    assert split_mentions("who is bob 's wife ?", "carol") == (["bob 's wife"], False)


def test_readable_names():
    assert relation_readable_names("place_of_birth") == ["place of birth"]
    assert relation_readable_names("__people__person__gender") == [
        "people person gender",
        "gender",
    ]


def test_hop_distributions_are_softmax_of_cosines(family, embedder):
    linker = RelationLinker(family, embedder, temperature=0.5)
    chain = linker.link("which nationality is alice 's couple ?", "alice")
    assert chain.mentions == ("couple", "nationality")
    rels = family.relations
    # "couple" is the spouse axis: cos = 1 with "spouse", 0 with the other two relations.
    z = math.exp(1 / 0.5) + 2.0
    assert math.isclose(math.exp(chain.log_probs[0, rels["spouse"]]), math.exp(2) / z)
    assert math.isclose(math.exp(chain.log_probs[1, rels["nationality"]]), math.exp(2) / z)
    assert np.allclose(np.exp(chain.log_probs).sum(1), 1.0)
    # a 2-hop chain pays nothing extra; a 1-hop chain pays 1/R for the unmatched mention
    two = [rels["spouse"], rels["nationality"]]
    assert math.isclose(
        chain.hop_chain_log_prob(two), chain.log_probs[0, two[0]] + chain.log_probs[1, two[1]]
    )
    one = [rels["spouse"]]
    assert math.isclose(chain.hop_chain_log_prob(one), chain.log_probs[0, one[0]] - math.log(3))


def test_fit_adds_prototypes_and_chain_prior(family, embedder):
    linker = RelationLinker(family, embedder, knn_k=1)
    train = [
        Question("q1", "what is bob 's kid ?", ("carol",), ("bob",),
                 (("bob", "children", "carol"),)),
    ]  # fmt: skip
    before = linker.num_prototypes
    assert linker.fit(train) == 1  # "kid" -> children
    assert linker.num_prototypes == before + 1
    chain = linker.link("what is alice 's kid ?", "alice")
    assert chain.chain_probs == {(family.relations["children"],): 1.0}
    c = (family.relations["children"],)
    p_hop = math.exp(chain.hop_chain_log_prob(c))
    assert math.isclose(chain.chain_log_prob(c, 0.9), math.log(0.9 + 0.1 * p_hop))


def test_bad_temperature(family, embedder):
    with pytest.raises(ValueError, match="link_temperature"):
        RelationLinker(family, embedder, temperature=0.0)
