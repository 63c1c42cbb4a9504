"""The networks as plain ``nn.Module``s, below retrieval (as PyG keeps ``torch_geometric.nn``):
TAIMR's relation-aware GAT (:mod:`lokg.nn.rel_gat`, Eq. (13)-(15)), TransE
(:mod:`lokg.nn.transe`, SCOS's e_r) and the question encoder fine-tuned with the learned walk
(:mod:`lokg.nn.question_encoder`).  No Lightning and no retrieval here: the LightningModules
that train them are ``lokg/models/*_module.py``; the walk's own network sits with the rest of
the walk in :mod:`lokg.taimr.walk.net`.
"""

from lokg.nn.answer_gat import AnswerGAT
from lokg.nn.question_encoder import QuestionLM
from lokg.nn.rel_gat import RelGAT, RelGATConv
from lokg.nn.transe import FilterIndex, NegativeSampler, TransE, filtered_ranks

__all__ = [
    "AnswerGAT",
    "FilterIndex",
    "NegativeSampler",
    "QuestionLM",
    "RelGAT",
    "RelGATConv",
    "TransE",
    "filtered_ranks",
]
