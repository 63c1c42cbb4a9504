"""Which step relations a question's hop distribution is normalised over (beyond the paper;
docs/design/taimr.md item 27).

The vocabulary-normalised walk (:func:`lokg.taimr.walk.net.hop_distribution`) soft-maxes each
hop over a relation vocabulary and stop.  ``vocabulary_scope="graph"`` (the per-KG walk) takes
the whole graph's relations.  ``"component"`` takes only the relations of the topic entity's
connected component: on one connected KG that is the graph's vocabulary, unchanged; on a
disjoint union of KGs (the pretrained walk's training data, :mod:`lokg.data.union`) it is the
question's own KG's, so the stop option competes against as many relations in training as it
does on a KG never seen, where it otherwise met the union's 2,900 step relations in training
and a few dozen at inference, and stopped early.  A relation outside the component can
never be walked from the topic, so no reachable path loses probability to it either way.
Cost: scipy's connected components over the triples (linear in them; not measured at scale)
each time a component-scoped walk is bound to a graph, for training or retrieval; nothing
for the default ``graph`` scope.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import connected_components

from lokg.kg.graph import KnowledgeGraph

VOCABULARY_SCOPES = ("graph", "component")

__all__ = ["VOCABULARY_SCOPES", "ComponentVocabulary"]


class ComponentVocabulary:
    """Each entity's connected component (edges taken undirected) and each component's
    relations, as CSR arrays.

    Args:
        kg: the graph walked (its triples ``[T, 3]``).

    Attributes:
        component: ``[E]`` component id of every entity.
        ptr, relations: component ``c``'s relation ids are ``relations[ptr[c]:ptr[c + 1]]``.
    """

    def __init__(self, kg: KnowledgeGraph):
        t = np.asarray(kg.triples_np)
        n = kg.num_entities
        adj = sp.coo_matrix((np.ones(len(t), np.int8), (t[:, 0], t[:, 2])), shape=(n, n))
        _, self.component = connected_components(adj, directed=False)
        self.num_relations = kg.num_relations
        pairs = np.unique(self.component[t[:, 0]].astype(np.int64) * kg.num_relations + t[:, 1])
        comp, self.relations = np.divmod(pairs, kg.num_relations)
        counts = np.bincount(comp, minlength=int(self.component.max(initial=-1)) + 1)
        self.ptr = np.concatenate([[0], np.cumsum(counts)])

    def component_of(self, entity: int) -> int:
        return int(self.component[entity])

    def relations_of(self, entity: int) -> np.ndarray:
        """The relation ids ``[k]`` of ``entity``'s component (empty for an isolated one)."""
        c = self.component[entity]
        return self.relations[self.ptr[c] : self.ptr[c + 1]]

    def allowed(self, topics, vocabulary: torch.Tensor | None = None, device=None) -> torch.Tensor:
        """``[B, V]`` bool: the step relations each topic's component has, over the walk's
        vocabulary ``vocabulary [V]`` of step relations (``r`` forward, ``r + R`` inverse;
        ``None``: all ``2R``).  A topic whose component has no relation allows every column
        (it has no step to take anyway, and a hop over nothing is undefined)."""
        R = self.num_relations
        out = torch.zeros(len(topics), 2 * R, dtype=torch.bool)
        for b, topic in enumerate(topics):
            rels = torch.as_tensor(self.relations_of(int(topic)))
            if not len(rels):
                out[b] = True
                continue
            out[b, rels] = True
            out[b, rels + R] = True
        if vocabulary is not None:
            out = out[:, vocabulary.cpu()]
        return out.to(device) if device is not None else out
