"""TransE embeddings from DGL-KE and PyTorch-BigGraph (lokg/kg/external_embeddings.py): tiny
engine outputs written here for toy_kg's ``PARENTS`` (6 entities, 3 relations), their rows in
orders other than the KG's ids, aligned by label; every vector is known by name, so where it
must land is computed by hand. Then the whole route through ``train.py
experiment=import_transe`` to the SCOS artifact the loaders read."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lokg.errors import InputError
from lokg.kg import external_embeddings as ext
from lokg.kg.external_embeddings import align, read_dglke, read_external_embeddings

from ..fixtures import toy_kg

h5py = pytest.importorskip("h5py")

ROOT = Path(__file__).resolve().parents[2]
D = 4
#: every name a test writes, KG's or not; the vector of a name is fixed by its place here
ENTITIES = ["ann", "bob", "cat", "dan", "eve", "fem", "zed", "yves"]  # zed, yves: not in PARENTS
RELATIONS = ["gender", "parent", "sibling", "knows"]  # knows: not in PARENTS
#: the labels of toy_kg's ``COUPLES`` (the run through train.py)
COUPLE_ENTITIES = sorted({x for h, _, t in toy_kg.COUPLES for x in (h, t)})
COUPLE_RELATIONS = sorted({r for _, r, _ in toy_kg.COUPLES})
_ALL_ENTITIES = ENTITIES + [n for n in COUPLE_ENTITIES if n not in ENTITIES]
_ALL_RELATIONS = RELATIONS + [n for n in COUPLE_RELATIONS if n not in RELATIONS]


def ent_vec(name: str, dim: int = D) -> np.ndarray:
    """``[dim]``: entity ``name``'s vector, ``(i + 1) * [1, 10, 100, ...]`` (``i``: its place
    in :data:`ENTITIES`, then the ``COUPLES`` labels)."""
    return (_ALL_ENTITIES.index(name) + 1) * 10.0 ** np.arange(dim, dtype=np.float32)


def rel_vec(name: str, dim: int = D) -> np.ndarray:
    """``[dim]``: relation ``name``'s translation, ``-(i + 1) * [1, 2, 3, ...]``."""
    return -(_ALL_RELATIONS.index(name) + 1) * np.arange(1, dim + 1, dtype=np.float32)


def one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert "\n" not in msg, msg
    return msg


# --- writers of the engines' formats ---------------------------------------------------------


def write_dglke(
    directory: Path,
    entities: list[str],
    relations: list[str],
    *,
    prefix: str = "toy_TransE_l2",
    rel_dim: int = D,
) -> Path:
    """DGL-KE's save directory: row ``i`` of each ``.npy`` is id ``i``, whose name the
    ``.tsv`` map gives; the map's lines are written last id first (ids, not line order,
    decide)."""
    directory.mkdir(parents=True, exist_ok=True)
    for kind, names in (("entities", entities), ("relations", relations)):
        lines = [f"{i}\t{n}\n" for i, n in enumerate(names)][::-1]
        (directory / f"{kind}.tsv").write_text("".join(lines), encoding="utf-8")
    np.save(directory / f"{prefix}_entity.npy", np.stack([ent_vec(n) for n in entities]))
    np.save(
        directory / f"{prefix}_relation.npy", np.stack([rel_vec(n, rel_dim) for n in relations])
    )
    return directory


def write_pbg(
    directory: Path,
    parts: list[list[str]],
    relations: list[str],
    *,
    dynamic: bool = True,
    version: int = 3,
    global_emb: np.ndarray | None = None,
    operator: str = "translation",
) -> Path:
    """A PyTorch-BigGraph checkpoint of one entity type ``all`` in ``len(parts)`` partitions
    (partition ``p``'s rows named ``parts[p]``); its names files in ``data/``, the config's
    ``entity_path`` (relative), as PBG keeps them apart from the checkpoint. PBG scores
    ``(h, r, t)`` as ``h ~ t + r_rhs`` (its operator acts on the right-hand side), so the
    stored translation of relation ``r`` is ``-rel_vec(r)`` (and the left-hand one, which
    dynamic relations add, ``+rel_vec(r)``)."""
    names_dir = directory / "data"
    names_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "entity_path": "data",
        "entities": {"all": {"num_partitions": len(parts)}},
        "relations": [
            {"name": name, "lhs": "all", "rhs": "all", "operator": operator}
            for name in (["all_edges"] if dynamic else relations)
        ],
        "dynamic_relations": dynamic,
        "dimension": D,
        "comparator": "l2",
        "global_emb": global_emb is not None,
    }
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (directory / "checkpoint_version.txt").write_text(f"{version}\n", encoding="utf-8")
    with h5py.File(directory / f"model.v{version}.h5", "w") as f:
        f.attrs["format_version"] = 1
        model = f.create_group("model")
        if dynamic:
            vectors = np.stack([rel_vec(r) for r in relations])  # [R', d]
            model.create_dataset("relations/0/operator/rhs/translations", data=-vectors)
            model.create_dataset("relations/0/operator/lhs/translations", data=vectors)
            (names_dir / "dynamic_rel_names.json").write_text(json.dumps(relations))
        else:
            for i, r in enumerate(relations):
                model.create_dataset(f"relations/{i}/operator/rhs/translation", data=-rel_vec(r))
        if global_emb is not None:
            model.create_dataset("entities/all/global_embedding", data=global_emb)
    for p, names in enumerate(parts):
        (names_dir / f"entity_names_all_{p}.json").write_text(json.dumps(names))
        with h5py.File(directory / f"embeddings_all_{p}.v{version}.h5", "w") as f:
            f.attrs["format_version"] = 1
            f.create_dataset("embeddings", data=np.stack([ent_vec(n) for n in names]))
    return directory


def expected(kg, offset: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``([E, d], [R, d])``: each KG id's vector by its label, by hand."""
    ent = np.stack([ent_vec(label) for label in kg.entities.labels])
    rel = np.stack([rel_vec(label) for label in kg.relations.labels])
    return (ent if offset is None else ent + offset), rel


# --- DGL-KE ----------------------------------------------------------------------------------


@pytest.mark.parametrize("block_rows", [2, ext.BLOCK_ROWS])
def test_dglke_rows_land_on_the_kg_ids_by_name(tmp_path, monkeypatch, block_rows):
    monkeypatch.setattr(ext, "BLOCK_ROWS", block_rows)  # 2: rows gathered over several blocks
    kg = toy_kg.parents()
    # the engine's ids are not the KG's: reversed, with names the KG lacks among them
    order = ["zed", "fem", "eve", "dan", "yves", "cat", "bob", "ann"]
    write_dglke(tmp_path, order, ["sibling", "knows", "parent", "gender"])
    out = read_external_embeddings(kg, tmp_path, "dglke")
    ent, rel = expected(kg)
    assert out.entity.dtype == np.float32 and out.entity.shape == (6, D)
    np.testing.assert_array_equal(out.entity, ent)
    np.testing.assert_array_equal(out.relation, rel)
    # by hand: bob, engine id 6, lands on KG id 1 with its own vector, 2 * [1, 10, 100, 1000]
    assert kg.entities["bob"] == 1
    np.testing.assert_array_equal(out.entity[kg.entities["bob"]], [2, 20, 200, 2000])
    np.testing.assert_array_equal(out.relation[kg.relations["parent"]], [-2, -4, -6, -8])
    r = out.report
    assert (r.entities, r.entities_matched, r.entity_rows) == (6, 6, 8)
    assert (r.relations, r.relation_rows, r.entities_missing) == (3, 4, 0)
    assert out.source.model == "toy_TransE_l2"
    assert r.describe() == "matched 3/3 relations (4 rows in the file) and 6/6 entities (8 rows)"
    record = out.record()
    assert record["format"] == "dglke" and record["path"] == str(tmp_path.resolve())
    assert record["alignment"]["entities_matched"] == 6


def test_dglke_reads_the_builtin_datasets_dict_maps(tmp_path):
    kg = toy_kg.parents()
    write_dglke(tmp_path, ENTITIES[:6], RELATIONS[:3])
    for kind in ("entities", "relations"):
        (tmp_path / f"{kind}.tsv").rename(tmp_path / f"{kind}.dict")
    out = read_dglke(tmp_path)
    assert out.files[2].name == "entities.dict"
    np.testing.assert_array_equal(align(kg, out).entity, expected(kg)[0])


# --- PyTorch-BigGraph ------------------------------------------------------------------------


def test_pbg_dynamic_relations_over_two_partitions(tmp_path):
    kg = toy_kg.parents()
    parts = [["eve", "zed", "ann"], ["fem", "cat", "dan", "bob"]]  # permuted, split in two
    write_pbg(tmp_path, parts, ["knows", "sibling", "gender", "parent"])
    out = read_external_embeddings(kg, tmp_path, "pbg")
    ent, rel = expected(kg)
    np.testing.assert_array_equal(out.entity, ent)
    np.testing.assert_array_equal(out.relation, rel)
    np.testing.assert_array_equal(out.entity[kg.entities["cat"]], [3, 30, 300, 3000])
    # e_r is minus PBG's stored translation: parent's is stored as [2, 4, 6, 8]
    np.testing.assert_array_equal(out.relation[kg.relations["parent"]], [-2, -4, -6, -8])
    assert (out.report.entity_rows, out.report.relation_rows) == (7, 4)
    names = {f.name for f in out.source.files}
    assert {"model.v3.h5", "config.json", "dynamic_rel_names.json"} <= names
    assert {"embeddings_all_1.v3.h5", "entity_names_all_1.json"} <= names
    assert out.source.model == "PyTorch-BigGraph v3: translation operator, l2 comparator"


def test_pbg_static_relations_and_the_global_embedding(tmp_path):
    kg = toy_kg.parents()
    offset = np.array([0.5, -0.5, 0.25, 0.0], dtype=np.float32)
    write_pbg(tmp_path, [ENTITIES[::-1]], ["parent", "gender", "sibling"], dynamic=False,
              global_emb=offset)  # fmt: skip
    out = read_external_embeddings(kg, tmp_path, "pbg")
    ent, rel = expected(kg, offset)  # PBG adds a type's global embedding to its rows
    np.testing.assert_array_equal(out.entity, ent)
    np.testing.assert_array_equal(out.entity[kg.entities["ann"]], [1.5, 9.5, 100.25, 1000])
    np.testing.assert_array_equal(out.relation, rel)


def test_pbg_without_version_file_reads_the_newest_and_config_from_the_model(tmp_path):
    kg = toy_kg.parents()
    write_pbg(tmp_path, [ENTITIES[:6]], RELATIONS[:3], version=7)
    config = (tmp_path / "config.json").read_text()
    (tmp_path / "config.json").unlink()
    (tmp_path / "checkpoint_version.txt").unlink()
    with h5py.File(tmp_path / "model.v7.h5", "a") as f:
        f.attrs["config/json"] = config
    out = read_external_embeddings(kg, tmp_path, "pbg")
    np.testing.assert_array_equal(out.relation, expected(kg)[1])


def test_pbg_without_h5py_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    write_pbg(tmp_path, [ENTITIES], RELATIONS)
    monkeypatch.setitem(sys.modules, "h5py", None)  # as if not installed: import fails
    with pytest.raises(InputError) as err:
        read_external_embeddings(toy_kg.parents(), tmp_path, "pbg")
    assert one_line(err).endswith("with h5py: pip install 'lokg[pbg]'")


# --- names the KG has and the files lack -------------------------------------------------------


def test_a_missing_entity_gets_a_zero_row_counted_and_warned_once(tmp_path, caplog):
    kg = toy_kg.parents()
    write_dglke(tmp_path, ["bob", "zed", "ann", "cat"], RELATIONS[:3])  # no dan, eve, fem
    with caplog.at_level(logging.WARNING, logger="lokg.kg.external_embeddings"):
        out = read_external_embeddings(kg, tmp_path, "dglke")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "no row for 3 of the KG's 6 entities ('dan', 'eve', 'fem')" in warnings[0]
    missing = [kg.entities[n] for n in ("dan", "eve", "fem")]
    assert not out.entity[missing].any()
    np.testing.assert_array_equal(out.entity[kg.entities["cat"]], ent_vec("cat"))
    assert (out.report.entities_missing, out.report.missing_entities) == (3, ["dan", "eve", "fem"])
    assert out.report.describe().endswith("; 3 entities without a row: zero vectors")
    with pytest.raises(InputError) as err:
        read_external_embeddings(kg, tmp_path, "dglke", missing_entities="error")
    assert "no row for 3 of the KG's 6 entities ('dan', 'eve', 'fem')" in one_line(err)


def test_a_missing_relation_is_one_line_naming_the_file_and_the_names(tmp_path):
    kg = toy_kg.parents()
    write_dglke(tmp_path, ENTITIES, ["knows", "parent"])  # no gender, sibling
    with pytest.raises(InputError) as err:
        read_external_embeddings(kg, tmp_path, "dglke")
    msg = one_line(err)
    assert msg.startswith(f"{tmp_path / 'toy_TransE_l2_relation.npy'}: no row for 2 of the KG's")
    assert "('gender', 'sibling')" in msg and "every relation needs its e_r" in msg


def test_entity_and_relation_widths_must_agree_naming_both_files(tmp_path):
    write_dglke(tmp_path, ENTITIES, RELATIONS, rel_dim=3)
    with pytest.raises(InputError) as err:
        read_external_embeddings(toy_kg.parents(), tmp_path, "dglke")
    msg = one_line(err)
    assert str(tmp_path / "toy_TransE_l2_entity.npy") in msg
    assert str(tmp_path / "toy_TransE_l2_relation.npy") in msg and "share d" in msg


def _dglke(path: Path) -> Path:
    return write_dglke(path, ENTITIES, RELATIONS)


def _pbg(path: Path) -> Path:
    return write_pbg(path, [ENTITIES], RELATIONS)


def _garbage(path: Path) -> None:
    path.write_bytes(b"not what it claims to be")


BAD = {
    "no pair": ("dglke", _dglke, lambda d: (d / "toy_TransE_l2_entity.npy").unlink(),
                "no DGL-KE embeddings here"),
    "two pairs": ("dglke", _dglke, lambda d: write_dglke(d, ENTITIES, RELATIONS, prefix="b"),
                  "2 DGL-KE models (b, toy_TransE_l2)"),
    "no map": ("dglke", _dglke, lambda d: (d / "relations.tsv").unlink(), "no relations.tsv"),
    "bad map line": ("dglke", _dglke, lambda d: (d / "entities.tsv").write_text("0 ann\n"),
                     "entities.tsv:1: expected 'id<TAB>name', got '0 ann'"),
    "id gap": ("dglke", _dglke, lambda d: (d / "entities.tsv").write_text("0\tann\n2\tbob\n"),
               "entities.tsv: ids must be 0..1; id 1 is missing"),
    "rows and map disagree": ("dglke", _dglke,
                              lambda d: (d / "entities.tsv").write_text("0\tann\n"),
                              "toy_TransE_l2_entity.npy has 8 rows but"),
    "garbled npy": ("dglke", _dglke, lambda d: _garbage(d / "toy_TransE_l2_relation.npy"),
                    "toy_TransE_l2_relation.npy: not a readable .npy array"),
    "no checkpoint": ("pbg", _pbg, lambda d: (d / "model.v3.h5").unlink(), "model.v3.h5: no such"),
    "garbled model": ("pbg", _pbg, lambda d: _garbage(d / "model.v3.h5"),
                      "model.v3.h5: not a readable HDF5 file"),
    "garbled embeddings": ("pbg", _pbg, lambda d: _garbage(d / "embeddings_all_0.v3.h5"),
                           "embeddings_all_0.v3.h5: not a readable HDF5 file"),
    "not TransE": ("pbg", lambda p: write_pbg(p, [ENTITIES], RELATIONS, operator="linear"),
                   None, "operator 'linear'; only 'translation' (TransE) is read"),
    "no names file": ("pbg", _pbg, lambda d: (d / "data" / "entity_names_all_0.json").unlink(),
                      "no entity_names_all_0.json in"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_naming_the_file(tmp_path, case):
    fmt, write, spoil, message = BAD[case]
    directory = write(tmp_path / "engine")
    if spoil is not None:
        spoil(directory)
    with pytest.raises(InputError) as err:
        read_external_embeddings(toy_kg.parents(), directory, fmt)
    assert message in one_line(err)


def test_an_unknown_format_policy_or_directory_is_one_line(tmp_path):
    kg = toy_kg.parents()
    with pytest.raises(InputError, match=r"^transe_import.format='owl'; expected one of"):
        read_external_embeddings(kg, tmp_path, "owl")
    with pytest.raises(InputError, match=r"missing_entities='random'; expected one of"):
        read_external_embeddings(kg, tmp_path, "dglke", missing_entities="random")
    with pytest.raises(FileNotFoundError, match="nowhere: no such directory"):
        read_external_embeddings(kg, tmp_path / "nowhere", "dglke")


def test_an_imported_transe_is_recorded_as_a_departure_from_the_paper():
    from lokg.paper_settings import transe_departures

    record = {"imported": {"format": "dglke", "model": "fb_TransE_l2"}}
    assert transe_departures(record) == [
        "transe.source: imported from dglke (fb_TransE_l2) (paper: TransE trained 100 epochs)"
    ]


# --- through train.py --------------------------------------------------------------------------

SPLITS = {
    "train": [("t1", "alice", "france"), ("t2", "dave", "spain")],
    "val": [("v1", "frank", "italy")],
    "test": [("s1", "alice", "france")],
}


def _couples_dataset(root: Path) -> list[str]:
    """toy_kg's ``COUPLES`` as a custom dataset under ``root/src``; its data overrides."""
    (root / "src").mkdir(parents=True)
    written = toy_kg.write_custom_dataset(
        root / "src", toy_kg.COUPLES, toy_kg.spouse_questions(SPLITS)
    )
    return toy_kg.custom_data_overrides(*written)


def test_a_bad_import_config_is_one_line_before_any_work(tmp_path):
    from lokg.config import compose_config
    from lokg.train import run

    data = _couples_dataset(tmp_path)
    imp = ["experiment=import_transe", "transe_import.format=dglke"]
    cfg = compose_config(
        "train", [*imp, f"transe_import.path={tmp_path}", "model=gat", *data], tmp_path
    )
    with pytest.raises(InputError, match="^transe_import reads TransE's embeddings .* GATModule"):
        run(cfg)
    cfg = compose_config("train", [*imp, f"transe_import.path={tmp_path}/none", *data], tmp_path)
    with pytest.raises(FileNotFoundError, match="none: no such directory"):
        run(cfg)
    cfg = compose_config("train", ["experiment=import_transe", *data], tmp_path)
    with pytest.raises(InputError, match=r"^transe_import.path is not set; expected the engine"):
        run(cfg)  # the experiment without a path never falls back to fitting TransE
    assert not list((tmp_path / "artifacts").rglob("scos*"))


def test_train_imports_dglke_embeddings_into_the_scos_artifact_the_loaders_read(tmp_path, capsys):
    """``python train.py experiment=import_transe``: the published ``scos-*`` holds the
    engine's vectors on the KG's ids, no ``transe.ckpt``, a ``transe.json`` saying where they
    came from; ``load_graph_artifacts`` (what evaluate.py and the walk's training load) reads
    it as the dataset's SCOS artifact. A second run reuses it."""
    import hydra

    from lokg.artifacts import latest, load_graph_artifacts
    from lokg.config import compose_config
    from lokg.labels import artifact_departures
    from lokg.manifest import check_directory
    from lokg.scos import SCOSResult
    from lokg.train import run as train
    from lokg.train_stages import merged_relation_embeddings

    data = _couples_dataset(tmp_path)
    engine = write_dglke(tmp_path / "dglke", COUPLE_ENTITIES[::-1], COUPLE_RELATIONS[::-1])
    args = [
        sys.executable, str(ROOT / "train.py"), "experiment=import_transe",
        "transe_import.format=dglke", f"transe_import.path={engine}",
        "trainer.enable_progress_bar=false", "logger=csv", *data,
    ]  # fmt: skip
    env = {**os.environ, "LOKG_ROOT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "TransE: imported from dglke (toy_TransE_l2): matched 3/3 relations" in done.stdout
    (scos_dir,) = [p for p in (tmp_path / "artifacts").rglob("scos-*") if p.is_dir()]
    assert not (scos_dir / "transe.ckpt").exists()
    for directory in (scos_dir, scos_dir / "scos", scos_dir / "scos" / "kg"):
        check_directory(directory)  # the manifests, as every loader checks them
    meta = json.loads((scos_dir / "transe.json").read_text())
    assert meta["imported"]["format"] == "dglke" and meta["dim"] == D
    assert meta["imported"]["alignment"]["entities_matched"] == len(COUPLE_ENTITIES)

    cfg = compose_config("evaluate", data, tmp_path)
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    r0 = np.load(scos_dir / "relation_embeddings.npy")  # [R0, d] on the KG's ids
    np.testing.assert_array_equal(r0, expected(dm.kg)[1])
    assert latest(dm.artifact_dir, "scos") == scos_dir
    art = load_graph_artifacts(cfg, dm, need_gat=False).own_edges()
    assert art.scos_dir == scos_dir and art.transe_dir == scos_dir
    scos = SCOSResult.load(scos_dir / "scos")
    np.testing.assert_allclose(
        art.relation_embeddings, merged_relation_embeddings(r0, scos.mapping, scos.directions)
    )
    assert artifact_departures({"transe": scos_dir}) == [
        "transe.source: imported from dglke (toy_TransE_l2) (paper: TransE trained 100 epochs)"
    ]
    again = train(compose_config("train", args[3:], tmp_path))  # the same command, in-process
    assert again["scos_dir"] == scos_dir and "already made" in capsys.readouterr().out
