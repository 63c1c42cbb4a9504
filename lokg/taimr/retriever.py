"""TAIMR retrieval (Sec. 2.5): topology beam search (Eq. (16)), best path per answer, late
semantic fusion (Eq. (17)-(18)); and the "w/o TAIMR" semantic-similarity fallback.

Scores of a path ``p = [v_0 = q_e, v_1, ..., v_k]`` with relations ``r_0..r_{k-1}``:

* ``S_topo(p) = sum_i log alpha(v_i -> v_{i+1} | r_i) + lambda_topo * sum_{i>=1} log mu(v_i)``
  (Eq. (16)), accumulated from :class:`~lokg.taimr.path_cache.PathCache` increments.
* ``S_link(p)`` (beyond the paper, ``lambda_rel = 0`` turns it off): how well the relation
  chain matches the relations the question names (:mod:`lokg.taimr.linking`).  The paper
  picks cache keys (head, relation) by relation linking but does not say how linking
  enters the score; here it ranks the beam together with S_topo:
  ``S_path = S_topo + lambda_rel * S_link``.
* ``S_sem(q, a) = cos(enc(q), enc(a))`` (Eq. (17)), added only for the final ranking:
  ``S_final(a | q) = S_path(p_a) + lambda_q * S_sem(q, a)`` (Eq. (18)), where ``p_a`` is
  the best-scoring (by S_path) path ending at ``a``.

The top ``k_top`` paths are returned (``k_top_unit="paths"``, the paper's "returns the top 20
paths": every kept path ranked by its S_final, several may end at one answer) or the best path
of each of the top ``k_top`` answers (``"answers"``, ours: one path per answer); their triples
form the candidate set passed to ITTC.  ``beam_width=None`` keeps every path at every hop (the
paper names no pruning).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from itertools import chain as chain_all  # `chain` is a LinkedChain here
from pathlib import Path

import numpy as np

from lokg.embed import SentenceEncoder
from lokg.errors import CorruptArtifact
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.neighbourhood import bfs_triples
from lokg.retrieval import (
    RankedAnswer,
    RetrievalResult,
    RetrievedPath,
    Retriever,
    check_counts,
    resolve_topics,
    triples_of_paths,
)
from lokg.taimr.beam import BeamPath, Steps, StepSource, search_paths
from lokg.taimr.linking import LinkedChain, RelationLinker
from lokg.taimr.path_cache import PathCache
from lokg.typing import Question

log = logging.getLogger(__name__)

__all__ = ["SemanticRetriever", "TAIMRRetriever", "TopoPath", "TopoSteps"]

RELATION_LINKING = ("chain", "off")
K_TOP_UNITS = ("paths", "answers")


class TAIMRRetriever(Retriever):
    """Topology-aware multi-hop retrieval with late semantic fusion.

    Args:
        kg: the graph searched.
        embedder: sentence encoder for S_sem (Eq. (17)); E5 in the paper.
        cache: the (head, relation) path cache holding the Eq. (16) increments.
        linker: relation linker (required when ``relation_linking="chain"``).
        max_hops: L (3).
        k_top: K_top paths returned (20).
        k_top_unit: ``"paths"``: the top ``k_top`` paths by S_final (the paper); ``"answers"``:
            the best path of each of the top ``k_top`` answers.
        beam_width: paths kept per hop during the search (``None``: all, the paper).
        rels_per_hop: linked relations expanded per hop, besides those of the chain prior.
        lambda_q: weight of S_sem in Eq. (18) (1.0).
        lambda_rel: weight of the relation-linking score (1.0; 0 = the paper's S_topo only).
        knn_weight: weight of the training-question chain prior inside S_link (0.9).
        relation_linking: ``"chain"`` (link relations per hop and restrict expansion to the
            linked (head, relation) keys) or ``"off"`` (expand every relation, S_link = 0).
    """

    name = "taimr"

    def __init__(
        self,
        kg: KnowledgeGraph,
        embedder: SentenceEncoder,
        cache: PathCache,
        *,
        linker: RelationLinker | None = None,
        max_hops: int = 3,
        k_top: int = 20,
        beam_width: int | None = None,
        rels_per_hop: int = 3,
        lambda_q: float = 1.0,
        lambda_rel: float = 1.0,
        knn_weight: float = 0.9,
        relation_linking: str = "chain",
        k_top_unit: str = "paths",
    ):
        if relation_linking not in RELATION_LINKING:
            raise ValueError(
                f"retriever.relation_linking must be one of {RELATION_LINKING}, "
                f"got {relation_linking!r}"
            )
        if relation_linking == "chain" and linker is None:
            raise ValueError("retriever.relation_linking='chain' needs a RelationLinker")
        if k_top_unit not in K_TOP_UNITS:
            raise ValueError(
                f"retriever.k_top_unit must be one of {K_TOP_UNITS}, got {k_top_unit!r}"
            )
        check_counts(
            max_hops=max_hops,
            k_top=k_top,
            beam_width=1 if beam_width is None else beam_width,
            rels_per_hop=rels_per_hop,
        )
        if not 0.0 <= knn_weight <= 1.0:
            raise ValueError(f"retriever.knn_weight must be in [0, 1], got {knn_weight}")
        self.kg = kg
        self.embedder = embedder
        self.cache = cache
        self.linker = linker
        self.max_hops = max_hops
        self.k_top = k_top
        self.beam_width = beam_width
        self.k_top_unit = k_top_unit
        self.rels_per_hop = rels_per_hop
        self.lambda_q = lambda_q
        self.lambda_rel = lambda_rel
        self.knn_weight = knn_weight
        self.relation_linking = relation_linking
        self._uniform = float(np.log(max(kg.num_relations, 1)))

    # ------------------------------------------------------------------ search
    def _allowed(self, chain: LinkedChain | None, hop: int) -> set[int] | None:
        """The relations hop ``hop`` may expand (``None``: all). On a graph with added
        inverse edges (``data.source.inverse``) a linked relation allows its inverse partner
        too: the question names the relation, the graph decides the direction (a person's
        films are reached by ``directed_by (inverse)`` when the KG stores film -> person)."""
        if chain is None:
            return None
        row = chain.hop_log_probs(hop)
        from_prior = {c[hop] for c in chain.chain_probs if len(c) > hop}
        if row is None:
            allowed = from_prior
        else:
            allowed = set(chain.top_relations(hop, self.rels_per_hop).tolist()) | from_prior
        if allowed and self.kg.has_added_inverses:
            partner = self.kg.inverse_partner
            allowed |= {int(partner[r]) for r in allowed if partner[r] >= 0}
        return allowed or None

    def search(self, topic: int, chain: LinkedChain | None) -> list[RetrievedPath]:
        """Beam search on S_topo (+ lambda_rel * per-hop linking) up to ``max_hops``
        (:func:`~lokg.taimr.beam.search_paths` over :class:`TopoSteps`).

        Returns every path kept by the beam at any depth (k = 1..L), with S_topo and S_link,
        by depth, then best first (ties in expansion order).

        On a graph with added inverse edges (``data.source.inverse``) an edge and the one it
        reverses state one fact, and a path never walks a fact straight back (``v -> u -> v``
        over it), as the learned walk never walks a triple back: that step would only return
        to the node it left, and make every topic an answer of its own 2-hop paths.
        """
        start = TopoPath(0.0, topic)
        source = TopoSteps(self, chain)
        kept = search_paths(source, start, max_hops=self.max_hops, width=self.beam_width)
        # each path's relations and entities, read from the triples it walks in one lookup
        lengths = [len(p.steps) for p in kept]
        walked = np.fromiter(chain_all.from_iterable(p.steps for p in kept), np.int64, sum(lengths))
        hrt = self.cache.kg.triples_np[walked]  # the graph the cache's segments walk
        rel_of, tail_of = hrt[:, 1].tolist(), hrt[:, 2].tolist()
        paths, at = [], 0
        for p, n in zip(kept, lengths, strict=True):
            rels = tuple(rel_of[at : at + n])
            s_link = 0.0 if chain is None else chain.chain_log_prob(rels, self.knn_weight)
            entities = (topic, *tail_of[at : at + n])
            paths.append(RetrievedPath(entities, p.steps, rels, p.s_topo, s_link))
            at += n
        return paths

    # ------------------------------------------------------------------ API
    def retrieve(self, question: Question) -> RetrievalResult:
        """Rank candidate answers by S_final (Eq. (18)) and return the top-K_top paths."""
        text = question.text
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        best: dict[int, RetrievedPath] = {}
        every: list[RetrievedPath] = []  # k_top_unit="paths" ranks them all
        for topic in topics:
            chain = None
            if self.relation_linking == "chain":
                assert self.linker is not None
                chain = self.linker.link(text, topic.label)
            for p in self.search(topic.entity, chain):
                if self.k_top_unit == "paths":
                    every.append(p)
                s_path = p.s_topo + self.lambda_rel * p.s_link
                cur = best.get(p.answer)
                if cur is None or s_path > cur.s_topo + self.lambda_rel * cur.s_link:
                    best[p.answer] = p
        if not best:
            return RetrievalResult(self.kg, topics=topics, unknown_topics=unknown)
        answers = list(best)
        q_vec = self.embedder.encode([text], kind="query")[0]
        a_vec = self.embedder.encode([self.kg.entity_name(a) for a in answers], kind="passage")
        s_sem = a_vec @ q_vec  # Eq. (17): both unit-norm, so the dot is the cosine
        sem_of = dict(zip(answers, s_sem.tolist(), strict=True))
        ranked = []
        for a in answers:
            p = self._fused(best[a], sem_of[a])
            ranked.append(RankedAnswer(a, self.kg.entities.label(a), p.s_final, p))
        ranked.sort(key=lambda x: (-x.score, x.entity))
        if self.k_top_unit == "paths":  # the paper: the top K_top paths by S_final (Eq. (18))
            fused = [self._fused(p, sem_of[p.answer]) for p in every]
            order = sorted(range(len(fused)), key=lambda i: (-fused[i].s_final, i))
            paths = [fused[i] for i in order[: self.k_top]]
        else:  # ours: the best path of each of the top K_top answers
            paths = [r.path for r in ranked[: self.k_top]]
        return RetrievalResult(self.kg, triples_of_paths(paths), ranked, paths, topics, unknown)

    def _fused(self, p: RetrievedPath, sem: float) -> RetrievedPath:
        """``p`` with S_sem and S_final = S_path + lambda_q * S_sem (Eq. (18)) filled in."""
        final = p.s_topo + self.lambda_rel * p.s_link + self.lambda_q * sem
        return RetrievedPath(p.entities, p.triple_ids, p.relations, p.s_topo, p.s_link, sem, final)

    # ------------------------------------------------------------------ cache
    @property
    def cache_key(self) -> str | None:
        """The path cache's fingerprint (graph, attention, mu, lambda_topo)."""
        return self.cache.fingerprint

    def _cache_file(self, directory: str | os.PathLike) -> Path | None:
        key = self.cache_key
        return None if key is None else Path(directory) / f"{key}.npz"

    def load_cache(self, directory: str | os.PathLike) -> bool:
        """Merge the saved path cache; one that fails its check is rebuilt (one WARNING:
        its entries are computed again as they are reached, and saved over it)."""
        path = self._cache_file(directory)
        if path is None or not path.is_file():
            return False
        try:
            self.cache.load(path)
        except CorruptArtifact as err:
            log.warning("path cache %s: %s; 1 retriever cache rebuilt", path, err.problem)
            return False
        return True

    def save_cache(self, directory: str | os.PathLike) -> Path | None:
        """Write the path cache (when it holds entries) as ``<directory>/<fingerprint>.npz``."""
        path = self._cache_file(directory)
        if path is None or not self.cache.entries:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        self.cache.save(path)
        return path


@dataclass(frozen=True, slots=True)
class TopoPath(BeamPath):
    """A path of TAIMR's beam (:class:`TopoSteps`), ranked by
    ``score = S_topo + lambda_rel * s_hop``; ``node`` is an entity, ``steps`` triple ids.

    Attributes:
        s_topo: S_topo of Eq. (16) so far.
        s_hop: the sum of its hops' linking log-probabilities ``log P_t(r_t | q)`` (0 when
            linking is off; ``-log |R|`` at a hop the linker has no distribution for).
    """

    s_topo: float = 0.0
    s_hop: float = 0.0


class TopoSteps(StepSource[TopoPath, TopoPath]):
    """TAIMR's steps (:meth:`TAIMRRetriever.search`): from a path's node, the cached segments
    (:class:`~lokg.taimr.path_cache.PathCache`) of each relation hop ``t`` allows, relations
    in id order, segments best first; a path never walks a fact straight back on a graph
    with added inverses; stopping is free, so every kept path of every depth is a result.

    A step's id is its triple id.  The source reads at most ``width`` segments of an entry:
    they are sorted best first and share the rank offset of the entry, so no later one could
    be among the hop's ``width`` best.
    """

    def __init__(self, retriever: TAIMRRetriever, chain: LinkedChain | None):
        self.retriever = retriever
        self.chain = chain
        kg = retriever.kg
        self.statement = kg.statement_ids if kg.has_added_inverses else None
        self._hop = -1
        self._allowed: set[int] | None = None
        self._row: np.ndarray | None = None

    def _at(self, hop: int) -> None:
        """The relations hop ``hop`` allows and its linking log-probabilities, once a hop."""
        if hop != self._hop:
            self._hop = hop
            self._allowed = self.retriever._allowed(self.chain, hop)
            self._row = None if self.chain is None else self.chain.hop_log_probs(hop)

    def expand(self, path: TopoPath, hop: int, width: int | None) -> Steps | None:
        self._at(hop)
        cache, chain, allowed, row = self.retriever.cache, self.chain, self._allowed, self._row
        statement = self.statement
        back = statement[path.steps[-1]] if statement is not None and path.steps else None
        hop_lp: list[float] = []
        tids: list[np.ndarray] = []
        tails: list[np.ndarray] = []
        inc: list[np.ndarray] = []
        for r in cache.relations_of(path.node).tolist():
            if allowed is not None and r not in allowed:
                continue
            lp = 0.0 if chain is None else (-self.retriever._uniform if row is None else row[r])
            e_tids, e_tails, e_scores = cache.get(path.node, r)
            if back is not None:  # not the fact just walked, back (TAIMRRetriever.search)
                keep = statement[e_tids] != back
                if not keep.all():
                    e_tids, e_tails, e_scores = e_tids[keep], e_tails[keep], e_scores[keep]
            if len(e_tids):
                hop_lp.append(float(lp))
                tids.append(e_tids[:width])  # (class docstring; width None: e[:None] is e)
                tails.append(e_tails[:width])
                inc.append(e_scores[:width])
        if not tids:
            return None
        s_topo = np.float64(path.s_topo) + (inc[0] if len(inc) == 1 else np.concatenate(inc))
        s_hop: np.ndarray | float
        if hop_lp.count(hop_lp[0]) == len(hop_lp):  # one linking score for all (one float)
            s_hop = path.s_hop + hop_lp[0]
        else:
            s_hop = path.s_hop + np.repeat(hop_lp, [len(t) for t in tids])
        rank = s_topo + self.retriever.lambda_rel * s_hop
        if len(tids) > 1:
            return Steps(rank, np.concatenate(tids), np.concatenate(tails), _Sums(s_topo, s_hop))
        return Steps(rank, tids[0], tails[0], _Sums(s_topo, s_hop))

    def stop(self, path: TopoPath, hop: int) -> float:
        return 0.0

    def take(self, path: TopoPath, steps: Steps, i: int) -> TopoPath:
        sums = steps.extra
        return TopoPath(
            steps.scores.item(i),
            steps.ends.item(i),
            (*path.steps, steps.steps.item(i)),
            sums.s_topo.item(i),
            sums.s_hop if isinstance(sums.s_hop, float) else sums.s_hop.item(i),
        )


@dataclass(frozen=True, slots=True)
class _Sums:
    """The sums of :class:`TopoPath` for each candidate step of one path (``[k]``); the
    linking sum is one float when every candidate has the same."""

    s_topo: np.ndarray
    s_hop: np.ndarray | float


class SemanticRetriever(Retriever):
    """``retriever=semantic`` ("w/o TAIMR"): plain semantic-similarity retrieval.

    Triples within ``max_hops`` out-hops of the topic entities (at most ``pool_limit``,
    breadth first) are verbalised "head relation tail" and ranked by cosine similarity to
    the question; the top ``k_top`` form the candidate set, and answers are the tails of the
    ranked triples (first occurrence), topic entities excluded.

    Args:
        kg, embedder: as for :class:`TAIMRRetriever`.
        max_hops: neighbourhood depth (default 3, as TAIMR's L).
        k_top: triples returned (20).
        pool_limit: candidate triples considered (default 200, KAPING's pool in Table 4).
    """

    name = "semantic"

    def __init__(
        self,
        kg: KnowledgeGraph,
        embedder: SentenceEncoder,
        max_hops: int = 3,
        k_top: int = 20,
        pool_limit: int = 200,
    ):
        check_counts(max_hops=max_hops, k_top=k_top, pool_limit=pool_limit)
        self.kg = kg
        self.embedder = embedder
        self.max_hops = max_hops
        self.k_top = k_top
        self.pool_limit = pool_limit

    def verbalise(self, triple_id: int) -> str:
        h, r, t = (int(x) for x in self.kg.triples_np[triple_id])
        return f"{self.kg.entity_name(h)} {self.kg.relation_text(r)} {self.kg.entity_name(t)}"

    def retrieve(self, question: Question) -> RetrievalResult:
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        topic_ids = [t.entity for t in topics]
        pool = bfs_triples(self.kg, topic_ids, self.max_hops, self.pool_limit, direction="out")
        if not pool:
            return RetrievalResult(self.kg, topics=topics, unknown_topics=unknown)
        q_vec = self.embedder.encode([question.text], kind="query")[0]
        t_vec = self.embedder.encode([self.verbalise(t) for t in pool], kind="passage")
        sims = t_vec @ q_vec
        order = np.argsort(-sims, kind="stable")
        answers: dict[int, RankedAnswer] = {}
        paths = []
        for i in order.tolist():
            tid = pool[i]
            h, r, t = (int(x) for x in self.kg.triples_np[tid])
            p = RetrievedPath((h, t), (tid,), (r,), 0.0, 0.0, float(sims[i]), float(sims[i]))
            if len(paths) < self.k_top:
                paths.append(p)
            if t not in answers and t not in topic_ids:
                answers[t] = RankedAnswer(t, self.kg.entities.label(t), float(sims[i]), p)
        return RetrievalResult(
            self.kg, triples_of_paths(paths), list(answers.values()), paths, topics, unknown
        )
