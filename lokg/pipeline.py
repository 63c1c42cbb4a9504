"""The LOKG pipeline as a plain Python API (no Lightning): retrieve -> encode -> answer.

    lokg = LOKG(retriever, encoder, reader, budget=2048)
    out = lokg.answer(question)            # one reader call
    out.answers, out.prompt, out.context.text, out.retrieval, out.evidence_tokens

``retriever`` is any :class:`lokg.retrieval.Retriever` (TAIMR, a baseline, a per-question
wrapper); the pipeline only calls ``retrieve(question)`` and its cache methods. ``LOKG``
returns a :class:`PipelineOutput` (what happened); ``lokg.eval`` turns it into its record.
``LOKG.from_config`` builds it from a composed Hydra config and the offline artifacts
(``train.py model=transe`` -> SCOS, ``train.py model=gat`` -> attention). Importing this
module or constructing ``LOKG`` loads no Lightning and nothing of ``lokg.eval``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from lokg.ittc.encoder import EncodedContext, Encoder
from lokg.retrieval import PerQuestionRetriever, RetrievalResult, Retriever
from lokg.tokens import check_budget
from lokg.typing import Question

__all__ = ["LOKG", "NUM_BOOST_CANDIDATES", "PipelineOutput"]

#: candidate answers (TAIMR's coarse filter) whose triples get alpha = lambda_boost, Eq. (10)
NUM_BOOST_CANDIDATES = 5


@dataclass(frozen=True)
class PipelineOutput:
    """One answered question: what was retrieved, what was sent, what came back.

    Attributes:
        question: the question answered.
        answers: the reader's answers, most likely first.
        output: the reader's raw output text.
        reader: the reader's label (an LLM model id, or the extractive label).
        prompt: the exact chat messages sent (empty for the extractive reader).
        context: the encoded evidence; ``context.text`` is placed in the prompt verbatim.
        retrieval: the retriever's result.
        budget: the token budget B the evidence was built for.
        accounting: the reader's call ledger (calls, prompt/completion tokens, ...).
        retrieval_latency_s, llm_latency_s: wall times in seconds.
    """

    question: Question
    answers: list[str]
    output: str
    reader: str
    prompt: list[dict]
    context: EncodedContext
    retrieval: RetrievalResult
    budget: int
    accounting: dict = field(default_factory=dict)
    retrieval_latency_s: float = 0.0
    llm_latency_s: float = 0.0

    @property
    def evidence_tokens(self) -> int:
        """T_after: tokens of the evidence block exactly as sent."""
        return self.context.num_tokens

    @property
    def empty_context(self) -> bool:
        """True when the reader got no evidence at all."""
        return not self.context.text


class LOKG:
    """Retrieval (TAIMR or a baseline), encoding (ITTC or an ablation) and one reader call.

    Args:
        retriever: a :class:`~lokg.retrieval.Retriever`.
        encoder: an ITTC / naive / truncate encoder.
        reader: an LLM reader or the extractive reader.
        budget: token budget B for the evidence block (the top-level ``budget`` key).
        cache_dir: where the retriever persists its cache (``None``: not persisted).
        provenance: identities of the artifacts answers depend on (enters evaluate's key).
    """

    def __init__(
        self,
        retriever: Retriever,
        encoder: Encoder,
        reader,
        budget: int = 2048,
        cache_dir: str | os.PathLike | None = None,
        provenance: dict[str, str | None] | None = None,
    ):
        if not isinstance(retriever, Retriever):
            raise TypeError(
                f"LOKG: retriever must implement lokg.retrieval.Retriever, got "
                f"{type(retriever).__name__}"
            )
        self.retriever = retriever
        self.encoder = encoder
        self.reader = reader
        self.budget = check_budget(budget)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        if self.cache_dir is not None:
            retriever.load_cache(self.cache_dir)
        self.provenance = {**(provenance or {}), "retriever_cache": retriever.cache_key}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, cfg, datamodule, reader=None) -> LOKG:
        """Build from a composed ``evaluate.yaml`` and a prepared DataModule.

        Loads the SCOS graph (unless ``scos=off``) and the GAT attention (when
        ``retriever.attention=gat``) from the dataset's artifacts. Datasets with one subgraph
        per question get a :class:`~lokg.retrieval.PerQuestionRetriever`: SCOS's φ relabels
        each subgraph, and a GAT trained on the union does not apply (one-line error).
        """
        import hydra

        from lokg.artifacts import load_graph_artifacts
        from lokg.llm import build_reader

        budget = check_budget(cfg.budget)
        reader = reader if reader is not None else build_reader(cfg.llm)
        embedder = hydra.utils.instantiate(cfg.embedder)
        make_retriever = hydra.utils.instantiate(cfg.retriever)
        encoder = hydra.utils.instantiate(cfg.encoder)
        train_questions = datamodule.questions.get("train", [])
        need_gat = cfg.retriever.get("attention") == "gat"
        per_question = datamodule.has_question_subgraphs
        if per_question and need_gat:
            raise ValueError(
                f"{datamodule.name} has one subgraph per question and no trained GAT applies; "
                "use retriever.attention=uniform"
            )
        art = load_graph_artifacts(
            cfg,
            datamodule,
            need_gat,
            cfg.get("scos_dir"),
            None if per_question else cfg.get("gat_dir"),
        )
        provenance = {
            "kg": (datamodule.kg if per_question else art.kg).fingerprint(),
            "scos": None if art.scos_dir is None else art.scos_dir.name,
            "gat": None if art.gat_dir is None else art.gat_dir.name,
        }
        if per_question:
            from lokg.scos import SCOSResult

            scos = None if art.scos_dir is None else SCOSResult.load(art.scos_dir / "scos")

            def graph_of(q: Question):
                kg = datamodule.question_graph(q.id)
                return kg if scos is None else kg.with_relations(scos.mapping, scos.relations)

            def build(kg):
                return make_retriever(kg=kg, encoder=embedder, train_questions=train_questions)

            retriever: Retriever = PerQuestionRetriever(graph_of, build)
            cache_dir = None
        else:
            retriever = make_retriever(
                kg=art.kg,
                encoder=embedder,
                edge_log_alpha=art.edge_log_alpha,
                train_questions=train_questions,
            )
            cache_dir = datamodule.artifact_dir / "retriever_cache"
        return cls(retriever, encoder, reader, budget, cache_dir, provenance)

    # ------------------------------------------------------------------ steps
    def retrieve(self, question: Question) -> RetrievalResult:
        """TAIMR (or the configured retriever) for one question."""
        return self.retriever.retrieve(question)

    def encode(
        self, retrieval: RetrievalResult, question: Question, budget: int | None = None
    ) -> EncodedContext:
        """ITTC (or the configured encoder) over the retrieved candidate triples."""
        return self.encoder.encode(
            retrieval.kg,
            list(retrieval.triple_ids),
            budget=self.budget if budget is None else check_budget(budget),
            query_entities=[t.entity for t in retrieval.topics],
            candidate_entities=[a.entity for a in retrieval.answers[:NUM_BOOST_CANDIDATES]],
        )

    def answer(self, question: Question, budget: int | None = None) -> PipelineOutput:
        """Retrieve, encode under the budget, and make the single reader call."""
        b = self.budget if budget is None else check_budget(budget)
        t0 = time.perf_counter()
        retrieval = self.retrieve(question)
        retrieval_latency = time.perf_counter() - t0
        context = self.encode(retrieval, question, b)
        # ITTC and truncation guarantee this; checked on the exact block the prompt receives
        if self.encoder.respects_budget and context.num_tokens > b:
            raise RuntimeError(
                f"{question.id}: evidence has {context.num_tokens} tokens > budget {b}"
            )
        t1 = time.perf_counter()
        out = self.reader.answer(question.text, context.text, [a.label for a in retrieval.answers])
        return PipelineOutput(
            question=question,
            answers=list(out.answers),
            output=out.output,
            reader=out.reader,
            prompt=list(out.messages),
            context=context,
            retrieval=retrieval,
            budget=b,
            accounting=dict(out.accounting),
            retrieval_latency_s=retrieval_latency,
            llm_latency_s=time.perf_counter() - t1,
        )

    def close(self) -> None:
        """Persist the retriever's cache (entries computed this run) and release the reader."""
        if self.cache_dir is not None:
            self.retriever.save_cache(self.cache_dir)
        self.reader.close()
