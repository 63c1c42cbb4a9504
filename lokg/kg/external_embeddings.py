"""TransE embeddings trained by a large-scale engine, aligned to a :class:`KnowledgeGraph`.

For a KG whose embeddings outgrow one machine's memory, TransE is trained by an engine built
for that and its output read here as the e_r SCOS and the walk read
(``experiment=import_transe``, :func:`lokg.train_stages.run_import_stage`). Two formats:

- ``dglke`` — DGL-KE's save directory: ``<name>_entity.npy`` ``[E', d]`` and
  ``<name>_relation.npy`` ``[R', d]`` (``<name>`` is ``<dataset>_TransE_l2`` for
  ``--model_name TransE_l2``), beside the id -> name maps of its ``raw_udd`` data,
  ``entities.tsv`` and ``relations.tsv`` (lines ``id<TAB>name``; the built-in datasets'
  ``entities.dict`` / ``relations.dict`` have the same lines and are read when there is no
  ``.tsv``). Row ``i`` of an ``.npy`` is the vector of id ``i``.
- ``pbg`` — a PyTorch-BigGraph checkpoint directory: ``config.json`` (the training config
  PBG saves there; else the ``config/json`` attribute of the model file), the committed
  version ``N`` (``checkpoint_version.txt``; else the newest ``model.v<N>.h5``),
  ``embeddings_<type>_<part>.v<N>.h5`` (HDF5 dataset ``embeddings`` ``[n, d]``) with the
  names of their rows, ``entity_names_<type>_<part>.json``, and ``model.v<N>.h5``, whose
  group ``model`` holds the relation operators under PBG's public names: with
  ``dynamic_relations`` one operator, ``relations/0/operator/rhs/translations`` ``[R', d]``,
  its rows named by ``dynamic_rel_names.json``; else one per configured relation,
  ``relations/<i>/operator/rhs/translation`` ``[d]``, named by ``config.relations[i].name``.
  Only the ``translation`` operator is read (TransE). PBG applies it to the right-hand side
  and scores an edge ``(h, r, t)`` by comparing ``h`` with ``t + r_pbg``, so its
  translation is ``h - t``: lokg's e_r (``h + e_r ~ t``, as DGL-KE's and our TransE) is
  ``-r_pbg``. (With dynamic relations PBG also trains a left-hand side copy, ``t - h``;
  the right-hand one is read in both modes.) An entity type's
  ``entities/<type>/global_embedding`` ``[d]``, when trained (``global_emb``), is added to
  its rows as PBG's own export does. The names files live in PBG's ``entity_path``: they
  are looked up in the checkpoint directory first, then there (relative paths from the
  checkpoint directory). Reading it needs ``h5py`` (``pip install 'lokg[pbg]'``).

Alignment is by label (:class:`lokg.kg.graph.Vocabulary`): a row whose name is not a KG label
is skipped (counted). Every KG relation needs its e_r: a missing one is a one-line error
naming the file and the first missing names. A KG entity without a row gets the policy
``missing_entities``: ``zero`` (default) gives it the zero vector, counted and warned about
once; ``error`` refuses. Entity vectors are read only by SCOS's learned entity types
(``scos.entity_types=transe``, or ``auto`` on a graph without types or domains), where the
zero rows all fall into one k-means type; nothing else reads them. Rows are gathered in
blocks (:data:`BLOCK_ROWS`), never the whole file at once: the engine's files may be far
bigger than the KG's share of them.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph, Vocabulary

__all__ = [
    "FORMATS",
    "MISSING_ENTITIES",
    "AlignmentReport",
    "EmbeddingTable",
    "EngineOutput",
    "ImportedEmbeddings",
    "align",
    "read_dglke",
    "read_external_embeddings",
    "read_pbg",
]

log = logging.getLogger(__name__)

#: the engines whose output is read: DGL-KE's save directory, PyTorch-BigGraph's checkpoint
FORMATS = ("dglke", "pbg")
#: what a KG entity without a row gets: the zero vector, or a one-line error
MISSING_ENTITIES = ("zero", "error")
#: rows read from an engine file at a time
BLOCK_ROWS = 1 << 16
#: missing names listed in a message
SHOWN = 5

_PBG_FORMAT_VERSION = 1  # the ``format_version`` attribute PBG writes on its HDF5 files


@dataclass(frozen=True)
class EmbeddingTable:
    """One engine file of embeddings, read lazily: row ``i`` is the vector of ``names[i]``.

    Attributes:
        path: the file the rows are read from (a message names it).
        names: ``[n]`` the name of each row, from the engine's id -> name map.
        dim: d, the width of a row.
        take: ``rows [m]`` (increasing, distinct) -> ``[m, d]`` float32, those rows.
    """

    path: Path
    names: list[str]
    dim: int
    take: Callable[[np.ndarray], np.ndarray] = field(repr=False)


@dataclass(frozen=True)
class EngineOutput:
    """What a reader found in an engine's directory, before alignment.

    Attributes:
        format: one of :data:`FORMATS`.
        directory: the directory read.
        model: what the engine trained (DGL-KE: the files' ``<dataset>_<model>`` prefix;
            PBG: its operator and comparator).
        entities: the entity tables (PBG: one per entity type and partition).
        relations: the relation table, ``[R', d]``.
        files: every file read, names maps included.
    """

    format: str
    directory: Path
    model: str
    entities: list[EmbeddingTable]
    relations: EmbeddingTable
    files: list[Path]

    def fingerprint(self) -> dict[str, Any]:
        """The source in a hashable form: format, directory and each file's size and
        modification time (a retrained engine's output gets another artifact key, without
        hashing gigabytes)."""
        stats = {str(f): [f.stat().st_size, f.stat().st_mtime_ns] for f in self.files}
        return {"format": self.format, "path": str(self.directory), "files": stats}


@dataclass(frozen=True)
class AlignmentReport:
    """How the engine's names met the KG's labels.

    Attributes:
        entities: E, the KG's entities.
        entities_matched: those with a row in the files.
        entity_rows: rows in the entity files (those of no KG entity are skipped).
        relations: R, the KG's relations (all matched, or the import fails).
        relation_rows: rows in the relation file.
        missing_entities: the KG entities without a row, the first :data:`SHOWN`.
        policy: what the unmatched entities got (:data:`MISSING_ENTITIES`).
    """

    entities: int
    entities_matched: int
    entity_rows: int
    relations: int
    relation_rows: int
    missing_entities: list[str]
    policy: str

    @property
    def entities_missing(self) -> int:
        return self.entities - self.entities_matched

    def describe(self) -> str:
        """One line for the console."""
        line = (
            f"matched {self.relations}/{self.relations} relations ({self.relation_rows} rows "
            f"in the file) and {self.entities_matched}/{self.entities} entities "
            f"({self.entity_rows} rows)"
        )
        if self.entities_missing:
            line += f"; {self.entities_missing} entities without a row: {self.policy} vectors"
        return line


@dataclass(frozen=True)
class ImportedEmbeddings:
    """An engine's TransE embeddings on a KG's ids.

    Attributes:
        entity: ``[E, d]`` float32, row = KG entity id (:attr:`AlignmentReport.policy` rows for
            entities the files lack).
        relation: ``[R, d]`` float32, row = KG relation id: e_r.
        source: the engine output they were read from.
        report: how many names matched.
    """

    entity: np.ndarray
    relation: np.ndarray
    source: EngineOutput
    report: AlignmentReport

    def record(self) -> dict[str, Any]:
        """Where the embeddings came from, for the artifact's ``transe.json``."""
        return {
            "format": self.source.format,
            "path": str(self.source.directory),
            "model": self.source.model,
            "files": [str(f) for f in self.source.files],
            "alignment": asdict(self.report),
        }


def read_external_embeddings(
    kg: KnowledgeGraph, path: str | Path, format: str, missing_entities: str = "zero"
) -> ImportedEmbeddings:
    """Read an engine's output directory (``format``: one of :data:`FORMATS`) and align it to
    ``kg``'s vocabularies (:func:`align`).

    Raises:
        InputError: an unknown format or policy, a file missing or unreadable, a KG relation
            without a row, rows of two widths (one line naming the files).
        FileNotFoundError: ``path`` is not a directory.
    """
    if format not in FORMATS:
        raise InputError(f"transe_import.format={format!r}; expected one of {list(FORMATS)}")
    if missing_entities not in MISSING_ENTITIES:
        raise InputError(
            f"transe_import.missing_entities={missing_entities!r}; expected one of "
            f"{list(MISSING_ENTITIES)}"
        )
    directory = Path(path).expanduser().resolve()
    if not directory.is_dir():
        raise FileNotFoundError(f"{path}: no such directory (transe_import.path)")
    engine = read_dglke(directory) if format == "dglke" else read_pbg(directory)
    return align(kg, engine, missing_entities)


def align(
    kg: KnowledgeGraph, engine: EngineOutput, missing_entities: str = "zero"
) -> ImportedEmbeddings:
    """``engine``'s rows on ``kg``'s entity and relation ids, matched by label.

    Raises:
        InputError: the entity and relation rows differ in width; a KG relation has no row
            (every relation needs its e_r); a name has two rows; a row is not finite; with
            ``missing_entities="error"``, a KG entity has no row.
    """
    rel = engine.relations
    for table in engine.entities:
        if table.dim != rel.dim:
            raise InputError(
                f"{table.path} has {table.dim}-dimensional rows but {rel.path} "
                f"{rel.dim}-dimensional ones: TransE's entity and relation embeddings share d"
            )
    relation, found_rel = _gathered(kg.relations, [rel], rel.dim)
    if not found_rel.all():
        missing = [kg.relations.label(i) for i in np.flatnonzero(~found_rel)]
        raise InputError(
            f"{rel.path}: no row for {len(missing)} of the KG's {kg.num_relations} relations "
            f"({_first(missing)}); every relation needs its e_r: train on this KG's relations"
        )
    entity, found_ent = _gathered(kg.entities, engine.entities, rel.dim)
    missing = [kg.entities.label(i) for i in np.flatnonzero(~found_ent)[:SHOWN]]
    report = AlignmentReport(
        entities=kg.num_entities,
        entities_matched=int(found_ent.sum()),
        entity_rows=sum(len(t.names) for t in engine.entities),
        relations=kg.num_relations,
        relation_rows=len(rel.names),
        missing_entities=missing,
        policy=missing_entities,
    )
    if report.entities_missing:
        where = ", ".join(str(t.path) for t in engine.entities[:2])
        more = " ..." if len(engine.entities) > 2 else ""
        if missing_entities == "error":
            raise InputError(
                f"{where}{more}: no row for {report.entities_missing} of the KG's "
                f"{kg.num_entities} entities ({_first(missing, report.entities_missing)}); "
                "transe_import.missing_entities=zero gives them zero vectors"
            )
        log.warning(
            "%s%s: no row for %d of the KG's %d entities (%s): zero vectors (only SCOS's "
            "learned entity types read them)",
            where, more, report.entities_missing, kg.num_entities,
            _first(missing, report.entities_missing),
        )  # fmt: skip
    return ImportedEmbeddings(entity=entity, relation=relation, source=engine, report=report)


def _first(names: list[str], total: int | None = None) -> str:
    """``'a', 'b', ... (+n more)``: the first :data:`SHOWN` names of ``total``."""
    total = len(names) if total is None else total
    shown = ", ".join(repr(n) for n in names[:SHOWN])
    return shown + (f", ... (+{total - SHOWN} more)" if total > SHOWN else "")


def _gathered(
    vocab: Vocabulary, tables: list[EmbeddingTable], dim: int
) -> tuple[np.ndarray, np.ndarray]:
    """``([V, d] float32 rows by vocabulary id, zero where none; [V] bool found)``."""
    out = np.zeros((len(vocab), dim), dtype=np.float32)
    source = np.full(len(vocab), -1, dtype=np.int64)  # [V] the table each id's row is from
    for t, table in enumerate(tables):
        ids, rows = [], []
        for row, name in enumerate(table.names):
            i = vocab.get(name)
            if i is None:
                continue
            if source[i] >= 0:
                first = tables[source[i]].path
                raise InputError(
                    f"{table.path}: {name!r} has a second row (row {row}; the first is in "
                    f"{first}); each name needs one"
                )
            source[i] = t
            ids.append(i)
            rows.append(row)
        if not ids:
            continue
        vectors = table.take(np.asarray(rows, dtype=np.int64))  # [m, d]
        if not np.isfinite(vectors).all():
            raise InputError(f"{table.path}: rows with NaN or infinite values")
        out[np.asarray(ids, dtype=np.int64)] = vectors
    return out, source >= 0


def _take_blocks(read: Callable[[int, int], np.ndarray], rows: np.ndarray) -> np.ndarray:
    """``[m, d]`` float32: ``rows`` (increasing) read as blocks ``read(start, stop)`` of at most
    :data:`BLOCK_ROWS` rows, only the blocks that hold one."""
    parts = []
    for block in np.unique(rows // BLOCK_ROWS):
        start = int(block) * BLOCK_ROWS
        picked = rows[(rows >= start) & (rows < start + BLOCK_ROWS)]
        chunk = read(start, int(picked[-1]) + 1)
        parts.append(np.asarray(chunk[picked - start], dtype=np.float32))
    return np.concatenate(parts)


# --- DGL-KE ----------------------------------------------------------------------------------


def read_dglke(directory: Path) -> EngineOutput:
    """DGL-KE's save directory (the module doc): one ``<name>_entity.npy`` /
    ``<name>_relation.npy`` pair and the ``entities``/``relations`` id -> name maps.

    Raises:
        InputError: no pair or several, a map or array unreadable, row counts that differ
            from the map's.
    """
    prefix = _dglke_prefix(directory)
    ent_names, ent_map = _id_names(directory, "entities")
    rel_names, rel_map = _id_names(directory, "relations")
    ent_file = directory / f"{prefix}_entity.npy"
    rel_file = directory / f"{prefix}_relation.npy"
    return EngineOutput(
        format="dglke",
        directory=directory,
        model=prefix,
        entities=[_npy_table(ent_file, ent_names, ent_map)],
        relations=_npy_table(rel_file, rel_names, rel_map),
        files=[ent_file, rel_file, ent_map, rel_map],
    )


def _dglke_prefix(directory: Path) -> str:
    """The ``<name>`` of the directory's one ``<name>_entity.npy`` / ``<name>_relation.npy``."""
    entity = {p.name[: -len("_entity.npy")] for p in directory.glob("*_entity.npy")}
    relation = {p.name[: -len("_relation.npy")] for p in directory.glob("*_relation.npy")}
    pairs = sorted(entity & relation)
    if len(pairs) == 1:
        return pairs[0]
    if not pairs:
        raise InputError(
            f"{directory}: no DGL-KE embeddings here (a <name>_entity.npy and "
            "<name>_relation.npy pair, as dglke_train --save_path writes them)"
        )
    raise InputError(
        f"{directory}: {len(pairs)} DGL-KE models ({', '.join(pairs)}); keep one pair of "
        "<name>_entity.npy / <name>_relation.npy in the directory"
    )


def _id_names(directory: Path, kind: str) -> tuple[list[str], Path]:
    """``(names by id, the file)`` from ``<kind>.tsv`` (else ``<kind>.dict``): ``id<TAB>name``
    lines whose ids are 0..n-1, each once."""
    path = directory / f"{kind}.tsv"
    if not path.is_file() and (directory / f"{kind}.dict").is_file():
        path = directory / f"{kind}.dict"
    if not path.is_file():
        raise InputError(
            f"{directory}: no {kind}.tsv (DGL-KE's id -> name map, lines 'id<TAB>name'); copy "
            "it from the data directory DGL-KE trained on"
        )
    names: dict[int, str] = {}
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            key, sep, name = line.partition("\t")
            if not sep or not key.strip().isdigit():
                raise InputError(f"{path}:{number}: expected 'id<TAB>name', got {line[:60]!r}")
            if int(key) in names:
                raise InputError(f"{path}:{number}: id {int(key)} appears twice")
            names[int(key)] = name
    gap = next((i for i in range(len(names)) if i not in names), None)
    if gap is not None:
        raise InputError(f"{path}: ids must be 0..{len(names) - 1}; id {gap} is missing")
    return [names[i] for i in range(len(names))], path


def _npy_table(path: Path, names: list[str], names_file: Path) -> EmbeddingTable:
    """A ``[n, d]`` ``.npy`` file (memory-mapped) whose rows ``names_file`` names."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: not a readable .npy array ({err})") from None
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.floating):
        raise InputError(
            f"{path}: expected a [n, d] float array, got {array.dtype} {list(array.shape)}"
        )
    if len(array) != len(names):
        raise InputError(f"{path} has {len(array)} rows but {names_file} names {len(names)} ids")
    return EmbeddingTable(
        path, names, int(array.shape[1]), lambda rows: _take_blocks(lambda a, b: array[a:b], rows)
    )


# --- PyTorch-BigGraph ------------------------------------------------------------------------


def _h5py():
    """The ``h5py`` module, or one line saying how to install it."""
    try:
        import h5py
    except ImportError:
        raise InputError(
            "transe_import.format=pbg reads PyTorch-BigGraph's HDF5 files with h5py: "
            "pip install 'lokg[pbg]'"
        ) from None
    return h5py


@contextmanager
def _hdf5(path: Path) -> Iterator[Any]:
    """``path`` opened read-only by h5py; a missing or unreadable file is one line."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        f = _h5py().File(path, "r")
    except OSError as err:
        raise InputError(f"{path}: not a readable HDF5 file ({err})") from None
    with f:
        version = f.attrs.get("format_version")
        if version is not None and int(version) != _PBG_FORMAT_VERSION:
            raise InputError(
                f"{path}: PyTorch-BigGraph format_version {int(version)}; this reader knows "
                f"{_PBG_FORMAT_VERSION}"
            )
        yield f


def read_pbg(directory: Path) -> EngineOutput:
    """A PyTorch-BigGraph checkpoint directory (the module doc).

    Raises:
        InputError: no checkpoint, no config, a relation operator other than ``translation``,
            a featurized entity type, a names file missing or of another length than its
            embeddings, an unreadable HDF5 file.
    """
    version, model_file = _pbg_version(directory)
    config, config_file = _pbg_config(directory, model_file)
    search = _pbg_search_path(directory, config)
    with _hdf5(model_file) as f:
        params = f.get("model")
        if params is None:
            raise InputError(f"{model_file}: no 'model' group (PBG's model parameters)")
        relations, rel_names_file = _pbg_relations(params, config, model_file, search)
        entities, ent_files = _pbg_entities(params, config, version, search)
    files = [model_file, *([config_file] if config_file else []), *ent_files]
    files += [rel_names_file] if rel_names_file else []
    comparator = config.get("comparator", "?")
    return EngineOutput(
        format="pbg",
        directory=directory,
        model=f"PyTorch-BigGraph v{version}: translation operator, {comparator} comparator",
        entities=entities,
        relations=relations,
        files=files,
    )


def _pbg_version(directory: Path) -> tuple[int, Path]:
    """``(N, model.v<N>.h5)``: the committed version of ``checkpoint_version.txt``, else the
    newest model file."""
    pointer = directory / "checkpoint_version.txt"
    if pointer.is_file():
        text = pointer.read_text(encoding="utf-8").strip()
        if not text.isdigit():
            raise InputError(f"{pointer}: expected a version number, got {text[:40]!r}")
        version = int(text)
    else:
        found = [
            int(m.group(1))
            for p in directory.glob("model.v*.h5")
            if (m := re.fullmatch(r"model\.v(\d+)\.h5", p.name))
        ]
        if not found:
            raise InputError(
                f"{directory}: no PyTorch-BigGraph checkpoint here (model.v<N>.h5 with its "
                "embeddings_<type>_<part>.v<N>.h5)"
            )
        version = max(found)
    return version, directory / f"model.v{version}.h5"


def _pbg_config(directory: Path, model_file: Path) -> tuple[dict, Path | None]:
    """PBG's training config: ``config.json`` in the checkpoint, else the model file's
    ``config/json`` attribute; ``(config, the file it came from or None)``."""
    path = directory / "config.json"
    if path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8")), path
        except (ValueError, UnicodeDecodeError) as err:
            raise InputError(f"{path}: not a JSON config ({err})") from None
    with _hdf5(model_file) as f:
        raw = f.attrs.get("config/json")
    if raw is None:
        raise InputError(
            f"{directory}: no config.json and no config/json attribute in {model_file.name}; "
            "copy the config.json PyTorch-BigGraph saved beside the checkpoint"
        )
    return json.loads(raw if isinstance(raw, str) else bytes(raw).decode("utf-8")), None


def _pbg_search_path(directory: Path, config: dict) -> list[Path]:
    """Where PBG's names files are looked up: the checkpoint, then the config's
    ``entity_path`` (relative to the checkpoint when relative)."""
    dirs = [directory]
    entity_path = config.get("entity_path")
    if isinstance(entity_path, str) and entity_path and "://" not in entity_path:
        dirs.append((directory / Path(entity_path).expanduser()).resolve())
    return dirs


def _json_names(name: str, search: list[Path]) -> tuple[list[str], Path]:
    """``(names, file)``: the JSON list of names in the first of ``search`` holding ``name``."""
    path = next((d / name for d in search if (d / name).is_file()), None)
    if path is None:
        raise InputError(
            f"no {name} in {' or '.join(str(d) for d in search)}; copy it from PBG's "
            "entity_path beside the checkpoint"
        )
    try:
        names = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: not a JSON list of names ({err})") from None
    if not isinstance(names, list):
        raise InputError(f"{path}: expected a JSON list of names, got {type(names).__name__}")
    return [str(n) for n in names], path


def _pbg_relations(
    params: Any, config: dict, model_file: Path, search: list[Path]
) -> tuple[EmbeddingTable, Path | None]:
    """The relation table ``[R', d]``: e_r = minus PBG's right-hand side translation (the
    module doc), by relation name."""
    relations = config.get("relations") or []
    if not relations:
        raise InputError(f"{model_file}: its config names no relations")
    for rel in relations:
        if rel.get("operator", "none") != "translation":
            raise InputError(
                f"{model_file}: relation {rel.get('name')!r} has operator "
                f"{rel.get('operator')!r}; only 'translation' (TransE) is read"
            )
    if config.get("dynamic_relations"):
        key = "relations/0/operator/rhs/translations"
        if key not in params:
            raise InputError(f"{model_file}: no model/{key} (dynamic translation operator)")
        vectors = -np.asarray(params[key][...], dtype=np.float32)  # [R', d] e_r = -r_pbg
        names, names_file = _json_names("dynamic_rel_names.json", search)
        if len(names) != len(vectors):
            raise InputError(
                f"{model_file}: {len(vectors)} translations but {names_file} names {len(names)}"
            )
    else:
        keys = [f"relations/{i}/operator/rhs/translation" for i in range(len(relations))]
        absent = next((k for k in keys if k not in params), None)
        if absent is not None:
            raise InputError(f"{model_file}: no model/{absent}")
        vectors = -np.stack([np.asarray(params[k][...], dtype=np.float32) for k in keys])
        names, names_file = [str(r["name"]) for r in relations], None
    if vectors.ndim != 2:
        raise InputError(f"{model_file}: translations of shape {list(vectors.shape)}")
    table = EmbeddingTable(model_file, names, int(vectors.shape[1]), lambda rows: vectors[rows])
    return table, names_file


def _pbg_entities(
    params: Any, config: dict, version: int, search: list[Path]
) -> tuple[list[EmbeddingTable], list[Path]]:
    """One table per entity type and partition, and the files they read."""
    entities = config.get("entities") or {}
    if not entities:
        raise InputError(f"{search[0]}: the PBG config names no entity types")
    tables, files = [], []
    for etype, settings in entities.items():
        if settings.get("featurized"):
            raise InputError(
                f"{search[0]}: entity type {etype!r} is featurized (its rows are features, "
                "not entities); only plain entity types are read"
            )
        key = f"entities/{etype}/global_embedding"
        offset = np.asarray(params[key][...], dtype=np.float32) if key in params else None
        for part in range(int(settings.get("num_partitions", 1))):
            names, names_file = _json_names(f"entity_names_{etype}_{part}.json", search)
            path = search[0] / f"embeddings_{etype}_{part}.v{version}.h5"
            tables.append(_h5_table(path, names, names_file, offset))
            files += [path, names_file]
    return tables, files


def _h5_table(
    path: Path, names: list[str], names_file: Path, offset: np.ndarray | None
) -> EmbeddingTable:
    """PBG's ``embeddings`` dataset of ``path`` (``[n, d]``), its rows named by ``names_file``,
    plus ``offset`` ``[d]`` (the type's global embedding) when trained."""
    with _hdf5(path) as f:
        data = f.get("embeddings")
        if data is None or len(data.shape) != 2:
            raise InputError(f"{path}: no [n, d] 'embeddings' dataset")
        shape = data.shape
    if shape[0] != len(names):
        raise InputError(f"{path} has {shape[0]} rows but {names_file} names {len(names)}")

    def take(rows: np.ndarray) -> np.ndarray:
        with _hdf5(path) as f:
            out = _take_blocks(lambda start, stop: f["embeddings"][start:stop], rows)
        return out + offset if offset is not None else out

    return EmbeddingTable(path, names, int(shape[1]), take)
