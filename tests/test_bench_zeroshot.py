"""bench/bench_zeroshot.py: the ratios and their minimum by hand, which trained artifact
stands for which run, the left-out members, the ledger's two number formats, the dry run's
commands on a fresh root, and (slow) the whole bench and its learning curves on PQL-2H with
two-batch trainings: the table's rows, the ratio lines and the last line computed from them,
and a second run that trains nothing."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lokg.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "bench_zeroshot.py"
#: two-batch trainings, so the whole bench runs in about a minute
TINY = [
    "--train-override", "debug=limit", "trainer.max_epochs=1", "trainer.limit_train_batches=2",
    "trainer.limit_val_batches=1",
]  # fmt: skip
#: PQL left out of a pool of PQ-2H and PQL-2H: the leave-one-out walk trains on PQ-2H alone
SMALL = ["--families", "pql", "--data", "pql2h", "--pool", "pq2h", "pql2h", "--limit", "5",
         "--rows", "zero-shot", "adapted", "fine-tuned", "per-kg"]  # fmt: skip
#: the adapted walk's questions name each hop by its relation's words: no 21k-word lexicon
#: (minutes; tests/data/test_kg_chains.py tests it on a small vocabulary)
PLAIN = ["--adapt-override", "data.source.synonyms=0", "data.source.unnamed=0"]
# (the self-trained row labels every training question of the set twice: minutes; the dry run
# checks its commands, tests/test_byo_no_answers.py its training end to end)
ADAPTED_TAG = re.compile(r"pretrained walk:adapted-(?P<fp>[0-9a-f]{12})-loo-pql")
LOO_TAG = re.compile(r"pretrained walk:loo-pql-(?P<fp>[0-9a-f]{12})")
LAST = re.compile(r"zeroshot min_ratio_hits1=(\d+\.\d{3}|nan|inf) min_ratio_coverage=(\S+)")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "bench"))  # the benches import their sibling _data.py
    spec = importlib.util.spec_from_file_location("lokg_bench_zeroshot", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations there
    spec.loader.exec_module(module)
    return module


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LOKG_ROOT": str(root)}
    return subprocess.run(
        [sys.executable, str(BENCH), *args], cwd=root, env=env, capture_output=True, text=True,
        timeout=1500,
    )  # fmt: skip


# ---------------------------------------------------------------------- ratios by hand
def test_the_ratio_is_zero_shot_over_per_kg_with_its_edge_cases(bench):
    assert bench.ratio(0.72, 0.90) == pytest.approx(0.8)
    assert bench.ratio(0.0, 0.0) == 1.0  # both wrong everywhere: no worse
    assert bench.ratio(0.3, 0.0) == math.inf
    assert math.isnan(bench.ratio(math.nan, 0.5)) and math.isnan(bench.ratio(0.5, math.nan))
    assert bench.min_ratio([1.2, math.nan, 0.75, math.inf]) == 0.75
    assert math.isnan(bench.min_ratio([math.nan]))


def test_the_last_line_is_the_least_ratio_over_every_familys_sets(bench):
    def rows(zero_shot: tuple[float, float], per_kg: tuple[float, float]) -> dict:
        def m(hits, cov):
            return bench.Measured({"all": {"hits@1": hits, "coverage": cov, "n": 10}})

        return {
            bench.ZERO_SHOT: m(*zero_shot),
            bench.FINETUNED: m(1.0, 1.0),
            bench.PER_KG: m(*per_kg),
        }

    walks = dict.fromkeys((bench.ZERO_SHOT, bench.FINETUNED, bench.PER_KG), "qgat-x")
    results = [
        bench.SetResult("pql", "pql2h", rows((0.75, 1.0), (1.0, 1.0)), walks),  # 0.75, 1.0
        bench.SetResult("pql", "pql3h", rows((0.6, 0.99), (0.8, 1.0)), walks),  # 0.75, 0.99
        bench.SetResult("cwq", "cwq_evidence_resplit", rows((0.35, 0.5), (0.5, 0.5)), walks),
        bench.SetResult("webqsp", "webqsp_evidence_resplit", rows((0.9, 0.8), (0.9, 1.0)), walks),
    ]
    assert [round(r.ratio_hits1, 6) for r in results] == [0.75, 0.75, 0.7, 1.0]
    assert [round(r.ratio_coverage, 6) for r in results] == [1.0, 0.99, 1.0, 0.8]
    assert bench.summary_line(results) == "zeroshot min_ratio_hits1=0.700 min_ratio_coverage=0.800"
    assert bench.summary_line([]) == "zeroshot min_ratio_hits1=nan min_ratio_coverage=nan"


def test_the_curve_line_is_pretrained_on_50_less_scratch_on_all(bench):
    def p(data, init, size, hits):
        return bench.CurvePoint(data, init, size, "qgat-x", hits, 1.0)

    points = [
        p("pq3h", "pretrained", "50", 0.97), p("pq3h", "scratch", "all", 1.0),
        p("pql3h", "pretrained", "50", 0.95), p("pql3h", "scratch", "all", 0.9),
        p("cwq_evidence_resplit", "pretrained", "10", 0.2),  # no 50: not counted
    ]  # fmt: skip
    assert bench.curve_line(points) == "curve min_pretrained50_minus_scratch_all_hits1=-0.030"


def test_a_ledger_line_reads_as_groups_whichever_bench_wrote_it(bench):
    grouped = {
        "all": {"hits@1": 0.5, "coverage": 0.7, "answer_recall": 0.6, "n": 4},
        "conjunction": {"hits@1": 1.0, "coverage": 1.0, "answer_recall": 1.0, "n": 1},
    }
    assert bench.ledger_groups(grouped) == grouped
    flat = bench.ledger_groups({"hits@1": 0.981, "coverage": 1.0, "tokens": 91.0, "n": 160})
    assert list(flat) == ["all"] and flat["all"]["hits@1"] == 0.981 and flat["all"]["n"] == 160
    assert math.isnan(flat["all"]["answer_recall"])  # the chain benches did not record it


# ---------------------------------------------------------------------- which artifact is which run
def _cfg(model=None, trainer=None, **top) -> dict:
    base = {
        "model": {"_target_": "lokg.models.walk_module.WalkModule", "hidden": 128,
                  "min_steps": 200, "init": "scratch", **(model or {})},
        "data": {"source": {"variant": "PQL-2H"}, "artifacts_dir": "/a/art", "batch_size": 32},
        "trainer": {"accelerator": "cpu", "devices": 1, "max_epochs": 8, **(trainer or {})},
        "seed": 0, "scos": {"mode": "greedy"}, "embedder": {"model_id": "m", "cache_dir": "/a"},
        "callbacks": {"model_checkpoint": {"dirpath": "/a/out", "monitor": "val/hits@1"}},
    }  # fmt: skip
    return {**base, **top}


def test_where_a_fit_ran_and_machine_paths_do_not_make_another_training(bench):
    gpu = _cfg(
        trainer={"_target_": "lokg.train.build_trainer", "accelerator": "gpu",
                 "precision": "32-true", "float32_matmul_precision": "high"},
        data={"source": {"variant": "PQL-2H"}, "artifacts_dir": "/b/artifacts", "batch_size": 32},
    )  # fmt: skip
    assert bench.same_training(gpu, _cfg())
    assert not bench.same_training(_cfg(trainer={"precision": "bf16-mixed"}), _cfg())
    assert not bench.same_training(_cfg(trainer={"limit_train_batches": 2}), _cfg())
    ddp = {"strategy": "ddp", "devices": 2}  # the batch is twice as large
    assert not bench.same_training(_cfg(trainer=ddp), _cfg())
    assert not bench.same_training(_cfg(seed=1), _cfg())
    assert not bench.same_training(_cfg(model={"hidden": 64}), _cfg())
    other = {"source": {"variant": "PQL-2H"}, "batch_size": 32, "train_limit": 10}
    assert not bench.same_training(_cfg(data=other), _cfg())


def test_epochs_raised_to_the_step_floor_match_the_epochs_asked_and_only_then(bench):
    assert bench.same_training(_cfg(trainer={"max_epochs": 25}), _cfg())  # raised by train.py
    assert not bench.same_training(_cfg(trainer={"max_epochs": 4}), _cfg())  # fewer: another run
    floorless = {"min_steps": 0}
    assert not bench.same_training(
        _cfg(model=floorless, trainer={"max_epochs": 25}), _cfg(model=floorless)
    )
    # a raised run sets its validation interval with its epochs (train_stages.STRETCHED_VAL_CHECKS)
    raised = {"max_epochs": 200, "check_val_every_n_epoch": 10}
    assert bench.same_training(_cfg(trainer=raised), _cfg(trainer={"check_val_every_n_epoch": 1}))
    assert bench.same_training(_cfg(trainer=raised), _cfg())
    assert not bench.same_training(
        _cfg(trainer=raised), _cfg(trainer={"check_val_every_n_epoch": 5})
    )
    assert not bench.same_training(_cfg(trainer={"check_val_every_n_epoch": 10}), _cfg())


def test_a_start_walk_is_compared_by_its_directory_name(bench):
    here = _cfg(model={"init": "/root/a/artifacts/data/pretrain-1/qgat-abc"})
    there = _cfg(model={"init": "/elsewhere/artifacts/data/pretrain-1/qgat-abc"})
    assert bench.same_training(here, there)
    # two leave-one-out walks of one model config share the qgat name, not the union's
    # directory: a walk fine-tuned from one is not the other's (a wrong reuse seen 2026-12-06)
    other_union = _cfg(model={"init": "/root/a/artifacts/data/pretrain-2/qgat-abc"})
    assert not bench.same_training(here, other_union)
    assert not bench.same_training(here, _cfg(model={"init": "/x/qgat-def"}))
    assert not bench.same_training(here, _cfg(model={"init": "pretrained"}))
    assert bench.same_training(_cfg(), _cfg(model={"init": "scratch"}))


def test_leaving_a_family_out_removes_its_sets_and_what_is_not_in_the_pool(bench):
    members = ["pq2h", "pq3h", "pql2h", "pql3h", "beyond_pq3h", "beyond_pql2h"]
    pathquestion = bench.FAMILIES["pathquestion"]
    assert bench.leave_out_overrides(pathquestion, members, members) == [
        "~data.source.members.pq2h", "~data.source.members.pq3h",
        "~data.source.members.beyond_pq3h",
    ]  # fmt: skip
    assert bench.leave_out_overrides(pathquestion, ["pq2h", "pql2h"], members) == [
        f"~data.source.members.{m}" for m in members if m != "pql2h"
    ]
    with pytest.raises(InputError, match="leaves nothing to pretrain on"):
        bench.leave_out_overrides(pathquestion, ["pq2h", "beyond_pq3h"], members)


def test_the_families_are_the_pretraining_members_and_a_stray_set_is_one_line(bench):
    from lokg.config import compose_config

    cfg = compose_config("train", ["experiment=pretrain_walk"], ROOT)
    members = list(cfg.data.source.members)
    family_sets = {s for f in bench.FAMILIES.values() for s in f.sets}
    # every bundled set is in a family; the synthetic graphs are in none (always pretrained on)
    assert family_sets == set(members) - {"synthetic_chains"}
    assert set(bench.CURVE_SETS) <= family_sets
    args = bench.parse_args(["--families", "pql", "--data", "pq2h"])
    with pytest.raises(InputError, match=r"^--data pq2h: not a set of the chosen families"):
        bench.check_args(args, members)
    args = bench.parse_args(["--pool", "pq2h", "webqsp"])
    with pytest.raises(InputError, match=r"^--pool webqsp: not a member"):
        bench.check_args(args, members)
    args = bench.parse_args(["--curve", "--data", "pq2h"])
    bench.check_args(args, members)  # the curves take any family's set
    assert args.pool == members


def test_the_per_kg_and_fine_tuned_walks_need_transe_and_the_pretraining_does_not(bench):
    from lokg.config import compose_config

    def needs(*overrides: str) -> bool:
        return bench.needs_transe(compose_config("train", list(overrides), ROOT))

    assert not needs("experiment=pretrain_walk")  # names only, the KGs as given
    assert needs("experiment=train_walk", "data=pql2h")
    assert needs("experiment=train_walk", "data=pql2h", "scos=off")  # TransE's e_r all the same
    assert not needs("experiment=train_walk", "scos=off", "model.relation_source=none")


# ---------------------------------------------------------------------- the bench itself
@pytest.mark.slow
def test_a_dry_run_prints_every_command_and_trains_nothing(tmp_path):
    proc = _run(tmp_path, "--dry-run", "--families", "pql", "webqsp")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    train = [x for x in lines if x.startswith("train: ")]
    # two leave-one-out walks, then per PQL set and the WebQSP stand-in: the walk adapted on
    # generated questions (no TransE: by name), two rounds of self-training from it, TransE,
    # the fine-tuned walk and the per-KG walk
    assert len(train) == 2 + 6 * 5
    assert "'~data.source.members.beyond_pql3h'" in train[0] and "pq2h" not in train[0]
    assert any("'model.init=<walk pretrained without pql>' data=pql3h" in x for x in train)
    adapt = "experiment=adapt_walk 'model.init=<walk pretrained without pql>' data=kg_chains"
    assert any(f"{adapt} data@data.source.base=beyond_pql2h" in x for x in train)
    assert not any("experiment=train_transe data=kg_chains" in x for x in train)
    rounds = [x for x in train if "experiment=self_train_walk" in x and "base=pql3h" in x]
    assert len(rounds) == 2
    assert "'data.source.walk=<pql3h adapted from walk pretrained without pql>'" in rounds[0]
    assert "'data.source.walk=<pql3h self-trained (round 1) from pql3h adapted" in rounds[1]
    evaluate = [x for x in lines if x.startswith("evaluate: python evaluate.py ")]
    assert len(evaluate) == 5 * 5
    assert lines[-1] == "dry run: 32 train.py runs to start, nothing trained"
    assert not list(tmp_path.glob("artifacts/**/qgat-*"))


@pytest.mark.slow
def test_the_curve_with_a_few_answered_self_trains_on_every_question(tmp_path):
    """``--curve-from self-trained``: per size, the walk fine-tuned on the first n answered
    questions self-trained twice from it on every training question, the n answered in both
    rounds (n = 0: the adapted walk, none answered, the table's self-trained row); from
    scratch on n as the other curves."""
    proc = _run(
        tmp_path, "--dry-run", "--curve", "--curve-from", "self-trained", "--curve-sizes", "0",
        "50", "--data", "pql2h", "--pool", "pq2h", "pql2h",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    train = [x for x in proc.stdout.splitlines() if x.startswith("train: ")]
    rounds = [x for x in train if "experiment=self_train_walk" in x]
    assert len(rounds) == 4 and all("data@data.source.base=pql2h" in x for x in rounds)
    assert [x.count("+data.source.answered=50") for x in rounds] == [0, 0, 1, 1]
    teacher = "pql2h fine-tuned from walk pretrained without pql on 50 questions"
    assert f"'data.source.walk=<{teacher}>'" in rounds[2]
    (tuned,) = [x for x in train if x.startswith(f"train: {teacher}: ")]
    assert "+data.train_limit=50" in tuned and train.index(tuned) < train.index(rounds[2])
    assert "(round 2, 50 answered) from pql2h self-trained (round 1, 50 answered)" in rounds[3]
    scratch = [x for x in train if "walk from scratch on 50 questions, pql2h" in x]
    assert len(scratch) == 1 and "+data.train_limit=50" in scratch[0]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The bench on PQL-2H (first 5 val questions) with two-batch trainings, twice, then its
    learning curves: ``(root, first, second, curves)`` and the first run's JSON."""
    root = tmp_path_factory.mktemp("zeroshot")
    first = _run(root, *SMALL, *PLAIN, *TINY, "--json", str(root / "table.json"))
    second = _run(root, *SMALL, *PLAIN, *TINY)
    curve = _run(
        root, "--curve", "--data", "pql2h", "--curve-sizes", "0", "10", "all", "--limit", "5",
        "--pool", "pq2h", "pql2h", *TINY, "--json", str(root / "curve.json"),
    )  # fmt: skip
    return root, first, second, curve


def _table_rows(stdout: str) -> dict[tuple[str, str, str], tuple[float, float, float, int]]:
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"(\S+)\s+(zero-shot|adapted, no answers|self-trained, no answers|"
                     r"fine-tuned from it|per-KG walk)"
                     r"\s+(\S+)\s+"
                     r"([\d.]+|nan)\s+([\d.]+|nan)\s+([\d.]+|nan)\s+(\d+)", line)  # fmt: skip
        if m:
            d, row, group, *nums, n = m.groups()
            rows[(d, row, group)] = (*map(float, nums), int(n))
    return rows


@pytest.mark.slow
def test_the_table_rows_and_the_ratios_are_computed_from_them(smoke):
    root, first, _, _ = smoke
    assert first.returncode == 0, first.stderr[-3000:]
    out = first.stdout
    trained = [x for x in out.splitlines() if x.startswith("train: ")]
    # the left-out walk, the adapted walk, TransE, the fine-tuned and the per-KG walk
    assert len(trained) == 5
    # --adapt-override reaches the adapted walk's generated questions and no other run
    assert [" data.source.synonyms=0 data.source.unnamed=0 " in x for x in trained] == [
        False, True, False, False, False,
    ]  # fmt: skip
    rows = _table_rows(out)
    assert {(d, r) for d, r, _ in rows} == {
        ("pql2h", "zero-shot"), ("pql2h", "adapted, no answers"), ("pql2h", "fine-tuned from it"),
        ("pql2h", "per-KG walk"),
    }  # fmt: skip
    body = json.loads((root / "table.json").read_text())
    (entry,) = body["sets"]
    assert entry["family"] == "pql" and entry["data"] == "pql2h"
    for row, got in entry["rows"].items():
        g = got["groups"]["all"]
        printed = tuple(round(g[k], 3) for k in ("hits@1", "coverage", "answer_recall"))
        assert rows[("pql2h", row, "all")] == (*printed, 5)
        assert got["walk"].startswith("qgat-")
    zs, kg = (entry["rows"][r]["groups"]["all"] for r in ("zero-shot", "per-KG walk"))
    assert kg["hits@1"] > 0 and kg["coverage"] > 0  # seed 0: 3 and 5 of the 5 questions
    hits, cov = zs["hits@1"] / kg["hits@1"], zs["coverage"] / kg["coverage"]
    assert entry["ratio_hits1"] == pytest.approx(hits)
    assert entry["ratio_coverage"] == pytest.approx(cov)
    assert f"ratio pql2h hits1={hits:.3f} coverage={cov:.3f}" in out
    *_, adapted_line, selftrained_line, last = out.strip().splitlines()
    assert LAST.fullmatch(last), last
    assert selftrained_line == "selftrained min_ratio_hits1=nan min_ratio_coverage=nan"  # no row
    assert last == f"zeroshot min_ratio_hits1={hits:.3f} min_ratio_coverage={cov:.3f}"
    ad = entry["rows"]["adapted, no answers"]["groups"]["all"]
    hits, cov = ad["hits@1"] / kg["hits@1"], ad["coverage"] / kg["coverage"]
    assert entry["adapted_ratio_hits1"] == pytest.approx(hits)
    assert adapted_line == f"adapted min_ratio_hits1={hits:.3f} min_ratio_coverage={cov:.3f}"
    # the four walks differ: the zero-shot one never saw PQL-2H, the adapted one its graph only
    assert len({got["walk"] for got in entry["rows"].values()}) == 4
    loo = next(root.glob("artifacts/data/pretrain-*/qgat-*"))
    members = json.loads((loo.parent / "stats.json").read_text())["read"]
    assert [m.split(":")[0] for m in members] == ["pq2h"]


@pytest.mark.slow
def test_a_second_run_trains_nothing_and_reports_the_same(smoke):
    _, first, second, _ = smoke
    assert second.returncode == 0, second.stderr[-3000:]
    assert not [x for x in second.stdout.splitlines() if x.startswith("train: ")]
    assert len([x for x in second.stdout.splitlines() if x.startswith("reuse: ")]) == 4
    assert _table_rows(second.stdout) == _table_rows(first.stdout)
    assert second.stdout.strip().splitlines()[-1] == first.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_the_learning_curves_train_per_size_and_reuse_the_per_kg_walk(smoke):
    root, _, _, curve = smoke
    assert curve.returncode == 0, curve.stderr[-3000:]
    out = curve.stdout
    trained = [x for x in out.splitlines() if x.startswith("train: ")]
    # TransE on the 10-question set (its SCOS reused), from the shipped walk and from scratch
    # on 10, from the shipped walk on all; from scratch on all is the table's per-KG walk
    assert len(trained) == 4 and all("+data.train_limit=10" in x for x in trained[:3])
    assert "reuse: per-KG walk, pql2h" in out
    points = json.loads((root / "curve.json").read_text())["curves"]
    at = {(p["init"], p["size"]): p for p in points}
    assert set(at) == {(i, s) for i in ("pretrained", "scratch") for s in ("0", "10", "all")}
    assert at[("scratch", "0")]["hits1"] is None and at[("scratch", "0")]["walk"] == "-"
    assert at[("pretrained", "0")]["walk"] == "pretrained"  # the shipped walk, untrained
    per_kg = json.loads((root / "table.json").read_text())["sets"][0]["rows"]["per-KG walk"]
    assert at[("scratch", "all")]["walk"] == per_kg["walk"]
    assert at[("scratch", "all")]["hits1"] == per_kg["groups"]["all"]["hits@1"]
    row = next(x for x in out.splitlines() if x.startswith("pql2h") and " scratch " in x)
    assert row.split()[2] == "-"
    assert out.strip().splitlines()[-1] == "curve min_pretrained50_minus_scratch_all_hits1=nan"


@pytest.mark.slow
def test_on_test_each_row_is_one_ledger_line_and_a_second_report_cites_it(
    bench, smoke, monkeypatch, capsys
):
    """In process, on the walks the module's first run trained: ``--split test`` records the
    four rows; a second report measures nothing and cites those lines (a configuration is
    tested once); a row another bench recorded (the per-KG walk) is cited, the rest measured."""
    root, first, *_ = smoke
    assert first.returncode == 0, first.stderr[-3000:]
    ledger = root / "ledger.jsonl"
    monkeypatch.setattr(bench, "LEDGER", ledger)
    monkeypatch.setenv("LOKG_ROOT", str(root))
    args = [*SMALL, *PLAIN, *TINY, "--split", "test"]
    assert bench.main(args) == 0
    lines = [json.loads(x) for x in ledger.read_text().splitlines()]
    # the adapted row is named by its generated set's fingerprint (the walk's name is not)
    adapted = ADAPTED_TAG.fullmatch(lines[1]["configuration"])
    assert adapted, lines[1]["configuration"]
    assert list(root.glob(f"artifacts/data/kg_chains_pql2h-{adapted['fp']}/qgat-*"))
    # the left-out walk is named by its pretraining union's fingerprint (its name is not)
    loo = LOO_TAG.fullmatch(lines[0]["configuration"])
    assert loo, lines[0]["configuration"]
    assert list(root.glob(f"artifacts/data/pretrain-{loo['fp']}/qgat-*"))
    assert [e["configuration"] for e in lines] == [
        loo.group(0), adapted.group(0), "learned:finetuned-loo-pql", "learned",
    ]  # fmt: skip
    assert {(e["bench"], e["dataset"]) for e in lines} == {("bench_zeroshot", "pql2h")}
    assert all(e["numbers"]["all"]["n"] == 5 for e in lines)
    out = capsys.readouterr().out
    cites = [f"ledger.jsonl:{n}" for n in range(1, 5)]
    assert [x.split()[-1] for x in out.splitlines() if x.startswith("pql2h ")] == cites
    assert bench.main(args) == 0  # again: every row cited, nothing measured or recorded
    assert len(ledger.read_text().splitlines()) == 4
    again = capsys.readouterr().out
    assert [x.split()[-1] for x in again.splitlines() if x.startswith("pql2h ")] == cites
    assert again.strip().splitlines()[-2:] == out.strip().splitlines()[-2:]
    per_kg = lines[3]
    ledger.write_text(json.dumps(per_kg) + "\n", encoding="utf-8")  # another bench's line
    assert bench.main(args) == 0
    again = [json.loads(x) for x in ledger.read_text().splitlines()]
    assert [e["configuration"] for e in again] == [
        "learned", loo.group(0), adapted.group(0), "learned:finetuned-loo-pql",
    ]  # fmt: skip
    out = capsys.readouterr().out
    cited = next(x for x in out.splitlines() if x.startswith("pql2h ") and "per-KG walk" in x)
    assert cited.endswith("ledger.jsonl:1")
    assert LAST.fullmatch(out.strip().splitlines()[-1])


def test_cold_start_measures_the_shipped_walk_within_its_size_budget(bench):
    """``--cold-start``: the size is the shipped files' bytes (issue 40: at most 10 MB over the
    pip MiniLM), and a fresh process really loads the walk with its question encoder."""
    from lokg.taimr.walk.artifact import pretrained_walk

    shipped = pretrained_walk()
    measured = bench.cold_start(repeats=1)
    size = sum(f.stat().st_size for f in shipped.iterdir() if f.is_file()) / 1e6
    assert measured.shipped_mb == pytest.approx(size) and measured.shipped_mb <= 10.0
    assert measured.load_s > 0.0 and measured.repeats == 1
    assert measured.line().startswith(f"cold_start shipped_mb={size:.2f} load_s=")
