"""Seed aggregation into Tables 5–7 (mean ± sample std), Markdown and CSV."""

from __future__ import annotations

import csv
import io
import math
import os

import pytest

from lokg.eval.tables import (
    RunSummary,
    collect_summaries,
    main,
    seed_stats,
    table5,
    table6,
    table7,
    write_run_summary,
)


def run(
    seed, h1, f1, tok, ablation="full", method="LOKG (ours)", dataset="PQ-2hop", llm="deepseek"
):
    metrics = {"hits@1": h1, "f1": f1, "tok/q": tok, "p@1k": f1 * 1000 / tok,
               "h@1k": h1 * 1000 / tok, "tcr": 1.0, "calls/q": 1.0}  # fmt: skip
    return RunSummary(
        dataset=dataset, method=method, ablation=ablation, llm=llm, seed=seed, metrics=metrics
    )


def test_seed_stats_mean_and_sample_std_by_hand():
    c = seed_stats([0.6, 0.8, 0.7])
    assert c.mean == pytest.approx(0.7) and c.std == pytest.approx(0.1)  # ddof = 1
    assert c.fmt() == "0.700 ± 0.100"
    assert seed_stats([0.5]).fmt() == "0.500"  # one seed: no std
    assert seed_stats([math.nan, 1.0]).fmt() == "—"


def test_table5_groups_seeds_per_method_lokg_first():
    runs = [
        run(1, 0.6, 0.5, 100),
        run(2, 0.8, 0.7, 100),
        run(1, 0.5, 0.5, 200, method="KAPING"),
        run(1, 0.1, 0.1, 100, ablation="no_ittc"),
    ]
    t = table5(runs)
    rows = t.blocks["deepseek"]
    assert [(d, m) for d, m, _ in rows] == [("PQ-2hop", "LOKG (ours)"), ("PQ-2hop", "KAPING")]
    h1, _hit, _f1, p1k = rows[0][2][:4]
    assert h1.mean == pytest.approx(0.7) and h1.std == pytest.approx(math.sqrt(0.02))
    assert p1k.mean == pytest.approx((5.0 + 7.0) / 2)
    md = t.to_markdown()
    header = "| Dataset | Method | H@1↑ | Hit↑ | F1↑ | P@1K↑ | H@1K↑ | TCR↓ | tok/q↓ | calls/q↓ |"
    assert header + " coverage↑ |" in md
    # Hit and coverage were not recorded by these runs: shown as "—"
    assert "| PQ-2hop | LOKG (ours) | 0.700 ± 0.141 | — | 0.600 ± 0.141 |" in md


def test_table5_rows_lokg_then_baselines_then_references():
    methods = ["none", "ToG", "LOKG (ours)", "oracle", "KAPING", "LOKG (paper)", "GraphRAG",
               "TAIMR+LLMLingua", "BFS+truncate"]  # fmt: skip
    rows = table5([run(1, 0.5, 0.5, 100, method=m) for m in methods]).blocks["deepseek"]
    expected = ["LOKG (paper)", "LOKG (ours)", "KAPING", "GraphRAG", "ToG", "TAIMR+LLMLingua",
                "oracle", "none", "BFS+truncate"]  # fmt: skip
    assert [m for _, m, _ in rows] == expected


def test_table6_and_table7_deltas_by_hand():
    runs = [run(1, 0.72, 0.71, 101), run(1, 0.673, 0.681, 104.3, ablation="no_ittc"),
            run(1, 0.72, 0.71, 101, ablation="no_scos")]  # fmt: skip
    t6 = table6(runs)
    assert [label for _, label, _ in t6.blocks["deepseek"]] == [
        "LOKG (full)",
        "w/o SCOS",
        "w/o ITTC",
    ]
    t7 = table7(runs)
    rows = {label: cells for _, label, cells in t7.blocks["deepseek"]}
    assert rows["w/o ITTC"][0].mean == pytest.approx(0.673 - 0.72)  # ΔH@1 = −0.047 (Table 7)
    assert rows["w/o SCOS"][1].mean == pytest.approx(0.0)
    assert "| PQ-2hop | w/o ITTC | −0.047 | −0.029 |" in t7.to_markdown()


def test_csv_has_mean_and_std_columns():
    text = table5([run(1, 0.6, 0.5, 100), run(2, 0.8, 0.7, 100)]).to_csv()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[0]["method"] == "LOKG (ours)" and float(rows[0]["hits@1_mean"]) == pytest.approx(
        0.7
    )
    assert (
        float(rows[0]["hits@1_std"]) == pytest.approx(math.sqrt(0.02)) and rows[0]["seeds"] == "2"
    )


def test_summaries_roundtrip_and_cli(tmp_path, capsys):
    for s in (1, 2):
        write_run_summary(tmp_path / f"seed{s}", run(s, 0.5 + 0.1 * s, 0.5, 100))
    extractive = RunSummary(
        dataset="PQ-2hop",
        method="LOKG",
        ablation="full",
        llm="extractive",
        seed=1,
        metrics={"p@1k": math.nan},
    )
    write_run_summary(tmp_path / "extractive", extractive)
    runs = {r.llm: r for r in collect_summaries(tmp_path)}
    assert math.isnan(runs["extractive"].metrics["p@1k"])
    assert main([str(tmp_path), "--table", "5", "--csv-dir", str(tmp_path / "csv")]) == 0
    out = capsys.readouterr().out
    assert "### deepseek" in out and "### extractive" in out
    assert (tmp_path / "csv" / "table5.csv").exists()


def test_duplicate_seed_and_bad_summary_are_errors(tmp_path):
    write_run_summary(tmp_path / "a", run(1, 0.5, 0.5, 100))
    write_run_summary(tmp_path / "b", run(1, 0.6, 0.5, 100))
    with pytest.raises(ValueError, match="two runs for"):
        collect_summaries(tmp_path)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "summary.json").write_text("{}")
    with pytest.raises(ValueError, match=r"c/summary\.json: expected a run summary"):
        collect_summaries(tmp_path / "c")


def test_latest_keeps_the_newest_run_of_a_seed(tmp_path, capsys, caplog):
    """A configuration re-run after its defaults changed gets a new run directory: with
    ``--latest`` the newest summary stands and the older one is counted as left out."""
    old = write_run_summary(tmp_path / "old", run(1, 0.5, 0.5, 100))
    new = write_run_summary(tmp_path / "new", run(1, 0.9, 0.5, 100))
    os.utime(old, (1_000_000, 1_000_000))
    os.utime(new, (2_000_000, 2_000_000))
    with caplog.at_level("WARNING", logger="lokg.eval.tables"):
        (kept,) = collect_summaries(tmp_path, latest=True)
    assert kept.metrics["hits@1"] == 0.9
    assert "1 (llm, dataset, method, ablation, seed) have several runs" in caplog.text
    assert "1 older left out" in caplog.text
    # the CLI refuses duplicates unless asked, naming both runs and the flag
    assert main([str(tmp_path), "--table", "5"]) == 2
    err = capsys.readouterr().err
    assert "two runs for" in err and "new" in err and "old" in err and "--latest" in err
    assert main([str(tmp_path), "--table", "5", "--latest"]) == 0
    assert "0.900" in capsys.readouterr().out


def test_unknown_ablation_lists_the_choices():
    with pytest.raises(ValueError, match=r"\['full', 'no_scos', 'no_ittc', 'no_taimr'\]"):
        run(1, 0.5, 0.5, 100, ablation="no_llm")


def test_budget_and_partial_runs_are_filtered(tmp_path):
    from lokg.eval.tables import RunSummary, collect_summaries, write_run_summary

    m = {"hits@1": 0.5}
    base = {"dataset": "pq3h", "method": "LOKG", "ablation": "full", "llm": "x", "metrics": m}
    write_run_summary(tmp_path / "a", RunSummary(**base, seed=0, budget=2048, limit=None))
    write_run_summary(tmp_path / "b", RunSummary(**base, seed=0, budget=256, limit=None))
    write_run_summary(tmp_path / "c", RunSummary(**base, seed=1, budget=2048, limit=5))
    with pytest.raises(ValueError, match="two runs for"):
        collect_summaries(tmp_path)
    runs = collect_summaries(tmp_path, budget=2048, complete_only=True)
    assert [(r.budget, r.limit, r.seed) for r in runs] == [(2048, None, 0)]
