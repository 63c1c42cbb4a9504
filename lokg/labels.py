"""The label of an evaluation run: the strings its results, summaries and tables are keyed by.

``experiment=``, ``baseline=`` and ``ablation=`` bundles (and benches, ``method=BFS+truncate``)
each set the top-level keys ``method``, ``configuration`` and ``ablation``; a later override
can contradict them (``scos=off`` without ``ablation=no_scos``, ``experiment=paper`` with a
changed setting). :func:`run_label` is the one place that turns a composed ``evaluate.yaml``
into the label a run is recorded under, so that no table calls a run what it is not:

- the ablation is the module that is really off (``scos=off`` → ``no_scos``, the naive encoder
  → ``no_ittc``); a label the config contradicts, two modules off at once, or an ablation of a
  baseline is an input error naming the keys;
- ``experiment=paper`` whose settings depart from the paper beyond the offline embedder, the
  shared TransE checkpoint, the added inverse edges and its ablation is recorded as
  ``paper+overrides`` (method ``<method> + overrides``).

``evaluate.py`` prints, records and tables the label; ``evaluate.py show=<id>`` heads its page
with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from lokg.artifacts import scos_mode
from lokg.baselines import BASELINE_CONFIGURATIONS
from lokg.errors import InputError
from lokg.eval.tables import ABLATIONS
from lokg.paper_settings import departures, gat_departures, transe_departures

__all__ = ["RunLabel", "artifact_departures", "run_label"]

#: departures a run may list and still be recorded as the paper: the offline embedder, the
#: TransE checkpoint both configurations share, the added inverse edges the paper's search
#: runs on (docs/DESIGN.md) and the ablated module
_PAPER_SHARED = ("embedder.model_id", "transe.export", "data.source.inverse")
_PAPER_ALLOWED = {
    "full": _PAPER_SHARED,
    "no_scos": (*_PAPER_SHARED, "scos.mode"),
    "no_ittc": (*_PAPER_SHARED, "encoder._target_"),
    "no_taimr": (*_PAPER_SHARED, "retriever._target_"),
}


@dataclass(frozen=True)
class RunLabel:
    """What a run is recorded as.

    Attributes:
        method: the row label of the tables (``LOKG (ours)``, ``KAPING``, ``BFS+truncate``, ...).
        configuration: ``lokg``, ``paper``, ``paper+overrides``, a baseline's name, or a bench's.
        ablation: the module that is off: ``full``, ``no_scos``, ``no_ittc`` or ``no_taimr``.
        notes: why the label differs from the config's keys, one sentence each (logged once by
            the job that records it).
    """

    method: str
    configuration: str
    ablation: str
    notes: tuple[str, ...] = ()


def run_label(cfg: DictConfig, departed: Sequence[str] | None = None) -> RunLabel:
    """The label a run of the composed ``evaluate.yaml`` ``cfg`` is recorded under.

    Args:
        cfg: the composed config (its ``method``, ``configuration``, ``ablation``, ``scos``,
            ``encoder``).
        departed: the run's departures from the paper; default
            :func:`lokg.paper_settings.departures` of ``cfg`` (a job that has loaded its
            artifacts adds :func:`artifact_departures`).

    Raises:
        ValueError: ``ablation`` is not one of ``ABLATIONS``.
        InputError: the config contradicts its ablation label, switches two modules off, or
            ablates a baseline.
    """
    if cfg.ablation not in ABLATIONS:
        raise ValueError(f"ablation={cfg.ablation!r}; expected one of {list(ABLATIONS)}")
    ablation, notes = _ablation(cfg)
    method, configuration = str(cfg.method), str(cfg.configuration)
    if configuration == "paper":
        allowed = _PAPER_ALLOWED[ablation]
        departed = departures(cfg) if departed is None else departed
        extra = [d for d in departed if d.split(":", 1)[0] not in allowed]
        if extra:
            notes += (f"experiment=paper with overrides ({extra[0]}): recorded as paper+overrides",)
            method, configuration = f"{method} + overrides", "paper+overrides"
    return RunLabel(method, configuration, ablation, notes)


def _ablation(cfg: DictConfig) -> tuple[str, tuple[str, ...]]:
    """The ablation that matches what runs (a summary never says "full" for a run without
    SCOS); a baseline's row is ``full`` (retrievers other than TAIMR are methods of their own,
    labelled by ``method``)."""
    if cfg.configuration in BASELINE_CONFIGURATIONS:
        if cfg.ablation != "full":
            raise InputError(
                f"ablation={cfg.ablation} with baseline={cfg.configuration}: Table 6 ablates "
                "LOKG only; drop the ablation"
            )
        return "full", ()
    off = []
    if scos_mode(cfg) == "off":
        off.append(("no_scos", "scos=off"))
    if str(cfg.encoder.get("_target_", "")).endswith("NaiveEncoder"):
        off.append(("no_ittc", "encoder=naive"))
    label = str(cfg.ablation)
    if label in ("no_scos", "no_ittc") and label not in [name for name, _ in off]:
        key = "scos" if label == "no_scos" else "encoder"
        raise InputError(
            f"ablation={label} but {key} is on (an override after the ablation?); "
            "drop the override or the ablation"
        )
    if len(off) > 1:
        raise InputError(
            f"{' and '.join(why for _, why in off)}: Table 6 ablations remove one module at a "
            "time; run them separately"
        )
    if label == "full" and off:
        name, why = off[0]
        return name, (f"{why}: recorded as ablation {name}, not full",)
    return label, ()


def artifact_departures(artifact_dirs: Mapping[str, Path | None]) -> list[str]:
    """How the artifacts a run loaded were trained differently from the paper: the GAT's
    (``gat:`` lines, from its ``config.yaml``) and the TransE whose e_r it uses
    (``transe.`` lines, from ``transe.json``); ``artifact_dirs`` as
    :attr:`lokg.pipeline.LOKG.artifact_dirs`."""
    out: list[str] = []
    gat_dir = artifact_dirs.get("gat")
    if gat_dir is not None:
        out += gat_departures(OmegaConf.load(Path(gat_dir) / "config.yaml"))
    transe_dir = artifact_dirs.get("transe")
    if transe_dir is not None and (Path(transe_dir) / "transe.json").is_file():
        record = json.loads((Path(transe_dir) / "transe.json").read_text(encoding="utf-8"))
        out += transe_departures(record)
    return out
