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

import os
from pathlib import Path

import numpy as np

from lokg.embed import SentenceEncoder
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
from lokg.taimr.linking import LinkedChain, RelationLinker
from lokg.taimr.path_cache import PathCache
from lokg.typing import Question

__all__ = ["SemanticRetriever", "TAIMRRetriever"]

RELATION_LINKING = ("chain", "off")
K_TOP_UNITS = ("paths", "answers")


class TAIMRRetriever(Retriever):
    """Topology-aware multi-hop retrieval with late semantic fusion.

    Args:
        kg: the graph searched.
        encoder: sentence encoder for S_sem (Eq. (17)); E5 in the paper.
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
        encoder: SentenceEncoder,
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
        self.encoder = encoder
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
        """Beam search on S_topo (+ lambda_rel * per-hop linking) up to ``max_hops``.

        Returns every path kept by the beam at any depth (k = 1..L), with S_topo and S_link.

        On a graph with added inverse edges (``data.source.inverse``) an edge and the one it
        reverses state one fact, and a path never walks a fact straight back (``v -> u -> v``
        over it), as the learned walk never walks a triple back: that step would only return
        to the node it left, and make every topic an answer of its own 2-hop paths.
        """
        cache = self.cache
        statement = self.kg.statement_ids if self.kg.has_added_inverses else None
        # beam item: (rank, s_topo, s_hop, entities, triple ids, relations)
        beam: list[tuple[float, float, float, tuple, tuple, tuple]] = [
            (0.0, 0.0, 0.0, (topic,), (), ())
        ]
        kept: list[tuple[float, float, float, tuple, tuple, tuple]] = []
        w = self.beam_width
        for hop in range(self.max_hops):
            allowed = self._allowed(chain, hop)
            row = None if chain is None else chain.hop_log_probs(hop)
            # candidate segments as arrays: (beam index, relation, log P_hop, tids, tails, inc)
            parts = []
            for bi, item in enumerate(beam):
                v = item[3][-1]
                back = statement[item[4][-1]] if statement is not None and item[4] else None
                for r in cache.relations_of(v).tolist():
                    if allowed is not None and r not in allowed:
                        continue
                    lp = 0.0 if chain is None else (-self._uniform if row is None else row[r])
                    e_tids, e_tails, e_scores = cache.get(v, r)
                    if back is not None:  # not the fact just walked, back (docstring)
                        keep = statement[e_tids] != back
                        if not keep.all():
                            e_tids, e_tails, e_scores = e_tids[keep], e_tails[keep], e_scores[keep]
                    # entries are sorted best first and the rank offset is the same for the
                    # whole entry, so at most beam_width of them can survive this hop
                    # (w = None: all, e[:None] is e)
                    parts.append((bi, r, float(lp), e_tids[:w], e_tails[:w], e_scores[:w]))
            if not parts:
                break
            sizes = [len(p[3]) for p in parts]
            b_idx = np.repeat([p[0] for p in parts], sizes)
            rel = np.repeat([p[1] for p in parts], sizes)
            s_topo = np.array([it[1] for it in beam])[b_idx] + np.concatenate([p[5] for p in parts])
            s_hop = np.array([it[2] for it in beam])[b_idx] + np.repeat(
                [p[2] for p in parts], sizes
            )
            tid = np.concatenate([p[3] for p in parts])
            tail = np.concatenate([p[4] for p in parts])
            rank = s_topo + self.lambda_rel * s_hop
            top = np.argsort(-rank, kind="stable")[:w]  # ties keep expansion order
            beam = [
                (
                    float(rank[i]),
                    float(s_topo[i]),
                    float(s_hop[i]),
                    (*beam[b_idx[i]][3], int(tail[i])),
                    (*beam[b_idx[i]][4], int(tid[i])),
                    (*beam[b_idx[i]][5], int(rel[i])),
                )
                for i in top.tolist()
            ]
            kept.extend(beam)
        paths = []
        for _, s_topo, _, ents, tids, rels in kept:
            s_link = 0.0 if chain is None else chain.chain_log_prob(rels, self.knn_weight)
            paths.append(RetrievedPath(ents, tids, rels, s_topo, s_link))
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
        q_vec = self.encoder.encode([text], kind="query")[0]
        a_vec = self.encoder.encode([self.kg.entity_name(a) for a in answers], kind="passage")
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
        path = self._cache_file(directory)
        if path is None or not path.is_file():
            return False
        self.cache.load(path)
        return True

    def save_cache(self, directory: str | os.PathLike) -> Path | None:
        """Write the path cache (when it holds entries) as ``<directory>/<fingerprint>.npz``."""
        path = self._cache_file(directory)
        if path is None or not self.cache.entries:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        self.cache.save(path)
        return path


class SemanticRetriever(Retriever):
    """``retriever=semantic`` ("w/o TAIMR"): plain semantic-similarity retrieval.

    Triples within ``max_hops`` out-hops of the topic entities (at most ``pool_limit``,
    breadth first) are verbalised "head relation tail" and ranked by cosine similarity to
    the question; the top ``k_top`` form the candidate set, and answers are the tails of the
    ranked triples (first occurrence), topic entities excluded.

    Args:
        kg, encoder: as for :class:`TAIMRRetriever`.
        max_hops: neighbourhood depth (default 3, as TAIMR's L).
        k_top: triples returned (20).
        pool_limit: candidate triples considered (default 200, KAPING's pool in Table 4).
    """

    name = "semantic"

    def __init__(
        self,
        kg: KnowledgeGraph,
        encoder: SentenceEncoder,
        max_hops: int = 3,
        k_top: int = 20,
        pool_limit: int = 200,
    ):
        check_counts(max_hops=max_hops, k_top=k_top, pool_limit=pool_limit)
        self.kg = kg
        self.encoder = encoder
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
        q_vec = self.encoder.encode([question.text], kind="query")[0]
        t_vec = self.encoder.encode([self.verbalise(t) for t in pool], kind="passage")
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
