"""The evidence view: one self-contained HTML page that shows how one question was answered.

    python evaluate.py show=pq2h-00001 [any evaluate overrides]

(``python -m lokg.show show=<id>`` still works: it prints one deprecation line and runs
``evaluate.py``.) The page holds the question, its topic entities, the retrieved paths with
their scores (S_topo of Eq. (16), S_link, S_sem of Eq. (17), S_final of Eq. (18)), every
candidate triple with the granularity ITTC chose for it, its token cost c(t, k) and value
v(t, k) of Eq. (9) (and those of the granularities not chosen), the triples that were dropped
and why, the exact prompt and its token count, the reader's answers and the gold answers.
With a W&B logger the same rows are logged as tables (``show/paths``, ``show/triples``)
beside the page.

Building blocks (usable from a notebook):

    out = lokg_pipeline.answer(question)              # a PipelineOutput
    view = evidence_view(out, lokg_pipeline.encoder)  # an EvidenceView (named rows)
    write_page(view, "q.html")                        # render_html(view) -> str

This module renders; it computes nothing of the method. The costs, values, renderings and
dropped triples are those the encoder computed while encoding (``out.context.units``, a
:class:`~lokg.ittc.encoder.EncodedUnits`), so they are the numbers the MCKP of Eq. (11) saw;
the encoder object is read for its name and settings only, to word the notes. The job
behind ``evaluate.py show=<id>`` is :func:`lokg.evaluate.show`.
"""

from __future__ import annotations

import html
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lokg.errors import InputError
from lokg.ittc.encoder import DROPPED, EncodedUnits
from lokg.ittc.render import GRANULARITIES
from lokg.llm.accounting import messages_cl100k
from lokg.llm.prompt import answer_messages

__all__ = [
    "EvidenceView",
    "PathRow",
    "TripleRow",
    "evidence_view",
    "find_question",
    "log_view",
    "main",
    "render_html",
    "write_page",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PathRow:
    """One retrieved path, best first.

    Attributes:
        rank: 1-based rank in the retriever's result.
        triples: the path's triples as (head, relation, tail) labels, topic first.
        answer: the label of the path's last entity.
        s_topo, s_link, s_sem, s_final: the path's scores (Eqs. (16)-(18); S_link beyond
            the paper, 0 when relation linking is off).
    """

    rank: int
    triples: tuple[tuple[str, str, str], ...]
    answer: str
    s_topo: float
    s_link: float
    s_sem: float
    s_final: float


@dataclass(frozen=True)
class TripleRow:
    """One distinct candidate triple given to the encoder, in the retriever's order.

    Attributes:
        rank: 1-based position among the distinct candidates.
        triple: (head, relation, tail) labels.
        kept: whether the triple is in the evidence block.
        granularity: the rendering chosen (``compact``/``balanced``/``verbose``/``naive``), or
            ``"dropped"``.
        line: the triple's line as placed in the prompt ("" when dropped).
        cost: c(t, k) of the chosen rendering in tokens (0 when dropped).
        value: v(t, k) of Eq. (9) of the chosen rendering (0 when dropped; NaN when the
            encoder computes no values).
        costs, values: c(t, k) and v(t, k) for every granularity of ITTC (empty for encoders
            without granularities).
        boosted: α(t) = λ_boost of Eq. (10) applies (the triple touches a topic entity or a
            top candidate answer).
        in_paths: ranks of the retrieved paths that walk this triple.
        reason: why the triple was dropped, or why this rendering ("" when nothing to say).
    """

    rank: int
    triple: tuple[str, str, str]
    kept: bool
    granularity: str
    line: str
    cost: int
    value: float
    costs: dict[str, int] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    boosted: bool = False
    in_paths: tuple[int, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class EvidenceView:
    """Everything the evidence page shows for one question.

    Attributes:
        question_id, question: the question.
        topics: topic entities found in the graph; ``unknown_topics``: those it lacks.
        gold: the gold answers; ``answers``: the reader's, most likely first.
        reader: the reader's label; ``output``: its raw output.
        scores: ``hits@1``, ``hit``, ``f1`` and ``coverage`` of this question (lokg.eval).
        retriever_answers: the retriever's ranked candidate answers (label, score).
        paths: the retrieved paths; ``triples``: every distinct candidate triple.
        prompt: the chat messages (sent, or the ones an LLM reader would get).
        prompt_sent: whether ``prompt`` was sent (False for the extractive reader or a
            skipped call).
        prompt_tokens: tokens of ``prompt`` (its contents, cl100k_base: as the client counts).
        evidence: the evidence block exactly as placed in the prompt.
        evidence_tokens: T_after; ``naive_tokens``: T_naive; ``budget``: B;
            ``evidence_budget``: what the evidence was encoded for.
        budget_scope, encoder, solver, order: how the evidence was built.
        value: Σ v(t, k) over the encoded triples (the MCKP objective).
        notes: sentences explaining the encoder's decision as a whole.
        configuration: the configuration's label (``lokg``, ``paper``, ...).
    """

    question_id: str
    question: str
    topics: tuple[str, ...]
    unknown_topics: tuple[str, ...]
    gold: tuple[str, ...]
    answers: tuple[str, ...]
    reader: str
    output: str
    scores: dict[str, float]
    retriever_answers: tuple[tuple[str, float], ...]
    paths: tuple[PathRow, ...]
    triples: tuple[TripleRow, ...]
    prompt: tuple[dict, ...]
    prompt_sent: bool
    prompt_tokens: int
    evidence: str
    evidence_tokens: int
    naive_tokens: int
    budget: int
    evidence_budget: int
    budget_scope: str
    encoder: str
    solver: str
    order: str
    value: float
    notes: tuple[str, ...] = ()
    configuration: str = ""

    @property
    def dropped(self) -> tuple[TripleRow, ...]:
        return tuple(t for t in self.triples if not t.kept)


# ---------------------------------------------------------------------------- building
def _scores(output) -> dict[str, float]:
    from lokg.eval.records import question_record

    s = question_record(output).score()
    if not s.has_gold:  # a question for answering only: rendered "n/a (no gold answers)"
        return {}
    out = {"hits@1": s.hits1, "hit": s.hit, "f1": s.f1}
    if s.covered is not None:
        out["coverage"] = float(s.covered)
    return out


def _drop_reason(encoder, ctx, n: int, min_total: int | None) -> str:
    """Why the triples missing from the evidence were left out (one sentence per encoder)."""
    name = getattr(encoder, "name", type(encoder).__name__)
    if ctx.solver == "truncate":
        return (
            f"truncate encoder: its line did not fit in the {ctx.budget} tokens left after the "
            "higher-ranked lines"
        )
    if name == "ittc" and ctx.repaired:
        return (
            "ITTC step 5: the assembled text counted more than B, so kept triples were set to "
            "compact and then dropped in drop order until it fit"
        )
    if name == "ittc":
        policy = getattr(encoder, "drop_policy", "value")
        order = (
            "lowest compact value v(t, compact) first, then lower score, then later rank"
            if policy == "value"
            else "latest retrieval rank first"
        )
        total = "" if min_total is None else f" ({min_total} tokens)"
        return (
            f"infeasible MCKP: even all {n} candidates compact{total} exceed B = {ctx.budget}; "
            f"dropped by drop_policy={policy} ({order}) until the all-compact encoding fit"
        )
    return f"not placed in the evidence by the {name} encoder"


def _path_ranks(ret) -> dict[tuple[int, ...], list[int]]:
    """``(head, relation, tail) ids -> the ranks (from 1) of the retrieved paths through it``."""
    kg = ret.kg
    in_paths: dict[tuple[int, ...], list[int]] = {}
    for rank, p in enumerate(ret.paths, start=1):
        for t in p.triple_ids:
            row = tuple(int(x) for x in kg.triples_np[int(t)])
            in_paths.setdefault(row, []).append(rank)
    return in_paths


def _triple_rows(
    units: EncodedUnits, kg, in_paths: dict, drop_reason: str
) -> tuple[TripleRow, ...]:
    """One :class:`TripleRow` per candidate of ``units``, in retrieval rank order."""
    rows: list[TripleRow] = []
    for i, key in enumerate(tuple(int(x) for x in row) for row in units.triples):
        per_cost, per_value = {}, {}
        if units.costs is not None:
            per_cost = {g: int(units.costs[i, j]) for j, g in enumerate(GRANULARITIES)}
        if units.values is not None:
            per_value = {g: float(units.values[i, j]) for j, g in enumerate(GRANULARITIES)}
        kept = units.rendering[i] != DROPPED
        rows.append(
            TripleRow(
                rank=i + 1,
                triple=(
                    kg.entities.label(key[0]),
                    kg.relations.label(key[1]),
                    kg.entities.label(key[2]),
                ),
                kept=kept,
                granularity=units.rendering[i],
                line=units.lines[i],
                cost=int(units.cost[i]),
                value=float(units.value[i]),
                costs=per_cost,
                values=per_value,
                boosted=bool(units.boosted[i]) if units.boosted is not None else False,
                in_paths=tuple(in_paths.get(key, ())),
                reason="" if kept else drop_reason,
            )
        )
    return tuple(rows)


def _path_rows(ret) -> tuple[PathRow, ...]:
    """The retrieved paths, best first, with their labels and scores."""
    kg = ret.kg
    return tuple(
        PathRow(
            rank=r,
            triples=tuple(kg.labeled(int(t)) for t in p.triple_ids),
            answer=kg.entities.label(int(p.answer)),
            s_topo=float(p.s_topo),
            s_link=float(p.s_link),
            s_sem=float(p.s_sem),
            s_final=float(p.s_final),
        )
        for r, p in enumerate(ret.paths, start=1)
    )


def _prompt(output) -> tuple[tuple[dict, ...], bool]:
    """The chat messages and whether they were sent: the extractive reader or a skipped call
    sent none, so the prompt shown is the one an LLM reader would get."""
    if output.prompt:
        return tuple(output.prompt), True
    return tuple(answer_messages(output.question.text, output.context.text)), False


def evidence_view(output, encoder, configuration: str = "") -> EvidenceView:
    """The :class:`EvidenceView` of one answered question.

    Args:
        output: a :class:`~lokg.pipeline.PipelineOutput` (read by attribute); its
            ``context.units`` holds every candidate with the costs and values the encoder
            weighed.
        encoder: the encoder that built ``output.context`` (the pipeline's): its name and
            settings word the notes and the reasons for dropping.
        configuration: a label shown in the page's header.
    """
    q, ctx, ret = output.question, output.context, output.retrieval
    units = ctx.units
    if units is None:  # evidence that is not triples (text passages): none of them placed
        ids = list(dict.fromkeys(int(t) for t in ret.triple_ids))
        units = EncodedUnits.none_placed(ret.kg.triples_np[ids])
    n = len(units)
    min_total = units.min_total
    rows = _triple_rows(units, ret.kg, _path_ranks(ret), _drop_reason(encoder, ctx, n, min_total))
    notes = _notes(encoder, ctx, n, min_total, output)
    prompt, sent = _prompt(output)
    prompt_tokens = messages_cl100k(prompt)  # as the client counts prompt_tokens_cl100k
    return EvidenceView(
        question_id=q.id,
        question=q.text,
        topics=tuple(t.label for t in ret.topics),
        unknown_topics=tuple(ret.unknown_topics),
        gold=tuple(q.answers),
        answers=tuple(output.answers),
        reader=output.reader,
        output=output.output,
        scores=_scores(output),
        retriever_answers=tuple((a.label, float(a.score)) for a in ret.answers),
        paths=_path_rows(ret),
        triples=rows,
        prompt=prompt,
        prompt_sent=sent,
        prompt_tokens=int(prompt_tokens),
        evidence=ctx.text,
        evidence_tokens=int(ctx.num_tokens),
        naive_tokens=int(ctx.naive_tokens),
        budget=int(output.budget),
        evidence_budget=int(output.evidence_budget or output.budget),
        budget_scope=output.budget_scope,
        encoder=getattr(encoder, "name", type(encoder).__name__),
        solver=ctx.solver,
        order=ctx.order,
        value=float(ctx.value),
        notes=tuple(notes),
        configuration=configuration,
    )


def _notes(encoder, ctx, n: int, min_total: int | None, output) -> list[str]:
    out = []
    b = ctx.budget
    if ctx.solver == "naive" and getattr(encoder, "name", "") == "ittc":
        ratio = getattr(encoder, "activation_ratio", 0.7)
        out.append(
            f"ITTC not activated: T_naive = {ctx.naive_tokens} ≤ {ratio}·B = {ratio * b:g}, "
            "so every candidate is in the uniform template (Sec. 2.4)"
        )
    elif ctx.solver == "naive":
        out.append("uniform template for every candidate, no budget control (w/o ITTC)")
    elif ctx.solver in ("dp", "greedy"):
        how = "exact DP" if ctx.solver == "dp" else "value-density greedy"
        out.append(
            f"MCKP of Eq. (11) solved by {how}: T_naive = {ctx.naive_tokens} > "
            f"{getattr(encoder, 'activation_ratio', 0.7)}·B; Σ v(t, k) = {ctx.value:.3f} "
            f"for {len(ctx.triples)} of {n} triples, order σ* = {ctx.order}"
        )
    elif ctx.solver == "empty":
        out.append("no candidate triple: the evidence is empty")
    if min_total is not None and min_total > b:
        out.append(f"all {n} candidates compact cost {min_total} tokens > B = {b}: some dropped")
    if output.no_evidence:
        out.append(
            "no evidence (no topic entity in the graph, or empty evidence): the LLM call was "
            "skipped unless answer_without_evidence"
        )
    if ctx.over_budget:
        out.append(f"over budget: {ctx.num_tokens} > B = {b} (the encoder does not promise B)")
    return out


# ---------------------------------------------------------------------------- rendering
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;
max-width:1200px;color:#1d2330;padding:0 16px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px;
border-bottom:1px solid #d8dde6;padding-bottom:4px}
.meta{color:#5b6472} table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border:1px solid #d8dde6;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f2f4f8} td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.dropped td{background:#fdf0f0;color:#7a2e2e} .g{padding:1px 6px;border-radius:8px;
font-size:12px} .g-compact{background:#e5edff} .g-balanced{background:#e8f6e8}
.g-verbose{background:#fff3d6} .g-naive{background:#eee} .g-dropped{background:#f7caca}
pre{background:#f6f8fa;border:1px solid #d8dde6;padding:10px;white-space:pre-wrap;
word-break:break-word;font-size:12.5px} .ok{color:#1a7f37;font-weight:600}
.no{color:#b42318;font-weight:600} .bar{height:12px;background:#e8ebf0;border-radius:6px;
overflow:hidden;max-width:480px} .bar>span{display:block;height:100%;background:#4c7bd9}
ul.notes li{margin:2px 0} .kv td:first-child{width:220px;color:#5b6472}
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _num(x: float, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def _triple(t: Sequence[str]) -> str:
    return " | ".join(_e(x) for x in t)


def _scores_cell(scores: dict[str, float], hit1: bool) -> str:
    """The page's scores: Hits@1 first, then the others; n/a without gold answers."""
    if not scores:
        from lokg.eval.metrics import NO_GOLD

        return _e(NO_GOLD)
    return (
        f"<span class='{'ok' if hit1 else 'no'}'>Hits@1 {scores.get('hits@1', 0):.2f}</span>"
        + "".join(f" · {_e(k)} {val:.2f}" for k, val in scores.items() if k != "hits@1")
    )


def render_html(view: EvidenceView) -> str:
    """The page: one HTML string, inline CSS, no script and no external resource."""
    v = view
    gold_set = {g.strip().lower() for g in v.gold}
    hit1 = v.scores.get("hits@1", 0.0) >= 1.0
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(v.question_id)}: evidence</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(v.question)}</h1>",
        f"<div class='meta'>question <b>{_e(v.question_id)}</b>"
        + (f" · configuration <b>{_e(v.configuration)}</b>" if v.configuration else "")
        + f" · reader {_e(v.reader)} · encoder {_e(v.encoder)} · B = {v.budget}"
        f" ({_e(v.budget_scope)})</div>",
        "<h2>Answers</h2><table class='kv'>",
        f"<tr><td>reader's answers</td><td>{_answers(v.answers, gold_set)}</td></tr>",
        f"<tr><td>gold answers</td><td>{', '.join(_e(g) for g in v.gold)}</td></tr>",
        "<tr><td>scores</td><td>" + _scores_cell(v.scores, hit1) + "</td></tr>",
        f"<tr><td>topic entities</td><td>{', '.join(_e(t) for t in v.topics) or '—'}"
        + (
            f" <span class='no'>(not in the graph: {', '.join(_e(t) for t in v.unknown_topics)})"
            "</span>"
            if v.unknown_topics
            else ""
        )
        + "</td></tr>",
        "<tr><td>retriever's candidate answers</td><td>"
        + (
            ", ".join(f"{_e(a)} ({s:.3f})" for a, s in v.retriever_answers[:10])
            + (f" … ({len(v.retriever_answers)} in all)" if len(v.retriever_answers) > 10 else "")
            or "—"
        )
        + "</td></tr></table>",
        f"<h2>Retrieved paths ({len(v.paths)})</h2>",
        _paths_table(v.paths),
        f"<h2>Candidate triples ({len(v.triples)}; {len(v.dropped)} dropped)</h2>",
        _budget_block(v),
        _triples_table(v.triples),
    ]
    if v.dropped:
        parts.append("<h2>Dropped, and why</h2><ul>")
        parts += [
            f"<li><b>#{t.rank}</b> {_triple(t.triple)}: {_e(t.reason)}</li>" for t in v.dropped
        ]
        parts.append("</ul>")
    sent = "sent" if v.prompt_sent else "not sent (no LLM call): the prompt an LLM reader gets"
    parts.append(f"<h2>Prompt: {v.prompt_tokens} tokens, {sent}</h2>")
    for m in v.prompt:
        parts.append(
            f"<div class='meta'>{_e(m.get('role', ''))}</div><pre>{_e(m['content'])}</pre>"
        )
    parts.append(f"<h2>Reader output</h2><pre>{_e(v.output) or '(empty)'}</pre>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _answers(answers: Sequence[str], gold: set[str]) -> str:
    if not answers:
        return "—"
    return ", ".join(
        f"<span class='{'ok' if a.strip().lower() in gold else ''}'>{_e(a)}</span>"
        for a in answers[:10]
    )


def _paths_table(paths: Sequence[PathRow]) -> str:
    if not paths:
        return "<p>No path.</p>"
    head = (
        "<table><tr><th>#</th><th>path</th><th>answer</th><th>S_topo (16)</th>"
        "<th>S_link</th><th>S_sem (17)</th><th>S_final (18)</th></tr>"
    )
    rows = [
        f"<tr><td class='n'>{p.rank}</td><td>{'<br>'.join(_triple(t) for t in p.triples)}</td>"
        f"<td>{_e(p.answer)}</td><td class='n'>{_num(p.s_topo)}</td><td class='n'>"
        f"{_num(p.s_link)}</td><td class='n'>{_num(p.s_sem)}</td><td class='n'>"
        f"{_num(p.s_final)}</td></tr>"
        for p in paths
    ]
    return head + "".join(rows) + "</table>"


def _budget_block(v: EvidenceView) -> str:
    frac = min(1.0, v.evidence_tokens / v.evidence_budget) if v.evidence_budget else 0.0
    notes = "".join(f"<li>{_e(n)}</li>" for n in v.notes)
    return (
        f"<p>evidence: <b>{v.evidence_tokens}</b> tokens of B = {v.evidence_budget} "
        f"(T_naive = {v.naive_tokens}; TCR = "
        f"{v.evidence_tokens / v.naive_tokens if v.naive_tokens else 1.0:.3f}); solver "
        f"{_e(v.solver)}, order {_e(v.order)}, Σ v = {_num(v.value)}</p>"
        f"<div class='bar'><span style='width:{100 * frac:.1f}%'></span></div>"
        f"<ul class='notes'>{notes}</ul>"
    )


def _triples_table(triples: Sequence[TripleRow]) -> str:
    if not triples:
        return "<p>No candidate triple.</p>"
    grans = [g for g in GRANULARITIES if any(g in t.costs for t in triples)]
    alt = "".join(f"<th>{g}<br>c / v</th>" for g in grans)
    head = (
        "<table><tr><th>#</th><th>triple (head | relation | tail)</th><th>granularity</th>"
        f"<th>cost c(t,k)</th><th>value v(t,k) (9)</th>{alt}<th>α = λ_boost (10)</th>"
        "<th>in paths</th><th>line in the prompt</th></tr>"
    )
    rows = []
    for t in triples:
        cells = "".join(
            f"<td class='n'>{t.costs[g]} / {_num(t.values[g])}</td>"
            if g in t.costs
            else "<td></td>"
            for g in grans
        )
        rows.append(
            f"<tr class='{'' if t.kept else 'dropped'}'><td class='n'>{t.rank}</td>"
            f"<td>{_triple(t.triple)}</td><td><span class='g g-{_e(t.granularity)}'>"
            f"{_e(t.granularity)}</span></td><td class='n'>{t.cost if t.kept else '—'}</td>"
            f"<td class='n'>{_num(t.value) if t.kept else '—'}</td>{cells}"
            f"<td>{'yes' if t.boosted else ''}</td>"
            f"<td>{', '.join(str(r) for r in t.in_paths)}</td>"
            f"<td><code>{_e(t.line)}</code></td></tr>"
        )
    return head + "".join(rows) + "</table>"


def write_page(view: EvidenceView, path: str | Path) -> Path:
    """Write :func:`render_html` of ``view`` to ``path`` (parents created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(view), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- W&B
PATH_COLUMNS = ["question_id", "rank", "path", "answer", "s_topo", "s_link", "s_sem", "s_final"]
TRIPLE_COLUMNS = ["question_id", "rank", "triple", "kept", "granularity", "cost", "value",
                  "boosted", "in_paths", "reason", "line"]  # fmt: skip


def table_rows(view: EvidenceView) -> dict[str, tuple[list[str], list[list]]]:
    """The page's rows as tables: ``{"paths": (columns, rows), "triples": (columns, rows)}``."""
    paths = [
        [view.question_id, p.rank, "\n".join(" | ".join(t) for t in p.triples), p.answer,
         p.s_topo, p.s_link, p.s_sem, p.s_final]
        for p in view.paths
    ]  # fmt: skip
    triples = [
        [view.question_id, t.rank, " | ".join(t.triple), t.kept, t.granularity, t.cost,
         t.value, t.boosted, ",".join(map(str, t.in_paths)), t.reason, t.line]
        for t in view.triples
    ]  # fmt: skip
    return {"paths": (PATH_COLUMNS, paths), "triples": (TRIPLE_COLUMNS, triples)}


def log_view(loggers: Sequence, view: EvidenceView, page: Path | None = None) -> int:
    """Log the view's rows as ``show/paths`` and ``show/triples`` tables (and the page as
    ``show/page``) to every logger that takes tables (W&B); returns how many did."""
    n = 0
    for lg in loggers:
        if not hasattr(lg, "log_table"):
            continue
        for name, (columns, rows) in table_rows(view).items():
            lg.log_table(key=f"show/{name}", columns=columns, data=rows)
        if page is not None:
            import wandb

            lg.experiment.log({"show/page": wandb.Html(page.read_text(encoding="utf-8"))})
        n += 1
    return n


# ---------------------------------------------------------------------------- the job
def find_question(datamodule, question_id: str, split: str):
    """The question ``question_id``: looked up in ``split`` first, then the other splits."""
    order = [split, *(s for s in datamodule.questions if s != split)]
    for s in order:
        for q in datamodule.questions.get(s, []):
            if q.id == question_id:
                return q
    some = [q.id for q in datamodule.questions.get(split, [])[:3]]
    raise InputError(
        f"show={question_id!r}: no such question id in {datamodule.name} (splits "
        f"{', '.join(datamodule.questions)}); ids look like {', '.join(some)}"
    )


def main() -> None:
    """``python -m lokg.show show=<id> [evaluate overrides]``: deprecated, an alias of
    ``python evaluate.py show=<id>`` (one deprecation line on stderr, then that job)."""
    import runpy

    print(
        "lokg.show: `python -m lokg.show` is deprecated; use `python evaluate.py show=<id>` "
        "(the same job)",
        file=sys.stderr,
        flush=True,
    )
    if not any(a.startswith("show=") for a in sys.argv[1:]):
        raise SystemExit("usage: python evaluate.py show=<question id> [evaluate overrides]")
    entry = Path(__file__).resolve().parent.parent / "evaluate.py"
    sys.argv[0] = str(entry)
    runpy.run_path(str(entry), run_name="__main__")


if __name__ == "__main__":
    main()
