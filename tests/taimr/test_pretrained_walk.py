"""The pretrained walk shipped in the package (docs/design/taimr.md, "Pretrained walk"): a
fresh install answers questions on a KG it has never seen, with no training step.

End to end with real components: the KG below is written in the test (a film KG whose
relations are in no bundled dataset), `evaluate.py`'s job runs on it with the bundled MiniLM,
the package's real shipped weights and the extractive reader; no TransE, SCOS or walk is
trained (`scos=off`: SCOS needs a TransE run).
"""

from __future__ import annotations

import json

import pytest
import torch

from lokg.config import compose_config
from lokg.evaluate import run as evaluate
from lokg.taimr.walk import artifact
from lokg.taimr.walk.artifact import MODEL_FILE, ZERO_SHOT, pretrained_walk

from ..fixtures import toy_kg

FILMS = [
    ("alien", "directed_by", "ridley_scott"),
    ("alien", "starring", "sigourney_weaver"),
    ("alien", "release_year", "1979"),
    ("blade_runner", "directed_by", "ridley_scott"),
    ("blade_runner", "starring", "harrison_ford"),
    ("blade_runner", "release_year", "1982"),
    ("jaws", "directed_by", "steven_spielberg"),
    ("jaws", "starring", "roy_scheider"),
    ("jaws", "release_year", "1975"),
    ("ridley_scott", "born_in", "south_shields"),
    ("steven_spielberg", "born_in", "cincinnati"),
    ("harrison_ford", "born_in", "chicago"),
    ("sigourney_weaver", "born_in", "new_york_city"),
    ("roy_scheider", "born_in", "orange"),
    ("south_shields", "located_in", "england"),
    ("cincinnati", "located_in", "ohio"),
    ("chicago", "located_in", "illinois"),
    ("new_york_city", "located_in", "new_york"),
    ("orange", "located_in", "new_jersey"),
    ("jaws", "genre", "thriller"),
]
QUESTIONS = [
    ("q1", "who directed jaws ?", ["steven_spielberg"], "jaws"),
    ("q2", "who is starring in blade_runner ?", ["harrison_ford"], "blade_runner"),
    ("q3", "where was ridley_scott born ?", ["south_shields"], "ridley_scott"),
    ("q4", "where was the director of jaws born ?", ["cincinnati"], "jaws"),
    ("q5", "in which year was alien released ?", ["1979"], "alien"),
]


@pytest.fixture(scope="module")
def zero_shot_run(tmp_path_factory):
    if pretrained_walk() is None:
        pytest.fail("this checkout ships no pretrained walk (lokg/resources/walk/pretrained)")
    root = tmp_path_factory.mktemp("films")
    rows = {"train": None, "val": None, "test": [toy_kg.question_row(*q) for q in QUESTIONS]}
    kg, paths = toy_kg.write_custom_dataset(root, FILMS, rows, kg_name="films")
    over = [
        "data=custom", f"data.source.kg_path={kg}", "data.source.questions_path=null",
        f"+data.source.split_paths={{train: null, val: null, test: {paths['test']}}}",
        "scos=off", "llm=extractive", "budget=128",
    ]  # fmt: skip
    return evaluate(compose_config("evaluate", over, root))


def test_a_kg_never_seen_is_answered_by_the_shipped_walk(zero_shot_run):
    summary = json.loads(zero_shot_run["summary"].read_text())
    assert summary["walk"] == ZERO_SHOT
    by_id = {r.id: r for r in zero_shot_run["records"]}
    assert set(by_id) == {q[0] for q in QUESTIONS}
    first = {qid: (r.predictions or [None])[0] for qid, r in by_id.items()}
    # one- and two-hop chains over relation names the walk never trained on
    hits = [qid for qid, _, gold, _ in QUESTIONS if first[qid] in gold]
    assert len(hits) >= 4, first
    assert summary["metrics"]["coverage"] == 1.0


def test_the_shipped_walk_fits_in_the_package():
    shipped = pretrained_walk()
    assert shipped is not None
    size = sum(f.stat().st_size for f in shipped.iterdir() if f.is_file())
    assert size <= 10 * 2**20
    record = json.loads((shipped / artifact.PRETRAINED_RECORD).read_text())
    assert record["data"]["members"] and record["val"]["best_value"] is not None


def test_model_init_pretrained_starts_from_the_shipped_weights(tmp_path):
    from lokg.models.walk_module import WalkModule
    from lokg.train_stages import init_from_pretrained, start_walk_switches

    cfg = compose_config("train", ["experiment=train_walk", "model.init=pretrained"], tmp_path)
    # as train.py builds it: the transfer switches come from the walk it starts from
    kwargs = {k: v for k, v in cfg.model.items() if k not in ("_target_", "optimizer")}
    model = WalkModule(**{**kwargs, **start_walk_switches("pretrained")}, num_relations=5)
    init_from_pretrained(model)
    shipped = torch.load(pretrained_walk() / MODEL_FILE, weights_only=True)
    for name, value in model.net.state_dict().items():
        assert torch.equal(value, shipped[name]), name
