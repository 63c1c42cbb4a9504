"""The walk model's artifact: what ``train.py experiment=train_walk`` exports and
``retriever=learned`` loads, and which trained artifact is the default one.

A trained walk model is a directory ``<dataset artifacts>/qgat-<key>/`` holding
:data:`MODEL_FILE` (the network's state dict), :data:`RELATION_TABLE_FILE` (the e_r it was
trained with), :data:`META_FILE` (the architecture, graph fingerprint, embedder, epoch),
``config.yaml`` (the run's config) and, with a fine-tuned question encoder,
:data:`QUESTION_ENCODER_DIR` (``save_pretrained`` layout).

The on-disk names keep the model's earlier name, ``qgat`` (:data:`KIND`, :data:`META_FILE`):
every trained artifact carries them, and the key in a directory's name hashes the config
that trained it, so renaming them would orphan those artifacts or need a second lookup for
each name.  For the same reason the classes the walk's configs name by ``_target_`` hash under
the paths they had when those artifacts were trained (:data:`MOVED_TARGETS`).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

from lokg.errors import InputError
from lokg.manifest import check_directory
from lokg.nn.question_encoder import QuestionLM
from lokg.taimr.walk.net import WalkNet

__all__ = [
    "ADAPTED",
    "ADAPTED_PREFIX",
    "ADAPTED_PREFIXES",
    "ARCHITECTURE_DEFAULTS",
    "KIND",
    "META_FILE",
    "MODEL_FILE",
    "MOVED_TARGETS",
    "PRETRAINED_DIR",
    "PRETRAINED_RECORD",
    "QUESTION_ENCODER_DELTA",
    "QUESTION_ENCODER_DIR",
    "RELATION_TABLE_FILE",
    "SELF_LABELS_PREFIX",
    "SHIPPED_FILES",
    "WALK_CONFIG",
    "ZERO_SHOT",
    "adapted_walk",
    "default_walk_settings",
    "hashed_targets",
    "load_walk_network",
    "pretrained_walk",
    "read_walk_meta",
    "recorded_architecture",
    "save_walk_network",
    "shipped_data",
    "walk_models",
    "walk_origin",
]

#: the artifact kind: trained walk models are ``<root>/qgat-<key>/``, the latest one named in
#: ``<root>/qgat.latest`` (:mod:`lokg.artifacts`)
KIND = "qgat"
#: file names inside a ``qgat-<key>/`` artifact directory
MODEL_FILE = "walk_model.pt"
META_FILE = "qgat.json"
RELATION_TABLE_FILE = "relation_table.npy"
QUESTION_ENCODER_DIR = "question_encoder"
#: a fine-tuned encoder's top layers as a difference from the pip-installed encoder
#: (``model.encoder_trainable_layers=k``; :meth:`QuestionLM.save_delta`), in place of
#: :data:`QUESTION_ENCODER_DIR`
QUESTION_ENCODER_DELTA = "question_encoder_delta.pt"
#: the pretrained walk shipped in the package (``python train.py experiment=pretrain_walk``,
#: then ``python -m lokg.taimr.walk.ship <its qgat-* directory>``): what ``retriever=learned``
#: uses on a KG with no walk model of its own, and what ``model.init=pretrained`` starts from
PRETRAINED_DIR = Path(__file__).resolve().parents[2] / "resources" / "walk" / "pretrained"
#: how the shipped walk was trained (data, commit, config, val numbers), beside its weights
PRETRAINED_RECORD = "record.json"
#: the files of a walk artifact the package ships (the rest are not read at retrieval)
SHIPPED_FILES = ("walk_model.pt", "qgat.json", "config.yaml", "question_encoder_delta.pt")
#: how :func:`walk_origin` names the shipped walk (console, ``summary.json``)
ZERO_SHOT = "pretrained, zero-shot"
#: how a run names a walk adapted to its KG without answers (experiment=adapt_walk), and the
#: dataset-name prefix of its training data (lokg.data.kg_chains)
ADAPTED, ADAPTED_PREFIX = "pretrained, adapted to this KG without answers", "kg_chains_"
#: the dataset-name prefix of self-labelled questions (lokg.data.self_labels): a walk trained
#: on them is adapted to its KG without answers too
SELF_LABELS_PREFIX = "self_labels_"
#: the prefixes of the datasets whose walks :func:`adapted_walk` considers
ADAPTED_PREFIXES = (ADAPTED_PREFIX, SELF_LABELS_PREFIX)
#: the walk model's default settings (``model=walk``), beside the package as the configs are
WALK_CONFIG = Path(__file__).resolve().parents[3] / "configs" / "model" / "walk.yaml"

#: ``_target_`` paths moved by issue 27 (new -> old).  Every config key
#: (:func:`lokg.artifacts.config_key`: the artifact directories' keys, the results' and the
#: test ledger's) and the default-model lookup (:func:`walk_models`) read a target through
#: this table, so a config naming the new path keys and matches as it did under the old one:
#: the walk models trained before the move are found, not retrained.
WALK_MODULE = "lokg.models.walk_module.WalkModule"
MOVED_TARGETS = {
    WALK_MODULE: "lokg.models.path_module.PathGATModule",
    "lokg.taimr.walk.retriever.build_learned": "lokg.taimr.learned.build_learned",
}

#: what an artifact exported before a switch existed was trained with
ARCHITECTURE_DEFAULTS = {
    "question_key": "relation",
    "question_tokens": False,
    "graph_context": True,
    "question_encoder": "frozen",
    "normalization": "node",
    "encoder_trainable_layers": None,
    "name_match": False,
    "name_in_key": True,
    "token_coverage": False,
    "stop_match": False,
    "stop_context": True,
    "stop_gate": False,
    "stop_size": False,
    "vocabulary_scope": "graph",
}


#: walk settings added after artifacts were trained, with what those artifacts were trained
#: with (an artifact's ``config.yaml`` without the key compares as this value)
#: the pretrained walk's transfer switches (docs/design/taimr.md item 27), all in
#: :data:`ARCHITECTURE_DEFAULTS`; every one but ``vocabulary_scope`` is a WalkNet argument
TRANSFER_SWITCHES = (
    "name_in_key",
    "token_coverage",
    "stop_match",
    "stop_context",
    "stop_gate",
    "stop_size",
    "vocabulary_scope",
)
SETTINGS_ADDED = {"init": "scratch", **{k: ARCHITECTURE_DEFAULTS[k] for k in TRANSFER_SWITCHES}}


def hashed_targets(node: Any) -> Any:
    """``node`` (plain containers) with every ``_target_`` of :data:`MOVED_TARGETS` replaced
    by the path it is hashed and compared under (its path before the move), and, in the walk
    model's node, the :data:`SETTINGS_ADDED` keys left out where they hold the value the
    artifacts before them were trained with (so the default walk keys as it did)."""
    if isinstance(node, Mapping):
        out = {k: hashed_targets(v) for k, v in node.items()}
        target = out.get("_target_")
        if isinstance(target, str) and target in MOVED_TARGETS:
            out["_target_"] = MOVED_TARGETS[target]
        if out.get("_target_") == MOVED_TARGETS[WALK_MODULE]:
            for key, before in SETTINGS_ADDED.items():
                if out.get(key) == before:
                    del out[key]
        return out
    if isinstance(node, list | tuple):
        return type(node)(hashed_targets(v) for v in node)
    return node


def read_walk_meta(directory: str | os.PathLike) -> dict:
    """The walk artifact ``directory``'s metadata, its ``qgat.json`` (:data:`META_FILE`):
    ``architecture``, ``kg_fingerprint``, ``relations``, ``embedder``, the exported epoch.

    Raises:
        InputError: one line naming the file when it is missing or not a JSON object.
    """
    path = Path(directory) / META_FILE
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; {directory} is not a walk artifact") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise InputError(f"{path}: not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise InputError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    return meta


def recorded_architecture(meta: dict) -> dict:
    """``qgat.json``'s ``architecture``, with :data:`ARCHITECTURE_DEFAULTS` for switches an
    older export does not record."""
    return {**ARCHITECTURE_DEFAULTS, **meta["architecture"]}


def save_walk_network(
    directory: str | os.PathLike,
    net: WalkNet,
    architecture: dict,
    relation_table: np.ndarray,
    meta: dict | None = None,
    question_lm: QuestionLM | None = None,
) -> None:
    """Write a walk-model artifact: ``walk_model.pt`` (the network's state dict),
    ``relation_table.npy`` (the e_r it was trained with), ``qgat.json`` (``architecture``
    as :func:`load_walk_network` reads it, plus ``meta``) and, for a fine-tuned question
    encoder, ``question_encoder/`` (``save_pretrained`` layout), or only its trained top
    layers' change (``question_encoder_delta.pt``) when only those were trained."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu() for k, v in net.state_dict().items()}, directory / MODEL_FILE)
    np.save(directory / RELATION_TABLE_FILE, np.asarray(relation_table, dtype=np.float32))
    body = {**(meta or {}), "architecture": architecture}
    if question_lm is not None and question_lm.trainable_layers is not None:
        question_lm.save_delta(directory / QUESTION_ENCODER_DELTA)
    elif question_lm is not None:
        question_lm.save(directory / QUESTION_ENCODER_DIR)
    (directory / META_FILE).write_text(json.dumps(body, indent=1), encoding="utf-8")


@functools.lru_cache(maxsize=8)
def load_walk_network(directory: Path) -> tuple[WalkNet, dict, QuestionLM | None]:
    """The network exported by ``train.py experiment=train_walk`` and its metadata (loaded
    once per directory: per-question-subgraph datasets build a retriever per question),
    after the directory's manifest check (:func:`lokg.manifest.check_directory`)."""
    check_directory(directory)
    meta = read_walk_meta(directory)
    a = recorded_architecture(meta)
    net = WalkNet(
        a["node_dim"],
        a["rel_dim"],
        a["query_dim"],
        a["hidden"],
        a["heads"],
        0.0,
        a["max_hops"],
        a["question_in_attention"],
        question_key=a["question_key"],
        question_tokens=a["question_tokens"],
        graph_context=a["graph_context"],
        normalization=a["normalization"],
        name_match=a["name_match"],
        name_span=(a["transe_dim"], a["transe_dim"] + a["name_dim"]) if a["name_dim"] else None,
        **{k: a[k] for k in TRANSFER_SWITCHES if k != "vocabulary_scope"},
    )
    state = torch.load(directory / MODEL_FILE, map_location="cpu", weights_only=True)
    if net.lin is None:  # exported before an unused W was dropped from graph_context=False
        state.pop("lin.weight", None)
    net.load_state_dict(state)
    lm = None
    if a["question_encoder"] == "finetune":
        emb = meta.get("embedder") or {}  # as it was trained: same prefix and truncation
        prefix, max_length = emb.get("query_prefix", ""), emb.get("max_length", 128)
        if (directory / QUESTION_ENCODER_DIR).is_dir():
            lm = QuestionLM(directory / QUESTION_ENCODER_DIR, prefix, max_length).eval()
        else:  # the top layers' change from the encoder the embedder names
            lm = QuestionLM(emb.get("model_path"), prefix, max_length)
            lm.load_delta(directory / QUESTION_ENCODER_DELTA)
            lm.eval()
    return net.eval(), meta, lm


def default_walk_settings() -> dict:
    """``configs/model/walk.yaml``'s ``model`` keys, less those interpolated from other
    groups (``node_dim`` and ``name_dim`` follow the embedder)."""
    raw = OmegaConf.to_container(OmegaConf.load(WALK_CONFIG).model, resolve=False)
    return {k: v for k, v in raw.items() if not (isinstance(v, str) and "${" in v)}


def walk_models(
    root: Path, change: dict | None = None, fingerprint: str | None = None
) -> list[Path]:
    """``root``'s ``qgat-*`` artifacts trained with the default walk settings
    (:func:`default_walk_settings`, training settings included) with ``change`` applied (and,
    given a ``fingerprint``, on that graph), the best recorded ``val/hits@1`` first, then the
    newest.  ``_target_`` paths compare as :func:`hashed_targets` reads them."""
    want = hashed_targets({**default_walk_settings(), **(change or {})})
    found = []
    for d in Path(root).glob(f"{KIND}-*"):
        cfg_path, meta_path = d / "config.yaml", d / META_FILE
        if not (cfg_path.is_file() and meta_path.is_file()):
            continue
        check_directory(d, ["config.yaml", META_FILE])
        model = OmegaConf.load(cfg_path).get("model")
        trained = {} if model is None else OmegaConf.to_container(model, resolve=True)
        trained = hashed_targets(trained)
        meta = read_walk_meta(d)
        if fingerprint is not None and meta.get("kg_fingerprint") != fingerprint:
            continue
        if all(trained.get(k) == v for k, v in want.items()):
            found.append((meta.get("best_value") or 0.0, meta_path.stat().st_mtime_ns, d))
    return [d for *_, d in sorted(found, reverse=True)]


def adapted_walk(data_root: Path, fingerprint: str) -> Path | None:
    """A walk ``experiment=adapt_walk`` or ``experiment=self_train_walk`` trained for the
    graph whose own part has ``fingerprint``: among the ``qgat-*`` artifacts of the datasets
    under ``data_root`` named ``kg_chains_*`` (:mod:`lokg.data.kg_chains`) or
    ``self_labels_*`` (:mod:`lokg.data.self_labels`), those trained on that graph from a start
    walk and by relation name (``model.init`` not ``scratch``, ``relation_source=none``),
    the newest; ``None`` when there is none.  The graph is what is matched, not the question
    set the chains avoided: two sets over one KG (``pq3h``, ``beyond_pq3h``) share their
    adapted walks (the bench names its walks explicitly, ``retriever.model_dir``)."""
    found = []
    dirs = [d for p in ADAPTED_PREFIXES for d in Path(data_root).glob(f"{p}*/{KIND}-*")]
    for d in dirs:
        meta_path, cfg_path = d / META_FILE, d / "config.yaml"
        if not (meta_path.is_file() and cfg_path.is_file()):
            continue
        meta = read_walk_meta(d)
        if meta.get("kg_fingerprint") != fingerprint:
            continue
        check_directory(d, ["config.yaml", META_FILE])  # only the candidates
        model = OmegaConf.load(cfg_path).get("model") or {}
        if model.get("init", "scratch") != "scratch" and model.get("relation_source") == "none":
            found.append((meta_path.stat().st_mtime_ns, d))
    return max(found)[-1] if found else None


def pretrained_walk() -> Path | None:
    """The shipped pretrained walk's directory, ``None`` when this install has none."""
    return PRETRAINED_DIR if (PRETRAINED_DIR / META_FILE).is_file() else None


def shipped_data(walk_dir: str | os.PathLike) -> str | None:
    """The training data's fingerprint (``record.json``'s ``data.prepared``) of a shipped walk
    directory, else ``None``: every walk shipped is named ``pretrained``, so runs and ledger
    lines tell them apart by it (docs/design/taimr.md item 34)."""
    record = Path(walk_dir) / PRETRAINED_RECORD
    if not record.is_file():
        return None
    try:
        return json.loads(record.read_text(encoding="utf-8"))["data"]["prepared"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def walk_origin(walk_dir: Path | None) -> str | None:
    """Which walk a run used, in words: :data:`ZERO_SHOT` for the shipped one, else the
    trained artifact's directory name (``None``: no walk)."""
    if walk_dir is None:
        return None
    if Path(walk_dir).resolve() == PRETRAINED_DIR.resolve():
        return ZERO_SHOT
    if Path(walk_dir).parent.name.startswith(ADAPTED_PREFIXES):  # kg_chains or self_labels
        return f"{ADAPTED}: {Path(walk_dir).parent.name}/{Path(walk_dir).name}"
    return f"trained: {Path(walk_dir).name}"
