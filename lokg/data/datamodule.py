"""The LightningDataModule every training and evaluation job uses.

``prepare_data`` reads the source once and writes prepared artifacts into
``<artifacts_dir>/data/<name>-<fingerprint>/`` (the fingerprint hashes the source files, the
source's settings, ``data.source.inverse`` included, and the split settings, so a changed file
or seed prepares anew and an unchanged one is reused); ``setup`` only loads them.  The KG is
stored as given: the inverse edges ``data.source.inverse`` asks for are added to the graph
retrieval runs on (:func:`lokg.artifacts.load_graph_artifacts`, after SCOS), and the artifacts
trained on it live under this directory.  The directory holds:

- ``kg/`` — the :class:`~lokg.kg.KnowledgeGraph` (memory-mappable ``.npy`` arrays),
- ``questions_{train,val,test}.jsonl`` and ``split.json`` (split settings and ids),
- ``triple_split.npz`` — the held-out triples for link-prediction validation,
- ``subgraphs.npz`` — per-question subgraphs (RoG-format datasets only),
- ``stats.json`` — what ``make demo`` prints,
- ``MANIFEST.json`` — the size and checksum of each of these (:mod:`lokg.manifest`); ``kg/``
  has its own. Prepared data is derived from the source alone, so a file that fails its
  check is a cache miss: ``prepare_data`` prepares the data again in place (one WARNING),
  keeping the trained artifacts beside it.

Items: ``items="questions"`` yields lists of :class:`~lokg.typing.Question` (GAT training,
evaluation); ``items="triples"`` yields ``[B, 3]`` triple batches (TransE).

``train_limit=N`` (``+data.train_limit=N``; not in the data configs, so the prepared-data,
artifact, results and ledger keys of every run without it stay what they were) keeps only the
first ``N`` questions of the train split, in the split's order, and leaves val and test as
they are: the learning curves of ``bench/bench_zeroshot.py --curve``. It enters the
fingerprint, so a limited set is prepared, and its models trained, in a directory of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from lokg.atomic_io import atomic_directory
from lokg.data.loaders import triple_batches
from lokg.data.sources import DatasetSource, RawDataset
from lokg.data.splits import SPLITS, canonical_group_by, check_split_settings, split_questions
from lokg.errors import CorruptArtifact, InputError
from lokg.kg.graph import KnowledgeGraph, Vocabulary
from lokg.kg.io import read_questions, write_questions
from lokg.manifest import MANIFEST, check_directory, write_manifest
from lokg.typing import Question

log = logging.getLogger(__name__)

ITEMS = ("questions", "triples")
_PREPARED_VERSION = 2  # 2: questions grouped by text and (topic, chain) (issue 26)


def _list_collate(batch: list[Question]) -> list[Question]:
    return batch


class KGQADataModule(pl.LightningDataModule):
    """A KGQA dataset: one KG (shared vocabulary), questions split train/val/test.

    Args:
        source: where the data comes from (a :class:`~lokg.data.sources.DatasetSource`).
        artifacts_dir: root for prepared artifacts.
        items: ``questions`` or ``triples`` (what the dataloaders yield).
        split_ratios: train/val/test fractions for sources without their own split.
        split_seed: seed of the hashed split (``0`` is a valid seed).
        split_group_by: ``question`` (lines sharing a text or a topic and relation chain stay
            together) or ``template`` (held-out relation chains); lokg/data/splits.py.
        triple_val_fraction: share of KG triples held out for link-prediction validation.
        batch_size: batch size for both item kinds.
        num_workers: dataloader workers.
        train_limit: keep the first ``train_limit`` train questions of the split (in its
            order; ``None``: all); val and test are unchanged (module doc).
    """

    def __init__(
        self,
        source: DatasetSource,
        *,
        artifacts_dir: str = "artifacts",
        items: str = "questions",
        split_ratios: tuple[float, float, float] = (0.8, 0.1, 0.1),
        split_seed: int = 0,
        split_group_by: str = "question",
        triple_val_fraction: float = 0.05,
        batch_size: int = 32,
        num_workers: int = 0,
        train_limit: int | None = None,
    ):
        super().__init__()
        if items not in ITEMS:
            raise InputError(f"data.items={items!r}; expected one of {ITEMS}")
        ratios = check_split_settings(split_ratios, split_group_by)
        if (
            isinstance(triple_val_fraction, bool)
            or not isinstance(triple_val_fraction, (int, float))
            or not 0.0 <= triple_val_fraction < 1.0
        ):
            raise InputError(
                f"data.triple_val_fraction={triple_val_fraction!r}; expected a number in [0, 1)"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise InputError(f"data.batch_size={batch_size!r}; expected a positive integer")
        if isinstance(split_seed, bool) or not isinstance(split_seed, int):
            raise InputError(f"data.split_seed={split_seed!r}; expected an integer")
        if train_limit is not None and (
            isinstance(train_limit, bool) or not isinstance(train_limit, int) or train_limit < 1
        ):
            raise InputError(
                f"data.train_limit={train_limit!r}; expected a positive number of train "
                "questions, or null for all"
            )
        self.source = source
        self.artifacts_root = Path(artifacts_dir)
        self.items = items
        self.split_ratios = ratios
        self.split_seed = int(split_seed)
        self.split_group_by = canonical_group_by(split_group_by)
        self.triple_val_fraction = float(triple_val_fraction)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.train_limit = train_limit
        self.kg: KnowledgeGraph | None = None
        self.questions: dict[str, list[Question]] = {}
        self.train_triples: torch.Tensor | None = None
        self.val_triples: torch.Tensor | None = None
        self.stats: dict = {}
        self._subgraphs: dict[str, np.ndarray] | None = None
        self._fingerprint: str | None = None

    # ------------------------------------------------------------------ artifacts
    @property
    def name(self) -> str:
        return self.source.name

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            settings = {
                "version": _PREPARED_VERSION,
                "source": self.source.fingerprint(),
                "ratios": self.split_ratios,
                "seed": self.split_seed,
                "group_by": self.split_group_by,
                "triple_val_fraction": self.triple_val_fraction,
            }
            if self.train_limit is not None:  # absent otherwise: unlimited keys unchanged
                settings["train_limit"] = self.train_limit
            blob = json.dumps(settings, sort_keys=True).encode()
            self._fingerprint = hashlib.sha256(blob).hexdigest()[:12]
        return self._fingerprint

    @property
    def inverse(self) -> str:
        """``data.source.inverse``: which ``r (inverse)`` edges retrieval adds
        (:mod:`lokg.kg.inverse_edges`)."""
        return self.source.inverse

    @property
    def artifact_dir(self) -> Path:
        return self.artifacts_root / "data" / f"{self.name}-{self.fingerprint()}"

    def prepare_data(self) -> None:
        """Read the source and write the prepared artifacts, once (atomically).

        Everything that can be wrong with the input (the files, the split) is checked before
        anything is written, and the directory appears only when complete: a failed
        preparation leaves no ``<artifacts_dir>/data/<name>-<fingerprint>`` behind.
        """
        target = self.artifact_dir
        again = (target / "stats.json").is_file()
        if again and self._prepared_intact(target):
            return
        raw = self.source.load()
        splits = self._split(raw)
        if again:
            self._prepare_again(raw, splits, target)
            return
        # replace=False: a concurrent preparation that finished first is kept
        with atomic_directory(target, replace=False) as tmp:
            self._write(raw, splits, tmp)

    @staticmethod
    def _prepared_intact(target: Path) -> bool:
        """Whether the prepared files pass their manifest check (one WARNING when not)."""
        try:
            check_directory(target)
            check_directory(target / "kg")
        except CorruptArtifact as err:
            log.warning(
                "prepared data failed its check (%s: %s): 1 prepared dataset rebuilt from the "
                "source", err.path, err.problem,
            )  # fmt: skip
            return False
        return True

    def _prepare_again(self, raw: RawDataset, splits: dict[str, list[Question]], target: Path):
        """Write the prepared files afresh beside ``target`` and move each over its old copy
        (the manifest last), leaving the trained artifacts in ``target`` where they are."""
        fresh = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            self._write(raw, splits, fresh)
            write_manifest(fresh)
            for entry in sorted(fresh.iterdir(), key=lambda p: p.name == MANIFEST):
                old = target / entry.name
                if entry.is_dir():
                    aside = target / f".{entry.name}.old"
                    shutil.rmtree(aside, ignore_errors=True)
                    if old.exists():
                        old.rename(aside)
                    entry.rename(old)
                    shutil.rmtree(aside, ignore_errors=True)
                else:
                    os.replace(entry, old)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)

    def _split(self, raw: RawDataset) -> dict[str, list[Question]]:
        """The source's own split, or the hashed split (an error if a split comes out empty),
        its train split cut to the first ``train_limit`` questions."""
        if raw.presplit:
            splits = {s: list(raw.questions.get(s, [])) for s in SPLITS}
        else:
            splits = split_questions(
                raw.questions,
                self.split_ratios,
                self.split_seed,
                self.split_group_by,
                source=raw.questions_file or self.name,
            )
        if self.train_limit is not None:
            splits["train"] = splits["train"][: self.train_limit]
        return splits

    def _write(self, raw: RawDataset, splits: dict[str, list[Question]], out: Path) -> None:
        kg = raw.kg
        kg.save(out / "kg")
        for split, qs in splits.items():
            write_questions(out / f"questions_{split}.jsonl", qs)
        rng = np.random.default_rng(self.split_seed)
        perm = rng.permutation(kg.num_triples)
        n_val = round(self.triple_val_fraction * kg.num_triples)
        np.savez(out / "triple_split.npz", val=np.sort(perm[:n_val]), train=np.sort(perm[n_val:]))
        if raw.subgraphs is not None:
            qids = list(raw.subgraphs)
            index = {kg.labeled(i): i for i in range(kg.num_triples)}
            ids = [np.array([index[t] for t in raw.subgraphs[q]], dtype=np.int64) for q in qids]
            ptr = np.zeros(len(ids) + 1, dtype=np.int64)
            np.cumsum([len(x) for x in ids], out=ptr[1:])
            idx = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
            np.savez(out / "subgraphs.npz", qids=np.array(qids), ptr=ptr, idx=idx)
        split_info = {
            "ratios": None if raw.presplit else list(self.split_ratios),
            "seed": None if raw.presplit else self.split_seed,
            "group_by": None if raw.presplit else self.split_group_by,
            "source_split": raw.presplit,
            "ids": {s: [q.id for q in qs] for s, qs in splits.items()},
        }
        (out / "split.json").write_text(json.dumps(split_info), encoding="utf-8")
        stats = {
            "dataset": self.name,
            "paper_setting": self.source.paper_setting,
            **{k: v for k, v in kg.statistics().items()},
            "questions": {s: len(qs) for s, qs in splits.items()},
            "link_prediction_triples": {"train": kg.num_triples - n_val, "val": n_val},
            "per_question_subgraphs": raw.subgraphs is not None,
            "read": raw.reports,
            "fingerprint": self.fingerprint(),
        }
        (out / "stats.json").write_text(json.dumps(stats, indent=2), encoding="utf-8")

    def setup(self, stage: str | None = None) -> None:
        """Load the prepared artifacts (``prepare_data`` must have run)."""
        if self.kg is not None:
            return
        d = self.artifact_dir
        if not (d / "stats.json").is_file():
            raise FileNotFoundError(f"{d}: not prepared; call prepare_data() first")
        check_directory(d)
        self.kg = KnowledgeGraph.load(d / "kg", mmap=True)
        self.questions = {  # a source may keep unanswerable questions beside answered ones
            s: read_questions(d / f"questions_{s}.jsonl", mixed_answers=True)[0]
            if (d / f"questions_{s}.jsonl").stat().st_size
            else []
            for s in SPLITS
        }
        split = np.load(d / "triple_split.npz")
        triples = self.kg.triples_np
        self.train_triples = torch.from_numpy(np.array(triples[split["train"]]))
        self.val_triples = torch.from_numpy(np.array(triples[split["val"]]))
        if (d / "subgraphs.npz").is_file():
            sub = np.load(d / "subgraphs.npz")
            ptr, idx = sub["ptr"], sub["idx"]
            self._subgraphs = {str(q): idx[ptr[i] : ptr[i + 1]] for i, q in enumerate(sub["qids"])}
        self.stats = json.loads((d / "stats.json").read_text(encoding="utf-8"))

    # ------------------------------------------------------------------ accessors
    def _require_setup(self) -> KnowledgeGraph:
        if self.kg is None:
            raise RuntimeError("KGQADataModule: call prepare_data() and setup() first")
        return self.kg

    def model_kwargs(self) -> dict[str, int]:
        """Dataset-derived sizes passed to LightningModules when they are instantiated."""
        kg = self._require_setup()
        return {"num_entities": kg.num_entities, "num_relations": kg.num_relations}

    def require_answers(self, job: str) -> None:
        """An :class:`~lokg.errors.InputError` (one line) when ``job`` (e.g. ``the walk model
        (experiment=train_walk)``), which trains on gold answers, would train on questions
        without any: a train or val question has none, or the train split is empty because
        the questions file has none (it is for answering only, all in test)."""
        self._require_setup()
        qs = self.questions
        split = next((s for s in ("train", "val") if any(not q.answers for q in qs[s])), None)
        if split is None and not qs["train"] and any(not q.answers for q in qs["test"]):
            split = "test"
        if split is None:
            return
        where = self.source.questions_origin(split)
        raise InputError(
            f'{where} has no answers; {job} trains on gold answers: add "answers" to the '
            "train and val records, or skip it (TransE + SCOS need only the KG: "
            "experiment=train_transe) and evaluate with a retriever that needs no trained "
            "model (retriever=taimr_linked)"
        )

    @property
    def has_question_subgraphs(self) -> bool:
        return self._subgraphs is not None

    def question_graph(self, question_id: str) -> KnowledgeGraph:
        """The graph a question is answered over.

        For PathQuestion and custom datasets that is the whole KG; for RoG-format datasets
        the question's own subgraph, with the *global* relation vocabulary (so SCOS's
        mapping applies unchanged) and a local entity vocabulary of global labels.
        """
        kg = self._require_setup()
        if self._subgraphs is None:
            return kg
        if question_id not in self._subgraphs:
            raise KeyError(f"question id {question_id!r} has no subgraph in {self.name}")
        tri = np.asarray(kg.triples_np[self._subgraphs[question_id]])
        ents, inverse = np.unique(tri[:, [0, 2]], return_inverse=True)
        local = np.stack([inverse.reshape(-1, 2)[:, 0], tri[:, 1], inverse.reshape(-1, 2)[:, 1]], 1)
        vocab = Vocabulary([kg.entities.label(int(e)) for e in ents])
        return KnowledgeGraph(vocab, kg.relations, local, name=f"{self.name}:{question_id}")

    # ------------------------------------------------------------------ loaders
    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        self._require_setup()
        if self.items == "triples":
            data = self.train_triples if split == "train" else self.val_triples
            return triple_batches(data, self.batch_size, shuffle)  # one gather per batch
        return DataLoader(
            self.questions[split],
            batch_size=self.batch_size,
            shuffle=shuffle,
            num_workers=self.num_workers,
            collate_fn=_list_collate,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)

    def summary(self) -> dict:
        """Statistics of the prepared dataset (``stats.json``)."""
        self._require_setup()
        return dict(self.stats)
