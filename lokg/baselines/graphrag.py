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
4. **local search** (``context``):

   * ``mixed`` (the default; GraphRAG's ``LocalSearchMixedContext``): the question is mapped
     to entities (its topic entities, as GraphRAG's ``include_entity_names``, then the
     ``top_k_entities`` = 10 entities of the entity graph whose names are most similar to it);
     the reports of their communities, most matched entities first, fill ``community_prop``
     of the context (whole reports until the next would overflow); an entity table and a
     relationship table fill the rest (:func:`local_tables`: in-network relationships first,
     then out-network ones ranked by how many mapped entities their other end links to and
     by combined degree, ``top_k_relationships`` = 10 per mapped entity; mapped entities are
     added one at a time until the tables would overflow). A KG has no source text units, so
     GraphRAG's ``text_unit_prop`` share goes to the tables (``text_unit_prop`` = 0);
   * ``reports``: the top ``top_communities`` communities by the similarity of their triples
     to the question, their reports only (the variant this baseline ran before).

   The context is one passage of at most ``context_tokens`` (B) tokens, placed under B by
   :func:`lokg.ittc.passages.encode_passages`; one answering call with
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

from lokg.atomic_io import write_atomic
from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.kg.neighbourhood import bfs_triples
from lokg.llm.accounting import CallLedger
from lokg.llm.client import ChatClient
from lokg.llm.prompt import prompt_template
from lokg.retrieval import RetrievalResult, Retriever, check_counts, resolve_topics
from lokg.tokens import DEFAULT_TOKENIZER, Tokenizer, get_tokenizer
from lokg.typing import Question

__all__ = [
    "CONTEXTS",
    "Community",
    "GraphRAGRetriever",
    "LocalTables",
    "build_graphrag",
    "filter_relationships",
    "leiden_communities",
    "local_tables",
    "neighbourhood_graph",
]

#: bump when the report prompt or the report record changes (part of the cache key)
REPORT_VERSION = 1
REPORT_FILE = "graphrag_report.txt"
#: local-search contexts: GraphRAG's mixed context, or its community reports alone
CONTEXTS = ("mixed", "reports")
SECTION_SEPARATOR = "\n\n"
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


def degrees(kg: KnowledgeGraph, triple_ids: Sequence[int]) -> dict[int, int]:
    """Entity -> number of the triples ``triple_ids`` it is an end of (GraphRAG's entity rank;
    a relationship's rank is the sum over its two ends)."""
    out: dict[int, int] = {}
    for t in triple_ids:
        h, _, o = kg.triples_np[t]
        out[int(h)] = out.get(int(h), 0) + 1
        out[int(o)] = out.get(int(o), 0) + 1
    return out


def filter_relationships(
    kg: KnowledgeGraph,
    triple_ids: Sequence[int],
    selected: Sequence[int],
    top_k_relationships: int,
    degree: dict[int, int],
) -> list[int]:
    """GraphRAG's relationship filter for the mapped entities ``selected``.

    In-network triples (both ends mapped) first, by combined degree, highest first; then
    out-network triples (one end mapped) by *links* (how many distinct mapped entities their
    unmapped end is joined to by out-network triples), then combined degree, highest first,
    at most ``top_k_relationships * len(selected)`` of them. Ties keep ``triple_ids`` order.
    """
    chosen = set(selected)

    def rank(t: int) -> int:
        h, _, o = kg.triples_np[t]
        return degree.get(int(h), 0) + degree.get(int(o), 0)

    inside, outside = [], []
    for t in triple_ids:
        h, _, o = (int(x) for x in kg.triples_np[t])
        if h in chosen and o in chosen:
            inside.append(t)
        elif h in chosen or o in chosen:
            outside.append(t)
    inside.sort(key=lambda t: -rank(t))
    outside.sort(key=lambda t: -rank(t))
    if len(outside) <= 1:
        return inside + outside
    linked: dict[int, set[int]] = {}
    for t in outside:
        h, _, o = (int(x) for x in kg.triples_np[t])
        far, near = (o, h) if h in chosen else (h, o)
        linked.setdefault(far, set()).add(near)

    def links(t: int) -> int:
        h, _, o = (int(x) for x in kg.triples_np[t])
        return len(linked[o if h in chosen else h])

    outside.sort(key=lambda t: (-links(t), -rank(t)))
    return inside + outside[: top_k_relationships * len(selected)]


@dataclass(frozen=True)
class LocalTables:
    """The entity and relationship tables of GraphRAG's local-search context.

    Attributes:
        text: ``-----Entities-----`` and ``-----Relationships-----`` tables (``id|...`` rows,
            ``|``-delimited), or ``""`` when not even the entity table's first row fits.
        entities: the mapped entities in the entity table, in mapping order.
        covered: how many of them (a prefix) the relationship table was built for.
        triple_ids: the relationship table's triples, in table order.
    """

    text: str
    entities: tuple[int, ...]
    covered: int
    triple_ids: tuple[int, ...]


def local_tables(
    kg: KnowledgeGraph,
    triple_ids: Sequence[int],
    selected: Sequence[int],
    *,
    degree: dict[int, int],
    max_tokens: int,
    top_k_relationships: int,
    tokenizer: Tokenizer,
) -> LocalTables:
    """GraphRAG's entity/relationship context under ``max_tokens``.

    The entity table lists the mapped entities (``id|entity|number of relationships``) while
    it fits. The relationship table (``id|source|target|description``, the description being
    the relation's name) is rebuilt as mapped entities are added one at a time
    (:func:`filter_relationships` over the first n); the last version that fits beside the
    entity table is kept.
    """
    lines = ["-----Entities-----", "id|entity|number of relationships"]
    kept: list[int] = []
    for i, e in enumerate(selected):
        row = f"{i}|{kg.entity_name(e)}|{degree.get(e, 0)}"
        if tokenizer.count("\n".join([*lines, row])) > max_tokens:
            break
        lines.append(row)
        kept.append(e)
    if not kept:
        return LocalTables("", (), 0, ())
    entity_text = "\n".join(lines)
    best_text, best_rels, covered = "", [], 0
    for n in range(1, len(selected) + 1):
        rels = filter_relationships(kg, triple_ids, selected[:n], top_k_relationships, degree)
        rows = ["-----Relationships-----", "id|source|target|description"]
        for i, t in enumerate(rels):
            h, r, o = (int(x) for x in kg.triples_np[t])
            rows.append(f"{i}|{kg.entity_name(h)}|{kg.entity_name(o)}|{kg.relation_text(r)}")
        text = "\n".join(rows)
        if tokenizer.count(entity_text + SECTION_SEPARATOR + text) > max_tokens:
            break
        best_text, best_rels, covered = text, rels, n
    text = entity_text + (SECTION_SEPARATOR + best_text if best_rels else "")
    return LocalTables(text, tuple(kept), covered, tuple(best_rels))


class GraphRAGRetriever(Retriever):
    """GraphRAG's indexing and local search on a question's neighbourhood (module docstring).

    Args:
        kg: the graph (original vocabulary).
        embedder: sentence encoder ranking communities against the question.
        chat: the chat client writing the reports (the pipeline passes the reader's).
        max_hops: neighbourhood depth (3, as TAIMR's L).
        node_limit: nodes of the entity graph (Table 4: 2,000).
        max_cluster_size: GraphRAG's hierarchical Leiden leaf size (its default 10).
        max_report_triples: triples a report is written from (30).
        top_communities: ``context="reports"``: reports injected per question (best first).
        report_max_tokens: generation limit of a report.
        seed: Leiden's seed.
        cache_dir: where reports are cached (``<cache_dir>/graphrag/<kg fingerprint>/``);
            ``None`` keeps them in memory for the run.
        context: ``"mixed"`` (GraphRAG's local search) or ``"reports"`` (module docstring).
        top_k_entities: ``mixed``: entities mapped by name similarity besides the topics.
        top_k_relationships: ``mixed``: out-network relationships per mapped entity.
        community_prop: ``mixed``: share of ``context_tokens`` for community reports.
        text_unit_prop: ``mixed``: share kept for source text units (a KG has none: 0).
        context_tokens: ``mixed``: the context's size in tokens (the pipeline's B).
        tokenizer, tokenizer_backend: how ``context_tokens`` is counted (cl100k, as B).
    """

    name = "graphrag"

    def __init__(
        self,
        kg: KnowledgeGraph,
        embedder: SentenceEncoder,
        chat: ChatClient,
        *,
        max_hops: int = 3,
        node_limit: int = 2000,
        max_cluster_size: int = 10,
        max_report_triples: int = 30,
        top_communities: int = 3,
        report_max_tokens: int = 256,
        seed: int = 0,
        cache_dir: str | os.PathLike | None = None,
        context: str = "mixed",
        top_k_entities: int = 10,
        top_k_relationships: int = 10,
        community_prop: float = 0.1,
        text_unit_prop: float = 0.0,
        context_tokens: int = 2048,
        tokenizer: str = DEFAULT_TOKENIZER,
        tokenizer_backend: str = "tiktoken",
    ):
        check_counts(
            max_hops=max_hops,
            node_limit=node_limit,
            max_cluster_size=max_cluster_size,
            max_report_triples=max_report_triples,
            top_communities=top_communities,
            report_max_tokens=report_max_tokens,
            top_k_relationships=top_k_relationships,
            context_tokens=context_tokens,
        )
        if context not in CONTEXTS:
            raise ValueError(f"retriever.context must be one of {CONTEXTS}, got {context!r}")
        if top_k_entities < 0:
            raise ValueError(f"retriever.top_k_entities must be >= 0, got {top_k_entities}")
        if not (0 <= community_prop <= 1 and 0 <= text_unit_prop <= 1
                and community_prop + text_unit_prop <= 1):  # fmt: skip
            raise ValueError(
                "retriever.community_prop and retriever.text_unit_prop must lie in [0, 1] and "
                f"sum to <= 1, got {community_prop} and {text_unit_prop}"
            )
        self.kg = kg
        self.embedder = embedder
        self.chat = chat
        self.max_hops = max_hops
        self.node_limit = node_limit
        self.max_cluster_size = max_cluster_size
        self.max_report_triples = max_report_triples
        self.top_communities = top_communities
        self.report_max_tokens = report_max_tokens
        self.seed = seed
        self.context = context
        self.top_k_entities = top_k_entities
        self.top_k_relationships = top_k_relationships
        self.community_prop = community_prop
        self.text_unit_prop = text_unit_prop
        self.context_tokens = context_tokens
        self.tokenizer = get_tokenizer(tokenizer, tokenizer_backend)
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
            write_atomic(path, json.dumps(record, sort_keys=True))

    # ------------------------------------------------------------ indexing
    def communities(self, graph: NeighbourhoodGraph) -> list[Community]:
        """Leiden leaf communities of the entity graph, each with its report triples."""
        kg = self.kg
        index = {e: i for i, e in enumerate(graph.nodes)}
        rows = [kg.triples_np[t] for t in graph.triple_ids]
        edges = [(index[int(r[0])], index[int(r[2])]) for r in rows]
        by_entity = degrees(kg, graph.triple_ids)
        degree = [by_entity.get(e, 0) for e in graph.nodes]
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
            # unstripped, unlike kg.relation_text: the report prompts keep the form they were
            # written with (the LLM response cache is keyed by the prompt text)
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
    def map_entities(self, question: Question, graph: NeighbourhoodGraph,
                     topics: Sequence[int]) -> list[int]:  # fmt: skip
        """The question's entities: its topics (GraphRAG's ``include_entity_names``), then the
        ``top_k_entities`` other entities of the entity graph whose names are most similar to
        the question (GraphRAG matches entity description embeddings; a KG entity has only its
        name)."""
        included = list(dict.fromkeys(topics))
        taken = set(included)
        rest = [e for e in graph.nodes if e not in taken]
        if not rest or self.top_k_entities == 0:
            return included
        q = self.embedder.encode([question.text], kind="query")[0]
        names = [self.kg.entity_name(e) for e in rest]
        sims = self.embedder.encode(names, kind="passage") @ q  # [N]
        top = np.argsort(-sims, kind="stable")[: self.top_k_entities]
        return included + [rest[i] for i in top.tolist()]

    def _charge(self, community: Community, cost: dict, fresh: bool, index: dict,
                accounting: dict) -> None:  # fmt: skip
        """Count a consulted report: its cost is charged once per run (amortised)."""
        index["reports_written" if fresh else "reports_from_cache"] += 1
        key = community.fingerprint(self._kg_fingerprint)
        if key in self._charged:
            return
        self._charged.add(key)
        for k, v in cost.items():
            accounting[k] = accounting.get(k, 0) + v
        accounting["cached_calls"] = accounting.get("cached_calls", 0) + int(not fresh)
        for k in ("calls", "prompt_tokens", "completion_tokens"):
            index[k] += int(cost.get(k, 0))

    def _ranked_reports(self, question: Question, communities: list[Community],
                        index: dict, accounting: dict) -> list[tuple[Community, str]]:  # fmt: skip
        """``reports``: the top ``top_communities`` by similarity of their triples."""
        q = self.embedder.encode([question.text], kind="query")[0]
        texts = [self.community_text(c) for c in communities]
        sims = self.embedder.encode(texts, kind="passage") @ q  # [C]
        out = []
        for i in np.argsort(-sims, kind="stable")[: self.top_communities].tolist():
            text, cost, fresh = self.report(communities[i])
            self._charge(communities[i], cost, fresh, index, accounting)
            out.append((communities[i], text))
        return out

    def _report_table(self, communities: list[Community], selected: Sequence[int],
                      max_tokens: int, index: dict,
                      accounting: dict) -> tuple[str, list[Community]]:  # fmt: skip
        """``mixed``: the reports of the mapped entities' communities, most matched entities
        first (ties: larger community first; GraphRAG breaks them by the report's LLM-rated
        rank, which our reports do not carry), whole reports while they fit ``max_tokens``."""
        home = {e: i for i, c in enumerate(communities) for e in c.entities}
        matches: dict[int, int] = {}
        for e in selected:
            if e in home:
                matches[home[e]] = matches.get(home[e], 0) + 1
        order = sorted(matches, key=lambda i: (-matches[i], i))  # communities: largest first
        lines, used = ["-----Reports-----", "id|content"], []
        for i in order:
            text, cost, fresh = self.report(communities[i])
            self._charge(communities[i], cost, fresh, index, accounting)
            row = f"{len(used)}|{text}"
            if self.tokenizer.count("\n".join([*lines, row])) > max_tokens:
                break
            lines.append(row)
            used.append(communities[i])
        return ("\n".join(lines) if used else ""), used

    def retrieve(self, question: Question) -> RetrievalResult:
        topics, unknown = resolve_topics(self.kg, question.topic_entities)
        graph = neighbourhood_graph(
            self.kg, [t.entity for t in topics], self.max_hops, self.node_limit
        )
        communities = self.communities(graph) if graph.triple_ids else []
        index = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                 "reports_written": 0, "reports_from_cache": 0}  # fmt: skip
        accounting: dict = {}
        extra: dict = {"nodes": len(graph.nodes), "triples": len(graph.triple_ids),
                       "communities": len(communities), "context": self.context}  # fmt: skip
        if self.context == "reports":
            ranked = self._ranked_reports(question, communities, index, accounting) if (
                communities) else []  # fmt: skip
            passages = [text for _, text in ranked]
            triple_ids = list(dict.fromkeys(t for c, _ in ranked for t in c.triple_ids))
        else:
            selected = self.map_entities(question, graph, [t.entity for t in topics]) if (
                graph.nodes) else []  # fmt: skip
            b = self.context_tokens
            reports, used = self._report_table(
                communities, selected, int(b * self.community_prop), index, accounting
            )
            local = int(b * (1 - self.community_prop - self.text_unit_prop))
            degree = degrees(self.kg, graph.triple_ids)
            tables = local_tables(
                self.kg,
                graph.triple_ids,
                selected,
                degree=degree,
                max_tokens=local,
                top_k_relationships=self.top_k_relationships,
                tokenizer=self.tokenizer,
            )
            context = SECTION_SEPARATOR.join(x for x in (reports, tables.text) if x)
            passages = [context] if context else []
            triple_ids = list(dict.fromkeys(
                [*tables.triple_ids, *(t for c in used for t in c.triple_ids)]))  # fmt: skip
            extra.update(mapped_entities=len(selected), reports_in_context=len(used),
                         entities_in_context=len(tables.entities),
                         relationships_in_context=len(tables.triple_ids))  # fmt: skip
        extra["index"] = index
        return RetrievalResult(
            self.kg, triple_ids, (), (), topics, unknown, extra=extra, passages=passages,
            accounting=accounting,
        )  # fmt: skip


#: ``retriever=graphrag``: the class itself (the name is configs/retriever/graphrag.yaml's
#: ``_target_``, which run keys hash); it takes the sentence encoder and the reader's chat
#: client (lokg.assemble; the config's ``uses_llm: true`` says so)
build_graphrag = GraphRAGRetriever
