"""Datasets through the DataModule: PathQuestion counts, RoG format, evidence sets, custom."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from lokg.data import (
    CustomSource,
    EvidenceSource,
    KGQADataModule,
    PathQuestionSource,
    RoGSource,
)
from lokg.data.splits import normalise_text, split_leaks
from lokg.errors import InputError
from lokg.kg.io import DataFormatError

from ..fixtures import toy_kg

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROG_MINI = FIXTURES / "rog_mini"


def numbered_questions(path: Path, n: int) -> Path:
    """``n`` questions ``x<i>?`` (id ``i``) on topic a answered by b, one JSON line each."""
    rows = (toy_kg.question_row(i, f"x{i}?", ["b"], "a") for i in range(n))
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def prepared(source, tmp_path, **kw) -> KGQADataModule:
    dm = KGQADataModule(source, artifacts_dir=str(tmp_path / "artifacts"), **kw)
    dm.prepare_data()
    dm.setup("fit")
    return dm


# counts from lokg/resources/data/pathquestion/SOURCE.txt
@pytest.mark.parametrize(
    ("variant", "triples", "entities", "relations", "questions"),
    [
        ("PQ-2H", 1211, 1056, 13, 1908),
        ("PQ-3H", 2839, 1836, 13, 5198),
        ("PQL-2H", 4247, 5034, 363, 1594),
        ("PQL-3H", 5597, 6505, 411, 1031),
    ],
)
def test_pathquestion_matches_source_counts(
    tmp_path, variant, triples, entities, relations, questions
):
    dm = prepared(PathQuestionSource(variant), tmp_path)
    s = dm.summary()
    assert (s["triples"], s["entities"], s["relations"]) == (triples, entities, relations)
    assert sum(s["questions"].values()) == questions
    assert abs(s["questions"]["test"] - questions / 10) < 0.02 * questions
    q = dm.questions["test"][0]
    assert q.topic_entities[0] == q.gold_path[0][0]
    for h, r, t in q.gold_path:  # every gold triple is in the KB
        tid = dm.kg.out_triples(dm.kg.entities[h])
        assert (h, r, t) in [dm.kg.labeled(i) for i in tid]


def _old_split_by_whole_gold_path(questions):
    """The rule before issue 26 (a test double of it): one group per whole gold path."""
    import hashlib

    groups: dict[str, list] = {}
    for q in questions:
        groups.setdefault(json.dumps([list(t) for t in q.gold_path]), []).append(q)
    out, seen, total = {"train": [], "val": [], "test": []}, 0, len(questions)
    for key in sorted(groups, key=lambda k: hashlib.sha256(f"0:{k}".encode()).hexdigest()):
        mid = seen + len(groups[key]) / 2
        out["train" if mid <= 0.8 * total else "val" if mid <= 0.9 * total else "test"] += groups[
            key
        ]
        seen += len(groups[key])
    return out


@pytest.mark.parametrize("variant", ["PQ-2H", "PQ-3H", "PQL-2H", "PQL-3H"])
def test_no_question_text_or_topic_and_chain_in_two_prepared_splits(tmp_path, variant):
    dm = prepared(PathQuestionSource(variant), tmp_path)
    assert split_leaks(dm.questions) == []
    texts = {s: {normalise_text(q.text) for q in qs} for s, qs in dm.questions.items()}
    assert not texts["train"] & texts["test"] and not texts["train"] & texts["val"]
    # the check has teeth: the old whole-gold-path grouping leaks PQL's question texts
    if variant.startswith("PQL"):
        old = _old_split_by_whole_gold_path(PathQuestionSource(variant).load().questions)
        assert any(k.startswith("text:") and "test" in k for k in split_leaks(old))


def test_custom_questions_split_keeps_one_text_in_one_split(tmp_path):
    kg = tmp_path / "kg.tsv"
    kg.write_text("".join(f"e{i}\tr\ta{i}\na{i}\ts\tb{i}\n" for i in range(40)))
    q = tmp_path / "q.jsonl"
    rows = []
    for i in range(40):  # each question asked twice (one line per answer) and once reworded
        path = [[f"e{i}", "r", f"a{i}"], [f"a{i}", "s", f"b{i}"]]
        for k in range(2):
            rows.append(
                {
                    "id": f"{i}-{k}",
                    "question": f"What is e{i}'s s?",
                    "answers": [f"b{i}"],
                    "topic_entities": [f"e{i}"],
                    "gold_path": path,
                }
            )
        rows.append(
            {
                "id": f"{i}-w",
                "question": f"e{i} r s ?",
                "answers": [f"b{i}"],
                "topic_entities": [f"e{i}"],
                "gold_path": path,
            }
        )
    q.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dm = prepared(CustomSource("c", str(kg), str(q)), tmp_path)
    assert split_leaks(dm.questions) == [] and all(dm.questions.values())
    where = {q.id: s for s, qs in dm.questions.items() for q in qs}
    assert all(where[f"{i}-0"] == where[f"{i}-1"] == where[f"{i}-w"] for i in range(40))


def test_prepare_once_then_reuse_and_split_recorded(tmp_path):
    dm = prepared(PathQuestionSource("PQ-2H"), tmp_path)
    d = dm.artifact_dir
    split = json.loads((d / "split.json").read_text())
    assert split["seed"] == 0 and split["group_by"] == "question"
    assert split["ids"]["test"] == [q.id for q in dm.questions["test"]]
    mtime = (d / "stats.json").stat().st_mtime_ns
    again = prepared(PathQuestionSource("PQ-2H"), tmp_path)
    assert again.artifact_dir == d and (d / "stats.json").stat().st_mtime_ns == mtime
    other = prepared(PathQuestionSource("PQ-2H"), tmp_path, split_seed=1)
    assert other.artifact_dir != d


def test_failed_preparation_leaves_nothing_behind(tmp_path):
    bad = tmp_path / "kg.tsv"
    bad.write_text("a\tr\tb\nbroken line\n")
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": 1, "question": "x?", "answers": ["b"], "topic_entities": ["a"]}\n')
    dm = KGQADataModule(CustomSource("c", str(bad), str(q)), artifacts_dir=str(tmp_path / "art"))
    with pytest.raises(DataFormatError, match="kg.tsv:2"):
        dm.prepare_data()
    assert not (tmp_path / "art").exists()


def test_too_few_questions_for_the_split_is_an_error_and_writes_nothing(tmp_path):
    kg = tmp_path / "kg.tsv"
    kg.write_text("a\tr\tb\n")
    q = numbered_questions(tmp_path / "questions.jsonl", 3)
    dm = KGQADataModule(CustomSource("c", str(kg), str(q)), artifacts_dir=str(tmp_path / "art"))
    with pytest.raises(InputError) as err:
        dm.prepare_data()
    msg = str(err.value)
    assert msg.startswith(f"{q}: 3 questions in 3 groups") and "\n" not in msg
    assert "give train 2 / val 1 / test 0 with ratios 0.8/0.1/0.1" in msg
    assert "10 or more questions in distinct groups" in msg
    assert not (tmp_path / "art").exists()
    # explicit split files are taken as they are, even tiny ones (null: a split left empty)
    src = CustomSource("c", str(kg), split_paths={"train": str(q), "val": None, "test": None})
    dm = prepared(src, tmp_path)
    assert {s: len(v) for s, v in dm.questions.items()} == {"train": 3, "val": 0, "test": 0}


def test_hash_rows_of_a_custom_kg_are_kept_unless_a_comment_prefix_is_set(tmp_path):
    kg = tmp_path / "kg.tsv"
    kg.write_text("#tag\tr\tb\na\tr\tb\n")
    q = numbered_questions(tmp_path / "q.jsonl", 20)
    dm = prepared(CustomSource("c", str(kg), str(q)), tmp_path / "a")
    assert dm.summary()["triples"] == 2
    dm = prepared(CustomSource("c", str(kg), str(q), kg_comment_prefix="#"), tmp_path / "b")
    assert dm.summary()["triples"] == 1
    assert "1 comment lines ('#') skipped" in dm.summary()["read"][0]


def test_triple_and_question_loaders(tmp_path):
    dm = prepared(PathQuestionSource("PQ-2H"), tmp_path, items="triples", batch_size=64)
    batch = next(iter(dm.train_dataloader()))
    assert batch.dtype == torch.int64 and tuple(batch.shape) == (64, 3)
    assert len(dm.train_triples) + len(dm.val_triples) == dm.kg.num_triples
    assert len(dm.val_triples) == round(0.05 * dm.kg.num_triples)
    assert dm.model_kwargs() == {"num_entities": 1056, "num_relations": 13}
    dm.items = "questions"
    qbatch = next(iter(dm.val_dataloader()))
    assert len(qbatch) == 64 and qbatch[0] == dm.questions["val"][0]
    assert dm.question_graph(qbatch[0].id) is dm.kg


def test_bad_datamodule_options(tmp_path):
    with pytest.raises(
        ValueError, match=r"data.items='pairs'; expected one of \('questions', 'triples'\)"
    ):
        KGQADataModule(PathQuestionSource("PQ-2H"), items="pairs")
    with pytest.raises(ValueError, match="data.source.variant='PQ-4H'; expected one of"):
        PathQuestionSource("PQ-4H")
    with pytest.raises(RuntimeError, match="call prepare_data"):
        KGQADataModule(PathQuestionSource("PQ-2H")).model_kwargs()


# ----------------------------------------------------------------------------- RoG format
def rog_files(root: Path) -> dict[str, str]:
    return {s: str(root / f"{s}.jsonl") for s in ("train", "val", "test")}


def test_rog_fixture_gives_one_subgraph_per_question(tmp_path):
    dm = prepared(RoGSource("rog_mini", files=rog_files(ROG_MINI)), tmp_path)
    assert {s: len(v) for s, v in dm.questions.items()} == {"train": 6, "val": 2, "test": 3}
    rows = [json.loads(line) for line in (ROG_MINI / "test.jsonl").read_text().splitlines()]
    for row in rows:
        g = dm.question_graph(row["id"])
        assert sorted(g.labeled(i) for i in range(g.num_triples)) == sorted(
            map(tuple, row["graph"])
        )
        assert g.relations is dm.kg.relations  # one relation vocabulary for every subgraph
        assert row["q_entity"][0] in g.entities
    q = dm.questions["test"][1]
    assert q.answers == tuple(rows[1]["answer"]) and q.topic_entities == tuple(rows[1]["q_entity"])


def test_rog_parquet_equals_jsonl(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    files = {}
    for split, path in rog_files(ROG_MINI).items():
        rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
        out = tmp_path / f"{split}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), out)
        files[split] = str(out)
    a = prepared(RoGSource("rog_pq", files=files), tmp_path / "a")
    b = prepared(RoGSource("rog_js", files=rog_files(ROG_MINI)), tmp_path / "b")
    assert a.questions == b.questions
    assert a.kg.num_triples == b.kg.num_triples


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"id": "x", "question": "q", "answer": ["a"], "q_entity": ["a"]},
            "missing RoG field(s) ['graph']",
        ),
        (
            {"id": "x", "question": "q", "answer": "a", "q_entity": ["a"], "graph": []},
            "'answer' must be a list",
        ),
        (
            {"id": "x", "question": "q", "answer": [], "q_entity": [], "graph": []},
            "'q_entity' is empty",
        ),
        (
            {"id": "x", "question": "q", "answer": [], "q_entity": ["a"], "graph": [["a", "r"]]},
            "'graph' must be",
        ),
        (
            {"id": "x", "question": "q", "answer": [], "q_entity": [""], "graph": []},
            "'q_entity'[0] is ''; expected a non-empty entity label",
        ),
        (
            {"id": "x", "question": " ", "answer": [], "q_entity": ["a"], "graph": []},
            "'question' is ' '; expected a non-empty string",
        ),
        (
            {"id": None, "question": "q", "answer": [], "q_entity": ["a"], "graph": []},
            "'id' is None; expected a non-empty string or integer",
        ),
    ],
)
def test_rog_malformed_rows(tmp_path, row, message):
    p = tmp_path / "test.jsonl"
    p.write_text(json.dumps(row) + "\n")
    dm = KGQADataModule(RoGSource("bad", files={"test": str(p)}), artifacts_dir=str(tmp_path))
    with pytest.raises(DataFormatError) as err:
        dm.prepare_data()
    assert str(err.value).startswith(f"{p}:1: ") and message in str(err.value)


def test_rog_blank_lines_and_empty_answers_are_counted(tmp_path):
    row = {
        "id": "x",
        "question": "q",
        "answer": ["b", ""],
        "q_entity": ["a"],
        "graph": [["a", "r", "b"]],
    }
    p = tmp_path / "test.jsonl"
    p.write_text("\n" + json.dumps(row) + "\n\n")
    raw = RoGSource("r", files={"test": str(p)}).load()
    assert raw.questions["test"][0].answers == ("b",)
    assert raw.reports == [
        f"{p}: 1 records from 3 lines, 2 blank lines skipped, 1 empty answer strings dropped"
    ]


def test_rog_missing_file_and_bad_gzip(tmp_path):
    with pytest.raises(
        InputError, match=r"^\S*nope.jsonl: no such file \(data.source.files.val\)$"
    ):
        RoGSource("r", files={"val": str(tmp_path / "nope.jsonl")}).load()
    bad = tmp_path / "test.jsonl.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(DataFormatError, match=r"test.jsonl.gz:1: not a readable gzip file"):
        RoGSource("r", files={"test": str(bad)}).load()


def test_rog_duplicate_id_across_splits(tmp_path):
    for split in ("train", "test"):
        shutil.copy(ROG_MINI / "val.jsonl", tmp_path / f"{split}.jsonl")
    src = RoGSource("dup", files={s: str(tmp_path / f"{s}.jsonl") for s in ("train", "test")})
    with pytest.raises(
        DataFormatError, match="duplicate id 'rogmini-val-400' \\(also in split 'train'\\)"
    ):
        src.load()


def test_rog_unknown_split_key():
    with pytest.raises(
        InputError, match=r"split\(s\) \['dev'\]; expected \['train', 'val', 'test'\]"
    ):
        RoGSource("x", files={"dev": "a.jsonl"})


def test_pathquestion_root_without_the_files(tmp_path):
    with pytest.raises(InputError, match=r"PQ-2H.txt: no such file \(data.source.root\)$"):
        PathQuestionSource("PQ-2H", root=str(tmp_path)).fingerprint()


# ----------------------------------------------------------------------------- evidence + custom
def test_evidence_sets_are_labelled_as_not_the_paper_setting(tmp_path):
    dm = prepared(EvidenceSource("webqsp"), tmp_path)
    s = dm.summary()
    assert s["dataset"] == "webqsp_evidence" and s["paper_setting"] is False
    assert s["questions"] == {"train": 0, "val": 0, "test": 1639}
    first = dm.questions["test"][0]
    assert first.id == "WebQTest-1198" and "Immanuel Kant" in first.answers
    assert dm.question_graph(first.id).num_triples > 0
    with pytest.raises(ValueError, match="expected one of \\['webqsp', 'cwq'\\]"):
        EvidenceSource("freebase")


def test_an_evidence_set_resplit_for_training_is_named_so_and_keeps_cwq_types(tmp_path):
    src = EvidenceSource("cwq", resplit=True)
    assert src.name == "cwq_evidence_resplit" and src.paper_setting is False
    assert src.fingerprint() != EvidenceSource("cwq").fingerprint()
    raw = src.load()
    assert raw.presplit is False and len(raw.questions) == 3520
    types = src.question_types()
    assert set(types.values()) == {"conjunction", "composition", "comparative", "superlative"}
    assert all(q.id in types for q in raw.questions)
    assert EvidenceSource("webqsp").question_types() == {}
    with pytest.raises(InputError, match="data.source.resplit='yes'; expected true or false"):
        EvidenceSource("cwq", resplit="yes")


def test_custom_dataset_bring_your_own_kg(tmp_path):
    kg = tmp_path / "kg.csv"
    kg.write_text("subject,predicate,object\nparis,capital_of,france\nberlin,capital_of,germany\n")
    q = tmp_path / "q.jsonl"
    lines = [
        {"id": i, "question": f"capital of {c}, asked {i}?", "answers": [a], "topic_entities": [c]}
        for i, (a, c) in enumerate([("paris", "france"), ("berlin", "germany")] * 10)
    ]
    q.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    dm = prepared(CustomSource("mine", str(kg), str(q)), tmp_path)
    assert dm.summary()["triples"] == 2
    assert sum(len(v) for v in dm.questions.values()) == 20
    with pytest.raises(InputError, match="exactly one of questions_path or split_paths"):
        CustomSource("mine", str(kg))
    with pytest.raises(InputError, match="none.tsv: no such file \\(data.source.kg_path\\)"):
        CustomSource("mine", str(tmp_path / "none.tsv"), str(q)).fingerprint()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kg_path": ""}, "data.source.kg_path is empty; expected the path of a file"),
        ({"kg_path": "{dir}"}, "{dir}: is a directory, expected a file (data.source.kg_path)"),
        ({"questions_path": ""}, "data.source.questions_path is empty"),
        (
            {"questions_path": None, "split_paths": {"train": "", "val": None, "test": None}},
            "data.source.split_paths.train is empty",
        ),
    ],
)
def test_custom_source_paths_name_their_config_key(tmp_path, kwargs, message):
    kg = tmp_path / "kg.tsv"
    kg.write_text("a\tr\tb\n")
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": 1, "question": "x?", "answers": ["b"], "topic_entities": ["a"]}\n')
    args = {"kg_path": str(kg), "questions_path": str(q)}
    args.update({k: v.format(dir=tmp_path) if isinstance(v, str) else v for k, v in kwargs.items()})
    with pytest.raises(InputError) as err:
        CustomSource("c", **args).fingerprint()
    assert str(err.value).startswith(message.format(dir=tmp_path))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kg_format": "xml"}, "data.source.kg_format='xml'; expected one of"),
        ({"kg_header": "yes"}, "data.source.kg_header='yes'; expected one of"),
        ({"kg_comment_prefix": ""}, "data.source.kg_comment_prefix=''; expected null"),
    ],
)
def test_custom_source_options_are_checked_when_built(kwargs, message):
    with pytest.raises(InputError, match=message):
        CustomSource("c", "kg.tsv", "q.jsonl", **kwargs)


def test_custom_split_files_with_a_shared_id_name_the_line(tmp_path):
    kg = tmp_path / "kg.tsv"
    kg.write_text("a\tr\tb\n")
    row = '{{"id": {i}, "question": "x?", "answers": ["b"], "topic_entities": ["a"]}}\n'
    (tmp_path / "train.jsonl").write_text(row.format(i=1) + row.format(i=2))
    (tmp_path / "test.jsonl").write_text(row.format(i=3) + row.format(i=2))
    splits = {"val": None} | {s: str(tmp_path / f"{s}.jsonl") for s in ("train", "test")}
    with pytest.raises(DataFormatError) as err:
        CustomSource("c", str(kg), split_paths=splits).load()
    assert str(err.value) == (
        f"{tmp_path / 'test.jsonl'}:2: duplicate id '2' (also in split 'train'); "
        "expected unique ids"
    )
