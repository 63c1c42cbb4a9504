"""Knowledge-graph data layer: the graph, its statistics, and readers/writers."""

from lokg.kg.graph import EntityAttributes, KnowledgeGraph, StepIndex, Vocabulary

__all__ = ["EntityAttributes", "KnowledgeGraph", "StepIndex", "Vocabulary"]
