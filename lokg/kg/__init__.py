"""Knowledge-graph data layer: the graph, its statistics, and readers/writers."""

from lokg.kg.graph import EntityAttributes, KnowledgeGraph, StepIndex, Vocabulary, label_as_words

__all__ = ["EntityAttributes", "KnowledgeGraph", "StepIndex", "Vocabulary", "label_as_words"]
