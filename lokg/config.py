"""Structured (dataclass) schemas for the top level of ``configs/train.yaml`` and
``configs/evaluate.yaml``, and the OmegaConf resolvers the configs use.

The schemas make Hydra reject unknown top-level keys and wrong types with a clear message
(``Key 'epochs' not in 'TrainConfig'``). Hydra applies an *added* key (``+epochs=3``) with the
schema's struct flag lifted, so :func:`check_schema_keys` refuses it after composition (the
entry points and :func:`compose_config` call it): a key that no code reads never passes
silently. The contents of each config group (``data``, ``model``, ...) are validated by the
constructors they instantiate; :func:`check_target_keys` refuses, in one line, a key of the
data, model, embedder, retriever or encoder node that its target does not take (a constructor
would raise a TypeError with a traceback, and a retriever builder is called only later, when
the pipeline is assembled: :mod:`lokg.assemble`).

A renamed config group option stays selectable under its old name for one release
(:data:`DEPRECATED_OPTIONS`: the old file composes the new one) and prints one deprecation
line (:func:`warn_deprecated_options`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from lokg.errors import InputError

#: config group options renamed, selectable under the old name for one release:
#: (group, old option) -> new option
DEPRECATED_OPTIONS = {
    ("model", "qgat"): "walk",
    ("experiment", "train_qgat"): "train_walk",
    ("retriever", "off"): "semantic",
}

log = logging.getLogger(__name__)


def wandb_offline() -> bool:
    """W&B runs offline when WANDB_MODE=offline/disabled or no API key is configured."""
    if os.environ.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun"):
        return True
    if os.environ.get("WANDB_API_KEY"):
        return False
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return "api.wandb.ai" not in netrc.read_text(encoding="utf-8")
    except OSError:
        return True


def run_tags(tags: Any, *labels: Any) -> list[str]:
    """A run's tags plus its labels (configuration, ablation), each once, nulls dropped.

    W&B tags are how runs are filtered on a dashboard, so every run carries the name of its
    configuration (``paper`` or ``lokg``) whatever ``tags`` an ablation or a user sets.
    """
    out: list[str] = []
    for t in [*(tags or []), *labels]:
        if t is not None and str(t) not in out:
            out.append(str(t))
    return out


def on_accelerator(accelerator: str, on_cpu: Any, on_accelerator_: Any) -> Any:
    """``on_cpu`` when ``trainer.accelerator`` trains on the CPU, else ``on_accelerator_``
    (``auto``: an accelerator when CUDA is available, as Lightning picks). The resolver
    ``${lokg_on_accelerator:${trainer.accelerator},<cpu value>,<accelerator value>}`` lets a
    model config pick a setting by device (``model=transe``'s triple batch size)."""
    if accelerator == "auto":
        import torch

        return on_accelerator_ if torch.cuda.is_available() else on_cpu
    return on_cpu if accelerator == "cpu" else on_accelerator_


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("lokg_on_accelerator"):
        OmegaConf.register_new_resolver("lokg_on_accelerator", on_accelerator)
    if not OmegaConf.has_resolver("lokg_wandb_offline"):
        OmegaConf.register_new_resolver("lokg_wandb_offline", wandb_offline)
    if not OmegaConf.has_resolver("lokg_run_tags"):
        OmegaConf.register_new_resolver("lokg_run_tags", run_tags)


@dataclass
class PathsConfig:
    root_dir: str = "."
    artifacts_dir: str = "artifacts"
    log_dir: str = "logs"
    output_dir: str = "outputs"
    cache_dir: str | None = None
    llm_cache: str | None = None


@dataclass
class _JobConfig:
    """Keys shared by both entry points: the config groups both read, paths and tags."""

    task_name: str = "job"
    tags: list[str] = field(default_factory=lambda: ["dev"])
    seed: int | None = None
    verbose: bool = False
    #: hash every artifact file on load, whatever its size (lokg/manifest.py: files over
    #: HASH_LIMIT are otherwise checked by size and .npy header)
    verify: bool = False
    data: Any = None
    model: Any = None
    scos: Any = None
    embedder: Any = None
    trainer: Any = None
    logger: Any = None
    callbacks: Any = None
    paths: PathsConfig = field(default_factory=PathsConfig)


@dataclass
class TransEImportConfig:
    """``transe_import``: TransE's embeddings read from a large-scale engine's output instead
    of fitted (``experiment=import_transe`` sets ``enabled``; setting ``format`` or ``path``
    asks for it too; :mod:`lokg.kg.external_embeddings`). Otherwise ``train.py`` fits
    TransE."""

    enabled: bool = False
    format: str | None = None  # dglke | pbg
    path: str | None = None  # the engine's output directory
    missing_entities: str = "zero"  # zero | error: a KG entity the files lack


@dataclass
class TrainConfig(_JobConfig):
    """``configs/train.yaml``: prepare data, fit the selected model, run post-fit steps."""

    task_name: str = "train"
    train: bool = True
    test: bool = True
    ckpt_path: str | None = None
    keep_checkpoints: bool = False
    scos_warn_contradiction: float = 0.05
    transe_import: TransEImportConfig = field(default_factory=TransEImportConfig)


@dataclass
class EvaluateConfig(_JobConfig):
    """``configs/evaluate.yaml``: answer the questions of one split and report metrics."""

    task_name: str = "evaluate"
    retriever: Any = None
    encoder: Any = None
    llm: Any = None
    split: str = "test"
    limit: int | None = None
    budget: int = 2048
    budget_scope: str = "evidence"
    answer_without_evidence: bool = False
    retry_failed: bool = True
    wait: bool = False
    allow_failures: bool = False
    method: str = "LOKG"
    configuration: str = "lokg"
    ablation: str = "full"
    scos_dir: str | None = None
    gat_dir: str | None = None
    show: str | None = None


def check_schema_keys(cfg: Any) -> None:
    """Refuse top-level keys that the config's schema does not declare.

    Hydra adds ``+key=value`` (and ``++key=value``) with the struct flag lifted, so a
    structured config accepts a key that nothing reads (``+epochs=3`` on ``train.py``). A
    config without a dataclass schema is left alone; the ``hydra`` node is Hydra's own.

    Raises:
        InputError: ``Key 'epochs' not in 'TrainConfig'; ...`` listing the declared keys.
    """
    schema = OmegaConf.get_type(cfg)
    if schema is None or not dataclasses.is_dataclass(schema):
        return
    fields = dataclasses.fields(schema)
    known = [f.name for f in fields]
    extra = [k for k in cfg if k not in known and k != "hydra"]
    if extra:
        raise InputError(
            f"Key {extra[0]!r} not in {schema.__name__!r}: nothing reads it; the top-level "
            f"keys are {', '.join(sorted(known))}"
        )
    deleted = next((f for f in fields if f.name not in cfg), None)
    if deleted is not None:  # ``~budget``: the job would fail where it first reads the key
        name = deleted.name
        raise InputError(
            f"~{name}: {name!r} of {schema.__name__!r} was deleted, but the job reads it; "
            f"expected a value ({name}=<value> instead of ~{name})"
        )
    check_bool_overrides(schema, _task_overrides(cfg))


def _task_overrides(cfg: Any) -> list[str]:
    """The command-line overrides of the composed ``cfg`` (Hydra's ``overrides.task``)."""
    if "hydra" in cfg:
        return list(cfg.hydra.overrides.task)
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


#: the words a ``bool`` key takes on the command line (besides ``1`` and ``0``)
_BOOL_WORDS = ("true", "false", "yes", "no", "on", "off")


def check_bool_overrides(schema: type, overrides: list[str]) -> None:
    """Refuse a command-line value for a ``bool`` key of ``schema`` that is not ``true`` or
    ``false``.

    OmegaConf converts any integer to a bool (``answer_without_evidence=2`` reads as true)
    before the job sees it, so the override as typed is checked: ``true``/``false`` in any
    case, quoted or not, pass, and so do the words and numbers that cannot be misread
    (``yes``/``no``, ``on``/``off``, ``1``/``0``: OmegaConf's, and what ``verbose=1`` has
    always meant) and an interpolation.

    Raises:
        InputError: ``answer_without_evidence=2; expected true or false``.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    hints = get_type_hints(schema)
    flags = {f.name for f in dataclasses.fields(schema) if hints.get(f.name) is bool}
    for override in OverridesParser.create().parse_overrides(overrides):
        if override.key_or_group not in flags or override.is_delete():
            continue
        value = override.value()
        if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
            continue
        if isinstance(value, str) and (value.lower() in _BOOL_WORDS or "${" in value):
            continue
        raise InputError(f"{override.input_line}; expected true or false")


def warn_deprecated_options(choices: Mapping[str, Any] | None = None) -> list[str]:
    """One WARNING line per deprecated group option the run selected
    (:data:`DEPRECATED_OPTIONS`); returns the lines.  ``choices`` is the composed run's
    ``group -> option`` (``None``: Hydra's, when a config was composed)."""
    if choices is None:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            return []
        choices = HydraConfig.get().runtime.choices
    lines = [
        f"{group}={old} is deprecated: it is {group}={new} (the same config); use that name"
        for (group, old), new in DEPRECATED_OPTIONS.items()
        if choices.get(group) == old
    ]
    for line in lines:
        log.warning(line)
    return lines


#: keys of a component node that the composition root reads, not settings of its target:
#: ``uses_llm`` (the retriever calls the LLM; :mod:`lokg.assemble` checks it against what the
#: builder declares and does not pass it on)
COMPOSITION_KEYS = ("uses_llm",)


def check_target_keys(node: Any, group: str) -> None:
    """Refuse keys of a ``_target_`` config node that its target does not take.

    Hydra passes a node's keys as keyword arguments, so a constructor refuses a misspelt key
    with a traceback, and a retriever builder (``_partial_: true``) only when the pipeline is
    assembled. Keys starting with ``_`` are Hydra's, those of :data:`COMPOSITION_KEYS` the
    composition root's; a target taking ``**kwargs`` forwards them and is not checked. The
    target is named as the config's ``_target_`` names it.

    Raises:
        InputError: ``retriever.top_k_entites: not a setting of build_graphrag; its settings
            are ...``.
    """
    import inspect

    from hydra.utils import get_object

    if node is None or "_target_" not in node:
        return
    target = get_object(str(node._target_))
    params = inspect.signature(target).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    named = [p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = [
        k for k in node if not str(k).startswith("_") and k not in (*named, *COMPOSITION_KEYS)
    ]
    if unknown:
        name = str(node._target_).rsplit(".", 1)[-1]
        raise InputError(
            f"{group}.{unknown[0]}: not a setting of {name}; "
            f"its settings are {', '.join(sorted(named))}"
        )


def compose_config(name: str, overrides: list[str], root_dir: str | Path) -> Any:
    """Compose ``configs/<name>.yaml`` as the entry points would, outside ``@hydra.main``.

    For notebooks and tests: every path (artifacts, logs, outputs, caches) is put under
    ``root_dir``; ``hydra:`` interpolations are resolved once and the ``hydra`` node removed.
    The configs are looked up beside this package's source checkout. A top-level key the
    schema does not declare (``+epochs=3``) is refused (:func:`check_schema_keys`).
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    configs = Path(__file__).resolve().parent.parent / "configs"
    if not configs.is_dir():
        raise FileNotFoundError(f"{configs}: no configs directory beside the lokg package")
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        cfg = compose(
            config_name=name,
            overrides=[f"paths.root_dir={root_dir}", *overrides],
            return_hydra_config=True,
        )
    check_schema_keys(cfg)
    HydraConfig.instance().set_config(cfg)
    warn_deprecated_options()
    with open_dict(cfg):
        cfg.paths.output_dir = str(Path(root_dir) / "outputs")
        del cfg.hydra
    return cfg


def register_configs() -> None:
    """Register the schemas (``train_schema``, ``evaluate_schema``) in Hydra's ConfigStore."""
    register_resolvers()
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    cs.store(name="evaluate_schema", node=EvaluateConfig)


def resolve_seed(seed: int | None) -> int:
    """``seed`` itself when given (``0`` included), else a freshly drawn one."""
    if seed is not None:
        return int(seed)
    return random.SystemRandom().randrange(2**31)


def instantiate_list(cfg: DictConfig | None) -> list:
    """Instantiate every ``_target_`` entry of a dict-of-configs group (callbacks, loggers)."""
    if not cfg:
        return []
    return [hydra.utils.instantiate(c) for c in cfg.values() if c is not None and "_target_" in c]
