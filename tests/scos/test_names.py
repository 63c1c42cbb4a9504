"""SCOS's name guard (``scos.min_name_cosine``, beyond the paper; lokg.scos.names), checked by
hand on two relations split under two names each, with a fake encoder whose vectors are
written here, and the falsemerge bench's paraphrased plant (lokg.data.synthetic).

Graph: persons p1-p8 each have one country, recorded under ``nationality`` (p1-p4) or
``citizenship`` (p5-p8); religions q1-q8 each have one day, under ``beliefs`` (q1-q4) or
``holidays`` (q5-q8).  The two pairs have the same shape, so Eq. (3) gives them the same
similarity; only their names differ.  With ``entity_types=none`` NMI is 1; TransE vectors are
one direction per pair (cos 1 inside, 0 across); Jaccard over head ∪ tail entities is
|{c1, c2}| / |{p1..p8, c1, c2}| = 2 / 10.  So inside a pair

    sim = 0.4 * 1 + 0.3 * 0.2 + 0.3 * 1 = 0.76 >= theta = 0.6

(both relations of a pair have the same tail entropy: Eq. (5)'s delta is 0), and across pairs
sim = 0.4 + 0 + 0 < 0.6.  Name vectors (unit, exact):

    nationality (1, 0, 0)      citizenship (0.8, 0.6, 0)     cos 0.8
    beliefs     (0, 1, 0)      holidays    (0, 0.28, 0.96)   cos 0.28

so ``min_name_cosine`` 0.5 keeps nationality + citizenship and refuses beliefs + holidays;
0.25 lets both through, and the paper's setting (none) never reads a name.
"""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import open_dict

from lokg.config import compose_config
from lokg.data.restyle import relation_words
from lokg.data.synthetic import paraphrase_label, plant_synonyms, synonym_label
from lokg.kg.graph import KnowledgeGraph
from lokg.paper_settings import departures
from lokg.scos import SCOSConfig, compress
from lokg.scos.names import is_code, name_cosine, name_embeddings, name_words

NAMES = {
    "nationality": (1.0, 0.0, 0.0),
    "citizenship": (0.8, 0.6, 0.0),
    "beliefs": (0.0, 1.0, 0.0),
    "holidays": (0.0, 0.28, 0.96),
    "home country": (0.6, -0.8, 0.0),  # cos 0.6 with nationality, 0 with citizenship
    "r01": (1.0, 0.0, 0.0),  # codes: whatever their vectors, the guard does not read them
    "r02": (0.0, 0.0, 1.0),
}
PAIR_DIRECTION = {"nationality": 0, "citizenship": 0, "beliefs": 1, "holidays": 1}


class FakeEncoder:
    """``encode`` as :class:`lokg.embed.SentenceEncoder`'s, from :data:`NAMES`."""

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, texts, kind="passage"):
        self.seen += list(texts)
        return np.array([NAMES[t] for t in texts])


def _split(head: str, tail: str, left: str, right: str) -> list[tuple[str, str, str]]:
    """Heads 1-8 with one tail each (tails 1, 2 alternating), under ``left`` for 1-4 and
    ``right`` for 5-8."""
    return [(f"{head}{i}", left if i <= 4 else right, f"{tail}{2 - i % 2}") for i in range(1, 9)]


def _kg() -> KnowledgeGraph:
    return KnowledgeGraph.from_labeled_triples(
        _split("p", "c", "nationality", "citizenship") + _split("q", "d", "beliefs", "holidays"),
        name="names",
    )


def _emb(kg: KnowledgeGraph) -> np.ndarray:
    return np.eye(2)[[PAIR_DIRECTION[label] for label in kg.relations.labels]]


def _groups(result) -> set[frozenset[str]]:
    return {frozenset(m) for m in result.clusters().values() if len(m) > 1}


NAT, REL = frozenset({"nationality", "citizenship"}), frozenset({"beliefs", "holidays"})
KEYS = {"entity_types": "none", "theta_base": 0.6}


def test_name_words_are_the_property_words():
    assert name_words("people.person.place_of_birth") == "place of birth"
    assert name_words("__people__person__place_of_birth") == "place of birth"
    assert name_words("religion.religion.beliefs") == "beliefs"
    assert name_words("gender") == "gender"
    assert name_words("/film/film/directed_by") == "directed by"
    for label in ("people.person.place_of_birth", "__common__topic__notable_types", "spouse_s"):
        assert name_words(label) == relation_words(label, 1)  # restyle's one-segment words


def test_codes_have_no_words():
    assert is_code("r012") and is_code("P31") and is_code("x.r7")
    assert not is_code("gender") and not is_code("people.person.is_reviewed")


def test_name_embeddings_and_cosine_by_hand():
    labels = ["people.person.nationality", "people.person.citizenship", "r01"]
    embedder = FakeEncoder()
    names = name_embeddings(labels, embedder)
    assert embedder.seen == ["nationality", "citizenship", "r01"]
    coded = np.array([is_code(label) for label in labels])
    assert name_cosine(names, coded, [0], [1]) == pytest.approx(0.8)
    assert name_cosine(names, coded, [0, 2], [1]) == pytest.approx(0.8)  # the code is skipped
    assert name_cosine(names, coded, [2], [0, 1]) is None  # only a code on one side


def _names(kg: KnowledgeGraph) -> np.ndarray:
    return name_embeddings(kg.relations.labels, FakeEncoder())


def test_similar_names_merge_and_dissimilar_names_are_refused():
    kg = _kg()
    result = compress(kg, _emb(kg), relation_names=_names(kg), min_name_cosine=0.5, **KEYS)
    assert _groups(result) == {NAT}
    (merge,) = result.report
    assert merge.similarity == pytest.approx(0.76)
    assert merge.threshold == pytest.approx(0.6)
    assert merge.name_cosine == pytest.approx(0.8)
    (refused,) = result.refused_report
    assert (set(refused.left) | set(refused.right), refused.reason) == (REL, "name")
    assert refused.similarity == pytest.approx(0.76)
    assert refused.name_cosine == pytest.approx(0.28)
    report = result.format_report()
    assert "name cosine 0.280 < 0.5 (the names mean different things)" in report
    assert "name cosine 0.800" in report
    # a lower threshold lets both through
    loose = compress(kg, _emb(kg), relation_names=_names(kg), min_name_cosine=0.25, **KEYS)
    assert _groups(loose) == {NAT, REL}


def test_the_paper_does_not_read_names():
    kg = _kg()
    paper = compress(kg, _emb(kg), **KEYS)  # no names needed
    assert _groups(paper) == {NAT, REL}
    assert all(m.name_cosine is None for m in paper.report)
    # names given: recorded, nothing refused
    named = compress(kg, _emb(kg), relation_names=_names(kg), **KEYS)
    assert _groups(named) == {NAT, REL} and not named.refused_report
    assert sorted(m.name_cosine for m in named.report) == pytest.approx([0.28, 0.8])
    # the paper's configuration has no such key, and the key is a departure from it
    cfg = compose_config("evaluate", ["experiment=paper"], ".")
    assert "min_name_cosine" not in cfg.scos
    assert SCOSConfig.from_mapping(cfg.scos).min_name_cosine is None
    assert not any("min_name_cosine" in line for line in departures(cfg))
    with open_dict(cfg.scos):
        cfg.scos.min_name_cosine = 0.3
    assert "scos.min_name_cosine: 0.3 (paper: None)" in departures(cfg)


def test_codes_are_left_to_the_graph():
    # r01 / r02: a split relation under two codes, name vectors orthogonal; the guard abstains
    kg = KnowledgeGraph.from_labeled_triples(_split("p", "c", "r01", "r02"), name="codes")
    emb = np.ones((2, 2))
    result = compress(kg, emb, relation_names=_names(kg), min_name_cosine=0.5, **KEYS)
    assert _groups(result) == {frozenset({"r01", "r02"})}
    assert result.report[0].name_cosine is None


def test_every_member_pair_must_agree():
    # home_country splits nationality again and is merged first (Jaccard |{c1, c2}| /
    # |{p1..p4, p9, p10, c1, c2}| = 0.25: sim 0.775 > 0.76); the cluster {nationality,
    # home_country} then meets citizenship, whose name is 0 from home_country's: refused,
    # although nationality alone would pass (0.8)
    triples = [*_split("p", "c", "nationality", "citizenship"),
               ("p9", "home_country", "c1"), ("p10", "home_country", "c2")]  # fmt: skip
    kg = KnowledgeGraph.from_labeled_triples(triples, name="three")
    emb = np.ones((kg.num_relations, 2))
    result = compress(kg, emb, relation_names=_names(kg), min_name_cosine=0.5, **KEYS)
    assert _groups(result) == {frozenset({"nationality", "home_country"})}
    last = result.refused_report[-1]
    assert (set(last.left) | set(last.right), last.reason) == (NAT | {"home_country"}, "name")
    assert last.name_cosine == pytest.approx(0.0, abs=1e-12)


def test_the_guard_needs_names_and_a_valid_threshold():
    kg = _kg()
    with pytest.raises(ValueError, match="scos.min_name_cosine needs the relation names"):
        compress(kg, _emb(kg), min_name_cosine=0.5, **KEYS)
    for bad in (-0.1, 1.5, True, "0.3"):
        with pytest.raises(ValueError, match=r"^scos.min_name_cosine must be null or a number"):
            SCOSConfig(min_name_cosine=bad)
    with pytest.raises(ValueError, match=r"relation name embeddings must have shape \[4, d\]"):
        compress(kg, _emb(kg), relation_names=np.ones((3, 2)), min_name_cosine=0.5, **KEYS)


def test_train_reads_names_only_with_the_guard():
    # the SCOS stage embeds names (and keys its artifact by the embedder) only when the guard
    # is set, so the keys of every configuration without it are those they had before
    from lokg.train_stages import name_embedder

    assert name_embedder(compose_config("train", ["experiment=train_transe"], ".")) is None
    assert name_embedder(compose_config("train", ["scos=default"], ".")) is None
    cfg = compose_config("train", ["experiment=train_transe", "+scos.min_name_cosine=0.3"], ".")
    assert name_embedder(cfg) == "sentence-transformers/all-MiniLM-L6-v2"
    cfg = compose_config("train", ["scos=off", "+scos.min_name_cosine=0.3"], ".")
    assert name_embedder(cfg) is None
    # an artifact's recorded embedder is beside its settings, not one of them
    from lokg.artifacts import scos_settings

    recorded = {"theta_base": 0.64, "min_name_cosine": 0.3, "name_encoder_used": "minilm"}
    assert scos_settings(recorded) == SCOSConfig(theta_base=0.64, min_name_cosine=0.3).to_dict()


# ---------------------------------------------------------------- the paraphrased plant


def test_paraphrase_keeps_the_domain_and_rewrites_the_property():
    rng = np.random.default_rng(0)
    # one operation applies (gender -> sex, the lexicon's one alternative): any draw gives it
    assert paraphrase_label("people.person.gender", set(), rng) == "people.person.sex"
    for seed in range(20):
        name = paraphrase_label(
            "__people__person__place_of_birth", set(), np.random.default_rng(seed)
        )
        assert name.startswith("__people__person__") and name != "__people__person__place_of_birth"
    # no lexicon entry and no "A of B": "has" in front; a taken name gets a number
    assert paraphrase_label("x.y.zork", set(), rng) == "x.y.has_zork"
    assert paraphrase_label("x.y.zork", {"x.y.has_zork"}, rng) == "x.y.has_zork_2"
    # a code gets the next free code of its form
    assert paraphrase_label("r012", {"r000", "r001", "r012"}, rng) == "r002"
    # seeded: the same (seed, index) gives the same name
    a = synonym_label("film.film.directed_by", set(), "paraphrase", index=3, seed=1)
    assert a == synonym_label("film.film.directed_by", set(), "paraphrase", index=3, seed=1)


def test_the_naming_changes_names_alone():
    kg = KnowledgeGraph.from_labeled_triples(
        [(f"h{i}", r, f"t{i % 3}") for r in ("people.person.gender", "film.film.genre")
         for i in range(30)], name="two")  # fmt: skip
    alias = plant_synonyms(kg, 2, 20, seed=0, naming="alias")
    para = plant_synonyms(kg, 2, 20, seed=0, naming="paraphrase")
    np.testing.assert_array_equal(alias.kg.triples_np, para.kg.triples_np)
    np.testing.assert_array_equal(alias.synonym_pairs, para.synonym_pairs)
    assert alias.kg.relations.labels[2:] == ["film.film.genre_alias", "people.person.gender_alias"]
    assert para.kg.relations.labels[3] == "people.person.sex"
    assert para.kg.relations.labels[2].startswith("film.film.")


# ---------------------------------------------------------------- bench/bench_scos.py


def test_graph_agreeing_pairs_are_counted_among_the_false(bench):
    # a0: h1 -> x, h2 -> y; a1 (a sub-relation): h1 -> x; a2: h1 -> z (disagrees on h1)
    kg = KnowledgeGraph.from_labeled_triples(
        [("h1", "a0", "x"), ("h2", "a0", "y"), ("h1", "a1", "x"), ("h1", "a2", "z")], name="g"
    )
    rid = kg.relations.index
    assert bench.graph_agreeing(kg, rid["a0"], rid["a1"])
    assert not bench.graph_agreeing(kg, rid["a0"], rid["a2"])
    result = compress(kg, None, mode="off")
    result.mapping = np.array([0, 0, 0])  # all three merged; no planted synonym
    count, false = bench.count_false_merges(result, set(), set(), kg)
    assert (count.false, count.false_agreeing, count.false_correlated) == (3, 1, 0)
    assert false == [(0, 1), (0, 2), (1, 2)]


def test_falsemerge_runs_on_one_small_kb(bench, tmp_path, monkeypatch, capsys):
    # PQ-2H's KB (13 relations) with 3 paraphrased synonyms and 2 correlated companions,
    # TransE 1 epoch: the report's lines are there, whatever SCOS finds on so little training
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOKG_ROOT", str(tmp_path))
    monkeypatch.setattr(
        "sys.argv",
        ["bench_scos.py", "falsemerge", "--data", "pq2h", "--synthetic-triples", "0",
         "--epochs", "1", "--k", "3", "--correlated", "2", "--variant", "min_name_cosine=0.3"],
    )  # fmt: skip
    bench.main()
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("falsemerge default=") and " paper=" in out[-1]
    assert out[-2].startswith("falsemerge_graph_agreeing default=")
    assert any("3 split synonyms (paraphrase names)" in line for line in out)
    assert any(line.startswith("   planted synonyms' name cosine: min ") for line in out)
    assert any(line.startswith("total min_name_cosine=0.3: ") for line in out)
