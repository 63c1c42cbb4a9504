"""End to end on a KB with planted synonyms (issue 10), with the real components: the PQL-2H
KB with 30 relations split into two names each, written as a user's KG file, then
``train.py experiment=train_transe`` (TransE, then SCOS) as a user would run it.

SCOS should recover planted pairs and merge nothing else: the unmodified KB has no
redundant relation (``bench/bench_scos.py planted``: 0 merges on PQL-2H and PQL-3H).
"""

from __future__ import annotations

import shutil

import pytest

from lokg.artifacts import latest
from lokg.config import compose_config
from lokg.data.synthetic import plant_synonyms
from lokg.kg.io import write_triples
from lokg.scos import SCOSResult
from lokg.train import run as train

FAST = ["trainer.enable_progress_bar=false", "logger=[]", "seed=0"]


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    # the package's PQL-2H (its reader, its split): the KB and the prepared question files
    base = train(compose_config("train", ["data=pql2h", "~model", *FAST], root))
    dm_dir = root / "artifacts" / "data"
    (prepared,) = [d for d in dm_dir.iterdir() if d.name.startswith("pql2h-")]
    from lokg.kg.graph import KnowledgeGraph

    kg = KnowledgeGraph.load(prepared / "kg")
    assert base["stats"]["relations"] == kg.num_relations == 363
    pk = plant_synonyms(kg, num_synonyms=30, min_triples=20, seed=0)
    kg_file = root / "planted.tsv"
    write_triples(kg_file, [pk.kg.labeled(i) for i in range(pk.kg.num_triples)])
    splits = {}
    for split in ("train", "val", "test"):
        splits[split] = root / f"q_{split}.jsonl"
        shutil.copy(prepared / f"questions_{split}.jsonl", splits[split])
    data = [
        "data=custom",
        f"data.source.kg_path={kg_file}",
        "data.source.name=planted",
        *(f"+data.source.split_paths.{s}={p}" for s, p in splits.items()),
    ]
    out = {}
    for scos in ("default", "lokg"):  # the paper's theta_base 0.75 and ours (0.64)
        cfg = compose_config(
            "train", ["experiment=train_transe", *data, f"scos={scos}", *FAST], root
        )
        out[scos] = train(cfg)
    return root, pk, out


def _pairs(result: SCOSResult, pk) -> tuple[set, set]:
    """(planted pairs recovered, merged pairs that were not planted), as label pairs."""
    planted = {
        tuple(sorted((pk.kg.relations.label(a), pk.kg.relations.label(b))))
        for a, b in pk.synonym_pairs.tolist()
    }
    merged = set()
    for members in result.clusters().values():
        merged |= {(a, b) for i, a in enumerate(sorted(members)) for b in sorted(members)[i + 1 :]}
    return merged & planted, merged - planted


@pytest.mark.slow
def test_scos_recovers_planted_synonyms_and_merges_nothing_else(planted_run):
    _, pk, out = planted_run
    for scos, at_least in (("default", 0), ("lokg", 10)):
        scos_dir = out[scos]["scos_dir"]
        result = SCOSResult.load(scos_dir / "scos")
        found, wrong = _pairs(result, pk)
        assert wrong == set(), f"scos={scos} merged relations that are not synonyms: {wrong}"
        print(f"scos={scos}: {len(found)} of 30 planted pairs merged, {len(wrong)} wrong")
        assert len(found) >= at_least, f"scos={scos}: only {len(found)} of 30 planted pairs"
        assert result.num_original == 393
        assert result.num_compressed == 393 - len(result.report)
        # the merge report shows each merged pair's three signals of Eq. (3)
        for m in result.report:
            assert m.nmi > 0.5 and m.cosine > 0.5 and m.similarity >= m.threshold - 1e-9
        assert (scos_dir / "scos" / "report.txt").read_text().count("NMI") == len(result.report)
    # ours recovers strictly more than the paper's threshold on this KB
    paper = SCOSResult.load(out["default"]["scos_dir"] / "scos")
    ours = SCOSResult.load(out["lokg"]["scos_dir"] / "scos")
    assert len(_pairs(ours, pk)[0]) > len(_pairs(paper, pk)[0])


@pytest.mark.slow
def test_transe_and_scos_are_keyed_by_the_kg_and_reused(planted_run):
    root, _, out = planted_run
    first = out["lokg"]
    assert first["scos_dir"].parent.parent.name == "kg"  # <artifacts>/kg/<kg fingerprint>/
    assert latest(first["datamodule"].artifact_dir, "scos") == first["scos_dir"]
    # a second question file over the same KG: another dataset directory, same artifacts
    data = [
        "data=custom",
        f"data.source.kg_path={root / 'planted.tsv'}",
        "data.source.name=planted_again",
        f"data.source.questions_path={root / 'q_test.jsonl'}",
    ]
    again = train(
        compose_config("train", ["experiment=train_transe", *data, "scos=lokg", *FAST], root)
    )
    assert again["datamodule"].artifact_dir != first["datamodule"].artifact_dir
    assert again["scos_dir"] == first["scos_dir"]
    assert again["metrics"] == {}  # nothing was trained
    assert latest(again["datamodule"].artifact_dir, "scos") == first["scos_dir"]
