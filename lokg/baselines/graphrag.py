"""GraphRAG (Edge et al., 2024; microsoft/graphrag) on a question's neighbourhood: Leiden
communities, LLM-written community reports, local-search-style answering under B.

Per question:

1. **entity graph**: the topic entities' neighbourhood (breadth first over in- and out-edges,
   ``max_hops`` = 3) cut at ``node_limit`` = 2,000 nodes (Table 4), as an undirected weighted
   graph (parallel edges add weight, self-loops dropped);
2. **communities**: Leiden (``leidenalg`` over ``python-igraph``, modularity, seeded) and,
   like GraphRAG's hierarchical Leiden (``max_cluster_size`` = 10), a community larger than
   ``max_cluster_size`` is partitioned again until it no longer splits (:func:`leiden_communities`);
3. **community reports**: written by the configured LLM from at most ``max_report_triples``
   = 30 of the community's triples (GraphRAG orders a community's edges by combined degree),
   prompt ``prompts/graphrag_report.txt``; each report is generated once and cached on disk,
   keyed by the fingerprint of the graph and of the triples it was written from, together
   with what writing it cost;
4. **local search**: communities ranked by the similarity of their triples to the question
   (sentence encoder), the top ``top_communities`` reports injected as passages under B
   (:func:`lokg.baselines.evidence.encode_passages`), one answering call with
   ``prompts/graphrag_answer.txt`` (the pipeline makes it).

Indexing cost: GraphRAG writes every community's report before any question; here a report is
written when a question first needs it (only the top-ranked communities get one), which is the
same report at a fraction of the calls. A report's recorded cost is charged once per run, to
the first question that uses it (``RetrievalResult.accounting``: counted in calls/q and tok/q,
amortised over the run's questions), and reported separately in ``extra["index"]`` (calls and
tokens, and how many reports were written now or read from the disk cache: a report read from
disk still charges its recorded cost, as a cached LLM call counts as a call).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.neighbourhood import bfs_triples
from lokg.llm.accounting import CallLedger
from lokg.llm.client import ChatClient
from lokg.llm.prompt import prompt_template
from lokg.retrieval import RetrievalResult, Retriever, resolve_topics
from lokg.typing import Question

__all__ = [
    "Community",
    "GraphRAGRetriever",
    "build_graphrag",
    "leiden_communities",
    "neighbourhood_graph",
]

#: bump when the report prompt or the report record changes (part of the cache key)
REPORT_VERSION = 1
REPORT_FILE = "graphrag_report.txt"
LEDGER_KEYS = ("calls", "prompt_tokens", "completion_tokens", "prompt_tokens_cl100k",
               "completion_tokens_cl100k")  # fmt: skip


@dataclass(frozen=True)
class NeighbourhoodGraph:
    """The entity graph of one question.

    Attributes:
        nodes: entity ids, BFS order (at most ``node_limit``).
        triple_ids: the triples with both ends among ``nodes``, BFS order.
    """

    nodes: tuple[int, ...]
    triple_ids: tuple[int, ...]


def neighbourhood_graph(
    kg: KnowledgeGraph, topics: Sequence[int], max_hops: int, node_limit: int
) -> NeighbourhoodGraph:
    """The topics' ``max_hops`` neighbourhood (both directions) cut at ``node_limit`` nodes,
    nodes taken in BFS order (the topics first)."""
    triples = bfs_triples(kg, topics, max_hops, None, "both")
    nodes: dict[int, None] = dict.fromkeys(int(t) for t in topics)
    for t in triples:
        h, _, o = kg.triples_np[t]
        for e in (int(h), int(o)):
            if len(nodes) >= node_limit:
                break
            nodes.setdefault(e, None)
    keep = set(nodes)
    kept = [
        int(t) for t in triples if int(kg.triples_np[t][0]) in keep and int(kg.triples_np[t][2])
        in keep
    ]  # fmt: skip
    return NeighbourhoodGraph(tuple(nodes), tuple(kept))


def leiden_communities(
    num_nodes: int,
    edges: Sequence[tuple[int, int]],
    max_cluster_size: int = 10,
    seed: int = 0,
) -> list[list[int]]:
    """Leiden communities of an undirected multigraph on nodes ``0..num_nodes-1``.

    Parallel edges add weight, self-loops are dropped; modularity partition
    (``leidenalg.ModularityVertexPartition``, seeded). A community with more than
    ``max_cluster_size`` nodes is partitioned again (GraphRAG's hierarchical Leiden keeps the
    leaves) until it no longer splits. Communities are returned largest first, each sorted;
    isolated nodes are communities of their own.
    """
    import igraph
    import leidenalg

    def partition(n: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
        weights: dict[tuple[int, int], float] = {}
        for a, b in pairs:
            if a != b:
                key = (min(a, b), max(a, b))
                weights[key] = weights.get(key, 0.0) + 1.0
        g = igraph.Graph(n=n, edges=list(weights))
        g.es["weight"] = list(weights.values())
        if not weights:
            return [[v] for v in range(n)]
        part = leidenalg.find_partition(
            g, leidenalg.ModularityVertexPartition, weights="weight", seed=seed
        )
        return [sorted(c) for c in part]

    out: list[list[int]] = []
    stack = [(list(range(num_nodes)), list(edges))]
    while stack:
        members, pairs = stack.pop()
        local = {v: i for i, v in enumerate(members)}
        sub = [(local[a], local[b]) for a, b in pairs if a in local and b in local]
        parts = partition(len(members), sub)
        for part in parts:
            comm = [members[i] for i in part]
            if len(comm) > max_cluster_size and len(parts) > 1:
                keep = set(comm)
                stack.append((comm, [(a, b) for a, b in pairs if a in keep and b in keep]))
            else:
                out.append(sorted(comm))
    return sorted(out, key=lambda c: (-len(c), c))


@dataclass(frozen=True)
class Community:
    """One leaf community of a question's entity graph.

    Attributes:
        entities: its entity ids.
        triple_ids: the (at most ``max_report_triples``) triples its report is written from,
            by combined degree of their ends, highest first.
    """

    entities: tuple[int, ...]
    triple_ids: tuple[int, ...]

    def fingerprint(self, kg_fingerprint: str) -> str:
        text = f"{REPORT_VERSION}:{kg_fingerprint}:" + ",".join(map(str, self.triple_ids))
        return hashlib.sha256(text.encode()).hexdigest()[:20]


class GraphRAGRetriever(Retriever):
    """GraphRAG's indexing and local search on a question's neighbourhood (module docstring).

    Args:
        kg: the graph (original vocabulary).
        encoder: sentence encoder ranking communities against the question.
        chat: the chat client writing the reports (the pipeline passes the reader's).
        max_hops: neighbourhood depth (3, as TAIMR's L).
        node_limit: nodes of the entity graph (Table 4: 2,000).
        max_cluster_size: GraphRAG's hierarchical Leiden leaf size (its default 10).
        max_report_triples: triples a report is written from (30).
        top_communities: reports injected per question (best first, cut at B).
        report_max_tokens: generation limit of a report.
        seed: Leiden's seed.
        cache_dir: where reports are cached (``<cache_dir>/graphrag/<kg fingerprint>/``);
            ``None`` keeps them in memory for the run.
    """

    name = "graphrag"

    def __init__(
        self,
        kg: KnowledgeGraph,
        encoder: SentenceEncoder,
        chat: ChatClient,
        max_hops: int = 3,
        node_limit: int = 2000,
        max_cluster_size: int = 10,
        max_report_triples: int = 30,
        top_communities: int = 3,
        report_max_tokens: int = 256,
        seed: int = 0,
        cache_dir: str | os.PathLike | None = None,
    ):
        for key, value in (("max_hops", max_hops), ("node_limit", node_limit),
                           ("max_cluster_size", max_cluster_size),
                           ("max_report_triples", max_report_triples),
                           ("top_communities", top_communities),
                           ("report_max_tokens", report_max_tokens)):  # fmt: skip
            if value < 1:
                raise ValueError(f"retriever.{key} must be >= 1, got {value}")
        self.kg = kg
        self.encoder = encoder
        self.chat = chat
        self.max_hops = max_hops
        self.node_limit = node_limit
        self.max_cluster_size = max_cluster_size
        self.max_report_triples = max_report_triples
        self.top_communities = top_communities
        self.report_max_tokens = report_max_tokens
        self.seed = seed
        self._kg_fingerprint = kg.fingerprint()
        self.report_dir = (
            None if cache_dir is None else Path(cache_dir) / "graphrag" / self._kg_fingerprint
        )
        self._reports: dict[str, dict] = {}  # fingerprint -> {"report", "cost"}
        self._charged: set[str] = set()  # reports whose cost this run has charged

    # ------------------------------------------------------------ persistence
    # The reports live in their own disk cache (``cache_dir``), not in the retriever-cache
    # contract (``cache_key`` stays None): a report is keyed by what it was written from, so
    # one directory serves every run and configuration.
    def _read_report(self, key: str) -> dict | None:
        if key in self._reports:
            return self._reports[key]
        if self.report_dir is not None:
            path = self.report_dir / f"{key}.json"
            if path.is_file():
                self._reports[key] = json.loads(path.read_text("utf-8"))
                return self._reports[key]
        return None

    def _write_report(self, key: str, record: dict) -> None:
        self._reports[key] = record
        if self.report_dir is not None:
            self.report_dir.mkdir(parents=True, exist_ok=True)
            path = self.report_dir / f"{key}.json"
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(record, sort_keys=True), "utf-8")
            os.replace(tmp, path)

    # ------------------------------------------------------------ indexing
    def communities(self, graph: NeighbourhoodGraph) -> list[Community]:
        """Leiden leaf communities of the entity graph, each with its report triples."""
        kg = self.kg
        index = {e: i for i, e in enumerate(graph.nodes)}
        rows = [kg.triples_np[t] for t in graph.triple_ids]
        edges = [(index[int(r[0])], index[int(r[2])]) for r in rows]
        degree = np.zeros(len(graph.nodes), dtype=np.int64)
        for a, b in edges:
            degree[a] += 1
            degree[b] += 1
        out = []
        for members in leiden_communities(
            len(graph.nodes), edges, self.max_cluster_size, self.seed
        ):
            inside = set(members)
            mine = [
                (-(degree[a] + degree[b]), t)
                for (a, b), t in zip(edges, graph.triple_ids, strict=True)
                if a in inside and b in inside
            ]
            if not mine:
                continue  # an isolated node: nothing to report
            chosen = tuple(t for _, t in sorted(mine)[: self.max_report_triples])
            out.append(Community(tuple(graph.nodes[i] for i in members), chosen))
        return out

    def community_text(self, community: Community) -> str:
        lines = []
        for t in community.triple_ids:
            s, r, o = (int(x) for x in self.kg.triples_np[t])
            rel = self.kg.relations.label(r).replace("_", " ")
            lines.append(f"({self.kg.entity_name(s)}, {rel}, {self.kg.entity_name(o)})")
        return "\n".join(lines)

    def report(self, community: Community) -> tuple[str, dict, bool]:
        """(report, its recorded cost, whether it was written now); cached by fingerprint."""
        key = community.fingerprint(self._kg_fingerprint)
        cached = self._read_report(key)
        if cached is not None:
            return cached["report"], cached["cost"], False
        ledger = CallLedger()
        prompt = prompt_template(REPORT_FILE).substitute(triples=self.community_text(community))
        response = self.chat.chat(
            [{"role": "user", "content": prompt}], ledger=ledger, max_tokens=self.report_max_tokens
        )
        cost = {k: v for k, v in ledger.as_dict().items() if k in LEDGER_KEYS}
        self._write_report(key, {"report": response.text.strip(), "cost": cost,
                                 "triples": list(community.triple_ids)})  # fmt: skip
        return response.text.strip(), cost, True

    # ------------------------------------------------------------ local search
    def retrieve(self, question: Question) -> RetrievalResult:
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        graph = neighbourhood_graph(
            self.kg, [t.entity for t in topics], self.max_hops, self.node_limit
        )
        communities = self.communities(graph) if graph.triple_ids else []
        index = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                 "reports_written": 0, "reports_from_cache": 0}  # fmt: skip
        accounting: dict = {}
        passages, used = [], []
        if communities:
            q = self.encoder.encode([question.text], kind="query")[0]
            texts = [self.community_text(c) for c in communities]
            sims = self.encoder.encode(texts, kind="passage") @ q  # [C]
            for i in np.argsort(-sims, kind="stable")[: self.top_communities].tolist():
                c = communities[i]
                text, cost, fresh = self.report(c)
                index["reports_written" if fresh else "reports_from_cache"] += 1
                key = c.fingerprint(self._kg_fingerprint)
                if key not in self._charged:  # charged once per run: amortised
                    self._charged.add(key)
                    for k, v in cost.items():
                        accounting[k] = accounting.get(k, 0) + v
                    accounting["cached_calls"] = accounting.get("cached_calls", 0) + int(not fresh)
                    for k in ("calls", "prompt_tokens", "completion_tokens"):
                        index[k] += int(cost.get(k, 0))
                passages.append(text)
                used.append(c)
        triple_ids = list(dict.fromkeys(t for c in used for t in c.triple_ids))
        extra = {"nodes": len(graph.nodes), "triples": len(graph.triple_ids),
                 "communities": len(communities), "index": index}  # fmt: skip
        return RetrievalResult(
            self.kg, triple_ids, (), (), topics, unknown, extra=extra, passages=passages,
            accounting=accounting,
        )  # fmt: skip


def build_graphrag(
    kg: KnowledgeGraph,
    encoder: SentenceEncoder,
    chat: ChatClient | None = None,
    max_hops: int = 3,
    node_limit: int = 2000,
    max_cluster_size: int = 10,
    max_report_triples: int = 30,
    top_communities: int = 3,
    report_max_tokens: int = 256,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    uses_llm: bool = True,
    **_unused: object,
) -> GraphRAGRetriever:
    """``retriever=graphrag``: ``chat`` is the reader's client (``uses_llm: true``)."""
    if chat is None:
        raise ValueError("retriever=graphrag needs the LLM's chat client (retriever.uses_llm=true)")
    return GraphRAGRetriever(
        kg, encoder, chat, max_hops, node_limit, max_cluster_size, max_report_triples,
        top_communities, report_max_tokens, seed, cache_dir,
    )  # fmt: skip
