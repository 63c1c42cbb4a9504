"""The LOKG pipeline as a plain Python API (no Lightning): retrieve -> encode -> answer.

    lokg = LOKG(kg, retriever, encoder, reader, budget=2048)
    out = lokg.answer(question)            # one LLM call
    out.answers, out.prompt, out.context.text, out.result (the record the metrics read)

``LOKG.from_config`` builds it from a composed Hydra config and the offline artifacts
(``train.py model=transe`` -> SCOS, ``train.py model=gat`` -> attention); ``evaluate.py`` is a
thin loop over it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import hydra
from omegaconf import DictConfig

from lokg.eval.results import QuestionResult
from lokg.ittc.encoder import EncodedContext, Encoder
from lokg.kg.graph import KnowledgeGraph
from lokg.typing import Question

__all__ = ["LOKG", "PipelineOutput", "check_budget"]

#: candidate answers (TAIMR's coarse filter) whose triples get alpha = lambda_boost, Eq. (10)
NUM_BOOST_CANDIDATES = 5


def check_budget(budget: object) -> int:
    """The token budget B as a positive int, or a one-line error."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(f"budget={budget!r}; expected a positive number of tokens")
    return budget


@dataclass
class PipelineOutput:
    """One answered question: answers, the exact prompt, the evidence and its accounting."""

    answers: list[str]
    prompt: list[dict]
    context: EncodedContext
    injected: str
    retrieval: object
    result: QuestionResult
    extra: dict = field(default_factory=dict)


class LOKG:
    """Retrieval (TAIMR or a baseline), encoding (ITTC or an ablation) and one reader call.

    Args:
        kg: the graph retrieval and encoding run on (SCOS's G* when SCOS is on), or a
            callable ``question -> KnowledgeGraph`` for datasets with per-question subgraphs.
        retriever: an object with ``retrieve(text, topic_labels) -> RetrievalResult``, or a
            callable ``kg -> retriever`` when ``kg`` is per question.
        encoder: an ITTC / naive / truncate encoder.
        reader: an LLM reader or the extractive reader.
        budget: token budget B for the evidence block.
    """

    def __init__(
        self,
        kg: KnowledgeGraph | Callable[[Question], KnowledgeGraph],
        retriever,
        encoder: Encoder,
        reader,
        budget: int = 2048,
        cache_path: str | os.PathLike | None = None,
    ):
        self.kg = kg
        self.retriever = retriever
        self.encoder = encoder
        self.reader = reader
        self.budget = check_budget(budget)
        self.cache_path = cache_path
        #: identities of the artifacts answers depend on (part of evaluate's results key)
        self.provenance: dict[str, str | None] = {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, cfg: DictConfig, datamodule, reader=None) -> LOKG:
        """Build from a composed ``evaluate.yaml`` and a prepared DataModule.

        Loads the SCOS graph (unless ``scos=off``) and the GAT attention (when
        ``retriever.attention=gat``) from the dataset's artifacts.
        """
        from lokg.llm import build_reader
        from lokg.stages import load_graph_artifacts

        budget = check_budget(cfg.budget)
        reader = reader if reader is not None else build_reader(cfg.llm)
        embedder = hydra.utils.instantiate(cfg.embedder)
        make_retriever = hydra.utils.instantiate(cfg.retriever)
        need_gat = cfg.retriever.get("attention") == "gat"
        train_questions = datamodule.questions.get("train", [])
        encoder = hydra.utils.instantiate(cfg.encoder)
        if datamodule.has_question_subgraphs:
            return cls._per_question(cfg, datamodule, make_retriever, embedder, encoder,
                                     reader, budget, need_gat, train_questions)  # fmt: skip
        art = load_graph_artifacts(
            cfg, datamodule, need_gat, cfg.get("scos_dir"), cfg.get("gat_dir")
        )
        retriever = make_retriever(
            kg=art.kg,
            encoder=embedder,
            edge_log_alpha=art.edge_log_alpha,
            train_questions=train_questions,
        )
        # the lazy (head, relation) path cache persists under its own fingerprint (graph,
        # attention, mu, lambda_topo), so a retrained GAT never meets a stale cache
        cache = getattr(retriever, "cache", None)
        cache_path = None
        if cache is not None and cache.fingerprint is not None:
            cache_path = datamodule.artifact_dir / "path_cache" / f"{cache.fingerprint}.npz"
            if cache_path.is_file():
                cache.load(cache_path)
        pipeline = cls(art.kg, retriever, encoder, reader, budget, cache_path=cache_path)
        pipeline.provenance = {
            "kg": art.kg.fingerprint(),
            "scos": None if art.scos_dir is None else art.scos_dir.name,
            "gat": None if art.gat_dir is None else art.gat_dir.name,
            "path_cache": None if cache is None else cache.fingerprint,
        }
        return pipeline

    @classmethod
    def _per_question(
        cls,
        cfg,
        datamodule,
        make_retriever,
        embedder,
        encoder,
        reader,
        budget,
        need_gat,
        train_questions,
    ) -> LOKG:
        """RoG-format data: a graph per question, so a retriever per question.

        SCOS's mapping (trained on the union of the subgraphs, whose relation vocabulary every
        subgraph shares) relabels each subgraph; a GAT over the union does not transfer, so
        ``retriever.attention`` must be ``uniform``.
        """
        from lokg.scos import SCOSResult
        from lokg.stages import load_graph_artifacts

        if need_gat:
            raise ValueError(
                f"{datamodule.name} has one subgraph per question and no trained GAT applies; "
                "use retriever.attention=uniform"
            )
        art = load_graph_artifacts(cfg, datamodule, False, cfg.get("scos_dir"), None)
        scos = None if art.scos_dir is None else SCOSResult.load(art.scos_dir / "scos")

        def per_question_kg(q: Question) -> KnowledgeGraph:
            kg = datamodule.question_graph(q.id)
            return kg if scos is None else kg.with_relations(scos.mapping, scos.relations)

        def per_question_retriever(kg: KnowledgeGraph):
            return make_retriever(kg=kg, encoder=embedder, train_questions=train_questions)

        pipeline = cls(per_question_kg, per_question_retriever, encoder, reader, budget)
        pipeline.provenance = {
            "kg": datamodule.kg.fingerprint(),
            "scos": None if art.scos_dir is None else art.scos_dir.name,
        }
        return pipeline

    # ------------------------------------------------------------------ steps
    def graph(self, question: Question) -> KnowledgeGraph:
        return self.kg(question) if callable(self.kg) else self.kg

    def retrieve(self, question: Question, kg: KnowledgeGraph | None = None):
        """TAIMR (or the configured retriever) for one question."""
        retriever = self.retriever
        if callable(self.kg):
            retriever = self.retriever(kg if kg is not None else self.graph(question))
        return retriever.retrieve(question.text, list(question.topic_entities))

    def encode(
        self, kg: KnowledgeGraph, retrieval, question: Question, budget: int | None = None
    ) -> EncodedContext:
        """ITTC (or the configured encoder) over the retrieved candidate triples."""
        boost = [a.entity for a in retrieval.answers[:NUM_BOOST_CANDIDATES]]
        return self.encoder.encode(
            kg,
            list(retrieval.triple_ids),
            budget=self.budget if budget is None else check_budget(budget),
            query_entities=[t for t in question.topic_entities if t in kg.entities],
            candidate_entities=boost,
        )

    def answer(self, question: Question, budget: int | None = None) -> PipelineOutput:
        """Retrieve, encode under the budget, and make the single reader call."""
        kg = self.graph(question)
        t0 = time.perf_counter()
        retrieval = self.retrieve(question, kg)
        latency = time.perf_counter() - t0
        context = self.encode(kg, retrieval, question, budget)
        evidence = context.text.splitlines()
        injected = "\n".join(evidence)  # exactly the block the prompt template receives
        t_after = self.encoder.tokenizer.count(injected)
        b = self.budget if budget is None else budget
        if t_after > b:  # guaranteed by ITTC; checked on the string actually sent
            raise RuntimeError(f"{question.id}: evidence has {t_after} tokens > budget {b}")
        candidates = [a.label for a in retrieval.answers]
        t1 = time.perf_counter()
        out = self.reader.answer(question.text, evidence, candidates)
        acc = out.accounting
        result = QuestionResult(
            id=question.id,
            question=question.text,
            gold=list(question.answers),
            predictions=list(out.answers),
            output=out.output,
            reader=out.reader,
            prompt=list(out.messages),
            context=injected,
            prompt_tokens=int(acc.get("prompt_tokens", 0)),
            completion_tokens=int(acc.get("completion_tokens", 0)),
            prompt_tokens_cl100k=int(acc.get("prompt_tokens_cl100k", 0)),
            completion_tokens_cl100k=int(acc.get("completion_tokens_cl100k", 0)),
            calls=int(acc.get("calls", 0)),
            cached_calls=int(acc.get("cached_calls", 0)),
            attempts=int(acc.get("attempts", 0)),
            t_after=t_after,
            t_naive=context.naive_tokens,
            retrieval_latency_s=latency,
            llm_latency_s=time.perf_counter() - t1,
            extra={
                "budget": b,
                "solver": context.solver,
                "order": context.order,
                "granularity": context.granularity_counts(),
                "candidates": candidates[:20],
                "paths": [[kg.labeled(int(t)) for t in p.triple_ids] for p in retrieval.paths[:5]],
            },
        )
        return PipelineOutput(list(out.answers), list(out.messages), context, injected,
                              retrieval, result)  # fmt: skip

    def close(self) -> None:
        """Persist the path cache (entries computed this run) and release the reader."""
        cache = getattr(self.retriever, "cache", None)
        if self.cache_path is not None and cache is not None and cache.entries:
            cache.save(self.cache_path)
        self.reader.close()
