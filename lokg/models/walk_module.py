"""LightningModule training the question-aware walk model (:mod:`lokg.taimr.walk.net`)
to rank the paths retrieval ranks (beyond the paper; docs/design/taimr.md, "Learned walk").

Objective.  For each training question the model's stopping random walk from the topic
entity (:mod:`lokg.taimr.walk.graph`) should end at a gold answer along a supervised path: the
gold relation path when the dataset annotates one (PathQuestion), else the shortest
topic -> answer paths (RoG WebQSP/CWQ, custom KGs).  The loss is the negative log of their
total probability, ``-log sum_{p in P+} P(p | q)``, averaged over questions: the same
``log P(p | q)`` the retriever's beam search ranks, with its stop term, so no length bias.
Negatives are implicit: under ``normalization="vocabulary"`` (the default) every hop is a
softmax over the whole step-relation vocabulary and stop; under ``"node"`` over a node's
full set of steps in the question's walk graph and stop.

Memory.  The vocabulary-normalised loss reads only the supervised paths' steps: each
question keeps those steps alone (found without the L-hop ball,
:func:`~lokg.taimr.walk.supervision.answer_graph`) and validation ranks answers with the retriever's
own :func:`~lokg.taimr.walk.search.beam_walk`, so nothing per question grows with the graph.  The
node-normalised walk and the GAT split (``graph_context=True``: a step's share depends on
its siblings' node states) need each question's (sampled, ``max_fanout`` per node) L-hop
walk graph, batched as a disjoint union.

Validation logs ``val/loss``, ``val/hits@1`` (the best answer by beam search is gold) and
``val/recall`` (a gold answer among the ``k_top`` best); checkpoints select on
``val/hits@1``.  Each validation epoch also logs the per-question table ``val/questions``
(:class:`ValidationRow`: question, gold, predicted, hit, recall) to the loggers that take
tables (``logger=wandb``).

Several processes (``trainer=ddp``): each trains on its share of the questions, gradients
and the validation metrics are all-reduced, so every process selects the same best
checkpoint; :mod:`lokg.models.ddp` says what that asks of the steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torchmetrics import MeanMetric

from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.models.ddp import nothing_to_learn
from lokg.taimr.walk.anchors import (
    anchor_arm,
    anchor_view,
    rank_jointly,
    rank_jointly_on_graphs,
)
from lokg.taimr.walk.graph import WalkGraph, walk_graph
from lokg.taimr.walk.net import (
    WalkNet,
    relation_features,
    widen_to_step_relations,
)
from lokg.taimr.walk.search import answers_of, beam_search, beam_walk
from lokg.taimr.walk.supervision import (
    answer_graph,
    keep_steps,
    relation_degrees,
    supervised_paths,
)
from lokg.taimr.walk.vocabulary import VOCABULARY_SCOPES, ComponentVocabulary
from lokg.typing import Question

__all__ = ["SupervisedQuestion", "ValidationRow", "WalkModule", "pad_tokens", "rank_answers"]

RELATION_SOURCES = ("fixed", "learned", "none")
QUESTION_ENCODERS = ("frozen", "finetune")
INITS = ("scratch", "pretrained")


@dataclass(frozen=True)
class ValidationRow:
    """One val question of the per-question table (``val/questions``) that every validation
    epoch logs to the loggers that take tables (W&B)."""

    id: str
    question: str
    gold: str  # the gold answers, "; "-joined
    predicted: str  # the walk's best answer ("" when it ranks none)
    hit: bool  # the best answer is gold (what val/hits@1 averages)
    recall: bool  # a gold answer is among the k_top best (what val/recall averages)
    supervised: bool  # the question has a path to learn (topic and answer in the graph)


VALIDATION_COLUMNS = tuple(f.name for f in fields(ValidationRow))


@dataclass(frozen=True)
class SupervisedQuestion:
    """A question's walk graph and the paths it is trained to follow (may be empty).

    Under ``normalization="node"`` ``graph`` is the whole (sampled) L-hop walk graph: a
    step's probability is soft-maxed over its node's steps.  Under ``"vocabulary"`` it is
    only the steps of ``paths`` (:func:`~lokg.taimr.walk.supervision.keep_steps`), with each step's
    relation degree in the KG (``log_degree``): nothing else enters the loss.
    """

    question: Question
    graph: WalkGraph
    paths: list[tuple[int, ...]]
    answers: frozenset[int]
    topic: int
    log_degree: np.ndarray | None = None  # [m] log deg_r(u) (vocabulary normalisation)


def pad_tokens(rows: Sequence[Tensor], device=None) -> tuple[Tensor, Tensor]:
    """Pad per-question token embeddings ``[T_i, d]`` to ``tokens [B, T, d]`` and
    ``mask [B, T]`` (True = a token)."""
    rows = [torch.as_tensor(r, dtype=torch.float32) for r in rows]
    width = max(len(r) for r in rows)
    tokens = torch.zeros(len(rows), width, rows[0].shape[-1])
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        tokens[i, : len(r)] = r
        mask[i, : len(r)] = True
    return tokens.to(device), mask.to(device)


def rank_answers(
    graph: WalkGraph, step_logp: np.ndarray, stop_logp: np.ndarray, max_hops: int, beam: int
) -> tuple[list[int], dict[int, float], dict[int, tuple[int, ...]]]:
    """Answers (global ids) by ``log P(a | q)`` = logsumexp of their kept paths, best first;
    their scores; and each answer's best path (step indices)."""
    found = answers_of(graph, beam_search(graph, step_logp, stop_logp, max_hops, beam))
    total = {a: lp for a, (lp, _) in found.items()}
    order = sorted(total, key=lambda a: (-total[a], a))
    return order, total, {a: w.steps for a, (_, w) in found.items()}


def _check_choices(init: str, question_encoder: str, relation_source: str) -> None:
    """``model.init``, ``model.question_encoder`` and ``model.relation_source`` are known."""
    if init not in INITS and not Path(str(init)).is_dir():
        raise InputError(
            f"model.init={init!r}; expected one of {INITS} or a walk artifact directory"
        )
    if question_encoder not in QUESTION_ENCODERS:
        raise ValueError(
            f"model.question_encoder must be one of {QUESTION_ENCODERS}, got {question_encoder!r}"
        )
    if relation_source not in RELATION_SOURCES:
        raise ValueError(
            f"model.relation_source must be one of {RELATION_SOURCES}, got {relation_source!r}"
        )


def _check_vocabulary_scope(scope: str, graph_context: bool, normalization: str) -> None:
    if scope not in VOCABULARY_SCOPES:
        raise ValueError(
            f"model.vocabulary_scope must be one of {VOCABULARY_SCOPES}, got {scope!r}"
        )
    if scope == "component" and (graph_context or normalization != "vocabulary"):
        raise ValueError(
            "model.vocabulary_scope=component needs normalization=vocabulary and "
            "graph_context=false (the hop distribution is the whole walk)"
        )


class WalkModule(pl.LightningModule):
    """Trains :class:`WalkNet` by path likelihood on training questions.

    Args:
        num_relations: R of the graph (after SCOS).
        node_dim: d_v (384 MiniLM, 768 E5).  name_dim: size of relation-name embeddings
            (the same embedder's; 0 = names not used).
        transe_dim: d_r of TransE (64).
        hidden, heads, dropout: d' (128), M (4), 0.3 (Table 3).
        max_hops: L (3).  beam_width: paths kept per hop (64).  k_top: answers counted by
            ``val/recall`` (20).
        max_fanout: steps sampled per node in training walk graphs (``None`` = all).
        both_directions: walk triples tail -> head too (relation ``r^-1``).
        relation_source: ``"fixed"`` (TransE's SCOS-merged e_r, frozen: the paper's
            coupling), ``"learned"`` (a free table: ablation) or ``"none"``.
        question_in_attention: the question enters the attention (ablation: ``False``).
        max_paths: supervised paths kept per question.
        question_key: ``"relation"`` or ``"relation_node"`` (:class:`WalkNet`).
        question_tokens: hop queries from a per-hop attention over the question's token
            embeddings (:class:`WalkNet`); needs ``token_encoder`` in ``set_graph``.
        graph_context: node states from the RelGAT enter the scores (``False``: relation and
            question only, :class:`WalkNet`); with ``normalization="vocabulary"`` they only
            split each relation's probability among a node's steps (the GAT split), and
            training and validation score each question's whole walk graph.
        normalization: ``"node"`` or ``"vocabulary"``: what a hop's step probabilities are
            normalised over (:meth:`WalkNet.log_probs`).
        question_encoder: ``"frozen"`` (the sentence encoder's cached vectors) or
            ``"finetune"`` (:class:`~lokg.nn.question_encoder.QuestionLM`, a copy of
            it trained end to end; ``set_graph(question_lm=...)``).
        encoder_lr: learning rate of the fine-tuned encoder (the rest uses ``optimizer``'s).
        encoder_trainable_layers: fine-tune only the encoder's top ``k`` layers, the frozen
            layers' output cached per question (``None``: all layers).
        min_steps: train.py raises ``trainer.max_epochs`` so that a small training set still
            gets this many optimizer steps (:func:`lokg.train_stages.stretch_epochs_to_min_steps`).
        name_match: every hop logit also carries a learned-scale cosine between the hop's
            question context and the relation's name (:class:`WalkNet`); needs
            ``name_dim`` equal to ``node_dim`` (one embedder).
        name_in_key: ``False``: the relation's key ``W_r e_r`` does not read its name, which
            enters by ``name_match``'s cosine only (:class:`WalkNet`).
        token_coverage: the per-hop token attention discounts tokens read at earlier hops
            (:class:`WalkNet`).
        stop_match: the stop logit reads how well the hop's context names a relation of the
            graph walked (:class:`WalkNet`).
        stop_context: ``False``: the stop logit is ``b_t`` plus ``stop_match``'s term only
            (:class:`WalkNet`).
        stop_gate: stop is a yes/no gate and the relations share the rest by their own
            softmax, so stopping does not depend on the KG's relation count (:class:`WalkNet`).
        stop_size: the stop logit reads ``log |V|``, the question's vocabulary's relation
            count, with a learned weight (:class:`WalkNet`).
        vocabulary_scope: ``"graph"`` (each hop over the graph's relations) or
            ``"component"`` (over the topic entity's connected component's:
            :mod:`lokg.taimr.walk.vocabulary`; the pretrained walk, trained on a union of KGs).
        init: ``"scratch"``, ``"pretrained"`` or a walk artifact (``qgat-*/``): train.py starts
            the network and the question encoder from the walk shipped in the package, or
            from that one (:func:`lokg.train_stages.init_from_pretrained`).
        optimizer: ``functools.partial`` of a torch optimizer (``None`` = Adam 1e-3).
    """

    def __init__(
        self,
        num_relations: int,
        node_dim: int = 384,
        name_dim: int = 384,
        transe_dim: int = 64,
        hidden: int = 128,
        heads: int = 4,
        dropout: float = 0.3,
        max_hops: int = 3,
        beam_width: int = 64,
        k_top: int = 20,
        max_fanout: int | None = 64,
        both_directions: bool = True,
        relation_source: str = "fixed",
        question_in_attention: bool = True,
        max_paths: int = 32,
        question_key: str = "relation",
        question_tokens: bool = False,
        graph_context: bool = True,
        normalization: str = "node",
        question_encoder: str = "frozen",
        encoder_lr: float = 5e-5,
        encoder_trainable_layers: int | None = None,
        min_steps: int = 0,
        name_match: bool = False,
        name_in_key: bool = True,
        token_coverage: bool = False,
        stop_match: bool = False,
        stop_context: bool = True,
        stop_gate: bool = False,
        stop_size: bool = False,
        vocabulary_scope: str = "graph",
        init: str = "scratch",
        optimizer: Callable[..., torch.optim.Optimizer] | None = None,
    ):
        super().__init__()
        _check_choices(init, question_encoder, relation_source)
        _check_vocabulary_scope(vocabulary_scope, graph_context, normalization)
        self.save_hyperparameters(ignore=["optimizer"])
        self.optimizer_factory = optimizer
        rel_dim = transe_dim + name_dim + 1
        self.net = WalkNet(
            node_dim, rel_dim, node_dim, hidden, heads, dropout, max_hops,
            question_in_attention, question_key=question_key, question_tokens=question_tokens,
            graph_context=graph_context, normalization=normalization, name_match=name_match,
            name_span=(transe_dim, transe_dim + name_dim) if name_dim else None,
            name_in_key=name_in_key, token_coverage=token_coverage, stop_match=stop_match,
            stop_context=stop_context, stop_gate=stop_gate, stop_size=stop_size,
        )  # fmt: skip
        self.relation_table = nn.Embedding(num_relations, transe_dim)
        nn.init.normal_(self.relation_table.weight, std=transe_dim**-0.5)
        if relation_source != "learned":
            self.relation_table.weight.requires_grad_(False)
        if relation_source == "none":
            nn.init.zeros_(self.relation_table.weight)
        self.register_buffer("relation_names", torch.zeros(num_relations, name_dim))
        self.kg: KnowledgeGraph | None = None
        self.components: ComponentVocabulary | None = None
        self.node_features: Tensor | None = None
        self.query_encoder: Callable[[list[str]], Tensor] | None = None
        self.token_encoder: Callable[[list[str]], list[Tensor]] | None = None
        self.question_lm: nn.Module | None = None
        self._supervised: dict[str, list[SupervisedQuestion]] = {}
        #: topic -> its whole walk graph, where validation ranks (:meth:`_rank_on_graphs`)
        self._whole_graphs: dict[int, WalkGraph] = {}
        self._val_rows: list[ValidationRow] = []  # this epoch's (on_validation_epoch_end)
        # question-weighted means over the epoch, all-reduced across DDP processes
        self.val_loss, self.val_hits, self.val_recall = MeanMetric(), MeanMetric(), MeanMetric()

    # ------------------------------------------------------------------ wiring
    def set_graph(
        self,
        kg: KnowledgeGraph,
        node_features: Tensor,
        relation_embeddings: Tensor | None,
        relation_names: Tensor | None,
        query_encoder: Callable[[list[str]], Tensor],
        token_encoder: Callable[[list[str]], list[Tensor]] | None = None,
        question_lm: nn.Module | None = None,
    ) -> None:
        """Attach the graph, node features ``[E, d_v]``, TransE e_r ``[R, d_r]``, relation-name
        embeddings ``[R, d_n]``, the question encoder (``[B, d_q]``) and, for
        ``question_tokens``, the token encoder (one ``[T_i, d_q]`` per question), or for
        ``question_encoder="finetune"`` the trainable encoder replacing both; call before
        ``fit``."""
        hp = self.hparams
        if kg.num_relations != hp.num_relations:
            raise ValueError(
                f"graph has {kg.num_relations} relations, the model was built for "
                f"{hp.num_relations}"
            )
        if hp.relation_source == "fixed":
            if relation_embeddings is None:
                raise ValueError("model.relation_source=fixed needs TransE relation embeddings")
            with torch.no_grad():
                self.relation_table.weight.copy_(torch.as_tensor(relation_embeddings))
        if hp.name_dim:
            if relation_names is None or tuple(relation_names.shape) != (
                kg.num_relations,
                hp.name_dim,
            ):
                raise ValueError(f"relation_names must be [{kg.num_relations}, {hp.name_dim}]")
            with torch.no_grad():
                self.relation_names.copy_(torch.as_tensor(relation_names))
        self.kg = kg
        self.components = ComponentVocabulary(kg) if hp.vocabulary_scope == "component" else None
        self.node_features = node_features.float()
        if hp.question_encoder == "finetune":
            if question_lm is None:
                raise ValueError("model.question_encoder=finetune needs the question encoder")
            self.question_lm = question_lm
        elif hp.question_tokens and token_encoder is None:
            raise ValueError("model.question_tokens=true needs a token encoder")
        self.query_encoder = query_encoder
        self.token_encoder = token_encoder
        self._supervised, self._whole_graphs = {}, {}

    def architecture(self) -> dict:
        """What :func:`lokg.taimr.walk.artifact.load_walk_network` needs to rebuild the network
        (recorded in the exported ``qgat.json``)."""
        hp = self.hparams
        return {
            "node_dim": hp.node_dim,
            "rel_dim": hp.transe_dim + hp.name_dim + 1,
            "query_dim": hp.node_dim,
            "name_dim": hp.name_dim,
            "transe_dim": hp.transe_dim,
            "hidden": hp.hidden,
            "heads": hp.heads,
            "max_hops": hp.max_hops,
            "question_in_attention": hp.question_in_attention,
            "question_key": hp.question_key,
            "question_tokens": hp.question_tokens,
            "graph_context": hp.graph_context,
            "normalization": hp.normalization,
            "question_encoder": hp.question_encoder,
            "encoder_trainable_layers": hp.encoder_trainable_layers,
            "relation_source": hp.relation_source,
            "both_directions": hp.both_directions,
            "name_match": hp.name_match,
            "name_in_key": hp.name_in_key,
            "token_coverage": hp.token_coverage,
            "stop_match": hp.stop_match,
            "stop_context": hp.stop_context,
            "stop_gate": hp.stop_gate,
            "stop_size": hp.stop_size,
            "vocabulary_scope": hp.vocabulary_scope,
        }

    def vocabulary(self, device=None) -> Tensor | None:
        """The step relations a walk can take (rows of :meth:`rel_feats`): all ``2R`` with
        ``both_directions`` (``None``), else the ``R`` forward ones."""
        hp = self.hparams
        return None if hp.both_directions else torch.arange(hp.num_relations, device=device)

    def rel_feats(self) -> Tensor:
        """``[2R, d_r + d_n + 1]`` step-relation features (:func:`relation_features`)."""
        hp = self.hparams
        names = self.relation_names if hp.name_dim else None
        return relation_features(self.relation_table.weight, names, hp.num_relations, hp.transe_dim)

    def supervise(self, q: Question) -> SupervisedQuestion | None:
        """The first of :meth:`supervise_all` (``None`` without topic): for a question with one
        topic entity, its only item."""
        items = self.supervise_all(q)
        return items[0] if items else None

    def supervise_all(self, q: Question) -> list[SupervisedQuestion]:
        """The question's supervised paths and the graph they walk, one item per anchor
        (cached; empty without a topic in the graph).

        One topic entity: the walk from the first topic, trained on the question as it is
        and its gold path's relations (as before several anchors existed).  Several: one item
        per topic entity found in the graph, each trained on its own view of the question
        (:func:`~lokg.taimr.walk.anchors.anchor_view`) and its own arm of the gold path
        (:func:`~lokg.taimr.walk.anchors.anchor_arm`), so each anchor's walk learns the
        relations that lead from it to the answers (issue 28).  The vocabulary-normalised
        walk needs only the paths' steps: they are found in
        :func:`~lokg.taimr.walk.supervision.answer_graph` (no L-hop ball) and kept alone, so
        a question costs its paths' memory on any graph."""
        if q.id in self._supervised:
            return self._supervised[q.id]
        assert self.kg is not None
        kg = self.kg
        out: list[SupervisedQuestion] = []
        if len(q.topic_entities) < 2:
            topic = kg.entities.get(q.topic_entities[0]) if q.topic_entities else None
            if topic is not None:
                gold = [rel for _, rel, _ in q.gold_path]
                out.append(self._supervised_item(q, topic, gold))
        else:
            for label in q.topic_entities:
                topic = kg.entities.get(label)
                if topic is None:
                    continue
                view = dataclasses.replace(q, text=anchor_view(q.text, label, q.topic_entities))
                arm = anchor_arm(q.gold_path, label, q.answers) or ()
                out.append(self._supervised_item(view, topic, list(arm)))
        self._supervised[q.id] = out
        return out

    def _supervised_item(self, q: Question, topic: int, gold: list[str]) -> SupervisedQuestion:
        """``q``'s walk from ``topic`` trained to follow ``gold`` (step labels; its length
        when within ``max_hops``, else the shortest paths to an answer)."""
        kg, hp = self.kg, self.hparams
        answers = frozenset(a for a in (kg.entities.get(x) for x in q.answers) if a is not None)
        length = len(gold) if 0 < len(gold) <= hp.max_hops else None
        vocabulary = self.net.steps_only
        if vocabulary:
            g = answer_graph(
                kg, topic, sorted(answers), hp.max_hops, hp.max_fanout, hp.both_directions
            )
        else:
            g = walk_graph(kg, topic, hp.max_hops, hp.max_fanout, hp.both_directions)
        paths = supervised_paths(kg, g, sorted(answers), length, gold, hp.max_paths, hp.max_hops)
        log_degree = None
        if vocabulary:
            g, paths = keep_steps(g, paths)
            log_degree = np.log(relation_degrees(kg, g).astype(np.float64))
        return SupervisedQuestion(q, g, paths, answers, topic, log_degree)

    def check_supervision(self, questions: Sequence[Question], split: str = "train") -> float:
        """Share of ``questions`` with a supervised path; raises when there is none at all."""
        n = sum(1 for q in questions if any(s.paths for s in self.supervise_all(q)))
        if questions and n == 0:
            raise InputError(
                f"no {split} question has a path from its topic entity to a gold answer within "
                f"max_hops={self.hparams.max_hops}: nothing to train the walk model on "
                "(check that topic entities and answers are labels of the graph)"
            )
        return n / max(len(questions), 1)

    # ------------------------------------------------------------------ forward
    def _encode(self, questions: Sequence[str]) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """``(q [B, d_q], tokens [B, T, d_q] | None, mask [B, T] | None)`` of the questions,
        by the fine-tuned question encoder or the frozen embedder's cached vectors."""
        assert self.query_encoder is not None or self.question_lm is not None
        device = self.relation_table.weight.device
        if self.question_lm is not None:
            q, tokens, mask = self.question_lm(list(questions))  # [B, d_q], [B, T, d_q]
            return (q, tokens, mask) if self.hparams.question_tokens else (q, None, None)
        q = self.query_encoder(list(questions)).to(device).float()  # [B, d_q]
        if not self.hparams.question_tokens:
            return q, None, None
        assert self.token_encoder is not None
        tokens, mask = pad_tokens(self.token_encoder(list(questions)), device)
        return q, tokens, mask

    def score_graphs(self, graphs: Sequence[WalkGraph], questions: Sequence[str], encoded=None):
        """Step/stop log-probabilities of each question on its walk graph (disjoint union).
        ``encoded``: the questions' :meth:`_encode` output when already computed.

        Returns ``(step_logp [m, L], stop_logp [n, L], step offsets, node offsets)``.
        """
        assert self.node_features is not None
        device = self.relation_table.weight.device
        sizes_n = [g.num_nodes for g in graphs]
        sizes_m = [g.num_steps for g in graphs]
        off_n = np.concatenate([[0], np.cumsum(sizes_n)])
        nodes = torch.as_tensor(np.concatenate([g.nodes for g in graphs]), device="cpu")
        if self.hparams.graph_context:
            x = self.node_features[nodes].to(device)
        else:  # no entity enters the score
            x = torch.zeros(len(nodes), 0, device=device)
        src = np.concatenate([g.src + off_n[i] for i, g in enumerate(graphs)])
        dst = np.concatenate([g.dst + off_n[i] for i, g in enumerate(graphs)])
        edge_index = torch.as_tensor(np.stack([src, dst]), dtype=torch.long, device=device)
        rel = torch.as_tensor(
            np.concatenate([g.step_relation for g in graphs]), dtype=torch.long, device=device
        )
        q, tokens, mask = self._encode(questions) if encoded is None else encoded
        owner_m = torch.as_tensor(np.repeat(np.arange(len(graphs)), sizes_m), device=device)
        owner_n = torch.as_tensor(np.repeat(np.arange(len(graphs)), sizes_n), device=device)
        step_lp, stop_lp = self.net.log_probs(
            x, edge_index, rel, self.rel_feats(), q, owner_m, owner_n, tokens, mask,
            vocabulary=self.vocabulary(device),
        )  # fmt: skip
        return step_lp, stop_lp, np.concatenate([[0], np.cumsum(sizes_m)]), off_n

    def _batch_loss(
        self, items: list[SupervisedQuestion], rank: bool = False
    ) -> tuple[Tensor, list[list[int]] | None]:
        """``-mean_q log sum_{p in P+(q)} P(p | q)`` over the items with supervised paths, and
        (``rank``) each item's answers, best first, as retrieval ranks them (global ids).

        Under ``normalization="vocabulary"`` a path's probability needs only its own steps'
        relations (and their degree at the node): the loss reads them from the questions'
        hop distributions ``[B, L, V]``, and the ranking walks the KG with
        :func:`~lokg.taimr.walk.search.beam_walk` as the retriever does; no walk graph is scored."""
        hp = self.hparams
        L, texts = hp.max_hops, [s.question.text for s in items]
        if not self.net.steps_only:  # the GAT split, node-normalised: a step's share
            # depends on its siblings, so each question's walk graph is scored
            encoded = self._encode(texts)
            graphs = [s.graph for s in items]
            step_lp, stop_lp, off_m, off_n = self.score_graphs(graphs, texts, encoded)
            path_lp = self._path_log_probs(items, step_lp, stop_lp, off_m, off_n)
            loss = -torch.stack(path_lp).mean() if path_lp else step_lp.sum() * 0.0
            return loss, (self._rank_on_graphs(items, texts, encoded) if rank else None)
        device = self.relation_table.weight.device
        encoded = self._encode(texts)
        feats, vocab = self.rel_feats(), self.vocabulary(device)
        allowed = None
        if self.components is not None:  # each question's own component's relations
            allowed = self.components.allowed([s.topic for s in items], vocab, device)
        hop_logp, hop_stop = self.net.hop_log_probs(
            feats, *encoded, vocabulary=vocab, allowed=allowed
        )
        hop_logp = widen_to_step_relations(hop_logp, vocab, feats.size(0))  # [B | 1, L, 2R]
        losses = []
        for i, s in enumerate(items):
            if not s.paths:
                continue
            b = i if hop_logp.size(0) > 1 else 0
            path_lp = []
            for p in s.paths:
                e = list(p)
                rel = torch.as_tensor(s.graph.step_relation[e], device=device)
                lp = hop_logp[b, torch.arange(len(p), device=device), rel].sum()
                lp = lp - float(s.log_degree[e].sum())
                if len(p) < L:
                    lp = lp + hop_stop[b, len(p)]
                path_lp.append(lp)
            losses.append(-torch.logsumexp(torch.stack(path_lp), 0))
        loss = torch.stack(losses).mean() if losses else hop_logp.sum() * 0.0
        orders = None
        if rank:
            logp_np = hop_logp.detach().double().cpu().numpy()
            stop_np = hop_stop.detach().double().cpu().numpy()
            orders, hop = [], []
            for i, s in enumerate(items):
                b = i if logp_np.shape[0] > 1 else 0
                hop.append((logp_np[b], stop_np[b]))
                g, walks = beam_walk(
                    self.kg, s.topic, *hop[-1], L, hp.beam_width, hp.both_directions
                )  # fmt: skip
                found = answers_of(g, walks)
                orders.append(sorted(found, key=lambda a: (-found[a][0], a)))

            def on_kg(members, candidates):
                walks = [(items[i].topic, *hop[i]) for i in members]
                return rank_jointly(self.kg, walks, candidates, L, hp.both_directions)

            orders = self._join_anchors(items, orders, on_kg)
        return loss, orders

    def _rank_on_graphs(self, items, texts, encoded) -> list[list[int]]:
        """Each item's answers, best first, ranked as the retriever ranks them when the walk
        scores a walk graph (the GAT split, the node-normalised walk): on the topic's whole
        walk graph (retrieval's ``max_fanout: null``), not the training graph sampled to
        ``max_fanout`` steps a node, whose missing siblings would change every step's share
        and drop answers, so that validation selects the epoch retrieval would."""
        hp = self.hparams
        L = hp.max_hops
        graphs = []
        for s in items:
            if s.topic not in self._whole_graphs:
                self._whole_graphs[s.topic] = walk_graph(
                    self.kg, s.topic, L, None, hp.both_directions
                )  # fmt: skip
            graphs.append(self._whole_graphs[s.topic])
        with torch.no_grad():
            step_lp, stop_lp, off_m, off_n = self.score_graphs(graphs, texts, encoded)
        step_np = step_lp.double().cpu().numpy()
        stop_np = stop_lp.double().cpu().numpy()
        scored = [
            (g, step_np[off_m[i] : off_m[i + 1]], stop_np[off_n[i] : off_n[i + 1]])
            for i, g in enumerate(graphs)
        ]
        orders = [rank_answers(*g, L, hp.beam_width)[0] for g in scored]
        if hp.normalization != "vocabulary":  # node-normalised: no join (validation reads
            return orders  # a question's first anchor, as before the GAT split existed)

        def on_graphs(members, candidates):  # the GAT split: a proper walk, joined exactly
            return rank_jointly_on_graphs([scored[i] for i in members], candidates, L)

        return self._join_anchors(items, orders, on_graphs)

    def _join_anchors(self, items, orders, rank_members) -> list[list[int]]:
        """``orders`` with the items of one question (its anchors) ranked jointly, as the
        retriever ranks them (:func:`~lokg.taimr.walk.anchors.join` of every anchor's exact
        support over the answers any anchor's beam found); one order per item still.
        ``rank_members(members, candidates)``: the joined ranking of those items' anchors
        (:func:`~lokg.taimr.walk.anchors.rank_jointly` on the KG, or
        :func:`~lokg.taimr.walk.anchors.rank_jointly_on_graphs` under the GAT split)."""
        by_question: dict[str, list[int]] = {}
        for i, s in enumerate(items):
            by_question.setdefault(s.question.id, []).append(i)
        out = list(orders)
        for members in by_question.values():
            if len(members) < 2:
                continue
            candidates = {a for i in members for a in orders[i]}
            joint = [j.entity for j in rank_members(members, candidates)]
            for i in members:
                out[i] = joint
        return out

    def _path_log_probs(self, items, step_lp, stop_lp, off_m, off_n) -> list[Tensor]:
        """Per item with supervised paths: log sum_p P(p | q) from the graphs' step log-probs."""
        L = self.hparams.max_hops
        out = []
        for i, s in enumerate(items):
            if not s.paths:
                continue
            path_lp = []
            for p in s.paths:
                steps = torch.as_tensor([off_m[i] + e for e in p], device=step_lp.device)
                lp = step_lp[steps, torch.arange(len(p), device=step_lp.device)].sum()
                if len(p) < L:
                    end = off_n[i] + int(s.graph.dst[p[-1]])
                    lp = lp + stop_lp[end, len(p)]
                path_lp.append(lp)
            out.append(torch.logsumexp(torch.stack(path_lp), 0))
        return out

    def _items(self, questions: Sequence[Question]) -> list[SupervisedQuestion]:
        return [s for q in questions for s in self.supervise_all(q)]

    def on_fit_start(self) -> None:
        dm = self.trainer.datamodule
        if dm is not None and hasattr(dm, "questions"):
            share = self.check_supervision(dm.questions.get("train", []))
            self.print(f"walk model: {share:.1%} of training questions have a supervised path")

    def training_step(self, questions: Sequence[Question], batch_idx: int) -> Tensor | None:
        items = [s for s in self._items(questions) if s.paths]
        if not items:
            return nothing_to_learn(self)
        loss, _ = self._batch_loss(items)
        self.log("train/loss", loss, batch_size=len(items), prog_bar=True)
        return loss

    def on_validation_epoch_start(self) -> None:
        self._val_rows = []

    def validation_step(self, questions: Sequence[Question], batch_idx: int) -> None:
        items = self._items(questions)
        if items:
            self._score_validation(questions, items)
        scored = {s.question.id for s in items}
        self._val_rows += [
            ValidationRow(q.id, q.text, "; ".join(q.answers), "", False, False, False)
            for q in questions
            if q.id not in scored
        ]
        # logged every step, scored or not: under DDP every process must hold each metric when
        # they are all-reduced at the epoch's end
        self.log("val/loss", self.val_loss, on_step=False, on_epoch=True)
        self.log("val/hits@1", self.val_hits, on_step=False, on_epoch=True, prog_bar=True)
        self.log("val/recall", self.val_recall, on_step=False, on_epoch=True)

    def _score_validation(
        self, questions: Sequence[Question], items: list[SupervisedQuestion]
    ) -> None:
        """Add the batch's loss, hits@1 and recall, each weighted by its ``len(questions)``."""
        loss, orders = self._batch_loss(items, rank=True)
        label = self.kg.entities.label
        rows, seen = [], set()
        for s, order in zip(items, orders, strict=True):
            q = s.question
            if q.id in seen:  # a question's anchors share one joint order: one row
                continue
            seen.add(q.id)
            rows.append(
                ValidationRow(
                    q.id, q.text, "; ".join(q.answers), label(order[0]) if order else "",
                    bool(order) and order[0] in s.answers,
                    bool(s.answers & set(order[: self.hparams.k_top])), bool(s.paths),
                )
            )  # fmt: skip
        n = len(questions)
        self.val_loss.update(loss.detach(), weight=n)
        self.val_hits.update(sum(r.hit for r in rows) / n, weight=n)
        self.val_recall.update(sum(r.recall for r in rows) / n, weight=n)
        self._val_rows += rows

    def on_validation_epoch_end(self) -> None:
        """Log the epoch's per-question table (:class:`ValidationRow`, sorted by id) to every
        logger that takes tables; under DDP rank 0 logs every process's rows."""
        rows, self._val_rows = self._val_rows, []
        if self.trainer.sanity_checking:
            return
        if self.trainer.world_size > 1:  # every rank joins the gather
            parts: list[list[ValidationRow]] = [[] for _ in range(self.trainer.world_size)]
            torch.distributed.all_gather_object(parts, rows)
            rows = [r for part in parts for r in part]
        loggers = [lg for lg in self.loggers if hasattr(lg, "log_table")]
        if not loggers or not self.trainer.is_global_zero:
            return
        rows.sort(key=lambda r: r.id)
        data = [[getattr(r, c) for c in VALIDATION_COLUMNS] for r in rows]
        for lg in loggers:
            lg.log_table(
                key="val/questions", columns=list(VALIDATION_COLUMNS), data=data,
                step=self.global_step,
            )  # fmt: skip

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        # batches are lists of frozen Question records; tensors are built on the device
        if isinstance(batch, list) and all(isinstance(q, Question) for q in batch):
            return batch
        return super().transfer_batch_to_device(batch, device, dataloader_idx)

    def configure_optimizers(self):
        lm = set() if self.question_lm is None else {id(p) for p in self.question_lm.parameters()}
        params = [p for p in self.parameters() if p.requires_grad and id(p) not in lm]
        groups: list[dict] = [{"params": params}]
        if self.question_lm is not None:
            groups.append(
                {
                    "params": [p for p in self.question_lm.parameters() if p.requires_grad],
                    "lr": self.hparams.encoder_lr,
                }
            )
        if self.optimizer_factory is None:
            return torch.optim.Adam(groups, lr=1e-3)
        return self.optimizer_factory(params=groups)
