"""SCOS entry point: ``compress(kg, relation_embeddings, cfg) -> SCOSResult`` (Section 2.3).

The result carries the canonical mapping phi: R0 -> R*, the compressed graph
G* = (E, R*, T*) with the same entity ids, the merge report, L_info and rho-hat of Eq. (6),
and is saved as an artifact directory reused by TAIMR and ITTC.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lokg.atomic_io import atomic_directory, read_versioned_json
from lokg.kg.graph import KnowledgeGraph, Vocabulary
from lokg.manifest import check_directory
from lokg.scos.config import SCOSConfig
from lokg.scos.entity_types import entity_types, resolve_entity_types
from lokg.scos.inverse import InverseRecord, find_inverse_pairs
from lokg.scos.merge import MergeOutcome, MergeRecord, RefusedPair, greedy_merge

__all__ = ["SCOSResult", "compress", "information_density"]

_FORMAT_VERSION = 1


def information_density(
    merges: list[MergeRecord], total_entropy: float, num_original: int, num_compressed: int
) -> tuple[float, float]:
    """Eq. (6): ``(L_info, rho_hat)``.

    ``L_info`` is the accumulated per-merge loss ``(1 - sim(C_i, C_j)) * min(H(C_i), H(C_j))``
    divided by the total tail entropy ``sum_{r in R0} H(r)`` of the original schema (the
    paper leaves the normaliser unstated); ``rho_hat = (1 - L_info) / (|R*| / |R0|)``, and
    ``rho_hat = 1`` (with ``L_info = 0``) when nothing merges.
    """
    if not merges or num_compressed == num_original:
        return 0.0, 1.0
    loss = sum(m.loss for m in merges)
    l_info = loss / total_entropy if total_entropy > 0 else 0.0
    return l_info, (1.0 - l_info) / (num_compressed / num_original)


@dataclass
class SCOSResult:
    """Output of SCOS.

    Attributes:
        mapping: ``[R0]`` int64 phi, original relation id -> compressed relation id.
        kg: compressed graph (same entity vocabulary and ids, relations R*, deduplicated).
        relations: the R* vocabulary; a cluster is named after its member with most triples.
        report: the merges in order (members, similarity, threshold, signals, loss).
        info_loss: L_info of Eq. (6).
        rho_hat: rho-hat of Eq. (6).
        original_relations: the R0 vocabulary.
        config: the SCOS settings used.
        source_fingerprint: fingerprint of the original graph.
        direction: ``[R0]`` +1, or -1 for a relation stored as the inverse of its cluster
            (``scos.merge_inverse``; ``None``: all +1).
        inverse_report: the inverse merges, reported apart from the synonym merges.
        refused_report: admissible pairs a guard refused (``scos.max_split_z``,
            ``scos.max_contradiction``, ``scos.min_name_cosine``).
        below_support: relations kept out of merging by ``scos.min_support``.
        inverse_refused: inverse pairs ``scos.max_contradiction`` refused.
    """

    mapping: np.ndarray
    kg: KnowledgeGraph
    relations: Vocabulary
    report: list[MergeRecord]
    info_loss: float
    rho_hat: float
    original_relations: Vocabulary
    config: dict[str, Any] = field(default_factory=dict)
    source_fingerprint: str = ""
    direction: np.ndarray | None = None
    inverse_report: list[InverseRecord] = field(default_factory=list)
    refused_report: list[RefusedPair] = field(default_factory=list)
    below_support: int = 0
    inverse_refused: list[InverseRecord] = field(default_factory=list)

    @property
    def directions(self) -> np.ndarray:
        """``[R0]`` int64 direction flags (+1 everywhere unless inverse pairs merged)."""
        if self.direction is None:
            return np.ones(len(self.mapping), dtype=np.int64)
        return self.direction

    def apply(self, kg: KnowledgeGraph) -> KnowledgeGraph:
        """phi applied to a graph over the same relation vocabulary R0 (e.g. a question's
        subgraph): relations relabelled, triples of flipped relations reversed, duplicates
        dropped."""
        return apply_mapping(kg, self.mapping, self.directions, self.relations)

    @property
    def num_original(self) -> int:
        return len(self.original_relations)

    @property
    def num_compressed(self) -> int:
        return len(self.relations)

    def clusters(self) -> dict[str, list[str]]:
        """R* label -> the R0 labels it merges (every cluster, singletons included)."""
        out: dict[str, list[str]] = {label: [] for label in self.relations.labels}
        for r0, r in enumerate(self.mapping.tolist()):
            out[self.relations.label(r)].append(self.original_relations.label(r0))
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "relations_before": self.num_original,
            "relations_after": self.num_compressed,
            "merges": len(self.report),
            "info_loss": self.info_loss,
            "rho_hat": self.rho_hat,
        }

    def format_report(self) -> str:
        """Human-readable merge report."""
        lines = [
            f"SCOS ({self.config.get('mode', '?')}): |R0| = {self.num_original} -> "
            f"|R*| = {self.num_compressed}, {len(self.report)} merges, "
            f"L_info = {self.info_loss:.4f}, rho_hat = {self.rho_hat:.4f}"
            + (
                f"; entity types: {self.config['entity_types_used']}"
                if "entity_types_used" in self.config
                else ""
            )
        ]
        if self.below_support:
            lines.append(
                f"   {self.below_support} relations with fewer than "
                f"{self.config.get('min_support')} distinct (head, tail) pairs kept out of merging"
            )
        for ref in self.refused_report:
            head = (
                f"   refused: {{{', '.join(ref.left)}}} + {{{', '.join(ref.right)}}}: sim "
                f"{ref.similarity:.4f} >= theta {ref.threshold:.4f}, but "
            )
            if ref.reason == "contradiction":
                lines.append(
                    f"{head}contradiction {ref.counts.describe()} > "
                    f"{self.config.get('max_contradiction')}"
                )
            elif ref.reason == "name":
                lines.append(
                    f"{head}name cosine {ref.name_cosine:.3f} < "
                    f"{self.config.get('min_name_cosine')} (the names mean different things)"
                )
            else:
                lines.append(
                    f"{head}split z {ref.split_z:.2f} > {self.config.get('max_split_z')} (more "
                    "keys hold different values in both than a split of one relation would "
                    "give)"
                )
        for inv in self.inverse_refused:
            lines.append(
                f"   refused inverse: {inv.flipped} as the inverse of {inv.kept} (mirrored "
                f"Jaccard {inv.mirrored_jaccard:.3f}), contradiction {inv.counts.describe()} > "
                f"{self.config.get('max_contradiction')}"
            )
        for inv in self.inverse_report:
            lines.append(
                f"   inverse: {inv.flipped} stored as the inverse of {inv.kept} "
                f"(mirrored Jaccard {inv.mirrored_jaccard:.3f}; contradiction "
                f"{inv.counts.describe()})"
            )
            lines += _example_lines(inv.examples, inv.kept, f"{inv.flipped} (inverse)")
        for m in self.report:
            lines.append(
                f"{m.step:4d}. {{{', '.join(m.left)}}} + {{{', '.join(m.right)}}}: "
                f"sim {m.similarity:.4f} >= theta {m.threshold:.4f} "
                f"(NMI {m.nmi:.3f}, Jaccard {m.jaccard:.3f}, cos {m.cosine:.3f}; "
                f"H {m.entropy_left:.3f}/{m.entropy_right:.3f}; loss {m.loss:.4f})"
            )
            named = "" if m.name_cosine is None else f"; name cosine {m.name_cosine:.3f}"
            lines.append(f"        contradiction {m.counts.describe()}{named}")
            lines += _example_lines(m.examples, ", ".join(m.left), ", ".join(m.right))
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``mapping.npy``, ``scos.json``, ``report.txt`` and ``kg/`` atomically."""
        directory = Path(directory)
        with atomic_directory(directory) as tmp:
            np.save(tmp / "mapping.npy", self.mapping.astype(np.int64))
            if self.direction is not None:
                np.save(tmp / "direction.npy", self.direction.astype(np.int64))
            meta = {
                "format_version": _FORMAT_VERSION,
                "config": self.config,
                "original_relations": self.original_relations.labels,
                "relations": self.relations.labels,
                "info_loss": self.info_loss,
                "rho_hat": self.rho_hat,
                "merges": [m.to_json() for m in self.report],
                "source_fingerprint": self.source_fingerprint,
                "compressed_fingerprint": self.kg.fingerprint(),
                "inverse_merges": [m.to_json() for m in self.inverse_report],
                "refused": [m.to_json() for m in self.refused_report],
                "below_support": self.below_support,
                "inverse_refused": [m.to_json() for m in self.inverse_refused],
            }
            (tmp / "scos.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
            (tmp / "report.txt").write_text(self.format_report(), encoding="utf-8")
            self.kg.save(tmp / "kg")
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike, mmap: bool = False) -> SCOSResult:
        """Load a result written by :meth:`save` (its files checked against the manifest)."""
        directory = Path(directory)
        check_directory(directory)
        meta = read_versioned_json(
            directory / "scos.json", _FORMAT_VERSION, "SCOS result", "re-run SCOS"
        )
        kg = KnowledgeGraph.load(directory / "kg", mmap=mmap)
        mapping = np.load(directory / "mapping.npy")
        original = Vocabulary(meta["original_relations"])
        relations = Vocabulary(meta["relations"])
        if mapping.shape != (len(original),) or kg.relations != relations:
            raise ValueError(
                f"{directory}: mapping.npy has shape {mapping.shape} for "
                f"{len(original)} original relations, or kg/ relations differ from scos.json"
            )
        return cls(
            mapping=mapping,
            kg=kg,
            relations=relations,
            report=[MergeRecord(**m) for m in meta["merges"]],
            info_loss=float(meta["info_loss"]),
            rho_hat=float(meta["rho_hat"]),
            original_relations=original,
            config=meta["config"],
            source_fingerprint=meta.get("source_fingerprint", ""),
            direction=np.load(directory / "direction.npy")
            if (directory / "direction.npy").is_file()
            else None,
            inverse_report=[InverseRecord(**m) for m in meta.get("inverse_merges", [])],
            refused_report=[RefusedPair(**m) for m in meta.get("refused", [])],
            below_support=int(meta.get("below_support", 0)),
            inverse_refused=[InverseRecord(**m) for m in meta.get("inverse_refused", [])],
        )


def _example_lines(examples: list[dict], left: str, right: str) -> list[str]:
    """Report lines of a merge's example heads: ``e.g. head: left -> a, b | right -> c``."""
    return [
        f"        e.g. {ex['head']}: {left} -> {', '.join(ex['left'])} | "
        f"{right} -> {', '.join(ex['right'])}"
        for ex in examples
    ]


def apply_mapping(
    kg: KnowledgeGraph, mapping: np.ndarray, direction: np.ndarray, relations: Vocabulary
) -> KnowledgeGraph:
    """Relabel ``kg``'s relations through ``mapping`` after reversing the triples of the
    relations whose ``direction`` is -1 (deduplicated, entity ids unchanged)."""
    if (direction > 0).all():
        return kg.with_relations(mapping, relations)
    tri = kg.triples_np.copy()
    flip = direction[tri[:, 1]] < 0
    tri[flip] = tri[flip][:, [2, 1, 0]]
    flipped = KnowledgeGraph(kg.entities, kg.relations, tri, kg.attributes, kg.name)
    return flipped.with_relations(mapping, relations)


def _coerce_config(cfg: SCOSConfig | Mapping[str, Any] | None, overrides: dict) -> SCOSConfig:
    base = cfg.to_dict() if isinstance(cfg, SCOSConfig) else dict(cfg or {})
    base.update(overrides)
    return SCOSConfig.from_mapping(base)


def _merged(
    kg: KnowledgeGraph,
    relation_embeddings: np.ndarray | None,
    config: SCOSConfig,
    entity_embeddings: np.ndarray | None,
    relation_names: np.ndarray | None,
) -> tuple[MergeOutcome, str | None]:
    """The greedy merge of ``kg``'s relations under ``config`` and the entity types it used
    (``None`` with ``mode="off"``: every relation its own cluster, nothing merged)."""
    if config.mode == "off":
        return MergeOutcome(labels=np.arange(kg.num_relations), merges=[], total_entropy=0.0), None
    if relation_embeddings is None:
        raise ValueError(
            "SCOS (scos.mode=greedy) needs TransE relation embeddings [R0, d]; "
            "train model=transe first or use scos=off"
        )
    if hasattr(relation_embeddings, "detach"):
        relation_embeddings = relation_embeddings.detach().cpu().numpy()
    if hasattr(entity_embeddings, "detach"):
        entity_embeddings = entity_embeddings.detach().cpu().numpy()
    if config.min_name_cosine is not None and relation_names is None:
        raise ValueError(
            "scos.min_name_cosine needs the relation names' sentence embeddings: pass "
            "relation_names=lokg.scos.names.name_embeddings(kg.relations.labels, embedder), "
            "or set scos.min_name_cosine=null"
        )
    used_types = config.entity_types
    if used_types == "auto":
        used_types = resolve_entity_types(kg, config.type_relation, entity_embeddings is not None)
    types = entity_types(
        kg,
        used_types,
        config.type_relation,
        entity_embeddings=entity_embeddings,
        num_types=config.num_entity_types,
    )
    outcome = greedy_merge(
        kg,
        np.asarray(relation_embeddings, dtype=np.float64),
        types,
        weights=config.weights,
        theta_base=config.theta_base,
        epsilon=config.epsilon,
        min_support=int(config.min_support),
        max_split_z=config.max_split_z,
        max_contradiction=config.max_contradiction,
        names=None if relation_names is None else np.asarray(relation_names, np.float64),
        min_name_cosine=config.min_name_cosine,
    )
    return outcome, used_types


def _canonical(kg: KnowledgeGraph, labels: np.ndarray) -> tuple[np.ndarray, Vocabulary]:
    """phi ``[R0]`` and the R* vocabulary of the clusters ``labels``: clusters in order of
    their smallest original id, each named after its member with the most triples (ties:
    smallest id)."""
    roots, mapping = np.unique(labels, return_inverse=True)
    order = np.lexsort((np.arange(kg.num_relations), -kg.relation_counts, mapping))
    first = order[np.searchsorted(mapping[order], np.arange(len(roots)))]
    relations = Vocabulary([kg.relations.label(int(r)) for r in first])
    return mapping.astype(np.int64), relations


@dataclass
class _Compressed:
    """phi, the compressed relations and graph and, after ``scos.merge_inverse`` (R* -> R**),
    the flipped relations (``direction``, -1) and the inverse pairs merged and refused."""

    mapping: np.ndarray
    relations: Vocabulary
    kg: KnowledgeGraph
    direction: np.ndarray | None = None
    merged: list[InverseRecord] = field(default_factory=list)
    refused: list[InverseRecord] = field(default_factory=list)


def _merge_inverses(kg: KnowledgeGraph, compressed: _Compressed, config: SCOSConfig) -> _Compressed:
    """``compressed`` (R*) with its inverse pairs merged: a flipped cluster joins its partner,
    ids stay in order (:func:`lokg.scos.inverse.find_inverse_pairs`)."""
    partner, flip, inverse, refused = find_inverse_pairs(
        compressed.kg, config.theta_base, config.max_contradiction
    )
    if not inverse:
        return _Compressed(compressed.mapping, compressed.relations, compressed.kg, refused=refused)
    roots, second = np.unique(partner, return_inverse=True)
    relations = Vocabulary([compressed.relations.label(int(r)) for r in roots])
    direction = flip[compressed.mapping].astype(np.int64)
    mapping = second[compressed.mapping].astype(np.int64)
    merged = apply_mapping(kg, mapping, direction, relations)
    return _Compressed(mapping, relations, merged, direction, inverse, refused)


def compress(
    kg: KnowledgeGraph,
    relation_embeddings: np.ndarray | None,
    cfg: SCOSConfig | Mapping[str, Any] | None = None,
    entity_embeddings: np.ndarray | None = None,
    relation_names: np.ndarray | None = None,
    **overrides: Any,
) -> SCOSResult:
    """Run SCOS on ``kg`` (Section 2.3).

    Args:
        kg: the original graph G = (E, R0, T).
        relation_embeddings: ``[R0, d]`` TransE relation embeddings (a tensor is accepted);
            may be ``None`` only with ``mode="off"``.
        cfg: :class:`SCOSConfig` or a mapping of its keys (e.g. the Hydra ``scos`` node).
        entity_embeddings: ``[E, d]`` TransE entity embeddings, for learned entity types
            (``entity_types=transe``, or ``auto`` on a graph without types or domains).
        relation_names: ``[R0, d]`` sentence embeddings of the relation names
            (:func:`lokg.scos.names.name_embeddings`), needed by ``min_name_cosine`` and
            recorded per merge when given.
        overrides: individual keys overriding ``cfg``.

    Returns:
        :class:`SCOSResult`; with ``mode="off"`` phi is the identity and G* equals G.
    """
    config = _coerce_config(cfg, overrides)
    recorded = config.to_dict()
    outcome, used_types = _merged(
        kg, relation_embeddings, config, entity_embeddings, relation_names
    )
    if used_types is not None:
        recorded["entity_types_used"] = used_types
    mapping, relations = _canonical(kg, outcome.labels)
    off = config.mode == "off"
    out = _Compressed(mapping, relations, kg if off else kg.with_relations(mapping, relations))
    if config.merge_inverse and not off:
        out = _merge_inverses(kg, out, config)
    info_loss, rho_hat = information_density(
        outcome.merges, outcome.total_entropy, kg.num_relations, len(out.relations)
    )
    return SCOSResult(
        mapping=out.mapping,
        kg=out.kg,
        relations=out.relations,
        report=outcome.merges,
        info_loss=info_loss,
        rho_hat=rho_hat,
        original_relations=kg.relations,
        config=recorded,
        source_fingerprint=kg.fingerprint(),
        direction=out.direction,
        inverse_report=out.merged,
        refused_report=outcome.refused,
        below_support=outcome.below_support,
        inverse_refused=out.refused,
    )
