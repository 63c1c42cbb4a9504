"""Sentence encoder: mean pooling by hand, prefixes, disk cache, the bundled MiniLM."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lokg.embed import SentenceEncoder, mean_pool


class CountingEncoder(SentenceEncoder):
    """A stand-in model: the vector of a text is its length and its first character code."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seen: list[str] = []

    def _embed_batch(self, texts):
        self.seen.extend(texts)
        v = np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_mean_pool_ignores_padding():
    tokens = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])  # [1, 3, 2]
    mask = torch.tensor([[1, 1, 0]])
    assert torch.allclose(mean_pool(tokens, mask), torch.tensor([[2.0, 3.0]]))


def test_prefixes_are_applied_per_kind():
    embedder = CountingEncoder(query_prefix="query: ", passage_prefix="passage: ")
    embedder.encode(["who"], kind="query")
    embedder.encode(["paris"], kind="passage")
    assert embedder.seen == ["query: who", "passage: paris"]
    with pytest.raises(ValueError, match="kind must be one of"):
        embedder.encode(["x"], kind="document")


def test_repeated_texts_are_encoded_once_and_cache_persists(tmp_path):
    embedder = CountingEncoder(cache_dir=tmp_path, batch_size=2)
    out = embedder.encode(["ab", "c", "ab", "def"])
    assert out.shape == (4, 2)
    assert np.allclose(out[0], out[2])
    assert embedder.seen == ["ab", "c", "def"]
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0)
    again = CountingEncoder(cache_dir=tmp_path)
    assert np.allclose(again.encode(["def", "ab"]), out[[3, 0]])
    assert again.seen == []  # warm: nothing recomputed
    other = CountingEncoder(model_id="other/model", cache_dir=tmp_path)
    other.encode(["ab"])
    assert other.seen == ["ab"]  # the cache is keyed by model id


def test_single_string_is_rejected():
    with pytest.raises(TypeError, match="sequence of strings"):
        CountingEncoder().encode("abc")


def test_model_is_not_loaded_at_construction():
    embedder = SentenceEncoder()
    assert embedder._model is None


@pytest.mark.slow
def test_bundled_minilm_ranks_paraphrase_first():
    embedder = SentenceEncoder()
    vecs = embedder.encode(["spouse", "husband or wife", "place of birth"])
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]


def test_promised_output_dim_is_checked_against_the_model():
    from lokg.embed import SentenceEncoder

    embedder = SentenceEncoder(output_dim=768)  # the bundled MiniLM gives 384-d vectors
    with pytest.raises(ValueError, match="gives 384-d vectors, but embedder.output_dim is 768"):
        embedder.encode(["berlin"])


def test_a_progress_bar_shows_when_many_texts_miss_the_cache(monkeypatch, capsys):
    import lokg.embed

    monkeypatch.setattr(lokg.embed, "PROGRESS_MIN_TEXTS", 4)
    embedder = CountingEncoder(batch_size=2)
    embedder.encode(["a", "b", "c"], desc="embedding entity names")  # below the threshold
    assert capsys.readouterr().err == ""
    embedder.encode(["a", "b", "c", "d", "e", "f"], desc="embedding entity names")  # 3 misses
    assert capsys.readouterr().err == ""
    embedder.encode([f"x{i}" for i in range(5)], desc="embedding entity names")
    err = capsys.readouterr().err
    assert "embedding entity names" in err and "5/5" in err
    embedder.encode([f"y{i}" for i in range(4)], kind="query")
    assert "embedding query texts" in capsys.readouterr().err  # the default label
    embedder.show_progress = False  # trainer.enable_progress_bar=false
    embedder.encode([f"z{i}" for i in range(5)], desc="embedding entity names")
    assert capsys.readouterr().err == ""


def test_token_embeddings_are_the_word_pieces_the_fine_tuned_copy_starts_from():
    """``encode_tokens`` returns one row per word piece ([CLS]/[SEP] and padding left out),
    the same states the walk model's trainable copy (QuestionLM) gives before training."""
    from lokg.nn.question_encoder import QuestionLM

    embedder = SentenceEncoder()
    texts = ["what is the nationality of alice 's spouse ?", "who ?"]
    rows = embedder.encode_tokens(texts)
    lm = QuestionLM.from_embedder(embedder)
    pooled, hidden, mask = lm.encode(texts)
    for i, text in enumerate(texts):
        assert rows[i].shape == (len(lm.tokenizer.tokenize(text)), embedder.dim)
        assert rows[i] == pytest.approx(hidden[i][mask[i]].numpy(), abs=1e-4)
    # the copy's pooled vector is the frozen embedder's sentence vector
    assert pooled.numpy() == pytest.approx(embedder.encode(texts, kind="query"), abs=1e-5)
    with pytest.raises(TypeError):
        embedder.encode_tokens("one string")


def test_fine_tuning_the_top_layers_runs_them_on_cached_frozen_states():
    """``trainable_layers=k``: only the top k layers train; the frozen layers' output is
    computed once per question and cached, and the result is the whole model's (with the
    attention dropout off, so both are deterministic)."""
    from lokg.nn.question_encoder import QuestionLM

    full, top = QuestionLM(), QuestionLM(trainable_layers=2)
    for lm in (full, top):
        for module in lm.lm.modules():
            if hasattr(module, "dropout_prob"):  # SDPA's attention dropout
                module.dropout_prob = 0.0
    texts = ["what is the nationality of alice 's spouse ?", "who ?"]
    want_pooled, want_hidden, mask = full(texts)
    pooled, hidden, _ = top(texts)
    assert list(top._frozen) == texts  # cached once per question ...
    assert pooled.detach().numpy() == pytest.approx(want_pooled.detach().numpy(), abs=1e-5)
    assert hidden[mask].detach().numpy() == pytest.approx(
        want_hidden[mask].detach().numpy(), abs=1e-4
    )
    again, _, _ = top(texts[::-1])  # ... and reused in any batch order
    assert again.detach().numpy() == pytest.approx(pooled.flip(0).detach().numpy(), abs=1e-5)
    pooled.sum().backward()
    layers = top.lm.encoder.layer
    assert all(p.grad is None for p in layers[0].parameters())  # frozen: no gradient
    assert all(p.grad is not None for p in layers[-1].parameters() if p.requires_grad)
    with pytest.raises(ValueError, match="expected 1..6"):
        QuestionLM(trainable_layers=7)
