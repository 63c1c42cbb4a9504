"""``data.train_limit=N``: the first N train questions of the package's split, in its order;
val and test unchanged; a key (and so a prepared directory and its trained artifacts) of its
own, while a run without it keeps the key it had; a bad value is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lokg.data import CustomSource, KGQADataModule
from lokg.errors import InputError

KG = "paris\tcapital_of\tfrance\nberlin\tcapital_of\tgermany\nrome\tcapital_of\titaly\n"
TOPICS = ("france", "germany", "italy")


def prepared(tmp_path: Path, **settings) -> KGQADataModule:
    """40 answered questions over a three-line KG (each its own text and group), prepared."""
    kg, q = tmp_path / "kg.tsv", tmp_path / "q.jsonl"
    kg.write_text(KG, encoding="utf-8")
    rows = [
        {"id": f"q{i:02d}", "question": f"capital of {TOPICS[i % 3]}, asked {i}?",
         "answers": ["x"], "topic_entities": [TOPICS[i % 3]]}
        for i in range(40)
    ]  # fmt: skip
    q.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    dm = KGQADataModule(
        CustomSource("mine", str(kg), str(q)), artifacts_dir=str(tmp_path / "art"), **settings
    )
    dm.prepare_data()
    dm.setup("fit")
    return dm


def ids(dm: KGQADataModule) -> dict[str, list[str]]:
    return {s: [q.id for q in qs] for s, qs in dm.questions.items()}


def test_the_first_n_train_questions_in_the_splits_order_and_val_test_unchanged(tmp_path):
    full = prepared(tmp_path)
    cut = prepared(tmp_path, train_limit=5)
    assert ids(cut)["train"] == ids(full)["train"][:5]
    assert ids(cut)["val"] == ids(full)["val"] and ids(cut)["test"] == ids(full)["test"]
    assert cut.summary()["questions"]["train"] == 5
    # more than the split holds: the whole train split
    assert ids(prepared(tmp_path, train_limit=1000))["train"] == ids(full)["train"]


def test_each_limit_prepares_and_keys_apart_and_no_limit_keeps_its_key(tmp_path):
    full, five, ten = (prepared(tmp_path, train_limit=n) for n in (None, 5, 10))
    assert len({full.artifact_dir, five.artifact_dir, ten.artifact_dir}) == 3
    assert prepared(tmp_path, train_limit=5).artifact_dir == five.artifact_dir  # deterministic
    # the key of an unlimited set is the one it had before the option existed
    fresh = KGQADataModule(full.source, artifacts_dir=str(tmp_path / "art"))
    assert fresh.fingerprint() == full.fingerprint()
    assert "train_limit" not in json.dumps(full.summary())


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_a_limit_that_is_not_a_positive_count_is_one_line(tmp_path, bad):
    with pytest.raises(InputError) as err:
        KGQADataModule(CustomSource("mine", "kg.tsv", "q.jsonl"), train_limit=bad)
    assert str(err.value) == (
        f"data.train_limit={bad!r}; expected a positive number of train questions, or null for all"
    )


def test_the_option_is_appended_on_the_command_line_and_reaches_the_datamodule(make_cfg):
    import hydra

    cfg = make_cfg("train", ["experiment=train_walk", "data=pq2h", "+data.train_limit=10"])
    assert hydra.utils.instantiate(cfg.data).train_limit == 10
    assert "train_limit" not in make_cfg("train", ["data=pq2h"]).data  # not in the configs
