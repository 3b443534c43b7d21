"""Model paths relative to the working directory: made absolute where they enter, loadable on both backends.

`python -m engine.bench --backend hf --model .venv/lib/.../SmolLM2-135M-Instruct.Q4_1.gguf` failed
with "GGUF file not found" and the folder doubled: the transformers loader joined a relative file
path onto its own (relative) folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.bench import parse
from engine.protocol import ChatMessage, LoadModel, ModelConfig, ModelLoaded, SamplingParams, Submit
from tests.engine.engine_harness import EngineHarness


def relative_to_parent_of_its_folder(path: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Work from two levels above the file; return the file's path from there ("folder/file")."""
    file = Path(path)
    monkeypatch.chdir(file.parent.parent)
    return str(Path(file.parent.name) / file.name)


def load_and_answer(config: ModelConfig) -> tuple[str, str]:
    harness = EngineHarness()
    try:
        harness.loop.send(LoadModel(config))
        loaded = harness.wait_loaded(timeout=300)
        assert isinstance(loaded, ModelLoaded), loaded
        harness.loop.send(Submit("chat", (ChatMessage("user", "Hello!"),), SamplingParams(temperature=0, max_new_tokens=4)))
        finished = harness.finished("chat")
        assert finished.reason in ("stop", "length") and finished.stats.generated_tokens > 0
        return loaded.info.path, finished.reason
    finally:
        harness.close()


def test_the_bench_makes_its_model_path_absolute_once(default_model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    relative = relative_to_parent_of_its_folder(default_model, monkeypatch)
    assert parse(["--model", relative]).model == default_model
    assert parse([]).model == default_model  # the bundled default, found by the package


def test_llamacpp_loads_a_relative_path_and_reports_it_absolute(
    default_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    relative = relative_to_parent_of_its_folder(default_model, monkeypatch)
    path, _ = load_and_answer(ModelConfig(path=relative, slots=1, context_length=256))
    assert path == default_model


@pytest.mark.hf
def test_transformers_loads_a_relative_folder_and_reports_it_absolute(
    tiny_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(tiny_model).parent)
    path, _ = load_and_answer(ModelConfig(path=Path(tiny_model).name, backend="hf", slots=1, context_length=64))
    assert path == tiny_model


@pytest.mark.hf
def test_transformers_finds_a_relative_gguf_where_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from engine.runners.hf.load import resolve_source

    (tmp_path / "models" / "nested").mkdir(parents=True)
    (tmp_path / "models" / "nested" / "tiny.gguf").write_bytes(b"GGUF")
    monkeypatch.chdir(tmp_path)
    source = resolve_source(ModelConfig(path="models/nested/tiny.gguf", backend="hf"))
    assert (source.folder.absolute(), source.gguf_file) == (tmp_path / "models" / "nested", "tiny.gguf")
    # gguf_file names a file in the model's folder, or stands alone when absolute
    source = resolve_source(ModelConfig(path="models", backend="hf", gguf_file="nested/tiny.gguf"))
    assert (source.folder.absolute(), source.gguf_file) == (tmp_path / "models" / "nested", "tiny.gguf")
    absolute = str(tmp_path / "models" / "nested" / "tiny.gguf")
    source = resolve_source(ModelConfig(path="models", backend="hf", gguf_file=absolute))
    assert (source.folder, source.gguf_file) == (tmp_path / "models" / "nested", "tiny.gguf")
