"""The ablation a summary records is the one that ran (issue 13: `scos=off` once wrote "full")."""

import pytest

from lokg.errors import InputError
from lokg.evaluate import recorded_ablation


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
    assert recorded_ablation(make_cfg("evaluate", overrides)) == label


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
        recorded_ablation(make_cfg("evaluate", overrides))
