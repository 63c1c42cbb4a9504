"""SCOS settings (Table 3) with validation at construction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["ENTITY_TYPES", "MODES", "SCOSConfig"]

#: ``greedy``: Section 2.3's greedy hierarchical merging; ``off``: identity mapping (ablation
#: "w/o SCOS").
MODES = ("greedy", "off")
#: Where entity types for the NMI term of Eq. (3) come from (see :mod:`lokg.scos.entity_types`).
ENTITY_TYPES = ("auto", "attributes", "relation", "domain", "transe", "signature", "none")


@dataclass
class SCOSConfig:
    """Hyper-parameters of SCOS (paper Table 3 values as defaults).

    Args:
        mode: one of :data:`MODES`.
        weights: fusion weights ``(w1, w2, w3)`` of Eq. (3) for NMI, Jaccard and cosine.
        theta_base: base threshold of Eq. (5).
        epsilon: adaptive coefficient of Eq. (5).
        entity_types: one of :data:`ENTITY_TYPES` (:func:`lokg.scos.entity_types.entity_types`).
        type_relation: label of a relation whose tail is an entity's type (``entity_types``
            ``relation``, or ``auto`` when the graph has no type attribute).
        num_entity_types: clusters of ``entity_types=transe`` (k-means on TransE entities).
        merge_inverse: also merge inverse pairs with a direction flag (beyond the paper;
            :mod:`lokg.scos.inverse`).
        min_support: relations with fewer distinct (head, tail) pairs never merge (beyond
            the paper, whose setting is 1; :mod:`lokg.scos.merge`).
        max_split_z: refuse to merge two relations whose heads (tails) hold different values
            in both more often than a random split of one relation would, by more than this
            many standard deviations (beyond the paper, whose setting is ``None``: no such
            test; :mod:`lokg.scos.merge`).
        max_contradiction: refuse to merge two relations whose contradiction rate (the
            share of their shared heads with other tails, between relations that state some
            fact in common; :mod:`lokg.scos.contradiction`) exceeds this, in [0, 1] (beyond
            the paper, whose setting is ``None``: no such test).
        min_name_cosine: refuse to merge two clusters if the relation names of some member
            pair mean different things: the sentence-encoder cosine of their property words
            below this, in [0, 1] (beyond the paper, whose setting is ``None``: names are not
            read; :mod:`lokg.scos.names`).  Needs the names' embeddings
            (``compress(relation_names=...)``).
    """

    mode: str = "greedy"
    weights: tuple[float, float, float] = (0.40, 0.30, 0.30)
    theta_base: float = 0.75
    epsilon: float = 0.15
    entity_types: str = "auto"
    type_relation: str | None = None
    num_entity_types: int = 32
    merge_inverse: bool = False
    min_support: int = 1
    max_split_z: float | None = None
    max_contradiction: float | None = None
    min_name_cosine: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"scos.mode={self.mode!r} is not one of {list(MODES)}")
        if self.entity_types not in ENTITY_TYPES:
            raise ValueError(
                f"scos.entity_types={self.entity_types!r} is not one of {list(ENTITY_TYPES)}"
            )
        if self.num_entity_types < 1:
            raise ValueError(f"scos.num_entity_types must be >= 1, got {self.num_entity_types}")
        weights = tuple(float(w) for w in self.weights)
        if len(weights) != 3 or any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError(
                f"scos.weights must be three non-negative numbers (w1, w2, w3), got {self.weights}"
            )
        self.weights = weights  # type: ignore[assignment]
        if not 0.0 < self.theta_base <= 1.0:
            raise ValueError(f"scos.theta_base must be in (0, 1], got {self.theta_base}")
        if isinstance(self.min_support, bool) or int(self.min_support) != self.min_support:
            raise ValueError(f"scos.min_support must be an integer >= 1, got {self.min_support}")
        if self.min_support < 1:
            raise ValueError(f"scos.min_support must be an integer >= 1, got {self.min_support}")
        if self.max_split_z is not None and not self.max_split_z > 0:
            raise ValueError(f"scos.max_split_z must be null or > 0, got {self.max_split_z}")
        if self.max_contradiction is not None and (
            isinstance(self.max_contradiction, bool)
            or not isinstance(self.max_contradiction, int | float)
            or not 0.0 <= self.max_contradiction <= 1.0
        ):
            raise ValueError(
                f"scos.max_contradiction must be null or a number in [0, 1], "
                f"got {self.max_contradiction!r}"
            )
        if self.min_name_cosine is not None and (
            isinstance(self.min_name_cosine, bool)
            or not isinstance(self.min_name_cosine, int | float)
            or not 0.0 <= self.min_name_cosine <= 1.0
        ):
            raise ValueError(
                f"scos.min_name_cosine must be null or a number in [0, 1], "
                f"got {self.min_name_cosine!r}"
            )
        if self.epsilon < 0:
            raise ValueError(f"scos.epsilon must be >= 0, got {self.epsilon}")
        if self.entity_types == "relation" and not self.type_relation:
            raise ValueError(
                "scos.entity_types=relation needs scos.type_relation (a relation label)"
            )

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> SCOSConfig:
        """Build from a plain mapping (e.g. a Hydra node); ``_target_`` is ignored."""
        values = dict(values or {})
        values.pop("_target_", None)
        known = [f.name for f in fields(cls)]
        unknown = sorted(k for k in values if k not in known)
        if unknown:
            raise ValueError(f"unknown scos keys {unknown}; allowed: {known}")
        if "weights" in values:
            values["weights"] = tuple(values["weights"])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["weights"] = list(self.weights)
        return data
