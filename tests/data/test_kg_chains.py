"""Chain questions generated over a base dataset's graph (lokg/data/kg_chains.py): the
training data of experiment=adapt_walk, for a KG with questions and no answers."""

from __future__ import annotations

import json

import pytest

from lokg.config import compose_config
from lokg.data import CustomSource, KGQADataModule
from lokg.data.kg_chains import KGChainsSource, relation_lexicon
from lokg.errors import InputError

#: a family tree and its places: chains of up to three hops from most people
TRIPLES = [
    ("ann", "parents", "bob"), ("bob", "parents", "cid"), ("cid", "born_in", "oslo"),
    ("bob", "born_in", "rome"), ("ann", "born_in", "oslo"), ("dan", "parents", "bob"),
    ("eve", "parents", "dan"), ("dan", "born_in", "rome"), ("oslo", "country", "norway"),
    ("rome", "country", "italy"), ("eve", "spouse", "fay"), ("fay", "born_in", "rome"),
]  # fmt: skip


def _base(tmp_path, exclude_topic: str = "eve") -> KGQADataModule:
    """The tree as a custom set whose one test question (no answers) is about ``eve``."""
    (tmp_path / "kg.tsv").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in TRIPLES))
    q = {"id": "q1", "question": f"where was {exclude_topic} 's parent born ?",
         "topic_entities": [exclude_topic]}  # fmt: skip
    (tmp_path / "test.jsonl").write_text(json.dumps(q) + "\n")
    paths = {"train": None, "val": None, "test": str(tmp_path / "test.jsonl")}
    source = CustomSource("tree", str(tmp_path / "kg.tsv"), split_paths=paths, inverse="auto")
    return KGQADataModule(source, artifacts_dir=str(tmp_path / "artifacts"))


def test_every_question_is_its_chain_on_the_graph_as_given(tmp_path):
    """Gold path: a walk on the base graph's own edges from the topic (no added inverse);
    answers: every entity its relations reach from the topic; text: the relations' words, no
    text twice; no chain starts at a test question's topic entity; lengths even (the tree has
    enough chains of each)."""
    raw = KGChainsSource(_base(tmp_path), questions=300, seed=0, synonyms=0, unnamed=0).load()
    given = set(TRIPLES)
    assert {raw.kg.labeled(i) for i in range(raw.kg.num_triples)} == given
    questions = raw.questions["train"] + raw.questions["val"]
    assert raw.questions["test"] == [] and len(questions) > 20
    seen = set()
    for q in questions:
        (topic,) = q.topic_entities
        assert topic != "eve" and q.gold_path[0][0] == topic
        assert all(t in given for t in q.gold_path) and 1 <= len(q.gold_path) <= 3
        assert all(a[2] == b[0] for a, b in zip(q.gold_path, q.gold_path[1:], strict=False))
        frontier = {topic}
        for _, r, _ in q.gold_path:
            frontier = {t for h, rr, t in given if rr == r and h in frontier}
        assert set(q.answers) == frontier
        assert topic in q.text
        assert all(r.replace("_", " ") in q.text for _, r, _ in q.gold_path)
        assert q.text not in seen
        seen.add(q.text)
    lengths = [len(q.gold_path) for q in questions]
    assert max(lengths.count(k) for k in (1, 2, 3)) <= 100  # the quota: 300 / 3 each
    few = KGChainsSource(_base(tmp_path), questions=30, seed=0, synonyms=0, unnamed=0).load()
    lengths = [len(q.gold_path) for q in few.questions["train"] + few.questions["val"]]
    assert [lengths.count(k) for k in (1, 2, 3)] == [10, 10, 10]


def test_a_simple_chain_never_returns_to_an_entity_on_it(tmp_path):
    """With self-loops and ways back in the graph (``x -tracks-> x``, ``b -child-> a``), a
    chain drawn with ``simple_paths`` visits as many entities as it has hops, plus its
    topic; by default (off, as measured on val) some chain loops, and the setting enters the
    fingerprint only when on (the sets generated before it keep theirs)."""
    loops = [("ann", "tracks", "ann"), ("bob", "tracks", "bob"), ("bob", "child", "ann"),
             ("cid", "tracks", "cid"), ("cid", "child", "bob")]  # fmt: skip
    (tmp_path / "base").mkdir()
    base = _base(tmp_path / "base")
    (tmp_path / "base" / "kg.tsv").write_text(
        "".join(f"{h}\t{r}\t{t}\n" for h, r, t in TRIPLES + loops)
    )

    def chains(**kw):
        raw = KGChainsSource(base, questions=200, synonyms=0, unnamed=0, **kw).load()
        return [q.gold_path for q in raw.questions["train"] + raw.questions["val"]]

    for path in chains(simple_paths=True):
        entities = [path[0][0], *(t for _, _, t in path)]
        assert len(set(entities)) == len(entities), path
    assert any(len({path[0][0], *(t for _, _, t in path)}) <= len(path)
               for path in chains())  # fmt: skip
    assert "simple_paths" not in KGChainsSource(base).config()
    simple = KGChainsSource(base, simple_paths=True)
    assert simple.fingerprint() != KGChainsSource(base).fingerprint()
    with pytest.raises(InputError, match=r"data.source.simple_paths=yes; expected true or false"):
        KGChainsSource(base, simple_paths="yes")


def test_excluded_splits_and_a_graph_with_no_start_left_name_the_key(tmp_path):
    base = _base(tmp_path)
    drawn = KGChainsSource(base, questions=300, exclude_splits=[], synonyms=0, unnamed=0).load()
    assert any(q.topic_entities == ("eve",) for q in drawn.questions["train"])
    with pytest.raises(InputError, match=r"data.source.exclude_splits: dev; expected some of"):
        KGChainsSource(base, exclude_splits=["dev"])
    with pytest.raises(InputError, match=r"data.source.max_hops=0; expected a whole number"):
        KGChainsSource(base, max_hops=0)
    lone = tmp_path / "lone"
    lone.mkdir()
    only_eve = _base(lone)
    (lone / "kg.tsv").write_text("eve\tspouse\tfay\n")
    with pytest.raises(InputError, match=r"set data.source.exclude_splits=\[\] to draw"):
        KGChainsSource(only_eve, synonyms=0, unnamed=0).load()


def test_the_draw_is_fixed_by_the_seed_and_the_base_enters_the_fingerprint(tmp_path):
    base = _base(tmp_path)
    a, b = (KGChainsSource(base, questions=100, synonyms=0, unnamed=0).load() for _ in range(2))
    assert [q.text for q in a.questions["train"]] == [q.text for q in b.questions["train"]]
    other = KGChainsSource(base, questions=100, seed=1, synonyms=0, unnamed=0).load()
    assert [q.text for q in other.questions["train"]] != [q.text for q in a.questions["train"]]
    assert KGChainsSource(base).fingerprint() != KGChainsSource(base, seed=1).fingerprint()
    assert KGChainsSource(base).config()["base"] == base.fingerprint()


def test_the_lexicons_embeddings_persist_in_the_cache_and_stay_out_of_the_fingerprint(
    tmp_path, monkeypatch
):
    """``embed_cache``: the vocabulary is embedded once into the cache and read back by the
    next run (the same questions); where it lives changes neither the data nor its name."""
    import lokg.data.kg_chains as kg_chains

    monkeypatch.setattr(kg_chains, "encoder_words", lambda: ["wed", "kids", "banana", "child"])
    base, cache = _base(tmp_path), tmp_path / "cache"
    first = KGChainsSource(base, questions=50, synonyms=1.0, embed_cache=str(cache)).load()
    shards = sorted(cache.rglob("shard-*.npz"))
    assert shards
    again = KGChainsSource(base, questions=50, synonyms=1.0, embed_cache=str(cache)).load()
    assert sorted(cache.rglob("shard-*.npz")) == shards  # every word read back, none embedded
    assert [q.text for q in again.questions["train"]] == [q.text for q in first.questions["train"]]
    cached = KGChainsSource(base, embed_cache=str(cache))
    assert cached.fingerprint() == KGChainsSource(base).fingerprint()


def test_the_lexicon_names_each_relation_by_its_nearest_words_only():
    """With the real encoder on a hand-picked vocabulary: a synonym is within the cosine floor
    of its relation and nearer to it than to the other; an entity label or a word of the
    relation itself never is; unrelated words are far from both."""
    from lokg.embed import SentenceEncoder

    vocab = ["husband", "wife", "kids", "spouse", "male", "banana", "carburetor", "children"]
    lex = relation_lexicon(["spouse", "children"], 8, 0.5, {"male"}, SentenceEncoder(), vocab)
    assert lex.synonyms[0][:2] in (["husband", "wife"], ["wife", "husband"])
    assert "kids" in lex.synonyms[1] and "kids" not in lex.synonyms[0]
    assert not {"spouse", "male"} & set(lex.synonyms[0])
    assert "children" not in lex.synonyms[1]
    assert "banana" in lex.unrelated and not {"husband", "male"} & set(lex.unrelated)


def test_a_hop_is_named_by_a_synonym_or_an_unrelated_word_at_the_asked_rates(tmp_path):
    """``synonyms=1``: every hop with synonyms is named by one; ``unnamed=1`` with no
    synonyms: every hop by an unrelated word; the gold path is the same walk either way."""
    import numpy as np

    from lokg.data.kg_chains import Lexicon, _mentions

    lex = Lexicon([["wed"], []], ["banana"])
    rng = np.random.default_rng(0)
    assert _mentions(rng, (0, 1), ["spouse", "kids"], lex, 1.0, 0.0) == ["wed", "kids"]
    assert _mentions(rng, (0, 1), ["spouse", "kids"], lex, 0.0, 1.0) == ["banana", "banana"]
    assert _mentions(rng, (0, 1), ["spouse", "kids"], lex, 0.0, 0.0) == ["spouse", "kids"]


def test_adapt_walk_fine_tunes_the_pretrained_walk_by_name_on_the_generated_set(tmp_path):
    cfg = compose_config("train", ["experiment=adapt_walk", "data@data.source.base=pq2h"], tmp_path)
    assert cfg.data.source._target_ == "lokg.data.kg_chains.KGChainsSource"
    assert cfg.data.source.base.source.variant == "PQ-2H"
    assert list(cfg.data.source.exclude_splits) == ["val", "test"]
    assert cfg.model.init == "pretrained" and cfg.model.relation_source == "none"
    assert cfg.scos.mode == "off"
