"""Retrieval with the trained question-aware walk model (beyond the paper; docs/design/taimr.md,
"Learned walk").  ``retriever=learned``.

For each topic entity: its L-hop walk graph in both edge directions
(:mod:`lokg.taimr.walk.graph`), the model's step and stop log-probabilities for this question
(:class:`~lokg.taimr.walk.net.WalkNet`), a beam search over paths
(:mod:`lokg.taimr.walk.search`), and answers ranked by

    S_final(a | q) = log P(a | q) + lambda_q * S_sem(q, a)                 (Eq. (18)'s form)

where ``log P(a | q)`` (logsumexp over the kept paths ending at ``a``) takes the place of
S_topo.  Each returned path's ``s_topo`` holds its own ``log P(p | q)``.

A question naming several topic entities (issue 28) walks each with its own view of the
question and ranks the answers any anchor's beam found by the join of every anchor's exact
support (:mod:`lokg.taimr.walk.anchors`): ``log P(a | q) = sum_k log P_k(a | q)``, an
anchor without a path to ``a`` counting :data:`~lokg.taimr.walk.anchors.UNSUPPORTED_LOG_PROB`
(the product's limit: more supporting anchors rank first); each answer's context holds the
path from every anchor that supports it.  An answer that is itself one of the joined anchors
ranks after every other (``anchor_answers="last"``, the default of ``retriever=learned``): a
question that names two entities asks for a third (of the bundled sets' 2,940 training
questions with several topic entities, one is answered by one of them), while a walk that
reads the constraint's relation as one more hop of the chain ends on the constraint's value,
which is an anchor (docs/design/taimr.md item 32).  One topic entity: as above, unchanged.

When retrieval finds no path (no topic in the graph's walk, or the model's walk is empty),
the configured fallback retriever answers instead and the result says so
(``extra["fallback"]``): an empty context is never injected silently.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import numpy as np
import torch

from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.nn.question_encoder import QuestionLM
from lokg.retrieval import (
    RankedAnswer,
    RetrievalResult,
    RetrievedPath,
    Retriever,
    resolve_topics,
    triples_of_paths,
)
from lokg.taimr.walk.anchors import (
    ANCHOR_ANSWERS,
    ANCHOR_MODES,
    AnchorPath,
    anchor_view,
    rank_jointly,
    rank_jointly_on_graphs,
)
from lokg.taimr.walk.artifact import (
    ADAPTED_PREFIXES,
    RELATION_TABLE_FILE,
    load_walk_network,
    read_walk_meta,
    recorded_architecture,
)
from lokg.taimr.walk.graph import WalkGraph, walk_graph
from lokg.taimr.walk.joint import STRUCTURE_DIM
from lokg.taimr.walk.net import (
    WalkNet,
    relation_features,
    relation_names,
    widen_to_step_relations,
)
from lokg.taimr.walk.rerank import Reranker, load_answer_gat, resolve_rerank
from lokg.taimr.walk.search import answers_of, beam_search, beam_walk
from lokg.taimr.walk.vocabulary import ComponentVocabulary
from lokg.typing import Question

__all__ = [
    "LengthAnswers",
    "WalkModel",
    "WalkRetriever",
    "build_learned",
    "by_length_in_effect",
    "learned_these_answers",
    "length_log_probs",
]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LengthAnswers:
    """The answers a walk reaches by its kept paths of one length ``h*``, the length it
    believes the question asks for (``retriever.by_length``; self-labels' ``path="length"``).

    Attributes:
        length: h*, in hops.
        log_mass: answer entity -> ``log P(a, |p| = h* | q)``, the logsumexp of ``log P(p | q)``
            over the kept paths of ``h*`` hops ending at ``a``.
        paths: answer entity -> its best kept path of ``h*`` hops (``s_topo`` = its
            ``log P(p | q)``).
    """

    length: int
    log_mass: dict[int, float]
    paths: dict[int, RetrievedPath]


class WalkModel:
    """A trained :class:`WalkNet` bound to one graph: scores a question's walk graph.

    Args:
        net: the trained network (put in eval mode).
        kg: the graph walked.
        embedder: the sentence encoder it was trained with (node names, relation names,
            questions).
        transe: ``[R, d_r]`` TransE relation embeddings of ``kg`` (``None``: zeros, e.g. on a
            KG the model was not trained on and has no TransE).
        transe_dim: d_r the network expects.
        use_names: whether the network was trained with relation-name features.
        question_lm: the question encoder fine-tuned with the network (``None``: the
            network was trained on ``embedder``'s frozen question vectors).
        both_directions: whether the network was trained walking both edge directions (its
            step-relation vocabulary).
    """

    def __init__(
        self,
        net: WalkNet,
        kg: KnowledgeGraph,
        embedder: SentenceEncoder,
        transe: np.ndarray | None,
        transe_dim: int,
        use_names: bool = True,
        question_lm: QuestionLM | None = None,
        both_directions: bool = True,
        vocabulary_scope: str = "graph",
    ):
        self.net = net.eval()
        self.question_lm = question_lm
        self._lm_cache: dict[str, tuple] = {}
        self.kg = kg
        self.embedder = embedder
        names = relation_names(kg, embedder) if use_names else None
        self.rel_feats = relation_features(transe, names, kg.num_relations, transe_dim)
        #: the step relations the walk is normalised over (``normalization="vocabulary"``):
        #: all 2R rows when the network walked both directions, else the R forward ones
        self.vocabulary = None if both_directions else torch.arange(kg.num_relations)
        self.vocabulary_keys = None
        #: ``vocabulary_scope="component"``: each topic's component's relations only
        self.components = ComponentVocabulary(kg) if vocabulary_scope == "component" else None
        if net.normalization == "vocabulary":
            with torch.no_grad():  # [V, d'], once per graph
                self.vocabulary_keys = net.relation_keys(self.rel_feats, self.vocabulary)

    @torch.no_grad()
    def question(
        self, question: str
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``(q [1, d_q], tokens [1, T, d_q] | None, mask [1, T] | None)`` as the network was
        trained on them (the fine-tuned question encoder's, else the embedder's frozen vectors)."""
        if self.question_lm is not None:
            if question not in self._lm_cache:
                if len(self._lm_cache) >= 4096:
                    self._lm_cache.clear()
                self._lm_cache[question] = self.question_lm.encode([question])
            q, tokens, mask = self._lm_cache[question]
            return (q, tokens, mask) if self.net.question_tokens else (q, None, None)
        q = torch.from_numpy(np.asarray(self.embedder.encode([question], kind="query"), np.float32))
        if not self.net.question_tokens:
            return q, None, None
        return q, torch.from_numpy(self.embedder.encode_tokens([question], "query")[0])[None], None

    @torch.no_grad()
    def hop_log_probs(
        self, question: str, topic: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``normalization="vocabulary"``: ``(log P_t(r | q) [L, 2R], log P_t(stop | q) [L])``,
        the columns step relations (what :func:`~lokg.taimr.walk.search.beam_walk` reads);
        under ``vocabulary_scope="component"`` over ``topic``'s component's relations."""
        q, tokens, mask = self.question(question)
        allowed = None
        if self.components is not None:
            if topic is None:
                raise ValueError("a component-scoped walk needs the topic entity")
            allowed = self.components.allowed([topic], self.vocabulary)
        logp, stop = self.net.hop_log_probs(
            self.rel_feats, q, tokens, mask, self.vocabulary, self.vocabulary_keys, allowed
        )
        logp = widen_to_step_relations(logp, self.vocabulary, self.rel_feats.size(0))
        return logp[0].double().numpy(), stop[0].double().numpy()

    def scope_of(self, entity: int) -> int | None:
        """The vocabulary ``entity``'s walk is normalised over: its component, or ``None``
        (the graph's)."""
        return None if self.components is None else self.components.component_of(entity)

    @torch.no_grad()
    def log_probs(self, graph: WalkGraph, question: str) -> tuple[np.ndarray, np.ndarray]:
        """``(step_logp [m, L], stop_logp [n, L])`` of ``question`` on ``graph``."""
        kg = self.kg
        if self.net.graph_context:
            names = [kg.entity_name(int(e)) for e in graph.nodes]
            vecs = self.embedder.encode(names, kind="passage")
            x = torch.from_numpy(np.asarray(vecs, np.float32))
        else:  # no entity enters the score: node features are not computed
            x = torch.zeros(graph.num_nodes, 0)
        q, tokens, mask = self.question(question)
        edge_index = torch.from_numpy(np.stack([graph.src, graph.dst]))
        rel = torch.from_numpy(graph.step_relation)
        step_lp, stop_lp = self.net.log_probs(
            x, edge_index, rel, self.rel_feats, q, tokens=tokens, token_mask=mask,
            vocabulary=self.vocabulary, vocabulary_keys=self.vocabulary_keys,
        )  # fmt: skip  # B = 1
        return step_lp.double().numpy(), stop_lp.double().numpy()


class WalkRetriever(Retriever):
    """Rank answers by the walk model's ``log P(a | q)`` fused with S_sem (module doc).

    Args:
        kg: the graph searched.
        embedder: sentence encoder (S_sem of Eq. (17); also the model's features).
        model: the trained :class:`WalkModel` on ``kg``.
        max_hops: L (3).
        k_top: answers whose best paths are returned (20); ``"auto"`` returns up to
            ``k_max``, best first, so that ITTC fills a larger budget in rank order.
        k_max: the cap under ``k_top="auto"`` (200).
        beam_width: paths kept per hop (64).
        max_fanout: steps sampled per node in the walk graph (``None`` = all).
        both_directions: walk triples tail -> head too.
        lambda_q: weight of S_sem in the final score.
        fallback: retriever used when the walk finds nothing (``None``: return empty).
        anchors: ``"join"`` or ``"union"`` (:func:`build_learned`).
        reranker: the answer GAT that re-scores the walk's top candidates
            (:mod:`lokg.taimr.walk.rerank`; ``None``: the walk's ranking stands).
        by_length: rank first the answers of the walk's most probable path length ``h*``
            (:func:`length_log_probs` of the first topic's stop distribution), by
            ``log P(a, |p| = h* | q)``, each with its best path of that length, then the
            others as before; under ``normalization="vocabulary"`` and without the join of
            several anchors only (elsewhere it changes nothing).
        anchor_answers: in the join of several anchors, ``"last"``: an answer that is one of
            the anchors ranks after every other (module doc); ``"scored"``: by its joined
            score like any other, as before 2026-12-07.
    """

    name = "learned"

    def __init__(
        self,
        kg: KnowledgeGraph,
        embedder: SentenceEncoder,
        model: WalkModel,
        max_hops: int = 3,
        k_top: int | str = 20,
        k_max: int = 200,
        beam_width: int = 64,
        max_fanout: int | None = None,
        both_directions: bool = True,
        lambda_q: float = 0.0,
        fallback: Retriever | None = None,
        *,
        anchors: str = "join",
        reranker: Reranker | None = None,
        by_length: bool = False,
        anchor_answers: str = "scored",
    ):
        self.by_length = bool(by_length)
        if anchor_answers not in ANCHOR_ANSWERS:
            raise ValueError(
                f"retriever.anchor_answers must be one of {ANCHOR_ANSWERS}, got {anchor_answers!r}"
            )
        self.anchor_answers = anchor_answers
        if anchors not in ANCHOR_MODES:
            raise ValueError(f"retriever.anchors must be one of {ANCHOR_MODES}, got {anchors!r}")
        self.anchors = anchors
        self.reranker = reranker
        if k_top != "auto" and (not isinstance(k_top, int) or k_top < 1):
            raise ValueError(f"retriever.k_top must be a positive int or 'auto', got {k_top!r}")
        for key, value in (("max_hops", max_hops), ("k_max", k_max), ("beam_width", beam_width)):
            if value < 1:
                raise ValueError(f"retriever.{key} must be >= 1, got {value}")
        self.kg, self.embedder, self.model = kg, embedder, model
        self.max_hops, self.k_top, self.k_max = max_hops, k_top, k_max
        self.beam_width, self.max_fanout = beam_width, max_fanout
        self.both_directions, self.lambda_q = both_directions, lambda_q
        self.fallback = fallback
        self.graph_cache_size = 1024
        self._graphs: dict[int, WalkGraph] = {}  # topic -> walk graph (_walk_graph)
        #: entity -> its steps' arrays (beam_walk), kept across questions up to this many
        self.step_cache_size = 65536
        self._steps: dict[int, object] = {}  # entity -> its grouped steps (beam_walk)

    def retrieve(self, question: Question) -> RetrievalResult:
        k = self.k_max if self.k_top == "auto" else self.k_top
        if self.reranker is None:
            return self._walk(question, k)
        # every candidate the answer GAT scores carries its paths from every anchor, as in
        # its training (train.py's stage walks with k_max = max_candidates)
        result = self._walk(question, max(k, self.reranker.max_candidates))
        if result.extra.get("fallback") or not result.answers:
            return result
        return self.reranker.rerank(result, question.text, self.model.rel_feats, keep=k)

    def _walk(self, question: Question, k: int) -> RetrievalResult:
        """The walk's own ranking (module doc), before any re-scoring, with the paths of its
        first ``k`` answers."""
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        logp: dict[int, float] = {}
        best: dict[int, RetrievedPath] = {}
        # the vocabulary-normalised walk scores a step from its relation and its node alone:
        # the beam builds only the steps it expands (beam_walk), never the L-hop ball
        lazy = self.model.net.steps_only
        if self._joins(question, topics):
            if lazy:
                return self._retrieve_anchors(question, topics, unknown, k)
            return self._retrieve_anchors_on_graphs(question, topics, unknown, k)
        hops: dict = {}  # one hop distribution per vocabulary (the graph's, or a component's)
        walked = [self._topic_walks(question.text, t.entity, hops) for t in topics]
        for g, walks in walked:
            for a, (lp, w) in answers_of(g, walks).items():  # merged over topic entities
                logp[a] = float(np.logaddexp(logp[a], lp)) if a in logp else lp
                if a not in best or w.log_prob > best[a].s_topo:
                    best[a] = self._path(g, w.steps, w.log_prob)
        at = LengthAnswers(0, {}, {})  # by_length: the answers at the believed length h*
        if self.by_length and lazy and topics:  # vocabulary normalisation only (class doc)
            at = self._at_length(walked, self._believed_length(topics, hops, walked))
        if not best:
            return self._fall_back(question, topics, unknown)
        answers = list(best)
        sem = self._semantic(question, answers)
        ranked = []
        for a, s in zip(answers, sem.tolist(), strict=True):
            p = at.paths.get(a, best[a])
            final = at.log_mass.get(a, logp[a]) + self.lambda_q * s
            p = RetrievedPath(p.entities, p.triple_ids, p.relations, p.s_topo, 0.0, s, final)
            ranked.append(RankedAnswer(a, self.kg.entities.label(a), final, p))
        ranked.sort(key=lambda x: (x.entity not in at.log_mass, -x.score, x.entity))
        paths = [r.path for r in ranked[:k]]
        return RetrievalResult(self.kg, triples_of_paths(paths), ranked, paths, topics, unknown)

    def _topic_walks(self, text: str, topic: int, hops: dict) -> tuple[WalkGraph, list]:
        """The beam's walks from ``topic`` alone (best first) and the graph they index;
        ``hops`` caches the vocabulary-normalised walk's hop distribution per vocabulary."""
        if self.model.net.steps_only:
            scope = self.model.scope_of(topic)
            if scope not in hops:
                hops[scope] = self.model.hop_log_probs(text, topic)
            return self._beam(topic, hops[scope])
        g = self._walk_graph(topic)
        if g.num_steps == 0:
            return g, []
        step_lp, stop_lp = self.model.log_probs(g, text)
        return g, beam_search(g, step_lp, stop_lp, self.max_hops, self.beam_width)

    def answers_at_length(self, question: Question) -> LengthAnswers | None:
        """The answers the beam reaches by paths of the length the walk believes ``question``
        asks for (:meth:`_believed_length`), each topic entity walked alone, whatever
        ``by_length`` says; ``None`` when no topic entity is in the graph or when this
        retriever joins the question's several anchors (its ranking is then the join's).
        Self-labels read it (:mod:`lokg.data.self_labels`, ``path="length"``)."""
        topics, _ = resolve_topics(self.kg, question.topic_entities)
        if not topics or self._joins(question, topics):
            return None
        hops: dict = {}
        walked = [self._topic_walks(question.text, t.entity, hops) for t in topics]
        return self._at_length(walked, self._believed_length(topics, hops, walked))

    def _joins(self, question: Question, topics) -> bool:
        """Whether the question's several anchors are ranked by their join (module doc)."""
        several = len(topics) > 1 and len(question.topic_entities) > 1
        net = self.model.net
        return several and self.anchors == "join" and (net.steps_only or net.gat_split)

    def _believed_length(self, topics, hops: dict, walked) -> int:
        """h* = argmax_h P(|p| = h | q): under vocabulary normalisation read off the first
        topic entity's stop distribution (:func:`length_log_probs`; ``hops`` holds it, as
        :meth:`_topic_walks` left it); under ``normalization="node"``, whose stop is a
        node's and not the question's, the length holding the most of the beam's mass."""
        if self.model.net.steps_only:
            stop = hops[self.model.scope_of(topics[0].entity)][1]
            return int(np.argmax(length_log_probs(stop, self.max_hops))) + 1
        mass = np.full(self.max_hops, -np.inf)
        for _, walks in walked:
            for w in walks:
                mass[len(w.steps) - 1] = np.logaddexp(mass[len(w.steps) - 1], w.log_prob)
        return int(np.argmax(mass)) + 1

    def _at_length(self, walked, length: int) -> LengthAnswers:
        """The answers of ``walked``'s paths of ``length`` hops, merged over topic entities:
        ``log P(a, |p| = length | q)`` (logsumexp over those paths) and the best of them."""
        mass: dict[int, float] = {}
        paths: dict[int, RetrievedPath] = {}
        for g, walks in walked:
            for w in walks:  # best first
                if len(w.steps) != length:
                    continue
                a = int(g.nodes[g.dst[w.steps[-1]]])
                mass[a] = float(np.logaddexp(mass[a], w.log_prob)) if a in mass else w.log_prob
                if a not in paths or w.log_prob > paths[a].s_topo:
                    paths[a] = self._path(g, w.steps, w.log_prob)
        return LengthAnswers(length, mass, paths)

    def _beam(self, topic: int, hop) -> tuple[WalkGraph, list]:
        """:func:`beam_walk` from ``topic`` with the shared step cache (bounded)."""
        if len(self._steps) > self.step_cache_size:
            self._steps.clear()  # bounded: a long-running service stays flat
        return beam_walk(
            self.kg, topic, *hop, self.max_hops, self.beam_width, self.both_directions,
            self.max_fanout, step_cache=self._steps,
        )  # fmt: skip

    def _retrieve_anchors(self, question: Question, topics, unknown, k: int) -> RetrievalResult:
        """Several anchors (module doc): each walks with its view; the join ranks."""
        hops = [
            self.model.hop_log_probs(
                anchor_view(question.text, t.label, question.topic_entities), t.entity
            )
            for t in topics
        ]
        candidates: set[int] = set()
        for topic, hop in zip(topics, hops, strict=True):
            g, walks = self._beam(topic.entity, hop)
            candidates |= set(answers_of(g, walks)) if walks else set()
        if not candidates:
            return self._fall_back(question, topics, unknown)
        walks = [(t.entity, *hop) for t, hop in zip(topics, hops, strict=True)]
        joined = rank_jointly(self.kg, walks, candidates, self.max_hops, self.both_directions)
        return self._joined_result(question, joined, topics, unknown, k)

    def _retrieve_anchors_on_graphs(
        self, question: Question, topics, unknown, k: int
    ) -> RetrievalResult:
        """Several anchors under the GAT split: each anchor's view scored on its walk graph
        (the node states decide the shares), its beam's answers the candidates, each
        anchor's exact support over its graph joined (module doc)."""
        scored, candidates = [], set()
        for t in topics:
            g = self._walk_graph(t.entity)
            if g.num_steps == 0:
                continue
            view = anchor_view(question.text, t.label, question.topic_entities)
            step_lp, stop_lp = self.model.log_probs(g, view)
            walks = beam_search(g, step_lp, stop_lp, self.max_hops, self.beam_width)
            candidates |= set(answers_of(g, walks))
            scored.append((g, step_lp, stop_lp))
        if not candidates:
            return self._fall_back(question, topics, unknown)
        joined = rank_jointly_on_graphs(scored, candidates, self.max_hops)
        return self._joined_result(question, joined, topics, unknown, k)

    def _joined_result(self, question: Question, joined, topics, unknown, k: int):
        """The retrieval result of a join: answers by their joined score (+ S_sem), with the
        best path from every supporting anchor of the first ``k``."""
        sem = self._semantic(question, [j.entity for j in joined])
        ranked, support_paths = [], {}
        for j, s in zip(joined, sem.tolist(), strict=True):
            final = j.score + self.lambda_q * s
            paths = [self._anchor_path(p, final, s) for p in j.paths]
            support_paths[j.entity] = paths
            ranked.append(RankedAnswer(j.entity, self.kg.entities.label(j.entity), final, paths[0]))
        last = {t.entity for t in topics} if self.anchor_answers == "last" else set()
        ranked.sort(key=lambda x: (x.entity in last, -x.score, x.entity))
        paths = [p for r in ranked[:k] for p in support_paths[r.entity]]
        return RetrievalResult(self.kg, triples_of_paths(paths), ranked, paths, topics, unknown)

    def _semantic(self, question: Question, answers: list[int]) -> np.ndarray:
        """``[len(answers)]`` S_sem of Eq. (17) (zeros when ``lambda_q`` is 0)."""
        if not self.lambda_q:
            return np.zeros(len(answers))
        q_vec = self.embedder.encode([question.text], kind="query")[0]
        a_vec = self.embedder.encode([self.kg.entity_name(a) for a in answers], "passage")
        return a_vec @ q_vec  # unit-norm rows, so the dot is the cosine

    def _anchor_path(self, p: AnchorPath, final: float, sem: float) -> RetrievedPath:
        rels = tuple(int(self.kg.triples_np[t, 1]) for t in p.triple_ids)
        return RetrievedPath(p.entities, p.triple_ids, rels, p.log_prob, 0.0, sem, final)

    def _walk_graph(self, topic: int) -> WalkGraph:
        """The topic's walk graph, kept for the next question on the same topic (bounded)."""
        g = self._graphs.get(topic)
        if g is None:
            if len(self._graphs) >= self.graph_cache_size:
                self._graphs.pop(next(iter(self._graphs)))  # oldest first
            g = walk_graph(self.kg, topic, self.max_hops, self.max_fanout, self.both_directions)
            self._graphs[topic] = g
        return g

    def _path(self, g: WalkGraph, steps: tuple[int, ...], log_prob: float) -> RetrievedPath:
        entities = (int(g.nodes[0]), *(int(g.nodes[g.dst[e]]) for e in steps))
        tids = tuple(int(g.triple_ids[e]) for e in steps)
        rels = tuple(int(self.kg.triples_np[t, 1]) for t in tids)
        return RetrievedPath(entities, tids, rels, log_prob)

    def _fall_back(self, question, topics, unknown) -> RetrievalResult:
        if self.fallback is None:
            return RetrievalResult(self.kg, topics=topics, unknown_topics=unknown)
        res = self.fallback.retrieve(question)
        return dataclasses.replace(res, extra={**res.extra, "fallback": self.fallback.name})


def length_log_probs(stop_logp: np.ndarray, max_hops: int) -> np.ndarray:
    """``[max_hops]`` log P(|p| = h), h = 1..max_hops, of a walk that stops after hop h with
    ``P_h(stop)`` = ``exp(stop_logp[h])`` (entry 0 unused: the walk takes one step at least)
    and always after ``max_hops``:

        P(|p| = h) = prod_{1 <= s < h} (1 - P_s(stop)) * P_h(stop),   P_L(stop) := 1
    """
    stop = np.asarray(stop_logp, dtype=np.float64)[1:max_hops]
    go = np.log1p(-np.exp(np.minimum(stop, -1e-12)))  # log (1 - P_s(stop)), finite
    before = np.concatenate([[0.0], np.cumsum(go)])  # [max_hops] log P(no stop before h)
    return before + np.concatenate([stop, [0.0]])


def learned_these_answers(model_dir: Path, same_vocabulary: bool) -> bool:
    """Whether the walk in ``model_dir`` was trained on the answered questions of the KG it
    now walks: its relation vocabulary is the KG's (``same_vocabulary``) and it was neither
    adapted nor self-trained there without answers (``kg_chains_*`` / ``self_labels_*``
    datasets).  The shipped walk and one trained on another graph: ``False``."""
    return same_vocabulary and not model_dir.parent.name.startswith(ADAPTED_PREFIXES)


def same_relations(meta: dict, kg: KnowledgeGraph) -> bool:
    """Whether the walk whose metadata is ``meta`` (``qgat.json``) was trained on ``kg`` (its
    own part): the same graph, or the same relation vocabulary."""
    return meta.get("kg_fingerprint") == kg.fingerprint() or meta.get("relations") == list(
        kg.relations.labels
    )


def by_length_in_effect(by_length: bool | str, model_dir: str | os.PathLike, kg) -> bool:
    """What ``retriever.by_length`` comes to for the walk in ``model_dir`` on ``kg``
    (:func:`build_learned`'s resolution of ``auto``), read from the walk's metadata only."""
    meta = read_walk_meta(model_dir)
    return _resolve_by_length(by_length, Path(model_dir), same_relations(meta, kg.own_part()))


def _resolve_by_length(by_length: bool | str, model_dir: Path, same_vocabulary: bool) -> bool:
    """``retriever.by_length``: ``auto`` on unless the walk learned this KG's answers."""
    if by_length == "auto":
        return not learned_these_answers(model_dir, same_vocabulary)
    if not isinstance(by_length, bool):
        raise ValueError(f"retriever.by_length must be auto, true or false, got {by_length!r}")
    return by_length


def build_learned(
    kg: KnowledgeGraph,
    embedder: SentenceEncoder,
    model_dir: str | os.PathLike | None = None,
    relation_embeddings: np.ndarray | None = None,
    max_hops: int = 3,
    k_top: int | str = 20,
    k_max: int = 200,
    beam_width: int = 64,
    max_fanout: int | None = None,
    both_directions: bool = True,
    lambda_q: float = 0.0,
    fallback: str = "semantic",
    anchors: str = "join",
    rerank: str | None = None,
    rerank_weight: float | None = None,
    by_length: bool | str = "auto",
    anchor_answers: str = "last",
) -> WalkRetriever:
    """``retriever=learned``: the trained walk model from ``model_dir`` (a ``qgat-*/``
    artifact) on ``kg``.  ``relation_embeddings`` are ``kg``'s TransE e_r (after SCOS); on a
    graph the model was not trained on they may be ``None`` (the TransE part is zero).
    ``fallback``: ``"semantic"`` (the "w/o TAIMR" retriever) or ``"none"``. ``anchors``:
    ``"join"`` (several topic entities: each walks with its view, answers by the join) or
    ``"union"`` (every topic walks with the whole question, answers merged by logsumexp: the
    walk before issue 28, an ablation; ``+retriever.anchors=union``). ``rerank``: the answer
    GAT that re-scores the walk's candidates (issue 28 §3): ``"default"`` (the one trained on
    ``model_dir``'s candidates with the default settings) or a ``rerank-*`` directory;
    ``None`` (the default): none. ``rerank_weight``: omega (``None``: the artifact's).
    ``by_length`` and ``anchor_answers``: :class:`WalkRetriever`'s; ``by_length="auto"``:
    on for a walk not trained on this KG's answered questions (the shipped walk, one trained
    on another graph, or one adapted or self-trained here without answers, ``kg_chains_*`` /
    ``self_labels_*``), off for the KG's own walk (chosen on val: taimr.md item 30).

    The walk takes every triple in both directions by itself, so it walks ``kg``'s own part
    (:meth:`~lokg.kg.graph.KnowledgeGraph.own_part`): an added inverse edge
    (``data.source.inverse``) would be a second copy of a backward step, counted twice in
    ``log P(a | q)``. The fallback, which follows out-edges, searches the whole ``kg``."""
    if model_dir is None:
        raise ValueError(
            "retriever=learned needs a trained walk model: run "
            "`python train.py experiment=train_walk data=...` first"
        )
    if fallback not in ("semantic", "none"):
        raise ValueError(f"retriever.fallback must be 'semantic' or 'none', got {fallback!r}")
    net, meta, lm = load_walk_network(Path(model_dir).resolve())
    a = recorded_architecture(meta)
    whole, kg = kg, kg.own_part()
    if relation_embeddings is not None:
        relation_embeddings = relation_embeddings[: kg.num_relations]
    # e_r for this graph: the free table the model learned applies only to the relation
    # vocabulary it was trained on (per-question subgraphs share it); TransE's must have the
    # expected shape; anything else (another KG) leaves the TransE part zero
    transe = None
    same = same_relations(meta, kg)
    by_length = _resolve_by_length(by_length, Path(model_dir), same)
    if a["relation_source"] == "learned" and same:
        transe = np.load(Path(model_dir) / RELATION_TABLE_FILE)
    elif a["relation_source"] == "fixed" and relation_embeddings is not None:
        shape_ok = relation_embeddings.shape == (kg.num_relations, a["transe_dim"])
        transe = relation_embeddings if shape_ok else None
    model = WalkModel(
        net, kg, embedder, transe, a["transe_dim"], a["name_dim"] > 0, lm, a["both_directions"],
        a["vocabulary_scope"],
    )  # fmt: skip
    fb = None
    if fallback == "semantic":
        from lokg.taimr.retriever import SemanticRetriever

        fb = SemanticRetriever(whole, embedder, max_hops)
    reranker = None
    if rerank is not None:
        reranker = _reranker(Path(model_dir), rerank, rerank_weight, embedder, a)
    return WalkRetriever(
        kg, embedder, model, max_hops, k_top, k_max, beam_width, max_fanout,
        both_directions, lambda_q, fb, anchors=anchors, reranker=reranker, by_length=by_length,
        anchor_answers=anchor_answers,
    )  # fmt: skip


#: (directory, omega, embedder) -> its Reranker: a per-question-subgraph dataset builds a
#: retriever per question, and the network, its settings and its name cache are shared
_RERANKERS: dict[tuple, Reranker] = {}


def _reranker(model_dir: Path, rerank: str, weight: float | None, embedder, walk) -> Reranker:
    """The answer GAT named by ``retriever.rerank`` (:func:`build_learned`;
    :func:`~lokg.taimr.walk.rerank.resolve_rerank`), checked against the walk it re-scores
    (``walk``: the recorded architecture of the walk model)."""
    directory = resolve_rerank(model_dir, rerank).resolve()
    key = (directory, weight, id(embedder))
    if key in _RERANKERS:
        return _RERANKERS[key]
    net, meta = load_answer_gat(directory)
    a = meta["architecture"]
    rel_dim = walk["transe_dim"] + walk["name_dim"] + 1
    names = embedder.output_dim
    for what, want, got in (
        ("the walk's TransE size", walk["transe_dim"], a["transe_dim"]),
        ("the walk's relation features", rel_dim, a["rel_dim"]),
        ("the embedder's size + structure", None if names is None else names + STRUCTURE_DIM,
         a["node_dim"]),
    ):  # fmt: skip
        if want is not None and want != got:
            raise ValueError(
                f"{directory}: the answer GAT expects {got} for {what}, this run has {want}; "
                "train it on this walk (`python train.py experiment=train_rerank data=...`)"
            )
    trained_on = Path(meta.get("walk_dir", "")).name
    if trained_on != Path(model_dir).name:
        log.warning(
            "%s was trained on the candidates of %s, not of %s", directory.name, trained_on,
            Path(model_dir).name,
        )  # fmt: skip
    if len(_RERANKERS) >= 8:
        _RERANKERS.clear()
    _RERANKERS[key] = Reranker(
        net, embedder, a["weight"] if weight is None else float(weight), a["max_candidates"],
        a["max_neighbours"], a["transe_dim"], a["use_transe"],
    )  # fmt: skip
    return _RERANKERS[key]
