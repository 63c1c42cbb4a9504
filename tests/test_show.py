"""The evidence view (lokg/show.py) on PQ-2H with the real retriever and ITTC encoder.

The question is PQ-2H's first test question, "which nationality is
frederica_of_mecklenburg-strelitz 's couple ?": TAIMR with the rule-based linker
(``retriever=taimr_linked``: uniform attention, no SCOS, so no training is needed) retrieves
its two-hop path spouse -> nationality. Costs and values in the page are checked against
Eq. (9) computed here by hand from the graph's tail entropies. The KB is searched as given
(``data.source.inverse=never``): with added inverse edges the third hop expands from the
country back to its nationals, and the page would hold twenty candidates instead of two.
"""

from __future__ import annotations

import html
import importlib.util
import json
from pathlib import Path

import hydra
import pytest

from lokg.config import compose_config
from lokg.errors import InputError
from lokg.evaluate import run as evaluate
from lokg.ittc.render import GRANULARITIES
from lokg.llm import LLMReader
from lokg.llm.client import ChatClient
from lokg.pipeline import LOKG
from lokg.show import evidence_view, find_question, render_html, table_rows, write_page

QID = "pq2h-00001"
BASE = [
    "scos=off",
    "retriever=taimr_linked",
    "llm=extractive",
    "data.source.inverse=never",
    "logger=csv",  # last: the W&B test replaces it
]


def _double_class():
    """tests/llm/conftest.py's ScriptedOpenAIDouble (a test double of an OpenAI endpoint)."""
    path = Path(__file__).resolve().parent / "llm" / "conftest.py"
    spec = importlib.util.spec_from_file_location("lokg_tests_openai_double_show", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ScriptedOpenAIDouble


@pytest.fixture(scope="module")
def pq2h(tmp_path_factory):
    """(root, config, datamodule, pipeline factory) for PQ-2H under a fresh project root."""
    root = tmp_path_factory.mktemp("show")
    cfg = compose_config("evaluate", BASE, root)
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("test")
    return root, cfg, dm


@pytest.fixture(scope="module")
def double():
    d = _double_class()().start()
    d.script = [("ok", "United Kingdom")]
    yield d
    d.stop()


def _answer(cfg, dm, reader, budget):
    pipeline = LOKG.from_config(cfg, dm, reader)
    out = pipeline.answer(find_question(dm, QID, "test"), budget=budget)
    return out, pipeline.encoder


def _hand_value(kg, triple_ids, row: int, k: int, eq: set[int], enc) -> float:
    """v(t, k) = β_k · α(t) · H(O | R = r), Eqs. (9)-(10)."""
    s, r, o = (int(x) for x in kg.triples_np[triple_ids[row]])
    alpha = enc.lambda_boost if (s in eq or o in eq) else 1.0
    return enc.betas[k] * alpha * float(kg.relation_tail_entropy[r])


@pytest.mark.slow
def test_page_holds_the_sent_prompt_every_triple_and_every_path(pq2h, double, tmp_path):
    _, cfg, dm = pq2h
    reader = LLMReader(ChatClient(model="double-model", base_url=double.base_url, timeout_s=5))
    # B = 24: the two candidates do not both fit even compact, so one is dropped
    out, enc = _answer(cfg, dm, reader, budget=24)
    view = evidence_view(out, enc, configuration="lokg")
    page = write_page(view, tmp_path / f"{QID}.html").read_text(encoding="utf-8")

    sent = double.requests[-1]["messages"][0]["content"]
    assert view.prompt_sent and view.prompt[0]["content"] == sent
    assert html.escape(sent, quote=True) in page  # the exact prompt, verbatim
    assert view.prompt_tokens == out.accounting["prompt_tokens_cl100k"] > 0
    assert f"Prompt: {view.prompt_tokens} tokens, sent" in page
    ret = out.retrieval
    assert len(view.triples) == len(set(ret.triple_ids)) == 2
    for t in ret.triple_ids:  # every candidate triple, kept or dropped
        assert " | ".join(html.escape(x, quote=True) for x in ret.kg.labeled(int(t))) in page
    assert len(view.paths) == len(ret.paths) and view.paths[0].answer == "united_kingdom"
    for p in ret.paths:
        assert f"{p.s_final:.3f}" in page and f"{p.s_topo:.3f}" in page
    # one triple dropped (the infeasible case of ITTC), with its reason on the page
    assert [t.kept for t in view.triples].count(False) == 1 == len(out.context.dropped)
    (gone,) = view.dropped
    assert gone.granularity == "dropped" and "exceed B = 24" in gone.reason
    assert html.escape(gone.reason) in page
    # the answers: the double's reply parsed, and the gold
    assert view.answers == ("United Kingdom",) and view.gold == ("united_kingdom",)
    assert view.scores["hits@1"] == 1.0


@pytest.mark.slow
def test_costs_and_values_are_those_of_eq_9_and_add_up(pq2h):
    _, cfg, dm = pq2h
    from lokg.llm import ExtractiveReader

    # B = 40: T_naive = 36 > 0.7 B so the MCKP runs, and every triple fits
    out, enc = _answer(cfg, dm, ExtractiveReader(), budget=40)
    view = evidence_view(out, enc)
    ret, ctx = out.retrieval, out.context
    assert ctx.solver == "dp" and not view.dropped
    eq = {t.entity for t in ret.topics} | {a.entity for a in ret.answers[:5]}
    ids = list(dict.fromkeys(int(t) for t in ret.triple_ids))
    for i, row in enumerate(view.triples):
        for k, g in enumerate(GRANULARITIES):
            assert row.values[g] == pytest.approx(_hand_value(ret.kg, ids, i, k, eq, enc))
        s, _, o = (int(x) for x in ret.kg.triples_np[ids[i]])
        assert row.boosted == (s in eq or o in eq)  # α(t) = λ_boost of Eq. (10)
        assert row.granularity in GRANULARITIES
        assert row.cost == row.costs[row.granularity] == enc.tokenizer.count(row.line + "\n")
        assert row.value == row.values[row.granularity]
        assert row.line in ctx.text
    # the MCKP's objective and constraint, from the rows
    assert sum(r.value for r in view.triples) == pytest.approx(ctx.value)
    assert sum(r.cost for r in view.triples) <= 40
    assert any("MCKP of Eq. (11) solved by exact DP" in n for n in view.notes)
    # the extractive reader sends nothing: the page shows the prompt an LLM reader would get
    assert not view.prompt_sent and view.prompt_tokens > 0 and ctx.text in view.prompt[0]["content"]
    cols, rows = table_rows(view)["triples"]
    assert len(rows) == len(view.triples) and cols[:3] == ["question_id", "rank", "triple"]
    assert "not sent" in render_html(view)


#: the rows the page showed before the costs moved into the encoder's record (computed by the
#: view recomputing them, on main): (granularity, c(t, k) chosen, v(t, k) chosen, c per
#: granularity, v per granularity, boosted, in paths), for the spouse and nationality triples
SHOWN_BEFORE = {
    24: [("compact", 23, 7.338402, (23, 27, 53), (7.338402, 11.741444, 14.676805), True, (1, 2)),
         ("dropped", 0, 0.0, (15, 22, 42), (3.758862, 6.014178, 7.517723), True, (1,))],
    40: [("compact", 23, 7.338402, (23, 27, 53), (7.338402, 11.741444, 14.676805), True, (1, 2)),
         ("compact", 15, 3.758862, (15, 22, 42), (3.758862, 6.014178, 7.517723), True, (1,))],
    2048: [("naive", 23, 14.676805, (23, 27, 53), (7.338402, 11.741444, 14.676805), True, (1, 2)),
           ("naive", 14, 7.517723, (15, 22, 42), (3.758862, 6.014178, 7.517723), True, (1,))],
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("budget", sorted(SHOWN_BEFORE))  # one dropped, the MCKP, the template
def test_the_record_carries_the_numbers_the_page_showed_before(pq2h, budget):
    from types import SimpleNamespace

    from lokg.llm import ExtractiveReader

    _, cfg, dm = pq2h
    out, enc = _answer(cfg, dm, ExtractiveReader(), budget=budget)
    units = out.context.units
    for i, (gran, cost, value, costs, values, boosted, _) in enumerate(SHOWN_BEFORE[budget]):
        assert units.rendering[i] == gran and units.cost[i] == cost
        assert units.value[i] == pytest.approx(value, abs=1e-6)
        assert tuple(units.costs[i]) == costs
        assert units.values[i] == pytest.approx(values, abs=1e-6)
        assert units.boosted[i] == boosted
    # the view renders the record: an encoder with a name and settings but no method gives
    # the same page as the real one (nothing is recomputed)
    named = SimpleNamespace(name="ittc", drop_policy="rank", activation_ratio=0.7)
    view = evidence_view(out, named)
    assert render_html(view) == render_html(evidence_view(out, enc))
    shown = [(t.granularity, t.cost, t.value, tuple(t.costs.values()), tuple(t.values.values()),
              t.boosted, t.in_paths) for t in view.triples]  # fmt: skip
    for row, before in zip(shown, SHOWN_BEFORE[budget], strict=True):
        assert row[:2] == before[:2] and row[3] == before[3] and row[5:] == before[5:]
        assert row[2] == pytest.approx(before[2], abs=1e-6)
        assert row[4] == pytest.approx(before[4], abs=1e-6)


@pytest.mark.slow
def test_evaluate_show_writes_the_page_and_no_results(pq2h):
    root, _, _ = pq2h
    out = evaluate(compose_config("evaluate", [*BASE, f"show={QID}", "budget=24"], root))
    page = out["page"]
    assert page == root / "logs" / "evaluate" / "show" / "pq2h" / f"{QID}.html"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "<script" not in text and "http" not in text
    assert html.escape(out["view"].prompt[0]["content"], quote=True) in text
    assert not (root / "logs" / "evaluate" / "results").exists()


def test_unknown_question_id_is_one_line_naming_the_key(pq2h):
    _, _, dm = pq2h
    with pytest.raises(InputError, match=r"show='nope': no such question id in pq2h"):
        find_question(dm, "nope", "test")


@pytest.mark.slow
def test_show_logs_its_rows_to_wandb_offline(pq2h, monkeypatch):
    root, _, _ = pq2h
    import wandb

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    wandb.finish()  # a run another test left open would be reused (and its directory)
    cfg = [*BASE[:-1], "logger=wandb", f"show={QID}", "budget=24"]
    evaluate(compose_config("evaluate", cfg, root))
    runs = sorted((root / "outputs" / "wandb").glob("offline-run-*"))
    assert runs
    media = runs[-1] / "files" / "media"
    (triples,) = (media / "table" / "show").glob("triples_*.table.json")
    (paths,) = (media / "table" / "show").glob("paths_*.table.json")
    t = json.loads(triples.read_text())
    assert t["columns"][:3] == ["question_id", "rank", "triple"] and len(t["data"]) == 2
    assert [r[3] for r in t["data"]].count(False) == 1  # the dropped triple, as on the page
    assert json.loads(paths.read_text())["data"][0][0] == QID
    assert list((media / "html" / "show").glob("page_*.html"))


def test_python_m_lokg_show_is_an_alias_with_one_deprecation_line(monkeypatch, capsys):
    import runpy

    import lokg.show

    ran = []
    monkeypatch.setattr(runpy, "run_path", lambda path, run_name: ran.append((path, run_name)))
    monkeypatch.setattr("sys.argv", ["lokg/show.py", f"show={QID}", "llm=extractive"])
    lokg.show.main()
    entry = Path(lokg.show.__file__).resolve().parent.parent / "evaluate.py"
    assert ran == [(str(entry), "__main__")] and entry.is_file()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "deprecated; use `python evaluate.py show=<id>`" in err[0]
