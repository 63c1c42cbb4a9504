"""Issue 30's "done when": on a one-directional KG (every edge leaves a movie) the paper's
TAIMR (out-edges, Eq. (16) over a GAT's alpha) and the rules' (`retriever=taimr_linked`)
return a non-empty context for a person, who has no out-edge, when `data.source.inverse`
adds inverse edges, and an empty one with `never`; the context states each fact in the KG's
own direction.

Real components throughout: the data module and source, `load_graph_artifacts`, the
retrievers and encoder instantiated from the composed configs, the extractive reader, the
pipeline; the embedder is the bundled MiniLM. The paper's GAT is the real `model=gat`
network left untrained (which edges exist is what matters here, not their alpha). SCOS is
off: the edges are added after it, and its artifacts need a TransE run.
"""

from __future__ import annotations

import itertools

import hydra
import pytest
import torch

from lokg.artifacts import load_graph_artifacts
from lokg.data import CustomSource, KGQADataModule
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.inverse_edges import add_inverse_edges, relations_to_invert
from lokg.kg.neighbourhood import bfs_triples
from lokg.llm import build_reader
from lokg.pipeline import LOKG
from lokg.typing import Question

from ..fixtures import toy_kg

MOVIES = {
    "the_matrix": ("lana_wachowski", ["keanu_reeves", "carrie_anne_moss"], "action", "1999"),
    "john_wick": ("chad_stahelski", ["keanu_reeves"], "action", "2014"),
    "speed": ("jan_de_bont", ["keanu_reeves", "sandra_bullock"], "action", "1994"),
    "gravity": ("alfonso_cuaron", ["sandra_bullock", "george_clooney"], "drama", "2013"),
    "roma": ("alfonso_cuaron", ["yalitza_aparicio"], "drama", "2018"),
}


def movie_triples() -> list[tuple[str, str, str]]:
    out = []
    for movie, (director, cast, genre, year) in MOVIES.items():
        out.append((movie, "directed_by", director))
        out += [(movie, "starring", actor) for actor in cast]
        out += [(movie, "genre", genre), (movie, "release_year", year)]
    return out


def _write_dataset(root) -> tuple[str, dict]:
    train = [
        ("t1", "who directed the_matrix ?", ["lana_wachowski"], "the_matrix"),
        ("t2", "who is starring in speed ?", ["keanu_reeves", "sandra_bullock"], "speed"),
        ("t3", "what genre is roma ?", ["drama"], "roma"),
    ]
    test = [
        ("q1", "which films is keanu_reeves starring in ?", ["the_matrix", "john_wick", "speed"],
         "keanu_reeves"),
        ("q2", "which films were directed by alfonso_cuaron ?", ["gravity", "roma"],
         "alfonso_cuaron"),
    ]  # fmt: skip
    rows = {"train": [toy_kg.question_row(*r) for r in train], "val": None,
            "test": [toy_kg.question_row(*r) for r in test]}  # fmt: skip
    kg, paths = toy_kg.write_custom_dataset(root, movie_triples(), rows, kg_name="movies")
    return str(kg), paths


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("movies")
    return root, *_write_dataset(root)


def _datamodule(dataset, inverse: str) -> KGQADataModule:
    root, kg, splits = dataset
    source = CustomSource("movies", kg, split_paths=splits, inverse=inverse)
    dm = KGQADataModule(source, artifacts_dir=str(root / "artifacts"))
    dm.prepare_data()
    dm.setup()
    return dm


def _untrained_gat_alpha(make_cfg, kg: KnowledgeGraph):
    """log alpha of every edge from the real `model=gat` network with its initial weights."""
    from lokg.taimr.topology import gat_log_attention

    cfg = make_cfg("train", ["experiment=train_gat"])
    torch.manual_seed(0)
    model = hydra.utils.instantiate(cfg.model, num_entities=kg.num_entities,
                                    num_relations=kg.num_relations)  # fmt: skip
    feats = torch.randn(kg.num_entities, cfg.model.node_dim)
    return gat_log_attention(model.gat, kg, feats, model.relation_table.weight.detach())


def _paper_pipeline(make_cfg, dm) -> LOKG:
    """`experiment=paper`'s retriever and encoder, built as `LOKG.from_config` builds them, with
    the attention of an untrained GAT on the graph `load_graph_artifacts` returns."""
    cfg = make_cfg("evaluate", ["experiment=paper", "scos=off", "llm=extractive"])
    art = load_graph_artifacts(cfg, dm, need_gat=False)
    retriever = hydra.utils.instantiate(cfg.retriever)(
        kg=art.kg,
        embedder=hydra.utils.instantiate(cfg.embedder),
        edge_log_alpha=_untrained_gat_alpha(make_cfg, art.kg),
        train_questions=dm.questions["train"],
    )
    encoder = hydra.utils.instantiate(cfg.encoder)
    return LOKG(retriever, encoder, build_reader(cfg.llm), budget=cfg.budget)


def _rules_pipeline(make_cfg, dm) -> LOKG:
    cfg = make_cfg("evaluate", ["retriever=taimr_linked", "scos=off", "llm=extractive"])
    assert cfg.retriever.relation_linking == "chain" and cfg.retriever.attention == "uniform"
    return LOKG.from_config(cfg, dm)


PIPELINES = {"paper": _paper_pipeline, "rules": _rules_pipeline}


@pytest.mark.parametrize("which", sorted(PIPELINES))
@pytest.mark.parametrize("inverse", ["auto", "always"])
def test_a_topic_without_out_edges_gets_evidence_on_the_augmented_graph(
    make_cfg, dataset, which, inverse
):
    dm = _datamodule(dataset, inverse)
    pipeline = PIPELINES[which](make_cfg, dm)
    for q in dm.questions["test"]:
        topic = dm.kg.entities[q.topic_entities[0]]
        assert len(dm.kg.out_triples(topic)) == 0  # the KG as given: nothing leaves a person
        out = pipeline.answer(q)
        assert not out.no_evidence and out.context.text, (which, inverse, q.id)
        # the facts are stated as the KG stores them: movie | relation | person
        assert "(inverse)" not in out.context.text
        result = out.retrieval
        assert all(t < result.kg.num_own_triples for t in result.triple_ids)
        assert any(result.kg.triples_np[t, 2] == topic for t in result.triple_ids)
        # the path walked the added edge from the person (recorded as walked)
        assert result.paths and result.kg.relations.label(result.paths[0].relations[0]).endswith(
            " (inverse)"
        )
        labels = [a.label for a in result.answers]
        assert set(q.answers) & set(labels), (which, q.id)
        # no path walks the fact it just walked straight back to the topic
        assert q.topic_entities[0] not in labels
        for p in result.paths:
            facts = [result.kg.statement_ids[t] for t in p.triple_ids]
            assert all(a != b for a, b in itertools.pairwise(facts))


@pytest.mark.parametrize("which", sorted(PIPELINES))
def test_the_kg_as_given_leaves_the_person_without_evidence(make_cfg, dataset, which):
    dm = _datamodule(dataset, "never")
    pipeline = PIPELINES[which](make_cfg, dm)
    for q in dm.questions["test"]:
        out = pipeline.answer(q)
        assert out.no_evidence and out.context.text == ""
        assert out.retrieval.is_empty and not out.retrieval.answers


def test_the_option_keys_the_prepared_data(dataset):
    plain, auto, always = (_datamodule(dataset, m) for m in ("never", "auto", "always"))
    assert len({plain.artifact_dir, auto.artifact_dir, always.artifact_dir}) == 3
    # the prepared KG is the KG as given in every mode; the edges are added for retrieval
    assert plain.kg.fingerprint() == auto.kg.fingerprint() == always.kg.fingerprint()


def test_the_walk_and_the_both_ways_baselines_read_the_kg_as_given(make_cfg, dataset):
    """An added edge is the backward step the learned walk, BFS/KAPING with direction=both,
    GraphRAG and ToG already take: they read the own part, so nothing is walked twice."""
    dm = _datamodule(dataset, "auto")
    cfg = make_cfg("evaluate", ["scos=off"])
    art = load_graph_artifacts(cfg, dm, need_gat=False)
    assert art.kg.has_added_inverses and art.kg.num_triples == 2 * dm.kg.num_triples
    walk = art.own_edges()
    assert walk.kg.fingerprint() == dm.kg.fingerprint()  # what the walk model trains on
    assert art.kg.own_part().steps_by_relation(True).triple.max() < dm.kg.num_triples
    keanu = dm.kg.entities["keanu_reeves"]
    assert bfs_triples(art.kg, [keanu], 2, None, "both") == bfs_triples(
        dm.kg, [keanu], 2, None, "both"
    )
    assert bfs_triples(dm.kg, [keanu], 2, None, "out") == []
    assert len(bfs_triples(art.kg, [keanu], 2, None, "out")) > 0


def test_a_subgraph_gets_the_inverses_chosen_on_the_union():
    """Per-question datasets: the relations are chosen once, on the union, and every subgraph
    (same relation vocabulary) gets the same added relations."""
    union = KnowledgeGraph.from_labeled_triples(movie_triples())
    rels = relations_to_invert(union, "auto")
    sub = KnowledgeGraph(union.entities, union.relations, union.triples_np[:2])
    aug = add_inverse_edges(sub, rels)
    assert aug.relations == add_inverse_edges(union, rels).relations
    assert aug.num_triples == 4


def test_a_question_about_a_movie_is_unchanged_in_kind(make_cfg, dataset):
    """A topic with out-edges still gets them (the added edges only add)."""
    dm = _datamodule(dataset, "auto")
    pipeline = _rules_pipeline(make_cfg, dm)
    q = Question(id="m", text="who directed roma ?", answers=("alfonso_cuaron",),
                 topic_entities=("roma",))  # fmt: skip
    out = pipeline.answer(q)
    assert out.retrieval.top_answer == "alfonso_cuaron"
