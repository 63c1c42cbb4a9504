"""Zero-shot on a family of KGs the walk never saw, and learning curves (issue 40 §3, §1).

    python bench/bench_zeroshot.py [--families pathquestion pql webqsp cwq generated]
        [--data <set> ...] [--split val|test] [--budget 128] [--limit N] [--pool <member> ...]
        [--train-override K=V ...] [--walk-override K=V ...] [--adapt-override K=V ...]
        [--json PATH] [--dry-run] [--rerun-test "<reason>"]
        [--pretrain pretrain_walk|pretrain_walk_bundled]
        [--rows zero-shot adapted self-trained fine-tuned per-kg]
        [--self-label-path likeliest|length]
    python bench/bench_zeroshot.py --curve [--curve-sizes 0 10 50 200 all]
        [--curve-from shipped|loo|adapted|self-trained] [--data <set> ...] [the options above]

**Families.** The pretrained walk trains on the members of ``configs/data/pretrain.yaml``
(the bundled sets' train splits); they are grouped by what they share:

- ``pathquestion``: ``pq2h``, ``pq3h``, ``beyond_pq3h`` (the PQ-2H and PQ-3H KBs and every
  question over them: ``beyond_pq3h`` is generated over the PQ-3H KB);
- ``pql``: ``pql2h``, ``pql3h``, ``beyond_pql2h``, ``beyond_pql3h`` (the PQL KBs, likewise);
- ``webqsp``: ``webqsp_evidence_resplit`` (the WebQSP stand-in: its own evidence pools);
- ``cwq``: ``cwq_evidence_resplit`` (the CWQ stand-in);
- ``generated``: ``beyond_pq3h``, ``beyond_pql2h``, ``beyond_pql3h``. Their KBs are the chain
  sets' KBs, which stay in the pretraining data through ``pq3h``, ``pql2h`` and ``pql3h``:
  leaving this family out leaves out the question *types* (conjunctions, constraints, many
  answers), not the KB.

**Per family** (``--families``; ``--data`` keeps some of its sets), every walk trained
through the real entry point (``python train.py``, a subprocess under ``$LOKG_ROOT``):

(a) the leave-one-out walk: ``python train.py experiment=pretrain_walk
    '~data.source.members.<m>' ...`` for every member of the family (and every member not in
    ``--pool``, the pretraining pool: all members by default; the synthetic member stays
    in, as it is in no family); ``--pretrain pretrain_walk_bundled`` trains it with that
    experiment config instead (the ablation without synthetic data or transfer switches,
    docs/design/taimr.md item 28);
(b) ``zero-shot``: each of the family's sets answered by (a) (``bench_retrieval``'s
    ``pretrained walk`` row with ``retriever.model_dir=<(a)>``: ``scos=off``, as the
    pretrained walk reads relations by name only; no walk trained on the set);
(c) ``fine-tuned from it``: ``python train.py experiment=train_walk data=<set>
    model.init=<(a)>`` (after ``experiment=train_transe data=<set>``: it walks SCOS's graph
    with TransE's e_r, as today's walk does), answered as the ``learned`` row;
(d) ``per-KG walk``: today's walk, ``python train.py experiment=train_walk data=<set>``
    (``model.init=scratch``, after TransE), the ``learned`` row;
(e) ``adapted, no answers``: (a) fine-tuned on chain questions generated over the set's graph
    (``python train.py experiment=adapt_walk model.init=<(a)> data=kg_chains
    data@data.source.base=<set>``, lokg/data/kg_chains.py: no answer or question text of the
    set is read, and no chain starts at a val/test question's topic entity), answered as (b);
(f) ``self-trained, no answers``: (e) fine-tuned :data:`SELF_TRAIN_ROUNDS` times on the set's
    own training questions, each labelled by the walk of the round before (its top answer and
    the path it walked: ``python train.py experiment=self_train_walk
    data@data.source.base=<set> data.source.walk=<the walk before>``, lokg/data/self_labels.py:
    no gold answer is read), answered as (b).

Retriever-only (the extractive reader: no LLM), at ``--budget`` (B = 128), through
``bench_retrieval.row_config`` and ``lokg.evaluate.run`` as ``bench/bench_questions.py``'s
rows are; per set and row, for all questions and per group (``bench_questions.question_groups``:
the generated sets' kinds, CWQ's composition types, the stand-ins' reachable /
answer_in_pool / answerable): Hits@1, coverage at B, answer recall at B, and n. Per set,
``ratio <set> hits1=X coverage=Y``: zero-shot over per-KG (1 when both are 0, inf when only the
per-KG walk's is 0; ``nan`` when either row was left out: ``--rows`` trains and measures only
the rows named). The two lines before last: ``adapted min_ratio_hits1=X
min_ratio_coverage=Y`` and ``selftrained ...``, the same for (e) and (f) over (d). Last line:
``zeroshot min_ratio_hits1=X min_ratio_coverage=Y``, the minimum of those ratios over every
family's sets (a set in two families counts twice, once per left-out walk); ``nan`` when none
was measured.

**Learning curves** (``--curve``): per set (default: one per family, :data:`CURVE_SETS`),
Hits@1 (and coverage) after fine-tuning on the first 0 / 10 / 50 / 200 / all training
questions of the package's split (``+data.train_limit=N``: a prepared set and artifacts of
its own), from the pretrained walk (``model.init=pretrained``, the shipped walk, which saw
every bundled set's train split; ``--curve-from loo``: the leave-one-out walk of the set's
first family, so nothing of the family was seen; ``--curve-from adapted``: that walk adapted
to the set's KG first, as the table's adapted row, so a user's path from day one to their
first answered questions) and from scratch (``model.init=scratch``).  ``--curve-from
self-trained`` asks every training question and answers the first n: the left-out walk
fine-tuned on those n, then self-trained twice from it on all of them, the n keeping their
gold answers (``+data.source.answered=n``); n = 0 is the table's self-trained row (from the
adapted walk).  For a user who has their questions and answered a few.
0 questions: the pretrained walk as it is (no training); from scratch there is no walk
(``-``). ``all``: the whole train split (from scratch: the per-KG walk of (d)). A size at or
above the train split trains on all of it, under its own key. Last line
``curve min_pretrained50_minus_scratch_all_hits1=X``: the minimum over sets of Hits@1 from
pretrained with 50 questions less Hits@1 from scratch with all (the issue's goal: >= 0).

**Reuse and resume.** A walk is looked for before it is trained: among the ``qgat-*``
artifacts of its dataset (the prepared set's directory: a left-out union, a train limit each
have their own), the one whose recorded ``config.yaml`` holds the configuration the command
would run (model, data, SCOS, embedder, callbacks, seed and trainer settings; not paths,
loggers or the accelerator: a walk trained with ``--train-override trainer=gpu`` stands for
the CPU run and back, one under DDP on two devices does not; ``model.init`` as the
walk directory's name and its dataset directory's (``pretrain-<fingerprint>/qgat-<hash>``: the
leave-one-out walks share one ``qgat-<hash>``); a ``max_epochs`` that train.py raised to
reach ``model.min_steps`` matches the epochs asked), best recorded ``val/hits@1`` first.
TransE + SCOS likewise (the dataset's latest SCOS artifact when made by such a run). So a
rerun trains only what is missing, across sessions and machines; results files resume as
``evaluate.py``'s do.
``--train-override`` goes to every ``train.py`` run (``trainer=gpu``), ``--walk-override``
to the walk runs only, ``--adapt-override`` to (e)'s generated questions only
(``data.source.simple_paths=true``), ``--self-label-path`` sets (f)'s labels'
``data.source.path``. ``--dry-run`` prints every ``train.py`` and ``evaluate.py`` command
the run would start (``<...>`` for a walk not trained yet) and trains nothing.

**Test.** Choose on ``--split val``. ``--split test`` reports once: every training first,
then every configuration is checked against the test ledger (``bench/test_ledger.jsonl``)
before any is measured; a configuration already there (this bench's, or the per-KG walk
``bench:learned`` and the shipped walk ``bench:pretrained_walk`` other benches report) is
read from its line (cited), not measured again, unless ``--rerun-test "<reason>"``; the rest
are measured and recorded. So a rerun completes a table, or reprints it, and never tests a
configuration twice.

**Cost.** Each leave-one-out pretraining is 5-9 min on a 2-core CPU, and every set needs an
adapted walk (chain questions generated over its KG, then 4 epochs on them: 2-4 min), two
rounds of self-training (2-5 min each), a
per-KG walk and a fine-tuning (each after TransE), so the whole table is hours there (the
curves more: up to 8 walks per set); ``--train-override trainer=gpu`` on a GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import (
    EVAL_SPLITS,
    TEST_LEDGER,
    add_rerun_test_argument,
    bench_root,
    compose,
    load_datamodule,
    split_questions,
)
from bench_questions import group_metrics, question_groups
from bench_retrieval import row_overrides

from lokg.artifacts import latest, recorded_scos_settings, scos_mode, scos_settings
from lokg.cli import report
from lokg.config import compose_config
from lokg.data.self_labels import LABEL_PATHS
from lokg.errors import InputError
from lokg.eval.ledger import LedgerEntry, TestLedger
from lokg.evaluate import ledger_key, run
from lokg.manifest import check_directory
from lokg.taimr.walk.artifact import (
    KIND,
    META_FILE,
    PRETRAINED_DIR,
    hashed_targets,
    pretrained_walk,
    read_walk_meta,
)

REPO = Path(__file__).resolve().parent.parent
LEDGER = TEST_LEDGER  # module attribute, so a test can point it elsewhere


@dataclass(frozen=True)
class Family:
    """Sets the pretrained walk is trained without, together, and what that takes out."""

    name: str
    sets: tuple[str, ...]
    leaves_out: str


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "pathquestion",
            ("pq2h", "pq3h", "beyond_pq3h"),
            "the PQ-2H / PQ-3H KBs and every question over them",
        ),
        Family(
            "pql",
            ("pql2h", "pql3h", "beyond_pql2h", "beyond_pql3h"),
            "the PQL-2H / PQL-3H KBs and every question over them",
        ),
        Family(
            "webqsp",
            ("webqsp_evidence_resplit",),
            "the WebQSP stand-in's questions and evidence pools",
        ),
        Family("cwq", ("cwq_evidence_resplit",), "the CWQ stand-in's questions and evidence pools"),
        Family(
            "generated",
            ("beyond_pq3h", "beyond_pql2h", "beyond_pql3h"),
            "the generated question types only: their KBs stay in through pq3h, pql2h and pql3h",
        ),
    )
}
#: the learning curves' default sets: one per family
CURVE_SETS = ("pq3h", "pql3h", "webqsp_evidence_resplit", "cwq_evidence_resplit", "beyond_pq3h")
CURVE_SIZES = ("0", "10", "50", "200", "all")
CURVE_FROM = ("shipped", "loo", "adapted", "self-trained")
#: the table's rows per set
ZERO_SHOT, ADAPTED = "zero-shot", "adapted, no answers"
SELF_TRAINED = "self-trained, no answers"
#: rounds of self-training the ``self-trained`` row runs (chosen on val: taimr.md item 30)
SELF_TRAIN_ROUNDS = 2
FINETUNED, PER_KG = "fine-tuned from it", "per-KG walk"
#: --rows: the table's rows by a short name
ROW_NAMES = {
    "zero-shot": ZERO_SHOT, "adapted": ADAPTED, "self-trained": SELF_TRAINED,
    "fine-tuned": FINETUNED, "per-kg": PER_KG,
}  # fmt: skip
#: bench_retrieval.ROWS entries the rows are answered as
PRETRAINED_ROW, LEARNED_ROW = "pretrained walk", "learned"
#: the metrics printed and compared
METRICS = ("hits@1", "coverage", "answer_recall")


# ---------------------------------------------------------------------- trained artifacts
#: config nodes a trained artifact must share with a run to stand for it
COMPARED = ("model", "data", "scos", "embedder", "callbacks", "trainer", "seed")
#: keys that name a place on this machine (anywhere in those nodes), not a setting
MACHINE_KEYS = frozenset(
    {
        "artifacts_dir",
        "cache_dir",
        "cache_path",
        "model_path",
        "dirpath",
        "num_workers",
        "embed_cache",
    }
)
#: trainer keys that say where a fit runs or what it shows, not what it computes (the number
#: of devices stays: under DDP it multiplies the batch)
PLACE_KEYS = frozenset(
    {
        "_target_", "accelerator", "default_root_dir", "enable_progress_bar",
        "enable_model_summary", "log_every_n_steps", "float32_matmul_precision",
    }
)  # fmt: skip
#: model.init values that name no directory
NAMED_INITS = ("scratch", "pretrained")


def _strip(node):
    if isinstance(node, Mapping):
        return {k: _strip(v) for k, v in node.items() if k not in MACHINE_KEYS}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def training_signature(cfg: DictConfig | Mapping, nodes: Sequence[str] = COMPARED) -> dict:
    """What of a ``train.py`` config decides what it trains (:data:`COMPARED`, less
    :data:`MACHINE_KEYS` and the trainer's :data:`PLACE_KEYS`; moved ``_target_`` paths as
    :func:`hashed_targets` reads them; ``model.init`` as its data and walk directories'
    names; a missing ``trainer.precision`` as Lightning's default, ``32-true``)."""
    plain = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
    sig = hashed_targets(_strip({k: plain.get(k) for k in nodes}))
    model = sig.get("model")
    if isinstance(model, dict) and model.get("init") not in (None, *NAMED_INITS):
        # the walk's directory and its dataset's: every leave-one-out walk of one model config
        # is a qgat-<same hash>, told apart only by its left-out union's pretrain-<fingerprint>
        start = Path(str(model["init"]))
        model["init"] = f"{start.parent.name}/{start.name}"
    if "trainer" in sig:
        trainer = {k: v for k, v in (sig["trainer"] or {}).items() if k not in PLACE_KEYS}
        trainer.setdefault("precision", "32-true")
        sig["trainer"] = trainer
    return sig


def same_training(saved, wanted, nodes: Sequence[str] = COMPARED) -> bool:
    """Whether an artifact's recorded config ``saved`` is the run ``wanted`` would start:
    equal :func:`training_signature`, and equal ``trainer.max_epochs`` or, when the run has a
    ``model.min_steps`` floor, more saved epochs than asked (train.py raised them to reach
    the floor: :func:`lokg.train_stages.stretch_epochs_to_min_steps`; the same run raises
    its own alike, and sets ``trainer.check_val_every_n_epoch`` with them)."""
    a, b = training_signature(saved, nodes), training_signature(wanted, nodes)
    had = a.get("trainer", {}).pop("max_epochs", None)
    asked = b.get("trainer", {}).pop("max_epochs", None)
    had_every = a.get("trainer", {}).pop("check_val_every_n_epoch", None) or 1
    asked_every = b.get("trainer", {}).pop("check_val_every_n_epoch", None) or 1
    if a != b:
        return False
    if had == asked:
        return had_every == asked_every
    floor = (b.get("model") or {}).get("min_steps") or 0
    raised = isinstance(had, int) and isinstance(asked, int) and had > asked > 0 and floor > 0
    # a raised run also sets its validation interval, unless the command set one
    return raised and (had_every == asked_every or asked_every == 1)


def trained_walk(cfg: DictConfig) -> Path | None:
    """The ``qgat-*`` artifact of ``cfg``'s dataset that ``cfg`` would train
    (:func:`same_training`), the best recorded ``val/hits@1`` first, then the newest; ``None``
    when there is none."""
    root = hydra.utils.instantiate(cfg.data).artifact_dir
    found = []
    for d in Path(root).glob(f"{KIND}-*"):
        if not ((d / "config.yaml").is_file() and (d / META_FILE).is_file()):
            continue
        check_directory(d, ["config.yaml", META_FILE])
        if same_training(OmegaConf.load(d / "config.yaml"), cfg):
            meta = read_walk_meta(d)
            found.append((meta.get("best_value") or 0.0, (d / META_FILE).stat().st_mtime_ns, d))
    return max(found)[-1] if found else None


def trained_transe(cfg: DictConfig) -> Path | None:
    """The dataset's latest SCOS artifact when the ``experiment=train_transe`` run ``cfg``
    made it (its SCOS settings and its training: :func:`same_training` but the data, since
    TransE + SCOS depend on the graph alone), else ``None``."""
    found = latest(hydra.utils.instantiate(cfg.data).artifact_dir, "scos")
    if found is None or recorded_scos_settings(found) != scos_settings(cfg.scos):
        return None
    nodes = [n for n in COMPARED if n != "data"]
    check_directory(found, ["config.yaml"])
    return found if same_training(OmegaConf.load(found / "config.yaml"), cfg, nodes) else None


def needs_transe(cfg: DictConfig) -> bool:
    """Whether the walk run ``cfg`` reads a TransE + SCOS artifact: SCOS's graph, or TransE's
    e_r as its relation features (``model.relation_source=fixed``, even with ``scos=off``)."""
    return scos_mode(cfg) != "off" or cfg.model.get("relation_source") == "fixed"


@dataclass(frozen=True)
class Walk:
    """A walk the bench uses: its directory, or ``None`` while not trained (a dry run)."""

    label: str
    path: Path | None

    @property
    def ref(self) -> str:
        """The directory, or ``<label>`` in a dry run's commands."""
        return str(self.path) if self.path is not None else f"<{self.label}>"

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "-"


SHIPPED = Walk("the shipped walk", PRETRAINED_DIR)


def command(script: str, overrides: Iterable[str]) -> str:
    """``python <script> <overrides>``, quoted for a shell."""
    return " ".join(["python", script, *(shlex.quote(o) for o in overrides)])


class Trainings:
    """The walks (and TransE + SCOS runs) the bench needs: found among the trained
    artifacts, else trained by ``python train.py`` in a subprocess under ``root`` (in a dry run
    only printed). Each is looked for once."""

    def __init__(
        self,
        root: str,
        train: Sequence[str],
        walk: Sequence[str],
        dry_run: bool,
        adapt: Sequence[str] = (),
        label_path: str | None = None,
    ) -> None:
        self.root, self.train, self.walk_overrides = root, list(train), list(walk)
        self.adapt_overrides = list(adapt)  # the adapted walk's generated set (--adapt-override)
        #: the self-trained walk's data.source.path (--self-label-path; None: the config's)
        self.label_path = label_path
        self.dry_run = dry_run
        self._walks: dict[tuple[str, ...], Walk] = {}
        self._transe: set[tuple[str, ...]] = set()
        self.to_train = 0

    def _compose(self, overrides: Sequence[str]) -> DictConfig:
        return compose_config("train", list(overrides), self.root)

    def walk(
        self, label: str, data: Sequence[str], extra: Sequence[str] = (), after: Sequence[Walk] = ()
    ) -> Walk:
        """The walk ``python train.py <experiment, data, extra, overrides>`` trains: ``data``
        holds the data overrides (``data=<set>``, ``+data.train_limit=N``) and ``extra`` the
        experiment and model overrides; ``after``: walks it starts from (pending in a dry run:
        so is this one)."""
        overrides = [*extra, *data, *self.train, *self.walk_overrides]
        key = tuple(overrides)
        if key in self._walks:
            return self._walks[key]
        pending = any(w.path is None for w in after)  # its start walk is a placeholder
        starts = ("model.init=", "data.source.walk=")  # where a start walk is named
        cfg = self._compose([o for o in overrides if not (pending and o.startswith(starts))])
        path = None if pending else trained_walk(cfg)
        if path is not None:
            print(f"reuse: {label}: {path}", flush=True)
        else:
            if needs_transe(cfg):
                self.transe(data)
            if self._run(label, overrides):
                path = trained_walk(cfg)
                if path is None:
                    raise SystemExit(
                        f"error: {command('train.py', overrides)} finished but no walk it trained "
                        "is found among its dataset's artifacts"
                    )
        self._walks[key] = Walk(label, path)
        return self._walks[key]

    def transe(self, data: Sequence[str]) -> None:
        """TransE + SCOS of the dataset ``data`` selects (``experiment=train_transe``), once."""
        overrides = ["experiment=train_transe", *data, *self.train]
        key = tuple(overrides)
        if key in self._transe:
            return
        self._transe.add(key)
        cfg = self._compose(overrides)
        found = trained_transe(cfg)
        if found is not None:
            print(f"reuse: TransE + SCOS, {' '.join(data)}: {found}", flush=True)
            return
        self._run(f"TransE + SCOS, {' '.join(data)}", overrides)

    def _run(self, label: str, overrides: Sequence[str]) -> bool:
        """Train (``False``: a dry run, only printed). A failed run is one error line."""
        shown = command("train.py", overrides)
        self.to_train += 1
        print(f"train: {label}: {shown}", flush=True)
        if self.dry_run:
            return False
        try:
            child_out = sys.stderr.fileno()  # the training's report is not the bench's
        except (AttributeError, OSError, ValueError):
            child_out = None
        env = {**os.environ, "LOKG_ROOT": self.root}
        cmd = [sys.executable, str(REPO / "train.py"), *overrides]
        rc = subprocess.run(cmd, cwd=self.root, env=env, stdout=child_out).returncode
        if rc != 0:
            raise SystemExit(
                f"error: {shown} exited {rc}; what was trained before it is kept, so the same "
                "bench command resumes"
            )
        return True


def leave_out_overrides(family: Family, pool: Sequence[str], members: Sequence[str]) -> list[str]:
    """``~data.source.members.<m>`` for each member of ``configs/data/pretrain.yaml`` that is in
    ``family`` or not in ``pool``.

    Raises:
        InputError: nothing of ``pool`` would be left to pretrain on.
    """
    keep = [m for m in members if m in pool and m not in family.sets]
    if not keep:
        raise InputError(
            f"leaving {family.name} out of the pretraining pool ({' '.join(pool)}) leaves "
            "nothing to pretrain on; add members with --pool"
        )
    return [f"~data.source.members.{m}" for m in members if m not in keep]


# ---------------------------------------------------------------------- evaluation
@dataclass(frozen=True)
class Row:
    """One answered configuration: a set, a walk and how it is labelled and reported."""

    data: str
    bench_row: str  # bench_retrieval.ROWS: PRETRAINED_ROW or LEARNED_ROW
    tag: str  # appended to the recorded label, bench:<row><tag>
    walk: Walk


@dataclass(frozen=True)
class Measured:
    """A row's numbers: per question group, Hits@1 / coverage / answer recall / n (the
    ``all`` group: every question), and on test the ledger line they are recorded in."""

    groups: dict[str, dict[str, float]]
    ledger: str = ""

    def metric(self, key: str, group: str = "all") -> float:
        value = self.groups.get(group, {}).get(key)
        return math.nan if value is None else float(value)


NOT_RUN = Measured({})


def ledger_groups(numbers: Mapping) -> dict[str, dict[str, float]]:
    """A ledger line's numbers as per-group metrics: bench_questions' lines (and this bench's)
    hold groups; bench_retrieval's and the chain sets' hold one flat set, their ``all``
    (what it lacks reads ``nan``)."""
    if isinstance(numbers.get("all"), Mapping):
        return {g: dict(m) for g, m in numbers.items() if isinstance(m, Mapping)}
    flat = {k: float(numbers[k]) if k in numbers else math.nan for k in METRICS}
    return {"all": {**flat, "n": numbers.get("n")}}


class Evaluations:
    """Answer rows retriever-only on one split (:func:`lokg.evaluate.run`), each
    configuration once, through the test ledger on test (module doc, "Test")."""

    def __init__(self, split: str, budget: int, limit: int | None, rerun: str | None) -> None:
        self.split, self.budget, self.limit, self.rerun = split, budget, limit, rerun
        self.ledger = TestLedger(LEDGER)
        self._group_by: dict[str, str] = {}
        self._done: dict[str, Measured] = {}
        self._dms: dict[str, object] = {}

    def overrides(self, row: Row) -> list[str]:
        """``python evaluate.py data=<set> <these>`` answers ``row``."""
        if row.data not in self._group_by:
            self._group_by[row.data] = compose(row.data).data.split_group_by
        return row_overrides(
            row.data, row.bench_row, self.split, self.budget, self.limit, row.tag,
            row.walk.ref, self._group_by[row.data],
        )  # fmt: skip

    def show(self, row: Row) -> None:
        print(f"evaluate: {command('evaluate.py', [f'data={row.data}', *self.overrides(row)])}")

    def measure(self, rows: Sequence[Row]) -> dict[Row, Measured]:
        """Every row's numbers; on test the ledger is checked for all before any is measured."""
        cfgs = {row: compose(row.data, self.overrides(row)) for row in rows}
        keys = {
            row: ledger_key(cfg, datamodule=self._dm(row.data, cfg)) for row, cfg in cfgs.items()
        }
        cited: dict[str, Measured] = {}
        if self.split == "test":
            for row in rows:
                if keys[row].hash in cited or keys[row].hash in self._done:
                    continue
                earlier = self.ledger.find(keys[row])
                if earlier and not self.rerun:  # measured once: its line is cited
                    n, e = earlier[-1]
                    cited[keys[row].hash] = Measured(
                        ledger_groups(e["numbers"]), f"{LEDGER.name}:{n}"
                    )
                else:
                    what = f"{row.bench_row}{row.tag} on {row.data} ({row.walk.name})"
                    self.ledger.check(keys[row], what, self.rerun)
        self._done.update(cited)
        for row, cfg in cfgs.items():
            if keys[row].hash not in self._done:
                self._done[keys[row].hash] = self._measure(row, cfg, keys[row].hash)
        return {row: self._done[keys[row].hash] for row in rows}

    def _dm(self, data: str, cfg: DictConfig):
        """``data``'s datamodule, prepared once."""
        if data not in self._dms:
            self._dms[data] = load_datamodule(cfg)
        return self._dms[data]

    def _measure(self, row: Row, cfg: DictConfig, key: str) -> Measured:
        dm = self._dm(row.data, cfg)
        groups = question_groups(dm, split_questions(dm, self.split, self.limit))
        per = group_metrics(run(cfg)["records"], groups)
        cite = ""
        if self.split == "test":
            line = self.ledger.append(
                LedgerEntry(
                    bench="bench_zeroshot",
                    configuration=f"{row.bench_row}{row.tag}",
                    dataset=row.data,
                    config_hash=key,
                    numbers=per,
                    settings={"budget": self.budget, "walk": row.walk.name},
                    rerun_reason=self.rerun,
                )
            )
            cite = f"{LEDGER.name}:{line}"
        return Measured(per, cite)


# ---------------------------------------------------------------------- ratios
def ratio(ours: float, per_kg: float) -> float:
    """A row's number over the per-KG walk's: 1.0 when both are 0 (no worse), ``inf`` when
    only the per-KG walk's is 0, ``nan`` when either is missing."""
    if math.isnan(ours) or math.isnan(per_kg):
        return math.nan
    if per_kg == 0:
        return 1.0 if ours == 0 else math.inf
    return ours / per_kg


def min_ratio(values: Iterable[float]) -> float:
    """The least of ``values`` that are numbers; ``nan`` when none is."""
    kept = [v for v in values if not math.isnan(v)]
    return min(kept) if kept else math.nan


@dataclass(frozen=True)
class SetResult:
    """One set of one family: its rows (:data:`ROW_NAMES`) and the walks behind them."""

    family: str
    data: str
    rows: dict[str, Measured]  # ZERO_SHOT, ADAPTED, FINETUNED, PER_KG
    walks: dict[str, str]  # the same keys -> walk directory names

    def ratio(self, metric: str, row: str = ZERO_SHOT) -> float:
        """``row``'s ``metric`` over the per-KG walk's (``nan`` when either was not run)."""
        ours, per_kg = (self.rows.get(r, NOT_RUN).metric(metric) for r in (row, PER_KG))
        return ratio(ours, per_kg)

    @property
    def ratio_hits1(self) -> float:
        return self.ratio("hits@1")

    @property
    def ratio_coverage(self) -> float:
        return self.ratio("coverage")


def summary_line(results: Sequence[SetResult], row: str = ZERO_SHOT) -> str:
    """The least ratios of ``row`` over every family's sets: the bench's last line
    (``zeroshot ...``), and the two before it (``adapted ...``, ``selftrained ...``)."""
    hits = min_ratio(r.ratio("hits@1", row) for r in results)
    cov = min_ratio(r.ratio("coverage", row) for r in results)
    name = {ZERO_SHOT: "zeroshot", ADAPTED: "adapted", SELF_TRAINED: "selftrained"}[row]
    return f"{name} min_ratio_hits1={hits:.3f} min_ratio_coverage={cov:.3f}"


@dataclass(frozen=True)
class CurvePoint:
    """Hits@1 and coverage after fine-tuning ``init`` on the first ``size`` questions."""

    data: str
    init: str  # pretrained | scratch
    size: str  # "0", "10", ..., "all"
    walk: str
    hits1: float
    coverage: float
    ledger: str = ""


def curve_line(points: Sequence[CurvePoint]) -> str:
    """The curves' last line: min over sets of Hits@1(pretrained, 50) - Hits@1(scratch, all)."""
    at = {(p.data, p.init, p.size): p.hits1 for p in points}
    diffs = [
        at[(d, "pretrained", "50")] - at[(d, "scratch", "all")]
        for d in dict.fromkeys(p.data for p in points)
        if (d, "pretrained", "50") in at and (d, "scratch", "all") in at
    ]
    return f"curve min_pretrained50_minus_scratch_all_hits1={min_ratio(diffs):.3f}"


# ---------------------------------------------------------------------- the two modes
def _set_data(data: str, size: str = "all") -> list[str]:
    return [f"data={data}"] + ([] if size == "all" else [f"+data.train_limit={size}"])


def per_kg_walk(trainings: Trainings, data: str, size: str = "all") -> Walk:
    what = "per-KG walk" if size == "all" else f"walk from scratch on {size} questions"
    return trainings.walk(f"{what}, {data}", _set_data(data, size), ["experiment=train_walk"])


def loo_walk(
    trainings: Trainings, family: Family, pool, members, pretrain: str = "pretrain_walk"
) -> Walk:
    extra = [f"experiment={pretrain}", *leave_out_overrides(family, pool, members)]
    label = f"walk pretrained ({pretrain}) without {family.name}"
    if pretrain == "pretrain_walk":
        label = f"walk pretrained without {family.name}"
    return trainings.walk(label, [], extra)


def adapted_walk(trainings: Trainings, data: str, start: Walk) -> Walk:
    """``start`` fine-tuned on chain questions generated over ``data``'s graph (no answers:
    ``experiment=adapt_walk``, lokg/data/kg_chains.py)."""
    init = "pretrained" if start is SHIPPED else start.ref
    source = ["data=kg_chains", f"data@data.source.base={data}", *trainings.adapt_overrides]
    extra = ["experiment=adapt_walk", f"model.init={init}"]
    return trainings.walk(f"{data} adapted from {start.label}", source, extra, after=[start])


def self_trained_walk(
    trainings: Trainings,
    data: str,
    start: Walk,
    rounds: int = SELF_TRAIN_ROUNDS,
    answered: str = "0",
) -> Walk:
    """``start`` fine-tuned ``rounds`` times on ``data``'s own training questions as the walk
    of the round before answers them (``experiment=self_train_walk``,
    lokg/data/self_labels.py), their labels' path as ``trainings.label_path`` says; the first
    ``answered`` questions keep their gold answers (``"0"``: none is read; ``"all"``)."""
    walk = start
    for r in range(1, rounds + 1):
        source = ["data=self_labels", f"data@data.source.base={data}"]
        source.append(f"data.source.walk={walk.ref}")
        if trainings.label_path is not None:
            source.append(f"data.source.path={trainings.label_path}")
        if answered != "0":
            source.append(f"+data.source.answered={answered}")
        answers = "" if answered == "0" else f", {answered} answered"
        label = f"{data} self-trained (round {r}{answers}) from {walk.label}"
        walk = trainings.walk(label, source, ["experiment=self_train_walk"], after=[walk])
    return walk


def finetuned_walk(trainings: Trainings, data: str, start: Walk, size: str = "all") -> Walk:
    init = "pretrained" if start is SHIPPED else start.ref
    label = f"{data} fine-tuned from {start.label}"
    if size != "all":
        label += f" on {size} questions"
    extra = ["experiment=train_walk", f"model.init={init}"]
    return trainings.walk(label, _set_data(data, size), extra, after=[start])


def _generated_fp(walk: Walk) -> str:
    """The fingerprint of the set ``walk`` was trained on (generated, self-labelled, or the
    pretraining union): the walk's directory name does not change with the set's settings,
    and the ledger knows a walk by that name only."""
    return walk.path.parent.name.rsplit("-", 1)[-1] if walk.path is not None else "pending"


def loo_tag(family: str, walk: Walk) -> str:
    """The left-out walk's name in a ledger line: its family and its pretraining union's
    fingerprint (the union changes with the pretraining data's settings, e.g. item 34's
    synthetic questions, while the walk's directory name does not).  Lines recorded before
    2026-12-08 read ``loo-<family>`` alone: all of them are walks of the synthetic questions
    as they were before item 34 (``experiment=pretrain_walk_verbatim``) or of
    ``pretrain_walk_bundled``."""
    return f"loo-{family}-{_generated_fp(walk)}"


def set_rows(
    trainings: Trainings,
    family: str,
    data: str,
    loo: Walk | None,
    wanted: set[str],
) -> dict[str, Row]:
    """The table's rows of one set, in order, those in ``wanted`` only (a row's walk is
    trained only when the row is asked for)."""
    rows: dict[str, Row] = {}
    if ZERO_SHOT in wanted:
        rows[ZERO_SHOT] = Row(data, PRETRAINED_ROW, f":{loo_tag(family, loo)}", loo)
    if ADAPTED in wanted:
        walk = adapted_walk(trainings, data, loo)
        tag = f":adapted-{_generated_fp(walk)}-loo-{family}"
        rows[ADAPTED] = Row(data, PRETRAINED_ROW, tag, walk)
    if SELF_TRAINED in wanted:
        start = adapted_walk(trainings, data, loo)
        walk = self_trained_walk(trainings, data, start)
        tag = f":selftrained{SELF_TRAIN_ROUNDS}-{_generated_fp(walk)}-loo-{family}"
        rows[SELF_TRAINED] = Row(data, PRETRAINED_ROW, tag, walk)
    if FINETUNED in wanted:
        walk = finetuned_walk(trainings, data, loo)
        rows[FINETUNED] = Row(data, LEARNED_ROW, f":finetuned-loo-{family}", walk)
    if PER_KG in wanted:
        rows[PER_KG] = Row(data, LEARNED_ROW, "", per_kg_walk(trainings, data))
    return rows


def table(args, trainings: Trainings, evals: Evaluations, members) -> list[SetResult]:
    plan: list[tuple[Family, str, dict[str, Row]]] = []
    for name in args.families:
        family = FAMILIES[name]
        sets = [s for s in family.sets if not args.data or s in args.data]
        if not sets:
            continue
        wanted = {ROW_NAMES[k] for k in args.rows}
        loo = None
        if wanted - {PER_KG}:
            loo = loo_walk(trainings, family, args.pool, members, args.pretrain)
        for data in sets:
            rows = set_rows(trainings, name, data, loo, wanted)
            plan.append((family, data, rows))
    if args.dry_run:
        for *_, rows in plan:
            for row in rows.values():
                evals.show(row)
        return []
    measured = evals.measure([row for *_, rows in plan for row in rows.values()])
    return [
        SetResult(
            family.name,
            data,
            {k: measured[r] for k, r in rows.items()},
            {k: r.walk.name for k, r in rows.items()},
        )
        for family, data, rows in plan
    ]


def curves(args, trainings: Trainings, evals: Evaluations, members) -> list[CurvePoint]:
    plan: list[tuple[str, str, str, Row | None]] = []
    for data in args.data or CURVE_SETS:
        family = next(f for f in FAMILIES.values() if data in f.sets)
        start = loo = SHIPPED
        if args.curve_from != "shipped":
            start = loo = loo_walk(trainings, family, args.pool, members, args.pretrain)
        trainings.transe(_set_data(data))  # the curves' walks are all answered on data=<set>
        start_tag = "shipped" if start is SHIPPED else f"loo-{family.name}"
        if args.curve_from in ("adapted", "self-trained"):
            start = adapted_walk(trainings, data, start)
            start_tag = f"{_generated_fp(start)}-{start_tag}"
        for size in args.curve_sizes:
            if args.curve_from == "self-trained":  # every question asked, the first n answered
                # the teacher: the adapted walk without answers (the table's self-trained
                # row), else the left-out walk fine-tuned on the n answered
                teacher = start if size == "0" else finetuned_walk(trainings, data, loo, size)
                walk = self_trained_walk(trainings, data, teacher, answered=size)
                answered = "" if size == "0" else f"answered{size}-"  # 0: the table's row
                tag = f":selftrained{SELF_TRAIN_ROUNDS}-{answered}{_generated_fp(walk)}"
                tag += f"-loo-{family.name}"
                plan.append((data, "pretrained", size, Row(data, PRETRAINED_ROW, tag, walk)))
            elif size == "0":  # no training: the pretrained walk as it is; none from scratch
                tag = "" if start is SHIPPED else f":{loo_tag(family.name, start)}"
                if args.curve_from == "adapted":
                    tag = f":adapted-{start_tag}"  # the table's adapted row, the same walk
                untrained = Row(data, PRETRAINED_ROW, tag, start)
                plan.append((data, "pretrained", size, untrained))
            else:
                tuned = finetuned_walk(trainings, data, start, size)
                tag = f":curve{size}-{start_tag}"
                if size == "all" and args.curve_from == "adapted":
                    tag = f":finetuned-adapted-{start_tag}"
                elif size == "all":
                    tag = f":finetuned-{start_tag}"  # the table's fine-tuned row, from the LOO walk
                plan.append((data, "pretrained", size, Row(data, LEARNED_ROW, tag, tuned)))
            if size == "0":
                plan.append((data, "scratch", size, None))
                continue
            scratch = per_kg_walk(trainings, data, size)
            tag = "" if size == "all" else f":curve{size}-scratch"
            plan.append((data, "scratch", size, Row(data, LEARNED_ROW, tag, scratch)))
    rows = [row for *_, row in plan if row is not None]
    if args.dry_run:
        for row in rows:
            evals.show(row)
        return []
    measured = evals.measure(rows)
    points = []
    for data, init, size, row in plan:
        m = measured[row] if row is not None else NOT_RUN
        walk = row.walk.name if row is not None else "-"
        points.append(
            CurvePoint(data, init, size, walk, m.metric("hits@1"), m.metric("coverage"), m.ledger)
        )
    return points


# ---------------------------------------------------------------------- printing
def print_table(results: Sequence[SetResult], split: str, budget: int) -> None:
    print(
        f"\nzero-shot, leave one family out: split={split}, B={budget} (extractive reader: no LLM)"
    )
    for name in dict.fromkeys(r.family for r in results):
        family = FAMILIES[name]
        print(f"\nfamily {name}: left out {' '.join(family.sets)} ({family.leaves_out})")
        print(
            f"{'set':<24} {'row':<20} {'group':<18} {'hits@1':>7} {'cov@B':>7} {'recall':>7} "
            f"{'n':>5}  walk / ledger"
        )
        for r in (r for r in results if r.family == name):
            for row, m in r.rows.items():
                where = " ".join(x for x in (r.walks[row], m.ledger) if x)
                for group, g in m.groups.items():
                    n = "-" if g.get("n") is None else str(int(g["n"]))
                    print(
                        f"{r.data:<24} {row:<20} {group:<18} {g.get('hits@1', math.nan):>7.3f} "
                        f"{g.get('coverage', math.nan):>7.3f} "
                        f"{g.get('answer_recall', math.nan):>7.3f} {n:>5}  {where}"
                    )
                    where = ""
            print(f"ratio {r.data} hits1={r.ratio_hits1:.3f} coverage={r.ratio_coverage:.3f}")


def print_curves(points: Sequence[CurvePoint], sizes: Sequence[str], args) -> None:
    start = {
        "shipped": "the shipped walk",
        "loo": "the leave-one-out walk",
        "adapted": "the leave-one-out walk adapted to the set's KG without answers",
        "self-trained": "that walk fine-tuned on the first n, then self-trained on every "
        "training question (the n answered; n=0: from the adapted walk)",
    }[args.curve_from]
    print(
        f"\nlearning curves: split={args.split}, B={args.budget}; Hits@1 (coverage) after "
        f"fine-tuning on the first n training questions, from {start} and from scratch"
    )
    print(f"{'set':<24} {'init':<11} " + " ".join(f"{'n=' + s:>15}" for s in sizes))
    at = {(p.data, p.init, p.size): p for p in points}
    for data in dict.fromkeys(p.data for p in points):
        for init in ("pretrained", "scratch"):
            cells = []
            for s in sizes:
                p = at[(data, init, s)]
                cell = "-" if math.isnan(p.hits1) else f"{p.hits1:.3f} ({p.coverage:.3f})"
                cells.append(f"{cell:>15}")
            print(f"{data:<24} {init:<11} " + " ".join(cells))
    for p in points:
        if p.ledger:
            print(f"ledger {p.data} {p.init} n={p.size} {p.ledger}")


def _finite(node):
    """``node`` with every float a JSON value (nan: ``null``, inf: ``"inf"``)."""
    if isinstance(node, Mapping):
        return {k: _finite(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [_finite(v) for v in node]
    if isinstance(node, float) and not math.isfinite(node):
        return None if math.isnan(node) else "inf"
    return node


def write_json(path: str, args, results: Sequence[SetResult], points: Sequence[CurvePoint]):
    """The measured rows, with the ratios computed from them, as one JSON file."""
    sets = [
        {
            "family": r.family,
            "data": r.data,
            "rows": {
                k: {"walk": r.walks[k], "groups": m.groups, "ledger": m.ledger}
                for k, m in r.rows.items()
            },
            "ratio_hits1": r.ratio_hits1,
            "ratio_coverage": r.ratio_coverage,
            "adapted_ratio_hits1": r.ratio("hits@1", ADAPTED),
            "adapted_ratio_coverage": r.ratio("coverage", ADAPTED),
            "selftrained_ratio_hits1": r.ratio("hits@1", SELF_TRAINED),
            "selftrained_ratio_coverage": r.ratio("coverage", SELF_TRAINED),
        }
        for r in results
    ]
    body = {
        "split": args.split,
        "budget": args.budget,
        "limit": args.limit,
        "sets": sets,
        "curves": [asdict(p) for p in points],
    }
    Path(path).write_text(json.dumps(_finite(body), indent=1, allow_nan=False), encoding="utf-8")


# ---------------------------------------------------------------------- command line
def _size(text: str) -> str:
    if text == "all" or (text.isdigit() and str(int(text)) == text):
        return text
    raise argparse.ArgumentTypeError(
        f"expected a number of questions (0, 10, ...) or all, got {text}"
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


#: the child process of :func:`cold_start`: a fresh interpreter that imports the package,
#: then loads the shipped walk (its head, MiniLM and the top layers' change) and prints seconds
COLD_START_CHILD = """
import json, time
t0 = time.perf_counter()
from lokg.taimr.walk.artifact import load_walk_network, pretrained_walk
t1 = time.perf_counter()
net, meta, lm = load_walk_network(pretrained_walk())
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "question_lm": lm is not None}))
"""


@dataclass(frozen=True)
class ColdStart:
    """What the shipped walk costs a run that uses it (``--cold-start``): its files' size on
    disk and, in ``repeats`` fresh processes, the seconds to load it (median)."""

    shipped_mb: float
    load_s: float
    import_s: float
    repeats: int

    def line(self) -> str:
        return (
            f"cold_start shipped_mb={self.shipped_mb:.2f} load_s={self.load_s:.2f} "
            f"(median of {self.repeats} fresh processes; the package's imports before it "
            f"{self.import_s:.2f} s)"
        )


def cold_start(repeats: int = 3) -> ColdStart:
    """The shipped walk's size and cold load time (:class:`ColdStart`; issue 40's goals: it
    adds at most 10 MB and 2 s to a cold start). The load is the whole of what a run pays
    for it: the walk head, the pip MiniLM read from site-packages and the float16 change of
    its top layers applied; the package's imports are printed apart (every run pays them)."""
    shipped = pretrained_walk()
    if shipped is None:
        raise InputError("this install has no pretrained walk (lokg/resources/walk/pretrained)")
    size = sum(f.stat().st_size for f in shipped.iterdir() if f.is_file()) / 1e6
    runs = []
    for _ in range(repeats):
        proc = subprocess.run(
            [sys.executable, "-c", COLD_START_CHILD], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"loading the shipped walk failed:\n{proc.stderr[-2000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
    return ColdStart(size, med("load_s"), med("import_s"), repeats)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    ap.add_argument("--data", nargs="+", default=None, help="only these sets of the families")
    ap.add_argument("--split", default="val", choices=EVAL_SPLITS)
    ap.add_argument("--budget", type=_positive, default=128)
    ap.add_argument("--limit", type=_positive, default=None, help="first N questions answered")
    ap.add_argument("--pool", nargs="+", default=None, help="pretraining members (default: all)")
    ap.add_argument("--train-override", nargs="+", action="extend", default=[], metavar="K=V")
    ap.add_argument("--walk-override", nargs="+", action="extend", default=[], metavar="K=V")
    ap.add_argument(
        "--adapt-override",
        nargs="+",
        action="extend",
        default=[],
        metavar="K=V",
        help="the adapted walk's generated questions (data.source.simple_paths=true, ...)",
    )
    ap.add_argument(
        "--rows",
        nargs="+",
        default=list(ROW_NAMES),
        choices=list(ROW_NAMES),
        help="the table's rows to train and measure (default all; a ratio needs per-kg)",
    )
    ap.add_argument(
        "--self-label-path",
        default=None,
        choices=LABEL_PATHS,
        help="the self-trained row's data.source.path (default: configs/data/self_labels.yaml's)",
    )
    ap.add_argument("--curve", action="store_true", help="the learning curves instead")
    ap.add_argument("--curve-sizes", nargs="+", type=_size, default=list(CURVE_SIZES))
    ap.add_argument("--curve-from", default="shipped", choices=CURVE_FROM)
    ap.add_argument(
        "--pretrain",
        default="pretrain_walk",
        metavar="EXPERIMENT",
        help="the experiment config the leave-one-out walks train with (pretrain_walk_bundled: "
        "the ablation of docs/design/taimr.md item 28)",
    )
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, train nothing")
    ap.add_argument(
        "--cold-start", action="store_true", help="only the shipped walk's size and load time"
    )
    add_rerun_test_argument(ap)
    return ap.parse_args(argv)


def check_args(args, members: Sequence[str]) -> None:
    """Refuse, in one line, sets and pool members the families do not hold."""
    known = [s for f in FAMILIES.values() for s in f.sets]
    missing = sorted({s for s in known if s not in members})
    if missing:
        raise InputError(
            f"configs/data/pretrain.yaml has no member {', '.join(missing)}; the families "
            f"name {', '.join(dict.fromkeys(known))}"
        )
    chosen = [s for name in args.families for s in FAMILIES[name].sets]
    scope = known if args.curve else chosen
    other = [s for s in args.data or () if s not in scope]
    if other:
        raise InputError(
            f"--data {' '.join(other)}: not a set of "
            f"{'any family' if args.curve else 'the chosen families'}; expected some of "
            f"{', '.join(dict.fromkeys(scope))}"
        )
    args.pool = list(members) if args.pool is None else args.pool
    unknown = [m for m in args.pool if m not in members]
    if unknown:
        raise InputError(
            f"--pool {' '.join(unknown)}: not a member of configs/data/pretrain.yaml; expected "
            f"some of {', '.join(members)}"
        )
    if args.split == "test" and args.dry_run:
        raise InputError("--dry-run measures nothing: drop --split test")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cold_start:
        print(cold_start().line())
        return 0
    root = bench_root()
    os.environ.setdefault("LOKG_ROOT", root)
    pretraining = compose_config("train", [f"experiment={args.pretrain}"], root)
    members = list(pretraining.data.source.members)
    check_args(args, members)
    print(f"LOKG_ROOT={root}", flush=True)
    trainings = Trainings(
        root,
        args.train_override,
        args.walk_override,
        args.dry_run,
        args.adapt_override,
        args.self_label_path,
    )
    evals = Evaluations(args.split, args.budget, args.limit, args.rerun_test)
    if args.curve:
        points = curves(args, trainings, evals, members)
        results: list[SetResult] = []
    else:
        results = table(args, trainings, evals, members)
        points = []
    if args.dry_run:
        print(f"dry run: {trainings.to_train} train.py runs to start, nothing trained")
        return 0
    if args.json:
        write_json(args.json, args, results, points)
    if args.curve:
        print_curves(points, args.curve_sizes, args)
        print(curve_line(points))
    else:
        print_table(results, args.split, args.budget)
        print(summary_line(results, ADAPTED))
        print(summary_line(results, SELF_TRAINED))
        print(summary_line(results))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # a bad input is one line, a bug a traceback
        report(exc)
