"""SCOS's two guards beyond the paper (``scos.min_support``, ``scos.max_split_z``; issue 10),
checked by hand on a graph with one synonym pair, two roles of one event and a pair of
one-triple relations.  With the paper's settings (both guards off) all three merge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lokg.config import compose_config
from lokg.kg.graph import KnowledgeGraph
from lokg.scos import SCOSConfig, SCOSResult, compress
from lokg.scos.merge import _Clusters

# nationality and citizenship: one relation split at random under two names (persons p1-p8,
# each with one country). exported_to and imported_from: two roles of each trade t1-t4, with
# different countries. directed_by and edited_by: one film, one person, the same pair.
SPLIT = [
    ("p1", "nationality", "c1"),
    ("p2", "nationality", "c2"),
    ("p3", "nationality", "c1"),
    ("p4", "nationality", "c2"),
    ("p5", "citizenship", "c1"),
    ("p6", "citizenship", "c2"),
    ("p7", "citizenship", "c1"),
    ("p8", "citizenship", "c2"),
]
ROLES = [(f"t{i}", "exported_to", f"x{i}") for i in range(1, 5)] + [
    (f"t{i}", "imported_from", f"y{i}") for i in range(1, 5)
]
SINGLETONS = [("film", "directed_by", "ann"), ("film", "edited_by", "ann")]
# one direction per pair: cos 1 inside a pair, 0 across pairs
DIRECTION = {
    "nationality": 0,
    "citizenship": 0,
    "exported_to": 1,
    "imported_from": 1,
    "directed_by": 2,
    "edited_by": 2,
}


def _kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(SPLIT + ROLES + SINGLETONS, name="guards")


def _emb(kg: KnowledgeGraph) -> np.ndarray:
    return np.eye(3)[[DIRECTION[label] for label in kg.relations.labels]]


def _state(kg: KnowledgeGraph) -> tuple[_Clusters, dict[str, int]]:
    st = _Clusters(kg, _emb(kg), np.zeros(kg.num_entities, dtype=np.int64))
    return st, {label: i for i, label in enumerate(kg.relations.labels)}


def _groups(result) -> set[frozenset[str]]:
    """The merged groups (clusters of two or more relations), whatever each is named."""
    return {frozenset(m) for m in result.clusters().values() if len(m) > 1}


NAT, TRADE, FILM = (
    frozenset({"nationality", "citizenship"}),
    frozenset({"exported_to", "imported_from"}),
    frozenset({"directed_by", "edited_by"}),
)


def test_split_excess_of_two_roles_by_hand():
    # heads t1-t4 each hold 2 values in the union (m = 2), s = 4/8: a random split would put
    # a trade in both halves with p = 1 - 0.5^2 - 0.5^2 = 0.5, mean 2, variance 4 * 0.25 = 1.
    # All 4 trades are in both, with different countries: z = (4 - 2) / 1 = 2.  Tails are
    # all distinct (m = 1, p = 0) and none is shared: that side adds nothing.
    st, rid = _state(_kg())
    assert st.split_excess(rid["exported_to"], rid["imported_from"]) == pytest.approx(2.0)


def test_split_excess_of_a_random_split_by_hand():
    # heads p1-p8 are in one half each (m = 1, p = 0, none shared): nothing.  Tails c1, c2
    # each have m = 4 heads in the union; p = 1 - 2 * 0.5^4 = 0.875, mean 1.75, variance
    # 2 * 0.875 * 0.125; both are shared with different heads: z = 0.25 / sqrt(0.21875).
    st, rid = _state(_kg())
    z = st.split_excess(rid["nationality"], rid["citizenship"])
    assert z == pytest.approx(0.25 / math.sqrt(0.21875))
    assert z == pytest.approx(0.5345, abs=1e-4)


def test_split_excess_of_one_relation_under_two_names_is_zero():
    # the same pair under two names: the head and the tail are shared with the *same* values
    st, rid = _state(_kg())
    assert st.split_excess(rid["directed_by"], rid["edited_by"]) == 0.0


def test_the_paper_merges_all_three_pairs():
    # entity_types=none: NMI 1 for every pair; cos 1 inside a pair: sim >= 0.4 + 0.3 = 0.7,
    # above theta_base 0.6 (x (1 + 0.15 delta) <= 0.69); across pairs sim <= 0.4 + 0.3 J < 0.6
    kg = _kg()
    result = compress(kg, _emb(kg), entity_types="none", theta_base=0.6)
    assert _groups(result) == {NAT, TRADE, FILM}


def test_min_support_keeps_one_triple_relations_apart():
    kg = _kg()
    result = compress(kg, _emb(kg), entity_types="none", theta_base=0.6, min_support=2)
    assert _groups(result) == {NAT, TRADE}  # 4 pairs each: eligible; the films' 1 pair: not


def test_max_split_z_refuses_two_roles_and_keeps_the_split():
    kg = _kg()
    # z: roles 2.0, split 0.53, same pairs 0
    result = compress(kg, _emb(kg), entity_types="none", theta_base=0.6, max_split_z=1.0)
    assert _groups(result) == {NAT, FILM}
    # at z 2.5 the roles pass again
    loose = compress(kg, _emb(kg), entity_types="none", theta_base=0.6, max_split_z=2.5)
    assert _groups(loose) == {NAT, TRADE, FILM}


def test_guards_apply_to_clusters_formed_by_merging():
    # citizenship2 splits nationality further; once {nationality, citizenship} formed, the
    # new cluster is rescored against it with the guard on
    kg = KnowledgeGraph.from_labeled_triples(
        [*SPLIT, ("p9", "citizenship2", "c1"), ("p10", "citizenship2", "c2")], name="three"
    )
    emb = np.ones((kg.num_relations, 2))
    both = compress(kg, emb, entity_types="none", theta_base=0.6, max_split_z=1.0)
    assert _groups(both) == {NAT | {"citizenship2"}}
    few = compress(kg, emb, entity_types="none", theta_base=0.6, min_support=3)
    assert _groups(few) == {NAT}


def test_guard_settings_are_checked():
    with pytest.raises(ValueError, match="scos.min_support must be an integer >= 1"):
        SCOSConfig(min_support=0)
    with pytest.raises(ValueError, match="scos.min_support must be an integer >= 1"):
        SCOSConfig(min_support=2.5)
    with pytest.raises(ValueError, match="scos.max_split_z must be null or > 0"):
        SCOSConfig(max_split_z=-1.0)


def test_the_paper_config_has_no_guard_and_ours_has_both():
    paper = SCOSConfig.from_mapping(compose_config("train", ["scos=default"], ".").scos)
    ours = SCOSConfig.from_mapping(compose_config("train", ["scos=lokg"], ".").scos)
    assert (paper.min_support, paper.max_split_z) == (1, None)
    assert (ours.min_support, ours.max_split_z) == (5, 3.0)


def test_the_report_shows_what_the_guards_kept_apart(tmp_path):
    kg = _kg()
    result = compress(
        kg, _emb(kg), entity_types="none", theta_base=0.6, min_support=2, max_split_z=1.0
    )
    assert result.below_support == 2  # directed_by, edited_by: one pair each
    (ref,) = result.refused_report
    assert {ref.left[0], ref.right[0]} == {"exported_to", "imported_from"}
    assert ref.split_z == pytest.approx(2.0)
    assert ref.similarity >= ref.threshold
    text = result.format_report()
    assert "2 relations with fewer than 2 distinct (head, tail) pairs kept out of merging" in text
    assert "but split z 2.00 > 1.0" in text
    loaded = SCOSResult.load(result.save(tmp_path / "scos"))
    assert loaded.refused_report == result.refused_report
    assert loaded.below_support == 2
    assert (tmp_path / "scos" / "report.txt").read_text() == text
