"""data=pretrain's UnionSource (lokg/data/union.py): the members' graphs side by side, their
train/val splits kept, shared entity labels namespaced, relations shared by label."""

import json

import pytest

from lokg.data import CustomSource, KGQADataModule
from lokg.data.union import UnionSource
from lokg.errors import InputError


def _member(tmp_path, name, triples, train, val):
    d = tmp_path / name
    d.mkdir()
    (d / "kg.tsv").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples))
    paths = {}
    for split, qs in (("train", train), ("val", val), ("test", [])):
        rows = [
            {"id": i, "question": text, "topic_entities": [topic], "answers": [ans]}
            for i, (text, topic, ans) in qs
        ]
        (d / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        paths[split] = str(d / f"{split}.jsonl") if rows else None
    source = CustomSource(name, str(d / "kg.tsv"), split_paths=paths, inverse="never")
    return KGQADataModule(source, artifacts_dir=str(tmp_path / "artifacts"))


@pytest.fixture
def union(tmp_path):
    films = _member(
        tmp_path, "films",
        [("alien", "directed_by", "scott"), ("scott", "born_in", "shields")],
        [("q1", ("who directed alien", "alien", "scott"))],
        [("q2", ("where was the director of alien born", "alien", "shields"))],
    )  # fmt: skip
    people = _member(
        tmp_path, "people",
        [("scott", "born_in", "ohio"), ("ohio", "part_of", "usa")],
        [("q1", ("where was scott born", "scott", "ohio"))],
        [],
    )  # fmt: skip
    return UnionSource({"people": people, "films": films}).load()


def test_graphs_stay_apart_and_a_shared_label_is_namespaced(union):
    kg = union.kg
    # "scott" is in both graphs: two entities, each under its member's name
    assert "scott" not in kg.entities
    assert {"films::scott", "people::scott"} <= set(kg.entities.labels)
    assert kg.num_entities == 3 + 3  # alien, films::scott, shields | people::scott, ohio, usa
    # relations are shared by label: born_in is one relation of both graphs
    assert kg.relations.labels == ["born_in", "directed_by", "part_of"]
    assert kg.num_triples == 4
    labelled = {kg.labeled(i) for i in range(kg.num_triples)}
    assert ("films::scott", "born_in", "shields") in labelled
    assert ("people::scott", "born_in", "ohio") in labelled


def test_members_splits_are_kept_and_there_is_no_test(union):
    assert union.presplit
    qs = union.questions
    assert [q.id for q in qs["train"]] == ["films:q1", "people:q1"]
    assert [q.id for q in qs["val"]] == ["films:q2"]
    assert qs["test"] == []
    q = qs["train"][0]
    assert q.topic_entities == ("alien",) and q.answers == ("films::scott",)
    assert qs["train"][1].topic_entities == ("people::scott",)


def test_no_member_is_one_line_error():
    with pytest.raises(InputError, match="members is empty"):
        UnionSource({})
