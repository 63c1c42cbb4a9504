"""The evaluation job behind ``evaluate.py``: answer a split with one reader call per
question, record every question (resumably) and report the paper's metrics.

Results live in ``<log_dir>/evaluate/results/<dataset>/<key>/results.jsonl`` where ``key``
hashes everything that changes answers (data, SCOS, retriever, encoder, reader, embedder,
budget, split, limit, seed, and the SCOS/GAT artifacts and attention actually loaded) and
nothing machine-specific, so re-running the same command after a crash resumes: finished
questions are skipped, none is asked twice; retrained artifacts start a new results file.

Exit status (:func:`exit_status`, through :mod:`lokg.cli`): 0 when every question was
answered, 1 when any ended failed (its LLM call failed after every retry, its prompt was
rejected, ...) or truncated (a reply cut at the generation limit), so scripts and CI can tell
(``allow_failures=true``: 0 all the same); the results, metrics and summary are written either
way and one WARNING line counts them. 2 is a mistake in the input (nothing is asked).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from lokg.artifacts import config_key
from lokg.assemble import (
    RunSettings,
    graph_artifacts,
    prepared_datamodule,
    retriever_plan,
    run_settings,
)
from lokg.config import instantiate_list, resolve_seed
from lokg.console import configure_console, format_stats
from lokg.data.splits import SPLITS
from lokg.eval.ledger import LedgerKey
from lokg.eval.metrics import NO_GOLD, aggregate
from lokg.eval.records import DEFAULT_MAX_HOPS, question_record
from lokg.eval.results import ResultsWriter
from lokg.eval.runner import run_questions
from lokg.eval.tables import RunSummary, write_run_summary
from lokg.labels import RunLabel, artifact_departures, run_label
from lokg.llm import build_reader
from lokg.paper_settings import departures
from lokg.pipeline import LOKG
from lokg.show import evidence_view, find_question, log_view, write_page
from lokg.taimr.walk.artifact import shipped_data, walk_origin
from lokg.taimr.walk.retriever import by_length_in_effect
from lokg.typing import Question

log = logging.getLogger(__name__)

_MACHINE_KEYS = {"cache_path", "cache_dir", "artifacts_dir", "model_path"}
REPORT_ORDER = (
    "hits@1", "hit", "f1", "coverage", "coverage_all_constraints", "tcr", "evidence_tok/q",
    "empty_contexts", "tok/q", "prompt_tok/q", "completion_tok/q", "p@1k", "h@1k", "calls/q",
    "retrieval_latency_s", "failed", "truncated", "n", "gold_n",
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


#: config keys added after the test ledger began, with the value at which a run is what it
#: was before the key existed: at that value (``auto`` resolved, :func:`_in_effect`) the key
#: is left out of the ledger's hash, so a configuration keeps the lines recorded before it
NEUTRAL_KEYS = {("retriever", "by_length"): False, ("retriever", "anchor_answers"): "scored"}


def ledger_key(cfg: DictConfig, ignore: Sequence[str] = (), datamodule=None) -> LedgerKey:
    """The test ledger's hash of a configuration (:mod:`lokg.eval.ledger`): :func:`run_key`'s
    config keys without machine paths, the walk model named by its directory only (a walk
    shipped in the package also by its training data, ``pretrained@<prepared>``: every
    shipped walk has that one directory name), and no artifact identities (a retrained
    configuration is the same configuration); ``ignore`` leaves top-level keys out (a budget
    curve is one configuration over every ``budget``).

    A key of :data:`NEUTRAL_KEYS` enters as the run takes it (``retriever.by_length: auto``
    resolved for the run's walk and graph, ``retriever.anchor_answers`` for the split's
    questions: ``datamodule``, prepared when ``None``) and not at all at its neutral value.
    Earlier hashes of the same configuration: the config as written, with the keys added
    after each earlier one left out when they are at their neutral value here (so lines keyed
    on 2026-12-07 with ``by_length`` written, before ``anchor_answers`` existed, are found
    for a split where ``anchor_answers`` changes nothing), and for a walk of
    :data:`SHIPPED_BY_NAME` the same with the walk named ``pretrained`` alone.
    """
    skip = {*_ARTIFACT_KEYS, *ignore}
    resolved = OmegaConf.to_container(cfg, resolve=True)
    plain = {k: resolved.get(k) for k in _RUN_KEYS if k not in skip}
    retriever = plain.get("retriever")
    named = [plain]  # the config as hashed now, then as lines before SHIPPED_BY_NAME's end
    if isinstance(retriever, dict):
        for key in ("model_dir", "rerank"):  # artifacts by directory name, not machine path
            if retriever.get(key):
                path = Path(str(retriever[key]))
                retriever[key], prepared = path.name, shipped_data(path)
                if prepared is not None:  # every shipped walk has the one directory name
                    retriever[key] = f"{path.name}@{prepared}"
                    if prepared in SHIPPED_BY_NAME:
                        named.append(copy.deepcopy(plain))
                        named[-1]["retriever"][key] = path.name
    keys = [(n, k, v) for (n, k), v in NEUTRAL_KEYS.items() if k in (plain.get(n) or {})]
    in_effect = [_in_effect(cfg, n, k, datamodule) for n, k, _ in keys]
    neutral = [value == v for value, (_, _, v) in zip(in_effect, keys, strict=True)]
    hashes = []  # the canonical hash of each naming, then the earlier forms
    for config in named:
        canonical = copy.deepcopy(config)
        for (node, key, _), value, is_neutral in zip(keys, in_effect, neutral, strict=True):
            if is_neutral:
                del canonical[node][key]
            else:
                canonical[node][key] = value
        hashes.append(config_key(_strip_machine(canonical)))
        for i in range(1, len(keys) + 1):  # as written until the i-th key, without the later
            if all(neutral[i:]):
                hashes.append(config_key(_strip_machine(_without(config, keys[i:]))))
    canonical_hash = hashes[0]
    earlier = [h for h in dict.fromkeys(hashes) if h != canonical_hash]
    return LedgerKey(canonical_hash, tuple(earlier))


#: the shipped walks (their training data's fingerprint, ``record.json``'s ``data.prepared``)
#: whose test lines were keyed by the directory name ``pretrained`` alone: the walk shipped
#: from 2026-12-06 to 2026-12-08.  Every walk shipped since is keyed ``pretrained@<prepared>``
#: (docs/design/taimr.md item 34: re-shipping keeps the directory's name)
SHIPPED_BY_NAME = frozenset({"pretrain-2972122f3dc0"})


def _without(plain: dict, keys) -> dict:
    """``plain`` without ``keys`` (``(node, key, neutral)``), copied."""
    out = copy.deepcopy(plain)
    for node, key, _ in keys:
        out[node].pop(key, None)
    return out


#: (data config, walk directory, SCOS) -> by_length in effect: one graph load per dataset;
#: ("anchor_answers", data config, split) -> anchor_answers in effect
_IN_EFFECT: dict[str, object] = {}


def _in_effect(cfg: DictConfig, node: str, key: str, datamodule=None):
    """``cfg.<node>.<key>`` as a run takes it: ``retriever.by_length: auto`` resolved for the
    run's walk on the run's graph (SCOS's, as the retriever walks it:
    :func:`lokg.taimr.walk.retriever.by_length_in_effect`), ``retriever.anchor_answers``
    by :func:`_anchor_answers_in_effect`; any other value as written."""
    value = cfg[node][key]
    if (node, key) == ("retriever", "anchor_answers"):
        return _anchor_answers_in_effect(cfg, value, datamodule)
    if (node, key) != ("retriever", "by_length") or value != "auto":
        return value
    plan = retriever_plan(cfg.retriever)
    if "model_dir" not in plan.needs:
        return value
    walk = cfg.retriever.get("model_dir")
    memo = config_key(cfg.data, walk, cfg.get("scos"), cfg.get("scos_dir"))
    if memo not in _IN_EFFECT:
        dm = datamodule if datamodule is not None else prepared_datamodule(cfg)
        art = graph_artifacts(cfg, dm, plan)
        _IN_EFFECT[memo] = by_length_in_effect(value, art.walk_dir, art.kg)
    return _IN_EFFECT[memo]


def _anchor_answers_in_effect(cfg: DictConfig, value: str, datamodule=None) -> str:
    """``retriever.anchor_answers`` as the run takes it: ``last`` reorders only the join of
    several anchors, so with ``retriever.anchors=union``, or on a split where no question
    names two topic entities, it is the neutral ``scored``."""
    if value == "scored" or cfg.retriever.get("anchors", "join") != "join":
        return "scored"
    memo = config_key("anchor_answers", cfg.data, cfg.get("split"))
    if memo not in _IN_EFFECT:
        dm = datamodule if datamodule is not None else prepared_datamodule(cfg)
        questions = dm.questions.get(cfg.get("split"), [])
        several = any(len(q.topic_entities) > 1 for q in questions)
        _IN_EFFECT[memo] = value if several else "scored"
    return _IN_EFFECT[memo]


def support_hops(cfg: DictConfig) -> int:
    """L of ``coverage_all_constraints``: the retriever's ``max_hops``, or Table 3's L for a
    retriever without one (ToG, the oracle, no evidence)."""
    return int(cfg.retriever.get("max_hops", DEFAULT_MAX_HOPS))


#: metrics that count questions (printed as whole numbers)
COUNT_METRICS = ("empty_contexts", "n", "gold_n")


def format_metrics(metrics: dict[str, float | None]) -> str:
    """The console's metric table; an answer metric without gold answers reads
    :data:`~lokg.eval.metrics.NO_GOLD`, and ``gold_n`` shows only when not every question
    has gold answers."""

    def fmt(k: str, v: float | None) -> str:
        if v is None:
            return NO_GOLD
        if isinstance(v, float) and math.isnan(v):
            return "—"
        if k in COUNT_METRICS or abs(v) >= 100:
            return f"{v:,.0f}"
        return f"{v:.1f}" if k.endswith("tok/q") else f"{v:.4f}"

    keys = [k for k in REPORT_ORDER if k in metrics]
    if metrics.get("gold_n") == metrics.get("n"):
        keys = [k for k in keys if k != "gold_n"]
    return "\n".join(f"  {k:<24s} {fmt(k, metrics[k])}" for k in keys)


def configuration_line(label: RunLabel, departed: list[str]) -> str:
    """What is being run, under its true name (:func:`lokg.labels.run_label`), and how it
    departs from the paper."""
    head = f"configuration {label.configuration!r} ({label.method}, ablation {label.ablation})"
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


def warn_unjudged_supports(records) -> int:
    """One warning line counting the answered records written before
    ``coverage_all_constraints`` existed (no ``coverage_max_hops``): the metric leaves them
    out, since the ids of their packed triples were not kept; returns the count."""
    n = sum(r.status == "ok" and "coverage_max_hops" not in r.extra for r in records)
    if n:
        log.warning(
            "%d of %d records predate coverage_all_constraints and are left out of it; "
            "a fresh results directory measures every question",
            n,
            len(records),
        )
    return n


#: exit status of a finished run with questions failed or truncated (``lokg.cli``'s)
EXIT_QUESTIONS_FAILED = 1


def exit_status(records, allow_failures: bool = False) -> int:
    """The run's exit status: :data:`EXIT_QUESTIONS_FAILED` when any question ended failed or
    with a truncated reply and not ``allow_failures``, else 0; one WARNING line when any did,
    counting them."""
    failed = sum(r.status == "failed" for r in records)
    truncated = sum(r.status != "failed" and r.truncated > 0 for r in records)
    if not failed and not truncated:
        return 0
    status = 0 if allow_failures else EXIT_QUESTIONS_FAILED
    why = "allow_failures=true" if allow_failures else "allow_failures=true exits 0"
    log.warning(
        "%d of %d questions failed and %d were answered from a truncated reply: exit status "
        "%d (%s)", failed, len(records), truncated, status, why,
    )  # fmt: skip
    return status


def run(cfg: DictConfig, questions: Sequence[Question] | None = None) -> dict:
    """Answer ``cfg.split`` (or its first ``cfg.limit`` questions) and report metrics.

    ``questions``: ask these instead of the split's (e.g. a restyled split,
    ``bench/bench_question_style.py``), on the split's graph; a digest of their records joins
    the run key, so a changed set never resumes another set's results.
    ``show=<question id>``: write that question's evidence page instead (:func:`show`).
    """
    if cfg.get("show") is not None:
        return show(cfg)
    configure_console(cfg.verbose)
    settings = check_run(cfg)  # the config boundary: a bad key fails here, before any work
    label = run_label(cfg)  # a label the config contradicts fails here, before any work
    seed = resolve_seed(cfg.seed)
    pl.seed_everything(seed, workers=True)
    reader = build_reader(cfg.llm)  # a missing API key fails here, before any work
    try:
        datamodule = prepared_datamodule(cfg)
        print(format_stats(datamodule.summary()), flush=True)
        given = questions is not None
        questions = asked_questions(cfg, datamodule, questions)
        departed = departures(cfg)
        print(configuration_line(label, departed), flush=True)
        pipeline = LOKG.from_config(cfg, datamodule, reader, settings=settings)
        # how the loaded GAT and TransE were trained count too
        for line in artifact_departures(pipeline.artifact_dirs):
            departed.append(line)
            print(f"  - {line}", flush=True)
        walk = walk_origin(pipeline.artifact_dirs.get("walk"))  # said once by load_graph_artifacts
        provenance = dict(pipeline.provenance)
        if given:
            provenance["questions"] = config_key([q.to_json() for q in questions])
        key = run_key(cfg, provenance)
        run_dir = Path(cfg.paths.log_dir) / "evaluate" / "results" / datamodule.name / key
        desc = f"{cfg.method} {datamodule.name}/{cfg.split}"
        records = answer_all(cfg, pipeline, questions, run_dir / "results.jsonl", key, desc)
    finally:
        reader.close()
    metrics = aggregate(r.score() for r in records)
    warn_fallbacks(records)
    warn_unjudged_supports(records)
    report_merged_candidates(records)
    warn_no_evidence(records, skipped=reader.uses_llm and not settings.answer_without_evidence)
    print(
        f"{cfg.method} on {datamodule.name}/{cfg.split} ({len(records)} questions, "
        f"B={settings.budget}, reader {reader.label}):\n{format_metrics(metrics)}\n"
        f"results: {run_dir}",
        flush=True,
    )
    label = run_label(cfg, departed)
    for note in label.notes:
        log.warning(note)
    summary = RunSummary(
        dataset=datamodule.name,
        method=label.method,
        ablation=label.ablation,
        llm=reader.label,
        seed=seed,
        metrics=metrics,
        budget=settings.budget,
        limit=cfg.limit,
        split=cfg.split,
        configuration=label.configuration,
        departures=tuple(departed),
        walk=walk,
    )
    summary_path = write_run_summary(run_dir, summary)
    log_to_loggers(cfg, metrics, records, seed)
    return {
        "metrics": metrics, "run_dir": run_dir, "summary": summary_path, "records": records,
        "seed": seed, "exit_status": exit_status(records, cfg.get("allow_failures", False)),
    }  # fmt: skip


def check_run(cfg: DictConfig) -> RunSettings:
    """The run's :class:`~lokg.assemble.RunSettings` (budget, budget scope), read once, and
    its split and limit checked: one-line errors, before any work."""
    settings = run_settings(cfg)
    if cfg.split not in SPLITS:
        raise ValueError(f"split={cfg.split!r}; expected one of {SPLITS}")
    if cfg.limit is not None and cfg.limit <= 0:
        raise ValueError(f"limit={cfg.limit}; expected a positive number of questions or null")
    return settings


def asked_questions(
    cfg: DictConfig, datamodule, questions: Sequence[Question] | None = None
) -> list[Question]:
    """``questions`` (default: the split's), the first ``cfg.limit`` of them; an error when
    none is left."""
    questions = list(questions) if questions is not None else datamodule.questions[cfg.split]
    if cfg.limit is not None:
        questions = questions[: cfg.limit]
    if not questions:
        raise ValueError(f"{datamodule.name}: split {cfg.split!r} has no questions")
    return questions


def answer_all(
    cfg: DictConfig, pipeline: LOKG, questions: Sequence[Question], path: Path, key: str,
    desc: str,
) -> list:  # fmt: skip
    """Answer ``questions`` with ``pipeline`` into the results file ``path`` (resumable,
    keyed by ``key``; ``desc`` labels the progress bar), then close the file and the
    pipeline (its path cache is saved); returns the questions' records in order."""
    writer = ResultsWriter(path, fingerprint=key, wait=cfg.wait)  # one writer per file
    try:
        hops = support_hops(cfg)
        run_questions(
            questions,
            lambda q: question_record(pipeline.answer(q), hops),
            writer,
            concurrency=pipeline.reader.max_concurrency,
            reader_label=pipeline.reader.label,
            desc=desc,
            retry_failed=cfg.retry_failed,
        )
        return [writer.records[q.id] for q in questions]
    finally:
        writer.close()
        pipeline.close()  # saves the path cache; closes the reader


def show(cfg: DictConfig) -> dict:
    """``evaluate.py show=<id>``: answer one question with the configured pipeline, print its
    retrieval and encoding in one line, and write its evidence page (:mod:`lokg.show`, which
    renders the encoder's record of its decision) to
    ``<log_dir>/evaluate/show/<dataset>/<id>.html``; nothing is recorded in the results files.
    Returns ``{"page": Path, "view": EvidenceView}``."""
    configure_console(cfg.verbose)
    pl.seed_everything(resolve_seed(cfg.seed), workers=True)
    reader = build_reader(cfg.llm)
    try:
        datamodule = prepared_datamodule(cfg)
        question = find_question(datamodule, str(cfg.show), cfg.split)
        pipeline = LOKG.from_config(cfg, datamodule, reader)
        try:
            out = pipeline.answer(question)
        finally:
            pipeline.close()
    finally:
        reader.close()
    label = run_label(cfg, departures(cfg) + artifact_departures(pipeline.artifact_dirs))
    view = evidence_view(out, pipeline.encoder, configuration=label.configuration)
    page = Path(cfg.paths.log_dir) / "evaluate" / "show" / datamodule.name / f"{question.id}.html"
    write_page(view, page)
    print(
        f"{question.id}: {len(view.paths)} paths, {len(view.triples)} candidate triples "
        f"({len(view.dropped)} dropped), evidence {view.evidence_tokens}/{view.evidence_budget} "
        f"tokens, prompt {view.prompt_tokens} tokens; answers {list(view.answers[:3])}, gold "
        f"{list(view.gold)}\nevidence page: {page}",
        flush=True,
    )
    loggers = instantiate_list(cfg.get("logger"))
    if log_view(loggers, view, page):
        for lg in loggers:
            lg.finalize("success")
            if hasattr(lg, "log_table"):  # W&B: this one-question run is complete
                lg.experiment.finish()
    return {"page": page, "view": view}


def log_to_loggers(cfg: DictConfig, metrics: dict[str, float], records, seed: int) -> None:
    """Metrics as ``test/<name>``, the config, and (W&B) a per-question table."""
    loggers = instantiate_list(cfg.get("logger"))
    if not loggers:
        return
    hparams = OmegaConf.to_container(cfg, resolve=True)
    hparams["seed"] = seed
    hparams["departures_from_paper"] = departures(cfg)
    clean = {f"test/{k}": v for k, v in metrics.items() if v is not None and not math.isnan(v)}
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
