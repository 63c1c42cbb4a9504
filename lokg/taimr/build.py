"""Builders the ``retriever`` config group names (``_partial_: true``): called with ``kg`` and
what each declares besides its settings (:data:`lokg.assemble.RETRIEVERS`), they return a
:class:`lokg.retrieval.Retriever`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.info_gain import node_information_gain
from lokg.taimr.linking import RelationLinker
from lokg.taimr.path_cache import PathCache
from lokg.taimr.retriever import SemanticRetriever, TAIMRRetriever
from lokg.taimr.topology import uniform_log_attention
from lokg.typing import Question

__all__ = ["build_semantic", "build_taimr"]

ATTENTION = ("gat", "uniform")


def build_taimr(
    kg: KnowledgeGraph,
    embedder: SentenceEncoder,
    *,
    edge_log_alpha: np.ndarray | None = None,
    train_questions: Iterable[Question] = (),
    attention: str = "gat",
    max_hops: int = 3,
    k_top: int = 20,
    k_top_unit: str = "paths",
    beam_width: int | None = None,
    rels_per_hop: int = 3,
    lambda_topo: float = 1.0,
    lambda_q: float = 1.0,
    lambda_rel: float = 1.0,
    knn_weight: float = 0.9,
    knn_k: int = 10,
    link_temperature: float = 0.05,
    knn_temperature: float = 0.05,
    relation_linking: str = "chain",
) -> TAIMRRetriever:
    """A :class:`TAIMRRetriever` over ``kg``.

    ``attention="gat"`` uses ``edge_log_alpha`` (from
    :func:`lokg.taimr.topology.gat_log_attention`, required); ``"uniform"`` is the
    "without GAT" ablation.  ``train_questions`` fit the relation linker (train split only).
    The path cache persists through the retriever's ``load_cache`` / ``save_cache``.
    """
    if attention not in ATTENTION:
        raise ValueError(f"retriever.attention must be one of {ATTENTION}, got {attention!r}")
    if attention == "gat":
        if edge_log_alpha is None:
            raise ValueError("retriever.attention='gat' needs edge_log_alpha from a trained GAT")
        log_alpha = np.asarray(edge_log_alpha, dtype=np.float64)
    else:
        log_alpha = uniform_log_attention(kg)
    cache = PathCache(kg, log_alpha, node_information_gain(kg), lambda_topo)
    linker = None
    if relation_linking == "chain":
        linker = RelationLinker(kg, embedder, link_temperature, knn_k, knn_temperature)
        linker.fit(train_questions)
    return TAIMRRetriever(
        kg,
        embedder,
        cache,
        linker=linker,
        max_hops=max_hops,
        k_top=k_top,
        beam_width=beam_width,
        rels_per_hop=rels_per_hop,
        lambda_q=lambda_q,
        lambda_rel=lambda_rel,
        knn_weight=knn_weight,
        relation_linking=relation_linking,
        k_top_unit=k_top_unit,
    )


#: ``retriever=semantic``, the "w/o TAIMR" ablation: the class itself (the name is
#: configs/retriever/semantic.yaml's ``_target_``, which run keys hash)
build_semantic = SemanticRetriever
