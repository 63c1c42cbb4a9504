"""lokg.paper_settings: the paper's settings and the departures a config makes from them."""

from lokg.paper_settings import PAPER_SETTINGS, departures


def _paper_cfg() -> dict:
    cfg: dict = {}
    for key, value in PAPER_SETTINGS.items():
        node = cfg
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return cfg


def test_the_papers_own_settings_depart_in_nothing():
    assert departures(_paper_cfg()) == []


def test_each_changed_key_is_one_line_with_both_values():
    cfg = _paper_cfg()
    cfg["retriever"]["lambda_topo"] = 0.0
    cfg["encoder"]["betas"] = [0.5, 0.8, 0.9]
    cfg["budget"] = 2048.0  # the same number in another type is not a departure
    assert departures(cfg) == [
        "retriever.lambda_topo: 0.0 (paper: 1.0)",
        "encoder.betas: [0.5, 0.8, 0.9] (paper: [0.5, 0.8, 1.0])",
    ]


def test_a_replaced_or_removed_component_is_one_line():
    cfg = _paper_cfg()
    cfg["retriever"] = {"_target_": "lokg.baselines.bfs.build_bfs", "max_hops": 3}
    cfg["scos"]["mode"] = "off"
    del cfg["encoder"]
    assert departures(cfg) == [
        "scos.mode: 'off' (paper: 'greedy')",
        "retriever._target_: 'lokg.baselines.bfs.build_bfs' "
        "(paper: 'lokg.taimr.build.build_taimr')",
        "encoder: off (paper: on)",
    ]


def test_a_missing_key_of_the_papers_component_is_a_departure():
    cfg = _paper_cfg()
    del cfg["retriever"]["k_top"]
    assert departures(cfg) == ["retriever.k_top: not set (paper: 20)"]


def test_a_gat_trained_otherwise_departs_from_the_paper():
    from lokg.paper_settings import PAPER_GAT_SETTINGS, gat_departures

    model = {k.split(".", 1)[1]: v for k, v in PAPER_GAT_SETTINGS.items()}
    assert gat_departures({"model": model}) == []
    free = {"model": {**model, "relation_source": "learned"}}
    assert gat_departures(free) == ["gat:model.relation_source: 'learned' (paper: 'fixed')"]
    assert (
        gat_departures({"model": {}})[0]
        == "gat:model.relation_source: not recorded (paper: 'fixed')"
    )


def test_a_guard_beyond_the_paper_departs_when_set_not_when_absent():
    # scos.min_support / max_split_z / max_contradiction / min_name_cosine came after results
    # were recorded: absent means the paper's behaviour (the code's default), so older configs
    # keep their fingerprints
    cfg = _paper_cfg()
    del cfg["scos"]["min_support"], cfg["scos"]["max_split_z"]
    del cfg["scos"]["max_contradiction"], cfg["scos"]["min_name_cosine"]
    assert departures(cfg) == []
    cfg["scos"]["min_support"] = 5
    cfg["scos"]["max_split_z"] = 3.0
    cfg["scos"]["max_contradiction"] = 0.05
    cfg["scos"]["min_name_cosine"] = 0.3
    assert departures(cfg) == [
        "scos.min_support: 5 (paper: 1)",
        "scos.max_split_z: 3.0 (paper: None)",
        "scos.max_contradiction: 0.05 (paper: None)",
        "scos.min_name_cosine: 0.3 (paper: None)",
    ]


def test_the_transe_export_departs_unless_it_is_the_100th_epoch():
    from lokg.paper_settings import transe_departures

    # transe.json as train.py writes it (0-based epochs): the best val/mrr at epoch 18 of 100
    best = {"selected": "best", "epoch": 18, "last_epoch": 99, "monitor": "val/mrr"}
    assert transe_departures(best) == [
        "transe.export: e_r from epoch 19 of 100, the best on val/mrr (paper: the last epoch)"
    ]
    assert transe_departures({"selected": "last", "epoch": 99, "last_epoch": 99}) == []
    assert transe_departures({"selected": "last", "epoch": 9, "last_epoch": 9}) == [
        "transe.epochs: 10 (paper: 100)"
    ]
    assert transe_departures({}) == ["transe.export: not recorded (paper: the last of 100 epochs)"]
