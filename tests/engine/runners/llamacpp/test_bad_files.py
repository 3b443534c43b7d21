"""Loading what is not a usable model: clear messages naming the file, and nothing broken after."""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import pytest

from engine.protocol import ModelConfig
from engine.runners.base import LoadCancelled, RunnerError
from engine.runners.llamacpp.runner import LlamaCppRunner


def _load(path: str | Path, cancelled=lambda: False, **settings: object) -> LlamaCppRunner:
    config = ModelConfig(path=str(path), slots=1, context_length=256, **settings)  # type: ignore[arg-type]
    return LlamaCppRunner.load(config, lambda _fraction, _message: None, cancelled)


def _truncated_copy(default_model: str, folder: Path) -> Path:
    data = Path(default_model).read_bytes()
    copy = folder / "half-downloaded.gguf"
    copy.write_bytes(data[: len(data) // 2])
    return copy


def _bad_files(default_model: str, folder: Path) -> list[tuple[Path, str]]:
    empty = folder / "empty.gguf"
    empty.write_bytes(b"")
    text = folder / "notes.gguf"
    text.write_text("These are my notes, not a model.\n")
    return [
        (folder / "missing.gguf", "does not exist"),
        (empty, "empty"),
        (text, "not a GGUF model file"),
        (_truncated_copy(default_model, folder), "incomplete or damaged"),
    ]


def test_bad_files_say_which_file_and_what_is_wrong_and_a_good_one_loads_after(
    default_model: str, tmp_path: Path
) -> None:
    for path, problem in _bad_files(default_model, tmp_path):
        with pytest.raises(RunnerError) as caught:
            _load(path)
        message = str(caught.value)
        assert str(path) in message, message
        assert problem in message, message
        assert "Traceback" not in message

    good = _load(default_model)
    try:
        assert good.tokenize("Hello") and good.info.quantization == "Q4_1"
    finally:
        good.close()


def test_the_truncated_file_message_carries_llama_cpps_reason(default_model: str, tmp_path: Path) -> None:
    with pytest.raises(RunnerError) as caught:
        _load(_truncated_copy(default_model, tmp_path))
    assert "file bounds" in str(caught.value) or "failed to read" in str(caught.value)


def test_a_text_file_message_shows_what_the_file_starts_with(tmp_path: Path) -> None:
    pointer = tmp_path / "model.gguf"
    pointer.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 98000000\n")
    with pytest.raises(RunnerError, match="Git LFS pointer"):
        _load(pointer)


def test_cancelling_while_weights_load_raises_load_cancelled(default_model: str) -> None:
    calls: list[int] = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 1  # let loading start, then stop it from the progress callback

    with pytest.raises(LoadCancelled):
        _load(default_model, cancelled=cancelled)
    with pytest.raises(LoadCancelled):
        _load(default_model, cancelled=lambda: True)
    assert len(calls) >= 2


def test_progress_is_reported_up_to_one_while_loading(default_model: str) -> None:
    reports: list[tuple[float, str]] = []
    config = ModelConfig(path=default_model, slots=1, context_length=256)
    runner = LlamaCppRunner.load(config, lambda f, m: reports.append((f, m)), lambda: False)
    copied = runner.info.prompt_reading.startswith("F32 copy")
    runner.close()
    fractions = [f for f, _ in reports]
    assert fractions[-1] == 1.0 and fractions == sorted(fractions)
    # after the weights, the copy for reading prompts where auto takes it (machines with more than ~4.5 GB)
    assert [m for _, m in reports if m != "Loading weights"] == (["Preparing the F32 copy for reading prompts"] if copied else [])
    assert len(reports) < 150  # throttled, not one event per tensor


@pytest.mark.parametrize("cache", ["q8_0", "q4_0"])
def test_a_quantized_v_cache_without_flash_attention_is_refused_in_words(default_model: str, cache: str) -> None:
    with pytest.raises(RunnerError) as caught:
        _load(default_model, kv_cache_type=cache, flash_attention="off")
    message = str(caught.value)
    assert cache in message and "flash attention" in message and "f16" in message


def test_a_quantized_cache_with_flash_attention_auto_loads_and_is_smaller(default_model: str) -> None:
    runner = _load(default_model, kv_cache_type="q4_0", flash_attention="auto")
    try:
        assert runner.info.attention == "flash attention on (auto)"  # auto turns it on for a quantized V cache
        assert runner.kv_cache_bytes() == 30 * 3 * 128 * 256 * 18 // 32
    finally:
        runner.close()


def test_gpu_layers_on_a_cpu_only_build_say_so(default_model: str) -> None:
    runner = _load(default_model, gpu_layers=-1)
    try:
        if llama_cpp.llama_supports_gpu_offload():
            pytest.skip("this llama.cpp build can offload to a GPU")
        assert runner.info.device == "cpu" and not runner.info.gpu_offload
        assert any("CMAKE_ARGS" in note for note in runner.info.notes)
    finally:
        runner.close()
    on_cpu = _load(default_model, gpu_layers=0)
    try:
        assert on_cpu.info.notes == ()
    finally:
        on_cpu.close()
