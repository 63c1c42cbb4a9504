"""The evaluation job behind ``evaluate.py``: answer a split with one reader call per
question, record every question (resumably) and report the paper's metrics.

Results live in ``<log_dir>/evaluate/results/<dataset>/<key>/results.jsonl`` where ``key``
hashes everything that changes answers (data, SCOS, retriever, encoder, reader, embedder,
budget, split, limit, seed, and the SCOS/GAT artifacts and attention actually loaded) and
nothing machine-specific, so re-running the same command after a crash resumes: finished
questions are skipped, none is asked twice; retrained artifacts start a new results file.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import hydra
import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from lokg.artifacts import config_key, scos_mode
from lokg.baselines import BASELINE_CONFIGURATIONS
from lokg.console import configure_console
from lokg.data.splits import SPLITS
from lokg.errors import InputError
from lokg.eval.metrics import aggregate
from lokg.eval.records import question_record
from lokg.eval.results import ResultsWriter
from lokg.eval.runner import run_questions
from lokg.eval.tables import ABLATIONS, RunSummary, write_run_summary
from lokg.llm import build_reader
from lokg.paper import departures, gat_departures, transe_departures
from lokg.pipeline import LOKG, check_budget_scope
from lokg.tokens import check_budget
from lokg.train import format_stats, instantiate_list, resolve_seed
from lokg.typing import Question

log = logging.getLogger(__name__)

_MACHINE_KEYS = {"cache_path", "cache_dir", "artifacts_dir", "model_path"}
REPORT_ORDER = (
    "hits@1", "hit", "f1", "coverage", "tcr", "evidence_tok/q", "empty_contexts", "tok/q",
    "prompt_tok/q", "completion_tok/q", "p@1k", "h@1k", "calls/q", "retrieval_latency_s",
    "failed", "truncated", "n",
)  # fmt: skip


def _strip_machine(node):
    if isinstance(node, dict):
        return {k: _strip_machine(v) for k, v in node.items() if k not in _MACHINE_KEYS}
    if isinstance(node, list):
        return [_strip_machine(v) for v in node]
    return node


#: the config keys a run's answers and labels depend on (:func:`run_key`, :func:`ledger_key`)
_RUN_KEYS = ("data", "scos", "retriever", "encoder", "llm", "embedder", "budget",
             "budget_scope", "answer_without_evidence", "split", "limit", "seed", "scos_dir",
             "gat_dir", "method", "configuration", "ablation")  # fmt: skip
#: those naming artifact directories, which the ledger's hash leaves out
_ARTIFACT_KEYS = ("scos_dir", "gat_dir")


def run_key(cfg: DictConfig, provenance: dict | None = None) -> str:
    """Hash of what determines the answers and their label: the config (no paths, loggers or
    tags), the row labels (so two names never share a summary) and the identities of the
    artifacts used (graph, SCOS and GAT directories, retriever cache).  Not ``limit``: the
    first N questions of a split are answered as the whole split's are, so ``limit=40`` and
    a later full run share one results file, and the full run resumes from the 40."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    plain = {k: resolved.get(k) for k in _RUN_KEYS if k != "limit"}
    return config_key(_strip_machine(plain), provenance or {})


def ledger_key(cfg: DictConfig, ignore: Sequence[str] = ()) -> str:
    """The test ledger's hash of a configuration (:mod:`lokg.eval.ledger`): :func:`run_key`'s
    config keys without machine paths, the walk model named by its directory only, and no
    artifact identities (a retrained configuration is the same configuration); ``ignore``
    leaves top-level keys out (a budget curve is one configuration over every ``budget``)."""
    skip = {*_ARTIFACT_KEYS, *ignore}
    resolved = OmegaConf.to_container(cfg, resolve=True)
    plain = {k: resolved.get(k) for k in _RUN_KEYS if k not in skip}
    retriever = plain.get("retriever")
    if isinstance(retriever, dict) and retriever.get("model_dir"):
        retriever["model_dir"] = Path(str(retriever["model_dir"])).name
    return config_key(_strip_machine(plain))


#: metrics that count questions (printed as whole numbers)
COUNT_METRICS = ("empty_contexts", "n")


def format_metrics(metrics: dict[str, float]) -> str:
    def fmt(k: str, v: float) -> str:
        if isinstance(v, float) and math.isnan(v):
            return "—"
        if k in COUNT_METRICS or abs(v) >= 100:
            return f"{v:,.0f}"
        return f"{v:.1f}" if k.endswith("tok/q") else f"{v:.4f}"

    keys = [k for k in REPORT_ORDER if k in metrics]
    return "\n".join(f"  {k:<22s} {fmt(k, metrics[k])}" for k in keys)


def configuration_line(cfg: DictConfig, departed: list[str]) -> str:
    """What is being run, under its true name, and how it departs from the paper."""
    head = f"configuration {cfg.configuration!r} ({cfg.method}, ablation {cfg.ablation})"
    if not departed:
        return f"{head}: the paper's settings (Tables 3-4, Eqs. (16)/(18))"
    return f"{head}: departs from the paper in\n" + "\n".join(f"  - {d}" for d in departed)


def warn_fallbacks(records) -> int:
    """One warning line counting the questions a retriever answered through its fallback
    (e.g. ``retriever=learned`` found no path and the semantic retriever answered)."""
    used = [r.extra.get("fallback") for r in records if r.extra.get("fallback")]
    if used:
        kinds = ", ".join(sorted(set(used)))
        log.warning("%d of %d questions were retrieved by the fallback (%s)", len(used),
                    len(records), kinds)  # fmt: skip
    return len(used)


def report_merged_candidates(records) -> int:
    """One line counting the candidate answers merged because they differed only in case,
    underscores or whitespace (:func:`lokg.retrieval.merge_spellings`); returns the count."""
    counts = [int(r.extra.get("merged_candidates") or 0) for r in records]
    total = sum(counts)
    if total:
        log.info(
            "%d candidate answers merged into another spelling of the same name, in %d of %d "
            "questions", total, sum(c > 0 for c in counts), len(records),
        )  # fmt: skip
    return total


def warn_no_evidence(records, skipped: bool) -> int:
    """One warning line counting the questions recorded as ``no_evidence``; returns the count.

    ``skipped``: their LLM call was skipped (an LLM reader and ``answer_without_evidence``
    false).
    """
    n = sum(bool(r.extra.get("no_evidence")) for r in records)
    if n:
        what = "their LLM call was skipped" if skipped else "they were answered without evidence"
        noun = "question had" if n == 1 else "questions had"
        log.warning(
            "%d %s no evidence (unknown topic entity or empty retrieval); %s", n, noun, what
        )
    return n


#: departures a run may list and still be recorded as the paper: the offline encoder, the
#: TransE checkpoint both configurations share, the added inverse edges the paper's search
#: runs on (docs/DESIGN.md) and the ablated module
_PAPER_SHARED = ("embedder.model_id", "transe.export", "data.source.inverse")
_PAPER_ALLOWED = {
    "full": _PAPER_SHARED,
    "no_scos": (*_PAPER_SHARED, "scos.mode"),
    "no_ittc": (*_PAPER_SHARED, "encoder._target_"),
    "no_taimr": (*_PAPER_SHARED, "retriever._target_"),
}


def recorded_labels(cfg: DictConfig, ablation: str, departed: list[str]) -> tuple[str, str]:
    """(method, configuration) as recorded: a run labelled ``experiment=paper`` whose config
    departs from the paper beyond the offline encoder, the shared TransE checkpoint, the added
    inverse edges and its ablation is not the paper, and is recorded as ``paper+overrides`` so
    no table calls it the paper's settings."""
    if cfg.configuration != "paper":
        return cfg.method, cfg.configuration
    allowed = _PAPER_ALLOWED.get(ablation, _PAPER_ALLOWED["full"])
    extra = [d for d in departed if d.split(":", 1)[0] not in allowed]
    if not extra:
        return cfg.method, cfg.configuration
    log.warning("experiment=paper with overrides (%s): recorded as paper+overrides", extra[0])
    return f"{cfg.method} + overrides", "paper+overrides"


def recorded_ablation(cfg: DictConfig) -> str:
    """The ablation label that matches what runs, so a summary never says "full" for a run
    without SCOS (``scos=off`` given directly rather than through ``ablation=no_scos``).

    SCOS off → ``no_scos``, the naive encoder → ``no_ittc``; a label that contradicts the
    config, or two modules switched off at once, is an input error naming the keys. (Retrievers
    other than TAIMR are methods of their own, labelled by ``method``: a baseline's row is
    ``full``, and an ablation of one is an input error.)
    """
    if cfg.configuration in BASELINE_CONFIGURATIONS:
        if cfg.ablation != "full":
            raise InputError(
                f"ablation={cfg.ablation} with baseline={cfg.configuration}: Table 6 ablates "
                "LOKG only; drop the ablation"
            )
        return "full"
    off = []
    if scos_mode(cfg) == "off":
        off.append(("no_scos", "scos=off"))
    if str(cfg.encoder.get("_target_", "")).endswith("NaiveEncoder"):
        off.append(("no_ittc", "encoder=naive"))
    label = cfg.ablation
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
        log.warning("%s: recorded as ablation %s, not full", why, name)
        return name
    return label


def run(cfg: DictConfig, questions: Sequence[Question] | None = None) -> dict:
    """Answer ``cfg.split`` (or its first ``cfg.limit`` questions) and report metrics.

    ``questions``: ask these instead of the split's (e.g. a restyled split,
    ``bench/bench_question_style.py``), on the split's graph; a digest of their records joins
    the run key, so a changed set never resumes another set's results.
    ``show=<question id>``: write that question's evidence page instead (lokg.show).
    """
    if cfg.get("show") is not None:
        from lokg.show import show

        return show(cfg)
    configure_console(cfg.verbose)
    budget = check_budget(cfg.budget)
    check_budget_scope(cfg.budget_scope)
    if cfg.split not in SPLITS:
        raise ValueError(f"split={cfg.split!r}; expected one of {SPLITS}")
    if cfg.limit is not None and cfg.limit <= 0:
        raise ValueError(f"limit={cfg.limit}; expected a positive number of questions or null")
    if cfg.ablation not in ABLATIONS:
        raise ValueError(f"ablation={cfg.ablation!r}; expected one of {list(ABLATIONS)}")
    ablation = recorded_ablation(cfg)
    seed = resolve_seed(cfg.seed)
    pl.seed_everything(seed, workers=True)
    reader = build_reader(cfg.llm)  # a missing API key fails here, before any work
    try:
        datamodule = hydra.utils.instantiate(cfg.data)
        datamodule.prepare_data()
        datamodule.setup("test")
        print(format_stats(datamodule.summary()), flush=True)
        given = questions is not None
        questions = list(questions) if given else datamodule.questions[cfg.split]
        if cfg.limit is not None:
            questions = questions[: cfg.limit]
        if not questions:
            raise ValueError(f"{datamodule.name}: split {cfg.split!r} has no questions")
        departed = departures(cfg)
        print(configuration_line(cfg, departed), flush=True)
        pipeline = LOKG.from_config(cfg, datamodule, reader)
        gat_dir = pipeline.artifact_dirs.get("gat")
        if gat_dir is not None:  # how the loaded GAT was trained counts too
            gat_cfg = OmegaConf.load(gat_dir / "config.yaml")
            for line in gat_departures(gat_cfg):
                departed.append(line)
                print(f"  - {line}", flush=True)
        transe_dir = pipeline.artifact_dirs.get("transe")
        if transe_dir is not None and (transe_dir / "transe.json").is_file():
            # and how the TransE whose e_r the run uses was trained and exported
            record = json.loads((transe_dir / "transe.json").read_text(encoding="utf-8"))
            for line in transe_departures(record):
                departed.append(line)
                print(f"  - {line}", flush=True)
        provenance = dict(pipeline.provenance)
        if given:
            provenance["questions"] = config_key([q.to_json() for q in questions])
        key = run_key(cfg, provenance)
        run_dir = Path(cfg.paths.log_dir) / "evaluate" / "results" / datamodule.name / key
        writer = ResultsWriter(run_dir / "results.jsonl", fingerprint=key)
        try:
            run_questions(
                questions,
                lambda q: question_record(pipeline.answer(q)),
                writer,
                concurrency=reader.max_concurrency,
                reader_label=reader.label,
                desc=f"{cfg.method} {datamodule.name}/{cfg.split}",
                retry_failed=cfg.retry_failed,
            )
            records = [writer.records[q.id] for q in questions]
        finally:
            writer.close()
            pipeline.close()  # saves the path cache; closes the reader
    finally:
        reader.close()
    metrics = aggregate(r.score() for r in records)
    warn_fallbacks(records)
    report_merged_candidates(records)
    warn_no_evidence(records, skipped=reader.uses_llm and not cfg.answer_without_evidence)
    dataset = datamodule.name
    print(
        f"{cfg.method} on {dataset}/{cfg.split} ({len(records)} questions, B={budget}, "
        f"reader {reader.label}):\n{format_metrics(metrics)}\nresults: {run_dir}",
        flush=True,
    )
    method, configuration = recorded_labels(cfg, ablation, departed)
    summary = RunSummary(
        dataset, method, ablation, reader.label, seed, metrics, budget, cfg.limit,
        cfg.split, configuration, tuple(departed),
    )  # fmt: skip
    summary_path = write_run_summary(run_dir, summary)
    log_to_loggers(cfg, metrics, records, seed)
    return {
        "metrics": metrics, "run_dir": run_dir, "summary": summary_path, "records": records,
        "seed": seed,
    }  # fmt: skip


def log_to_loggers(cfg: DictConfig, metrics: dict[str, float], records, seed: int) -> None:
    """Metrics as ``test/<name>``, the config, and (W&B) a per-question table."""
    loggers = instantiate_list(cfg.get("logger"))
    if not loggers:
        return
    hparams = OmegaConf.to_container(cfg, resolve=True)
    hparams["seed"] = seed
    hparams["departures_from_paper"] = departures(cfg)
    clean = {f"test/{k}": v for k, v in metrics.items() if not math.isnan(v)}
    for lg in loggers:
        lg.log_hyperparams(hparams)
        lg.log_metrics(clean)
        if hasattr(lg, "log_table"):  # WandbLogger
            lg.log_table(
                key="test/questions",
                columns=["id", "question", "gold", "prediction", "evidence", "tokens", "status"],
                data=[
                    [
                        r.id,
                        r.question,
                        " | ".join(r.gold),
                        " | ".join(r.predictions[:3]),
                        r.context or "",
                        r.tokens,
                        r.status,
                    ]
                    for r in records
                ],
            )
        lg.finalize("success")
