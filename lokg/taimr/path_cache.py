"""Lazy, persisted path cache keyed by (head entity, relation) (Sec. 2.5, last paragraph).

An entry holds the one-hop path segments leaving ``head`` through ``relation``, each with its
topology increment of Eq. (16): ``log alpha(head -> v | r) + lambda_topo * log mu(v)``,
sorted best first.  A multi-hop path is a chain of entries, so one entry serves every hop and
every question that reaches ``(head, relation)``; caching whole multi-hop paths under their
first (head, relation) instead would fix a query-independent pruning of the later hops.

Entries are computed on demand from the KG triples, the edge attention and mu only: no
question, answer or gold label ever enters the cache (no label leakage).  ``save`` writes
the computed entries with the fingerprint of their inputs and a sidecar manifest (size and
blake2b, :mod:`lokg.manifest`); ``load`` refuses a cache whose fingerprint differs, and one
that fails its check or does not read (:class:`lokg.errors.CorruptArtifact`), which the
retriever then rebuilds (:meth:`lokg.taimr.retriever.TopologyRetriever.load_cache`).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from lokg.atomic_io import atomic_file
from lokg.errors import CorruptArtifact
from lokg.kg.graph import KnowledgeGraph
from lokg.manifest import check_file

__all__ = ["CacheEntry", "PathCache"]

#: (triple ids ``[n]``, tails ``[n]``, topology increments ``[n]``), best first.
CacheEntry = tuple[np.ndarray, np.ndarray, np.ndarray]


class PathCache:
    """(head, relation) -> scored one-hop segments, computed lazily.

    Args:
        kg: the graph (after SCOS when used).
        edge_log_alpha: ``[T]`` log alpha of every triple (Eq. (13), a distribution over
            each head's out-edges).
        mu: ``[E]`` node information gain (Eq. (12)).
        lambda_topo: the weight of Eq. (16) (1.0 in Table 3; 0 = "without mu").
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        edge_log_alpha: np.ndarray,
        mu: np.ndarray,
        lambda_topo: float = 1.0,
    ):
        if edge_log_alpha.shape != (kg.num_triples,):
            raise ValueError(
                f"edge_log_alpha must have shape [{kg.num_triples}], got {edge_log_alpha.shape}"
            )
        if mu.shape != (kg.num_entities,):
            raise ValueError(f"mu must have shape [{kg.num_entities}], got {mu.shape}")
        self.kg = kg
        self.lambda_topo = float(lambda_topo)
        with np.errstate(divide="ignore"):
            log_mu = np.log(mu)
        # Eq. (16) increment of each triple: log alpha(u -> v | r) + lambda_topo * log mu(v)
        tails = kg.triples_np[:, 2]
        gain = self.lambda_topo * log_mu[tails] if self.lambda_topo else np.zeros(len(tails))
        self._gain = gain  # [T] lambda_topo * log mu(tail)
        self.edge_score = (edge_log_alpha + gain).astype(np.float64)  # [T]
        self.fingerprint: str = self._fingerprint(edge_log_alpha, mu)
        self.entries: dict[tuple[int, int], CacheEntry] = {}
        self._relations: dict[int, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def _fingerprint(self, edge_log_alpha: np.ndarray, mu: np.ndarray) -> str:
        h = hashlib.sha256(self.kg.fingerprint().encode())
        h.update(np.ascontiguousarray(edge_log_alpha, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(mu, dtype=np.float64).tobytes())
        h.update(repr(self.lambda_topo).encode())
        return h.hexdigest()[:16]

    def get(self, head: int, relation: int) -> CacheEntry:
        key = (int(head), int(relation))
        entry = self.entries.get(key)
        if entry is not None:
            self.hits += 1
            return entry
        self.misses += 1
        tids = self.kg.out_triples(key[0])
        tids = tids[self.kg.triples_np[tids, 1] == key[1]]
        scores = self.edge_score[tids]
        order = np.argsort(-scores, kind="stable")
        entry = (
            tids[order].astype(np.int64),
            self.kg.triples_np[tids[order], 2].astype(np.int64),
            scores[order],
        )
        self.entries[key] = entry
        return entry

    def relations_of(self, head: int) -> np.ndarray:
        """Distinct relations on the out-edges of ``head`` (sorted; memoised)."""
        rels = self._relations.get(int(head))
        if rels is None:
            rels = np.unique(self.kg.triples_np[self.kg.out_triples(int(head)), 1])
            self._relations[int(head)] = rels
        return rels

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> Path:
        """Write the computed entries to ``path`` (an ``.npz``), atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(sorted(self.entries), dtype=np.int64).reshape(-1, 2)
        lens = np.array([len(self.entries[tuple(k)][0]) for k in keys.tolist()], np.int64)
        parts = [self.entries[tuple(k)] for k in keys.tolist()]

        def cat(i: int, dtype) -> np.ndarray:
            return np.concatenate([p[i] for p in parts]).astype(dtype) if parts else np.zeros(0)

        with atomic_file(path, suffix=".npz", manifest=True) as tmp:
            np.savez(
                tmp,
                meta=np.array(json.dumps({"fingerprint": self.fingerprint})),
                keys=keys,
                lens=lens,
                tids=cat(0, np.int64),
                tails=cat(1, np.int64),
                scores=cat(2, np.float64),
            )
        return path

    def load(self, path: str | os.PathLike) -> int:
        """Merge the entries saved at ``path``; returns how many were loaded.

        Raises:
            CorruptArtifact: the file fails its manifest check, does not read as a path
                cache, or its arrays disagree in length.
            ValueError: its fingerprint is another graph's, attention's or mu's.
        """
        path = Path(path)
        check_file(path, remedy="delete it to rebuild")
        try:
            with np.load(path) as data:
                meta = json.loads(str(data["meta"]))
                keys, lens = data["keys"], data["lens"]
                tids, tails, scores = data["tids"], data["tails"], data["scores"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise CorruptArtifact(path, f"unreadable ({err})", "delete it to rebuild") from None
        if meta.get("fingerprint") != self.fingerprint:
            raise ValueError(
                f"{path}: path cache fingerprint {meta.get('fingerprint')!r} does not match "
                f"this graph/attention/mu ({self.fingerprint!r}); delete it to rebuild"
            )
        if keys.shape != (len(lens), 2) or not len(tids) == len(tails) == len(scores) == lens.sum():
            raise CorruptArtifact(path, "its arrays disagree in length", "delete it to rebuild")
        bounds = np.concatenate([[0], np.cumsum(lens)])
        for i, (h, r) in enumerate(keys.tolist()):
            a, b = bounds[i], bounds[i + 1]
            self.entries[(h, r)] = (tids[a:b], tails[a:b], scores[a:b])
        return len(keys)

    def __len__(self) -> int:
        return len(self.entries)
