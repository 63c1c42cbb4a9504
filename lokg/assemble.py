"""The composition root: a composed ``evaluate.yaml`` and a prepared DataModule become the
parts of a :class:`~lokg.pipeline.LOKG` here and nowhere else (an :class:`Assembly`, which
``LOKG.from_config`` constructs; ``evaluate.py``, the benches and the rerank stage use its
pieces). This module sits below the pipeline: it never imports :mod:`lokg.pipeline`.

**What a builder needs is declared.** A retriever's config names its builder (``_target_``,
``_partial_: true``) and its settings; what the builder takes besides them is written down
in :data:`RETRIEVERS`, keyed by the builder:

- ``kg``, which every retriever takes: the run's graph (SCOS's G*, or the KG as given with
  ``scos=off``, with the inverse edges of ``data.source.inverse``), or, on a dataset with one
  subgraph per question, each question's (:func:`retriever_over`);
- the call-time services of :data:`SERVICES`: the sentence encoder (``embedder``), the
  training questions, the reader's chat client;
- the offline artifacts of :data:`ARTIFACTS`: the trained GAT's attention, the walk model,
  TransE's relation embeddings, the answer GAT.

The composition root loads the artifacts a declaration names and nothing else
(:func:`graph_artifacts`) and gives the builder exactly what it declares: a builder takes no
``**kwargs``, so one given a key it does not take fails (``TypeError``) instead of
swallowing it. An artifact may be needed only under some settings (TAIMR needs the GAT only
with ``attention=gat``): the declaration says so, so no caller tests ``_target_`` strings or
settings. The config key ``uses_llm`` (:data:`lokg.config.COMPOSITION_KEYS`) is a statement
of the config, kept because run keys hash the config: it must agree with the declaration
(the builder takes the chat client) and is not passed on. A builder with no entry takes
``kg`` and its settings only. Encoders (``encoder=``) and readers (``llm=``, built by
:func:`lokg.llm.build_reader`) take their config settings only: they need nothing at call
time.

**The budget enters once.** :func:`run_settings` reads the top-level ``budget`` (and
``budget_scope``, ``answer_without_evidence``) of a config once per run, as a
:class:`~lokg.tokens.Budget`, which is carried as that type to the solver; ``evaluate.py``
reads it before any work and hands it to :func:`assemble`. A library user who builds a
``LOKG`` directly passes a plain ``int``: its boundary is ``LOKG(budget=)`` (and the per-call
``budget=`` of ``LOKG.answer`` / ``LOKG.encode``, and every encoder's ``encode``), which
makes it a ``Budget`` with the same one-line error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
from omegaconf import OmegaConf

from lokg.artifacts import GraphArtifacts, load_graph_artifacts
from lokg.baselines.bfs import build_bfs
from lokg.baselines.graphrag import build_graphrag
from lokg.baselines.kaping import build_kaping
from lokg.baselines.references import build_none, build_oracle
from lokg.baselines.tog import build_tog
from lokg.config import COMPOSITION_KEYS, check_target_keys
from lokg.retrieval import PerQuestionRetriever, Retriever
from lokg.taimr.build import build_semantic, build_taimr
from lokg.taimr.walk.artifact import shipped_data
from lokg.taimr.walk.retriever import build_learned
from lokg.tokens import Budget, check_budget_scope
from lokg.typing import Question

__all__ = [
    "ARTIFACTS",
    "RETRIEVERS",
    "SERVICES",
    "Assembly",
    "Declaration",
    "RetrieverPlan",
    "RunSettings",
    "assemble",
    "graph_artifacts",
    "prepared_datamodule",
    "retriever_over",
    "retriever_plan",
    "run_settings",
]

#: call-time services a builder may declare, by keyword argument
SERVICES = {
    "embedder": "the sentence encoder (``embedder=``)",
    "train_questions": "the training split's questions",
    "chat": "the reader's chat client (a retriever that calls the LLM: ToG, GraphRAG)",
}
#: offline artifacts a builder may declare, by keyword argument
ARTIFACTS = {
    "edge_log_alpha": "``[T]`` log alpha of the trained GAT over ``kg``'s triples (gat-*)",
    "model_dir": "the trained walk model (qgat-*): the setting's, or the default one",
    "relation_embeddings": "``[R, d]`` TransE e_r of ``kg``'s relations (None: untrained)",
    "rerank": "the answer GAT (rerank-*) that the setting ``rerank`` names, resolved",
}


@dataclass(frozen=True)
class Declaration:
    """What one builder takes besides ``kg`` and its config settings.

    Attributes:
        services: names of :data:`SERVICES` it takes (as keyword arguments).
        artifacts: names of :data:`ARTIFACTS` it takes (as keyword arguments).
        when: input name -> the settings under which it is needed (a predicate on the
            builder's settings: the config's over the builder's defaults); an input not
            named here is always needed.
    """

    services: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    when: Mapping[str, Callable[[Mapping[str, Any]], bool]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for names, known in ((self.services, SERVICES), (self.artifacts, ARTIFACTS)):
            for name in names:
                if name not in known:
                    raise ValueError(f"declared input {name!r}; expected one of {list(known)}")
        for name in self.when:
            if name not in self.inputs:
                raise ValueError(f"declared condition on {name!r}, which is not declared")

    @property
    def inputs(self) -> tuple[str, ...]:
        """Every input it may be given (services, then artifacts)."""
        return (*self.services, *self.artifacts)

    def needs(self, settings: Mapping[str, Any]) -> frozenset[str]:
        """The inputs it is given under ``settings`` (defaults filled in)."""
        return frozenset(n for n in self.inputs if n not in self.when or self.when[n](settings))


#: every retriever builder of configs/retriever/ and what it declares (tested against the
#: builders' signatures and the configs: tests/test_assemble.py)
RETRIEVERS: dict[Callable[..., Retriever], Declaration] = {
    build_taimr: Declaration(
        services=("embedder", "train_questions"),
        artifacts=("edge_log_alpha",),
        when={"edge_log_alpha": lambda s: s["attention"] == "gat"},
    ),
    build_semantic: Declaration(services=("embedder",)),
    build_learned: Declaration(
        services=("embedder",),
        artifacts=("model_dir", "relation_embeddings", "rerank"),
        when={"rerank": lambda s: s["rerank"] is not None},
    ),
    build_kaping: Declaration(services=("embedder",)),
    build_tog: Declaration(services=("embedder", "chat")),
    build_graphrag: Declaration(services=("embedder", "chat")),
    build_bfs: Declaration(),
    build_oracle: Declaration(),
    build_none: Declaration(),
}


def builder_defaults(builder: Callable) -> dict[str, Any]:
    """The keyword parameters of ``builder`` that have a default, with it."""
    params = inspect.signature(builder).parameters.values()
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


@dataclass(frozen=True)
class RetrieverPlan:
    """The retriever a config asks for, before anything is loaded.

    Attributes:
        name: the builder as the config's ``_target_`` names it (``build_taimr``).
        builder: the builder.
        settings: the config's settings (resolved; no Hydra keys, no ``uses_llm``).
        needs: the inputs the builder is given under these settings (its declaration's).
    """

    name: str
    builder: Callable[..., Retriever]
    settings: dict[str, Any]
    needs: frozenset[str]

    def make(self, kg, **given) -> Retriever:
        """The retriever over ``kg``: the builder with its settings and ``given``, which must
        be exactly what it declared (one-line error otherwise). An input resolved from a
        setting of the same name (``model_dir``, ``rerank``) replaces it."""
        if set(given) != self.needs:
            raise ValueError(
                f"{self.name} declares {sorted(self.needs)}, was given {sorted(given)}"
            )
        return self.builder(kg=kg, **{**self.settings, **given})


def retriever_plan(node) -> RetrieverPlan:
    """The ``retriever`` config node's builder, settings and declared needs.

    Raises:
        ValueError: ``retriever.uses_llm`` says otherwise than the declaration (one line).
    """
    settings = OmegaConf.to_container(node, resolve=True)
    if "_target_" not in settings:
        raise ValueError("retriever: the config names no builder (_target_)")
    target = str(settings.pop("_target_"))
    builder = hydra.utils.get_object(target)
    name = target.rsplit(".", 1)[-1]
    settings = {k: v for k, v in settings.items() if not str(k).startswith("_")}
    statements = {k: settings.pop(k) for k in COMPOSITION_KEYS if k in settings}
    uses_llm = statements.get("uses_llm")
    declaration = RETRIEVERS.get(builder, Declaration())
    calls_llm = "chat" in declaration.services  # it takes the reader's chat client
    if uses_llm is not None and bool(uses_llm) != calls_llm:
        does = "calls" if calls_llm else "does not call"
        raise ValueError(
            f"retriever.uses_llm={str(uses_llm).lower()}: {name} {does} the LLM; "
            f"expected {str(calls_llm).lower()}"
        )
    needs = declaration.needs({**builder_defaults(builder), **settings})
    return RetrieverPlan(name, builder, settings, needs)


@dataclass(frozen=True)
class RunSettings:
    """The top-level keys a pipeline runs under, validated once at the config boundary.

    Attributes:
        budget: B (``budget``).
        budget_scope: what B caps (``budget_scope``: ``evidence`` or ``prompt``).
        answer_without_evidence: ask the LLM even without evidence.
    """

    budget: Budget
    budget_scope: str = "evidence"
    answer_without_evidence: bool = False


def run_settings(cfg) -> RunSettings:
    """``cfg``'s :class:`RunSettings` (one-line errors for a bad ``budget`` or
    ``budget_scope``)."""
    return RunSettings(
        budget=Budget(cfg.budget),
        budget_scope=check_budget_scope(cfg.get("budget_scope", "evidence")),
        answer_without_evidence=bool(cfg.get("answer_without_evidence", False)),
    )


def prepared_datamodule(cfg, stage: str = "test"):
    """``cfg.data`` instantiated, its data prepared and set up for ``stage``."""
    datamodule = hydra.utils.instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup(stage)
    return datamodule


def services_of(plan: RetrieverPlan, *, embedder, datamodule, reader) -> dict[str, Any]:
    """The services ``plan`` needs, by name (:data:`SERVICES`)."""
    available = {
        "embedder": lambda: embedder,
        "train_questions": lambda: datamodule.questions.get("train", []),
        "chat": lambda: _chat_client(reader),
    }
    return {name: available[name]() for name in SERVICES if name in plan.needs}


def graph_artifacts(cfg, datamodule, plan: RetrieverPlan) -> GraphArtifacts:
    """The run's graph and the artifacts ``plan`` needs (:func:`load_graph_artifacts`).

    Raises:
        ValueError: a dataset with one subgraph per question and a retriever that needs the
            GAT trained on the union (one line).
    """
    per_question = datamodule.has_question_subgraphs
    need_gat = "edge_log_alpha" in plan.needs
    if per_question and need_gat:
        raise ValueError(
            f"{datamodule.name} has one subgraph per question and no trained GAT applies; "
            "use retriever.attention=uniform"
        )
    need_walk = "model_dir" in plan.needs
    return load_graph_artifacts(
        cfg,
        datamodule,
        need_gat=need_gat,
        scos_dir=cfg.get("scos_dir"),
        gat_dir=None if per_question else cfg.get("gat_dir"),
        need_walk=need_walk,
        walk_dir=plan.settings.get("model_dir") if need_walk else None,
    )


def artifacts_of(plan: RetrieverPlan, art: GraphArtifacts) -> dict[str, Any]:
    """The artifacts ``plan`` needs, by name (:data:`ARTIFACTS`), from ``art``."""
    from lokg.taimr.walk.rerank import resolve_rerank

    available = {
        "edge_log_alpha": lambda: art.edge_log_alpha,
        "model_dir": lambda: art.walk_dir,
        "relation_embeddings": lambda: art.relation_embeddings,
        "rerank": lambda: str(resolve_rerank(art.walk_dir, plan.settings["rerank"])),
    }
    return {name: available[name]() for name in ARTIFACTS if name in plan.needs}


def provenance(datamodule, art: GraphArtifacts, given: Mapping[str, Any]) -> dict:
    """The identities of the artifacts answers depend on (they enter the run key)."""
    per_question = datamodule.has_question_subgraphs
    out = {
        "kg": (datamodule.kg if per_question else art.kg).fingerprint(),
        "scos": None if art.scos_dir is None else art.scos_dir.name,
        "gat": None if art.gat_dir is None else art.gat_dir.name,
        "walk_model": None if art.walk_dir is None else art.walk_dir.name,
    }
    if art.walk_dir is not None and (shipped := shipped_data(art.walk_dir)) is not None:
        out["walk_model"] += f"@{shipped}"  # every shipped walk is named "pretrained"
    if "rerank" in given:  # resolved once, named in the run key
        out["rerank"] = Path(given["rerank"]).name
    return out


@dataclass(frozen=True)
class Assembly:
    """What a composed config assembles into: the parts of a :class:`~lokg.pipeline.LOKG`
    (``LOKG.from_config`` constructs it from them).

    Attributes:
        retriever: the run's retriever (per question on a dataset of subgraphs).
        encoder: ITTC's encoder (or the configured one).
        reader: the LLM reader.
        settings: the run's budget, budget scope and no-evidence rule.
        cache_dir: where the retriever persists its cache (``None`` per question).
        provenance: the identities of the artifacts answers depend on (the run key).
        artifact_dirs: the artifact directories loaded: scos, transe, gat, walk.
    """

    retriever: Retriever
    encoder: Any
    reader: Any
    settings: RunSettings
    cache_dir: Path | None
    provenance: dict
    artifact_dirs: dict[str, Path | None]


def assemble(cfg, datamodule, reader=None, *, settings: RunSettings | None = None) -> Assembly:
    """The :class:`Assembly` of a composed ``evaluate.yaml`` and a prepared DataModule.

    ``reader``: the reader to answer with (default: built from ``cfg.llm``); ``settings``:
    the run's :class:`RunSettings` when the caller has read them (default: read here). Loads
    the SCOS graph (unless ``scos=off``) and what the retriever declares. Datasets with one
    subgraph per question get a :class:`~lokg.retrieval.PerQuestionRetriever`: SCOS's φ
    relabels each subgraph, the inverse edges chosen on the union (``data.source.inverse``)
    are added to it, and a GAT trained on the union does not apply (one-line error).
    """
    from lokg.llm import build_reader

    settings = run_settings(cfg) if settings is None else settings
    reader = reader if reader is not None else build_reader(cfg.llm)
    for group in ("embedder", "retriever", "encoder"):
        check_target_keys(cfg.get(group), group)
    embedder = hydra.utils.instantiate(cfg.embedder)
    plan = retriever_plan(cfg.retriever)
    encoder = hydra.utils.instantiate(cfg.encoder)
    given = services_of(plan, embedder=embedder, datamodule=datamodule, reader=reader)
    art = graph_artifacts(cfg, datamodule, plan)
    given.update(artifacts_of(plan, art))
    per_question = datamodule.has_question_subgraphs
    return Assembly(
        retriever=retriever_over(datamodule, art, plan.make, **given),
        encoder=encoder,
        reader=reader,
        settings=settings,
        cache_dir=None if per_question else datamodule.artifact_dir / "retriever_cache",
        provenance=provenance(datamodule, art, given),
        artifact_dirs={
            "scos": art.scos_dir, "transe": art.transe_dir, "gat": art.gat_dir,
            "walk": art.walk_dir,
        },
    )  # fmt: skip


def retriever_over(datamodule, art: GraphArtifacts, make_retriever, **given) -> Retriever:
    """``make_retriever(kg=..., **given)`` over the run's graph ``art.kg``, or, on a dataset
    with one subgraph per question, a :class:`PerQuestionRetriever` that builds it over each
    question's subgraph (SCOS's mapping and the added inverse edges applied as to
    ``art.kg``). ``make_retriever``: a :meth:`RetrieverPlan.make` or a builder."""
    if not datamodule.has_question_subgraphs:
        return make_retriever(kg=art.kg, **given)
    from lokg.kg.inverse_edges import add_inverse_edges
    from lokg.scos import SCOSResult

    scos = None if art.scos_dir is None else SCOSResult.load(art.scos_dir / "scos")

    def graph_of(q: Question):
        kg = datamodule.question_graph(q.id)
        kg = kg if scos is None else scos.apply(kg)
        return add_inverse_edges(kg, art.inverse_relations)

    return PerQuestionRetriever(graph_of, lambda kg: make_retriever(kg=kg, **given))


def _chat_client(reader):
    """The reader's chat client, for a retriever that calls the LLM itself (one-line error
    for a reader without one)."""
    client = getattr(reader, "client", None)
    if client is None:
        raise ValueError(
            f"this retriever calls the LLM (retriever.uses_llm=true) but the reader "
            f"{reader.label!r} has no LLM client; use an LLM reader (llm=local, ...)"
        )
    return client
