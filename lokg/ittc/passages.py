"""Text evidence under the budget: passages and text blocks cut to B tokens.

Every method's evidence passes the same gate as LOKG's: at most B tokens of the encoder's
tokenizer, counted on the exact string placed in the prompt. Methods whose evidence is
triples go through an :class:`~lokg.ittc.encoder.Encoder`; methods whose evidence is text
(GraphRAG's community reports, LLMLingua's compressed context) are cut here:

- :func:`cut_to_budget`: whole lines while they fit, then as many whole words of the next
  line as fit (a block that starts with one over-long line still says something);
- :func:`encode_passages`: ranked passages, whole passages while they fit (GraphRAG's
  context builder stops at the first report that overflows), the first one cut by
  :func:`cut_to_budget` when not even it fits.

"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lokg.ittc.encoder import EncodedContext
from lokg.tokens import Budget, Tokenizer

__all__ = ["cut_to_budget", "encode_passages", "text_context"]

#: separator between passages in the evidence block
PASSAGE_SEPARATOR = "\n\n"


def _words_that_fit(tokenizer: Tokenizer, prefix: str, line: str, budget: int) -> str:
    """The longest word prefix ``w`` of ``line`` with ``tokens(prefix + w) <= budget``."""
    words = line.split(" ")
    lo, hi = 0, len(words)  # invariant: words[:lo] fits; answer in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tokenizer.count(prefix + " ".join(words[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def cut_to_budget(tokenizer: Tokenizer, text: str, budget: Budget) -> str:
    """``text`` cut to at most ``budget`` tokens: whole lines, then whole words of the next.

    The result is a prefix of ``text`` (up to trailing whitespace) whose token count, measured
    on the result itself, is at most ``budget`` (a :class:`~lokg.tokens.Budget`, validated
    where it entered: the config, or the pipeline's or the encoder's ``budget=``).
    """
    if tokenizer.count(text) <= budget:
        return text
    kept = ""
    for line in text.split("\n"):
        candidate = line if not kept else kept + "\n" + line
        if tokenizer.count(candidate) <= budget:
            kept = candidate
            continue
        prefix = kept + "\n" if kept else ""
        part = _words_that_fit(tokenizer, prefix, line, budget)
        kept = (prefix + part).rstrip()
        break
    while kept and tokenizer.count(kept) > budget:  # BPE across the cut: drop words until it fits
        kept = kept.rsplit(" ", 1)[0] if " " in kept else ""
    return kept


def text_context(
    tokenizer: Tokenizer, text: str, budget: int, naive_tokens: int, solver: str
) -> EncodedContext:
    """An :class:`EncodedContext` for a text block (no triples); ``num_tokens`` counted on it."""
    empty = np.zeros((0, 3), dtype=np.int64)
    return EncodedContext(
        text=text,
        num_tokens=tokenizer.count(text),
        budget=budget,
        naive_tokens=naive_tokens,
        triples=empty,
        granularity=(),
        dropped=empty,
        solver=solver,
        order="text",
    )


def encode_passages(
    tokenizer: Tokenizer, passages: Sequence[str], budget: Budget
) -> EncodedContext:
    """Ranked ``passages`` (best first) as one evidence block of at most ``budget`` tokens.

    Whole passages are kept in rank order until the next one would overflow (then the block
    stops, as GraphRAG's local-search context builder does); when not even the first fits,
    it is cut by :func:`cut_to_budget`. ``naive_tokens`` is the block of all passages.
    ``budget``: a :class:`~lokg.tokens.Budget` (the pipeline's, validated where it entered).
    """
    passages = [p.strip() for p in passages if p and p.strip()]
    full = PASSAGE_SEPARATOR.join(passages)
    kept: list[str] = []
    for p in passages:
        if tokenizer.count(PASSAGE_SEPARATOR.join([*kept, p])) > budget:
            break
        kept.append(p)
    text = PASSAGE_SEPARATOR.join(kept)
    if not kept and passages:
        text = cut_to_budget(tokenizer, passages[0], budget)
    return text_context(tokenizer, text, budget, tokenizer.count(full), "passages")
