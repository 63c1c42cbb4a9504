"""Relation linking: which relation the question names at each hop (the cache key's relation).

PathQuestion-style questions name a chain of relations by paraphrase around the topic entity:

* ``"X 's r1 's r2"``            -> r1, r2       (mentions *after* X, in reading order)
* ``"the r2 of the r1 of X"``    -> r1, r2       (mentions *before* X, in reverse order)
* ``"the r3 of X 's r1 's r2"``  -> r1, r2, r3   (after X first, then before X reversed)
* ``"which r2 is X 's r1 ?"``    -> r1, r2

:func:`split_mentions` applies this "possessive order rule": the text after the topic entity
is split on ``'s``, the text before it on `` of ``, function words are stripped from both ends
of each piece.  Each mention is then compared with every relation's *prototypes* in the
sentence-encoder space: the relation's readable name (``place_of_birth`` -> "place of birth";
Freebase ``__people__person__gender`` -> "people person gender" and "gender") plus, after
:meth:`RelationLinker.fit`, the mentions of the training questions whose gold path has the
same number of hops (weak supervision from the train split only).  The hop-i distribution is
``P_i(r) = softmax_r(max_proto cos(m_i, proto) / temperature)``.

When the topic entity is not found verbatim in the question, the whole question is one
mention and the hop order is unknown (``ordered=False``): every hop then uses that mention.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.retrieval import check_counts
from lokg.typing import Question

__all__ = ["LinkedChain", "RelationLinker", "relation_readable_names", "split_mentions"]

_FUNCTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "is",
        "was",
        "are",
        "were",
        "does",
        "did",
        "do",
        "the",
        "a",
        "an",
        "of",
        "'s",
        "?",
        "to",
        "in",
        "on",
        "for",
        "name",
    ]
)
_TOKEN = re.compile(r"'s|[^\s?]+")


def _strip(piece: str) -> str:
    words = _TOKEN.findall(piece)
    while words and words[0] in _FUNCTION_WORDS:
        words.pop(0)
    while words and words[-1] in _FUNCTION_WORDS:
        words.pop()
    return " ".join(words).replace(" of_", " of ").replace("_", " ")


def split_mentions(
    question: str, topic: str, protect: Iterable[str] = ()
) -> tuple[list[str], bool]:
    """Relation mentions of ``question`` in hop order, and whether the order is known.

    ``protect`` lists phrases containing " of " that must not be split (relation names such
    as "place of birth").  Returns ``(mentions, ordered)``; see the module docstring.
    """
    text = " ".join(question.lower().split())
    for phrase in protect:
        text = text.replace(phrase, phrase.replace(" of ", " of_"))
    pos = text.find(topic.lower()) if topic else -1
    if pos < 0:
        whole = _strip(text)
        return ([whole] if whole else []), False
    before, after = text[:pos], text[pos + len(topic) :]
    after_parts = [_strip(p) for p in re.split(r"\s*'s\b", after)]
    before_parts = [_strip(p) for p in re.split(r"\bof\b|'s\b", before)]
    mentions = [p for p in after_parts if p] + [p for p in reversed(before_parts) if p]
    return mentions, True


def _template(question: str, topic: str) -> str:
    text = " ".join(question.lower().split())
    return text.replace(topic.lower(), "someone") if topic else text


def relation_readable_names(label: str) -> list[str]:
    """Readable prototypes of a relation label (full name, and its last Freebase segment)."""
    parts = [p for p in re.split(r"__|\.|/", label) if p]
    names = [" ".join(p.replace("_", " ") for p in parts).strip() or label]
    if len(parts) > 1:
        names.append(parts[-1].replace("_", " "))
    return names


@dataclass(frozen=True)
class LinkedChain:
    """Per-hop relation distributions of one question.

    Attributes:
        mentions: the relation mentions in hop order.
        log_probs: ``[m, R]`` log P_i(r) for each mention i.
        ordered: whether hop i is mention i (else every hop may match any mention).
        chain_probs: P_knn(chain) from the nearest training questions (empty before
            :meth:`RelationLinker.fit`).
    """

    mentions: tuple[str, ...]
    log_probs: np.ndarray
    ordered: bool
    chain_probs: dict[tuple[int, ...], float] = field(default_factory=dict)

    def hop_chain_log_prob(self, relations: Sequence[int], complete: bool = True) -> float:
        """log P_hop(r_0..r_{k-1}) = sum_i log P_i(r_i).

        Hops past the last mention use the uniform 1/R; with ``complete`` a path shorter
        than the mention list also pays 1/R for every unmatched mention.
        """
        R = max(self.log_probs.shape[1], 1) if self.log_probs.ndim == 2 else 1
        total = 0.0
        for i, r in enumerate(relations):
            row = self.hop_log_probs(i)
            total += -np.log(R) if row is None else float(row[r])
        if complete and self.ordered and len(relations) < len(self.mentions):
            total += -np.log(R) * (len(self.mentions) - len(relations))
        return total

    def chain_log_prob(self, relations: Sequence[int], knn_weight: float) -> float:
        """S_link = log(w * P_knn(chain) + (1 - w) * P_hop(chain)), w = 0 without a prior."""
        p_hop = float(np.exp(self.hop_chain_log_prob(relations)))
        if not self.chain_probs:
            return float(np.log(max(p_hop, 1e-300)))
        p_knn = self.chain_probs.get(tuple(int(r) for r in relations), 0.0)
        return float(np.log(max(knn_weight * p_knn + (1.0 - knn_weight) * p_hop, 1e-300)))

    @property
    def num_hops(self) -> int:
        return len(self.mentions)

    def top_relations(self, hop: int, k: int) -> np.ndarray:
        """The ``k`` most probable relation ids for ``hop`` (all relations when no mention)."""
        row = self.hop_log_probs(hop)
        if row is None:
            return np.arange(self.log_probs.shape[1] if self.log_probs.ndim == 2 else 0)
        return np.argsort(-row, kind="stable")[:k]

    def hop_log_probs(self, hop: int) -> np.ndarray | None:
        """``[R]`` log P_hop(r), or ``None`` when the question names no relation at ``hop``."""
        if not self.mentions:
            return None
        if not self.ordered:
            return self.log_probs.max(axis=0)
        return self.log_probs[hop] if hop < len(self.mentions) else None


class RelationLinker:
    """Links relation mentions to relations by sentence-encoder similarity to relation prototypes.

    Args:
        kg: the graph whose relation vocabulary is linked to (after SCOS when used).
        embedder: the sentence encoder (the same one as S_sem).
        temperature: softmax temperature over cosine similarities (default 0.05).
        knn_k: neighbours of the chain prior (training questions, topic entity masked).
        knn_temperature: softmax temperature of the neighbour votes (default 0.05).
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        embedder: SentenceEncoder,
        temperature: float = 0.05,
        knn_k: int = 10,
        knn_temperature: float = 0.05,
    ):
        if temperature <= 0 or knn_temperature <= 0:
            raise ValueError(
                "retriever.link_temperature and retriever.knn_temperature must be > 0, got "
                f"{temperature} and {knn_temperature}"
            )
        check_counts(knn_k=knn_k)
        self.kg = kg
        self.embedder = embedder
        self.temperature = temperature
        self.knn_k = knn_k
        self.knn_temperature = knn_temperature
        self._train_vec: np.ndarray | None = None
        self._train_chain: list[tuple[int, ...]] = []
        self._proto_text: list[str] = []
        self._proto_rel: list[int] = []
        for r, label in enumerate(kg.relations.labels):
            for name in relation_readable_names(label):
                self._add(name, r)
        self._proto_vec: np.ndarray | None = None
        self.protect = sorted(
            {t for t in self._proto_text if " of " in t}, key=len, reverse=True
        )  # multi-word relation names such as "place of birth" are never split

    def _add(self, text: str, relation: int) -> None:
        self._proto_text.append(text)
        self._proto_rel.append(relation)
        self._proto_vec = None

    @property
    def num_prototypes(self) -> int:
        return len(self._proto_text)

    def fit(self, questions: Iterable[Question]) -> int:
        """Learn from the training questions (their gold paths only, never test answers).

        1. Their mentions become prototypes of the gold relations, for questions whose
           mention count equals the path length.
        2. The chain prior: each question, its topic entity replaced by a placeholder, is
           embedded with its gold relation chain; :meth:`link` votes over the ``knn_k``
           nearest ones.  This captures relations the text only implies (PathQuestion's
           "what is X 's husband ?" asks for the husband's profession).

        Returns the number of prototypes added.
        """
        seen = set(zip(self._proto_text, self._proto_rel, strict=True))
        added = 0
        templates: list[str] = []
        chains: list[tuple[int, ...]] = []
        for q in questions:
            if not q.gold_path or not q.topic_entities:
                continue
            chain = tuple(self.kg.relations.get(t[1], -1) for t in q.gold_path)
            if min(chain) < 0:
                continue
            templates.append(_template(q.text, q.topic_entities[0]))
            chains.append(chain)
            mentions, ordered = split_mentions(q.text, q.topic_entities[0], self.protect)
            if not ordered or len(mentions) != len(q.gold_path):
                continue
            for mention, (_, rel_label, _) in zip(mentions, q.gold_path, strict=True):
                rel = self.kg.relations.get(rel_label)
                if rel is not None and (mention, rel) not in seen:
                    seen.add((mention, rel))
                    self._add(mention, rel)
                    added += 1
        if templates:
            self._train_vec = self.embedder.encode(templates, kind="query")
            self._train_chain = chains
        return added

    def chain_prior(self, question: str, topic: str) -> dict[tuple[int, ...], float]:
        """P_knn(chain | question) from the nearest training questions (empty if unfitted)."""
        if self._train_vec is None:
            return {}
        q = self.embedder.encode([_template(question, topic)], kind="query")[0]
        sims = self._train_vec @ q  # [N_train]
        k = min(self.knn_k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        weights = np.exp((sims[top] - sims[top].max()) / self.knn_temperature)
        probs: dict[tuple[int, ...], float] = {}
        for i, w in zip(top.tolist(), weights.tolist(), strict=True):
            chain = self._train_chain[i]
            probs[chain] = probs.get(chain, 0.0) + w
        total = sum(probs.values())
        return {c: p / total for c, p in probs.items()}

    def _prototypes(self) -> np.ndarray:
        if self._proto_vec is None:
            self._proto_vec = self.embedder.encode(self._proto_text, kind="query")
        return self._proto_vec

    def score_mentions(self, mentions: Sequence[str]) -> np.ndarray:
        """``[m, R]`` max cosine similarity of each mention to each relation's prototypes."""
        R = self.kg.num_relations
        if not mentions:
            return np.zeros((0, R))
        sims = self.embedder.encode(list(mentions), kind="query") @ self._prototypes().T
        best = np.full((len(mentions), R), -np.inf)
        np.maximum.at(best.T, np.asarray(self._proto_rel), sims.T)
        return best

    def link(self, question: str, topic: str) -> LinkedChain:
        """Per-hop relation distributions for ``question`` about ``topic``."""
        mentions, ordered = split_mentions(question, topic, self.protect)
        logits = self.score_mentions(mentions) / self.temperature  # [m, R]
        if len(mentions):
            logits = logits - logits.max(axis=1, keepdims=True)
            logits = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        return LinkedChain(tuple(mentions), logits, ordered, self.chain_prior(question, topic))
