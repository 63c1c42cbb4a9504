"""SCOS's contradiction signal (issue 30, beyond the paper): checked by hand on five films
whose director and writer agree on one, and on a relation split under two names.

directed_by / written_by (the issue's false merge): films f1-f3 carry both, f4 has a director
only and f5 a writer only.

    f1: directed_by {ann}       written_by {ann}          agree (ann directed and wrote f1)
    f2: directed_by {bob}       written_by {carl}         differ
    f3: directed_by {dan}       written_by {dan, eve}     differ (dan co-wrote)
    f4: directed_by {fay}       -
    f5: -                       written_by {gus}

H = {f1, f2, f3} (3 shared heads), 2 differ, and the two state (f1, ann) and (f3, dan) both:
2 facts in common, so c(directed_by, written_by) = 2 / 3.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from lokg.config import compose_config
from lokg.kg.graph import KnowledgeGraph
from lokg.manifest import MANIFEST
from lokg.scos import SCOSConfig, SCOSResult, compress
from lokg.scos.contradiction import Contradiction, contradiction, example_heads, flip_keys
from lokg.train_stages import warn_contradicted_merges, warn_threshold

FILMS = [
    ("f1", "directed_by", "ann"),
    ("f1", "written_by", "ann"),
    ("f2", "directed_by", "bob"),
    ("f2", "written_by", "carl"),
    ("f3", "directed_by", "dan"),
    ("f3", "written_by", "dan"),
    ("f3", "written_by", "eve"),
    ("f4", "directed_by", "fay"),
    ("f5", "written_by", "gus"),
]
# one genre relation split under two names: each (book, genre) fact recorded once, under one
# name; b1 has two genres, one under each name
SPLIT = [("b1", "genre", "g1"), ("b1", "category", "g2"), ("b2", "genre", "g1")]


def _keys(kg: KnowledgeGraph, relation: str) -> np.ndarray:
    tr = kg.unique_triples()
    own = tr[tr[:, 1] == kg.relations[relation]]
    return np.sort(own[:, 0] * kg.num_entities + own[:, 2])


def _films() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(FILMS, name="films")


def test_contradiction_of_director_and_writer_by_hand():
    kg = _films()
    c = contradiction(_keys(kg, "directed_by"), _keys(kg, "written_by"), kg.num_entities)
    assert c == Contradiction(shared_heads=3, differing_heads=2, common_facts=2)
    assert c.rate == pytest.approx(2 / 3)
    assert c.describe() == "0.67 (2 of 3 shared heads differ, 2 facts in common)"
    # symmetric, and a relation against itself agrees everywhere
    back = contradiction(_keys(kg, "written_by"), _keys(kg, "directed_by"), kg.num_entities)
    assert back == c
    same = contradiction(_keys(kg, "written_by"), _keys(kg, "written_by"), kg.num_entities)
    assert (same.rate, same.shared_heads, same.common_facts) == (0.0, 4, 5)


def test_a_split_relation_is_not_contradicted():
    # b1 is the one shared head and its tails differ ({g1} against {g2}), but the two names
    # state no fact in common: what a split gives by construction, so c = 0 (raw share 1)
    kg = KnowledgeGraph.from_labeled_triples(SPLIT, name="split")
    c = contradiction(_keys(kg, "genre"), _keys(kg, "category"), kg.num_entities)
    assert (c.shared_heads, c.differing_heads, c.common_facts) == (1, 1, 0)
    assert (c.rate, c.raw_share, c.applies) == (0.0, 1.0, False)
    assert c.describe() == "0.00 (1 of 1 shared heads differ, no fact in common)"
    none = contradiction(_keys(kg, "genre")[:0], _keys(kg, "category"), kg.num_entities)
    assert none.rate == 0.0 and none.describe() == "0.00 (no shared head)"


def test_an_inverse_pair_is_compared_read_backwards():
    # born_in (person -> city) and birthplace_of (city -> person): flip(birthplace_of) gives
    # p1 {c1}, p2 {c3}; born_in gives p1 {c1}, p2 {c2}: shared {p1, p2}, p2 differs, one fact
    # (p1, c1) in common -> 1/2
    kg = KnowledgeGraph.from_labeled_triples(
        [
            ("p1", "born_in", "c1"),
            ("p2", "born_in", "c2"),
            ("c1", "birthplace_of", "p1"),
            ("c3", "birthplace_of", "p2"),
        ],
        name="inv",
    )
    E = kg.num_entities
    backwards = flip_keys(_keys(kg, "birthplace_of"), E)
    c = contradiction(_keys(kg, "born_in"), backwards, E)
    assert c == Contradiction(shared_heads=2, differing_heads=1, common_facts=1)
    # read forwards, the two share no head at all
    assert contradiction(_keys(kg, "born_in"), _keys(kg, "birthplace_of"), E).shared_heads == 0


def test_an_inverse_merge_records_its_contradiction_and_the_guard_refuses_it():
    # birthplace_of (c1 -> p1, c2 -> p3) and born_in (p1 -> c1, p2 -> c2): mirrored Jaccard
    # |{(p1, c1)}| / |{(p1, c1), (p2, c2), (p3, c2)}| = 1/3, so theta_base 0.3 pairs them; the
    # kept relation (equal counts: the smaller id, birthplace_of) against born_in read
    # backwards (c1 {p1}, c2 {p2}): shared heads c1, c2, c2 differs, (c1, p1) in common -> 1/2.
    # Opposite TransE vectors keep greedy merging out (sim 0.4 + 0.3 * 3/5 - 0.3 = 0.28 < 0.3).
    kg = KnowledgeGraph.from_labeled_triples(
        [
            ("p1", "born_in", "c1"),
            ("p2", "born_in", "c2"),
            ("c1", "birthplace_of", "p1"),
            ("c2", "birthplace_of", "p3"),
        ],
        name="inv",
    )
    emb = np.array([[1.0, 0.0] if r == "born_in" else [-1.0, 0.0] for r in kg.relations.labels])
    keys = {"entity_types": "none", "theta_base": 0.3, "merge_inverse": True}
    merged = compress(kg, emb, **keys)
    assert merged.report == []
    (inv,) = merged.inverse_report
    assert (inv.kept, inv.flipped) == ("birthplace_of", "born_in")
    assert (inv.contradiction, inv.shared_heads, inv.differing_heads) == (0.5, 2, 1)
    assert inv.examples[0] == {"head": "c2", "left": ["p3"], "right": ["p2"]}
    text = merged.format_report()
    assert "contradiction 0.50 (1 of 2 shared heads differ, 1 fact in common)" in text
    assert "e.g. c2: birthplace_of -> p3 | born_in (inverse) -> p2" in text
    guarded = compress(kg, emb, **keys, max_contradiction=0.05)
    assert guarded.inverse_report == [] and guarded.num_compressed == 2
    assert [r.flipped for r in guarded.inverse_refused] == ["born_in"]
    assert "refused inverse: born_in as the inverse of birthplace_of" in guarded.format_report()


def test_example_heads_put_disagreements_first():
    kg = _films()
    ids = kg.entities
    examples = example_heads(_keys(kg, "directed_by"), _keys(kg, "written_by"), len(ids), k=3)
    named = [
        (ids.label(h), [ids.label(t) for t in a], [ids.label(t) for t in b]) for h, a, b in examples
    ]
    assert named == [("f2", ["bob"], ["carl"]), ("f3", ["dan"], ["dan", "eve"]),
                     ("f1", ["ann"], ["ann"])]  # fmt: skip
    assert len(example_heads(_keys(kg, "directed_by"), _keys(kg, "written_by"), len(ids), 1)) == 1


# Eq. (3) with entity_types=none (NMI 1) and one TransE direction for both (cos 1): the entity
# sets {f1-f4, ann, bob, dan, fay} and {f1, f2, f3, f5, ann, carl, dan, eve, gus} share 5 of
# 12, so sim = 0.4 + 0.3 * 5/12 + 0.3 = 0.825. Eq. (4): H = ln 4 (four tails once each) and
# ln 5; delta = (ln 5 - ln 4) / ln 5, theta = 0.75 (1 + 0.15 delta) = 0.7656 < 0.825.
SIM = 0.4 + 0.3 * 5 / 12 + 0.3
THETA = 0.75 * (1 + 0.15 * (np.log(5) - np.log(4)) / np.log(5))


def _compress(**keys) -> SCOSResult:
    kg = _films()
    return compress(kg, np.ones((kg.num_relations, 2)), entity_types="none", **keys)


def test_the_paper_merges_director_and_writer_and_the_guard_refuses():
    paper = _compress()
    (m,) = paper.report
    assert m.similarity == pytest.approx(SIM) and m.threshold == pytest.approx(THETA)
    # the merge carries its audit trail whatever the settings
    assert (m.contradiction, m.shared_heads, m.differing_heads, m.common_facts) == (
        pytest.approx(2 / 3), 3, 2, 2,
    )  # fmt: skip
    assert m.examples[0] == {"head": "f2", "left": ["bob"], "right": ["carl"]}
    guarded = _compress(max_contradiction=0.05)
    assert guarded.report == [] and guarded.num_compressed == 2
    (ref,) = guarded.refused_report
    assert ref.reason == "contradiction" and ref.contradiction == pytest.approx(2 / 3)
    assert ref.split_z is None  # the split test is off here
    # at 0.7 the pair passes again (2/3 <= 0.7)
    assert len(_compress(max_contradiction=0.7).report) == 1


def test_the_report_lists_signals_contradiction_and_example_heads(tmp_path):
    paper = _compress()
    lines = paper.format_report().splitlines()
    left, right = paper.report[0].left[0], paper.report[0].right[0]
    assert lines[1].startswith(f"   1. {{{left}}} + {{{right}}}: sim 0.8250 >= theta 0.7656 ")
    assert "(NMI 1.000, Jaccard 0.417, cos 1.000;" in lines[1]
    assert lines[2] == "        contradiction 0.67 (2 of 3 shared heads differ, 2 facts in common)"
    assert lines[3] == f"        e.g. f2: {left} -> bob | {right} -> carl"
    assert lines[4] == f"        e.g. f3: {left} -> dan | {right} -> dan, eve"
    assert lines[5] == f"        e.g. f1: {left} -> ann | {right} -> ann"
    refused = _compress(max_contradiction=0.05).format_report().splitlines()[1]
    assert refused.endswith(
        "sim 0.8250 >= theta 0.7656, but contradiction 0.67 (2 of 3 shared heads differ, "
        "2 facts in common) > 0.05"
    )
    # saved, the JSON result and report.txt carry the same, and load back
    out = paper.save(tmp_path / "scos")
    merge = json.loads((out / "scos.json").read_text())["merges"][0]
    assert merge["contradiction"] == pytest.approx(2 / 3) and merge["shared_heads"] == 3
    assert len(merge["examples"]) == 3
    assert SCOSResult.load(out).report == paper.report
    assert (out / "report.txt").read_text() == paper.format_report()


def test_a_report_written_before_the_signal_loads_with_defaults(tmp_path):
    out = _compress().save(tmp_path / "scos")
    meta = json.loads((out / "scos.json").read_text())
    for key in ("contradiction", "shared_heads", "differing_heads", "common_facts", "examples"):
        del meta["merges"][0][key]
    (out / "scos.json").write_text(json.dumps(meta))
    (out / MANIFEST).unlink()  # written then, it had no manifest (lokg/manifest.py)
    (m,) = SCOSResult.load(out).report
    assert (m.contradiction, m.shared_heads, m.examples) == (0.0, 0, [])


def test_one_warning_per_contradicted_merge_whatever_the_settings(caplog):
    paper = _compress()
    with caplog.at_level(logging.WARNING, logger="lokg.train_stages"):
        assert warn_contradicted_merges(paper.report, paper.inverse_report, 0.05) == 1
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "2 of their 3 shared heads hold different tails" in record.getMessage()
    assert "contradiction 0.67 > scos_warn_contradiction=0.05" in record.getMessage()
    assert "e.g. f2:" in record.getMessage()
    caplog.clear()
    assert warn_contradicted_merges(paper.report, [], 0.7) == 0 and not caplog.records


def test_settings_out_of_range_fail_in_one_line():
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(ValueError, match=r"^scos.max_contradiction must be null or a number"):
            SCOSConfig(max_contradiction=bad)
    with pytest.raises(ValueError, match=r"^scos_warn_contradiction=2; expected a number"):
        warn_threshold({"scos_warn_contradiction": 2})
    assert warn_threshold({"scos_warn_contradiction": 0}) == 0.0
    # train.py checks it before preparing data or training anything
    from lokg.train import run

    cfg = compose_config("train", ["scos_warn_contradiction=-0.5"], ".")
    with pytest.raises(ValueError, match=r"^scos_warn_contradiction=-0.5; expected a number"):
        run(cfg)


def test_ours_guards_with_contradiction_and_the_paper_does_not():
    paper = compose_config("train", ["scos=default"], ".").scos
    ours = compose_config("train", ["scos=lokg"], ".").scos
    assert "max_contradiction" not in paper  # absent: the paper's, keys unchanged
    assert SCOSConfig.from_mapping(paper).max_contradiction is None
    assert SCOSConfig.from_mapping(ours).max_contradiction == 0.05
    # the default configuration uses ours, for training and evaluation alike
    assert compose_config("train", [], ".").scos == ours
    assert compose_config("evaluate", [], ".").scos == ours
    assert compose_config("evaluate", ["experiment=paper"], ".").scos == paper


# ---------------------------------------------------------------- bench/bench_scos.py


def test_falsemerge_counts_non_synonym_pairs(bench):
    # four relations planted two ways on a tiny graph: (0, 1) a synonym, (2, 3) correlated.
    # A cluster {0, 1, 2} counts (0, 2) and (1, 2) as false, neither correlated; (2, 3) merged
    # alone would be one false correlated pair.
    kg = KnowledgeGraph.from_labeled_triples([("a", f"r{i}", "b") for i in range(5)], name="tiny")
    result = compress(kg, None, mode="off")
    result.mapping = np.array([0, 0, 0, 1, 2])
    count, false = bench.count_false_merges(result, {(0, 1)}, {(2, 3)})
    assert (count.merged, count.false, count.false_correlated) == (3, 2, 0)
    assert (count.recovered, count.synonyms, count.recall) == (1, 1, 1.0)
    assert false == [(0, 2), (1, 2)]
    result.mapping = np.array([0, 1, 2, 2, 3])
    count, false = bench.count_false_merges(result, {(0, 1)}, {(2, 3)})
    assert (count.false, count.false_correlated, count.recall) == (1, 1, 0.0)


def test_falsemerge_plants_synonyms_and_correlated_relations_apart(bench):
    # 6 relations of 20 (h, t) pairs, h in 10 heads with two tails each: 3 split synonyms and
    # 3 correlated relations at most, on different bases
    triples = [(f"h{r}_{i % 10}", f"r{r}", f"t{r}_{i}") for r in range(6) for i in range(20)]
    kg = KnowledgeGraph.from_labeled_triples(triples, name="tiny")
    planted, synonyms, correlated, agreement = bench.plant_falsemerge(
        kg, k_synonyms=30, k_correlated=12, min_triples=20, seed=0, agreement=(0.3, 0.9)
    )
    assert len(synonyms) == 3 and len(correlated) == 3
    bases = {min(p) for p in synonyms} | {min(p) for p in correlated}
    assert len(bases) == 6  # each base planted once
    assert sorted(agreement.values()) == [0.3, 0.3, 0.9]
    E = planted.num_entities
    for (a, b), p in agreement.items():
        c = contradiction(_keys(planted, planted.relations.label(a)),
                          _keys(planted, planted.relations.label(b)), E)  # fmt: skip
        # 10 heads, round(10 p) agree: c = 1 - p exactly
        assert (c.shared_heads, c.differing_heads) == (10, 10 - round(10 * p))
    for a, b in synonyms:  # a split: no fact in common, so no contradiction
        c = contradiction(_keys(planted, planted.relations.label(a)),
                          _keys(planted, planted.relations.label(b)), E)  # fmt: skip
        assert c.common_facts == 0 and c.rate == 0.0
