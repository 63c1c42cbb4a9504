"""The ablation a summary records is the one that ran (issue 13: `scos=off` once wrote "full"),
and a modified paper run is not recorded as the paper (:func:`lokg.labels.run_label`)."""

import pytest

from lokg.errors import InputError
from lokg.labels import run_label


@pytest.mark.parametrize(
    ("overrides", "label"),
    [
        ([], "full"),
        (["ablation=no_scos"], "no_scos"),
        (["ablation=no_ittc"], "no_ittc"),
        (["ablation=no_taimr"], "no_taimr"),
        (["scos=off"], "no_scos"),  # given directly: recorded as what it is
        (["encoder=naive"], "no_ittc"),
        (["experiment=paper", "scos=off"], "no_scos"),
    ],
)
def test_the_label_matches_what_runs(make_cfg, overrides, label):
    assert run_label(make_cfg("evaluate", overrides)).ablation == label


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["scos=off", "encoder=naive"], "scos=off and encoder=naive: Table 6 ablations remove one"),
        (["ablation=no_scos", "scos=default"], "ablation=no_scos but scos is on"),
        (["ablation=no_ittc", "encoder=ittc"], "ablation=no_ittc but encoder is on"),
    ],
)
def test_a_contradiction_is_an_input_error(make_cfg, overrides, message):
    with pytest.raises(InputError, match=message):
        run_label(make_cfg("evaluate", overrides))


@pytest.mark.parametrize(
    ("overrides", "labels"),
    [
        (["experiment=paper"], ("LOKG (paper)", "paper")),
        (["experiment=paper", "ablation=no_scos"], ("LOKG (paper)", "paper")),
        (["experiment=paper", "retriever.lambda_topo=0.0"],
         ("LOKG (paper) + overrides", "paper+overrides")),
        (["experiment=paper", "encoder=ittc_rank"],
         ("LOKG (paper) + overrides", "paper+overrides")),
        ([], ("LOKG (ours)", "lokg")),
    ],
)  # fmt: skip
def test_a_modified_paper_run_is_not_recorded_as_the_paper(make_cfg, overrides, labels):
    label = run_label(make_cfg("evaluate", overrides))
    assert (label.method, label.configuration) == labels
    assert bool(label.notes) == (labels[1] == "paper+overrides")  # logged once by evaluate


def test_the_shared_transe_checkpoint_keeps_the_paper_label_fewer_epochs_do_not(make_cfg):
    from lokg.paper_settings import departures, transe_departures

    cfg = make_cfg("evaluate", ["experiment=paper"])
    best = transe_departures({"epoch": 18, "last_epoch": 99, "monitor": "val/mrr"})
    label = run_label(cfg, departures(cfg) + best)
    assert (label.method, label.configuration) == ("LOKG (paper)", "paper")
    short = transe_departures({"epoch": 1, "last_epoch": 1})
    assert run_label(cfg, departures(cfg) + short).configuration == "paper+overrides"
