"""Bad model folders for the transformers backend: a clear sentence each, and the engine goes on."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.protocol import (  # noqa: E402
    ChatMessage,
    LoadModel,
    ModelConfig,
    ModelLoaded,
    ModelLoadFailed,
    SamplingParams,
    Submit,
)
from engine.runners import load_runner  # noqa: E402
from engine.runners.base import RunnerError  # noqa: E402
from tests.engine.engine_harness import EngineHarness  # noqa: E402

pytestmark = pytest.mark.hf


def _clone(good: Path, target: Path, edit: Callable[[dict], None] | None = None) -> Path:
    shutil.copytree(good, target)
    if edit is not None:
        config = json.loads((target / "config.json").read_text())
        edit(config)
        (target / "config.json").write_text(json.dumps(config))
    return target


def _no_config(good: Path, target: Path) -> Path:
    _clone(good, target)
    (target / "config.json").unlink()
    return target


def _unknown_architecture(good: Path, target: Path) -> Path:
    return _clone(good, target, lambda c: c.update(model_type="hearth_unknown", architectures=["HearthUnknown"]))


def _remote_code(good: Path, target: Path) -> Path:
    auto_map = {"AutoModelForCausalLM": "modeling_custom.CustomForCausalLM"}
    return _clone(good, target, lambda c: c.update(model_type="custom_lm", auto_map=auto_map))


def _wrong_shapes(good: Path, target: Path) -> Path:
    return _clone(good, target, lambda c: c.update(hidden_size=128))


def _missing_weights(good: Path, target: Path) -> Path:
    return _clone(good, target, lambda c: c.update(num_hidden_layers=3))


def _pickle_only(good: Path, target: Path) -> Path:
    _clone(good, target)
    (target / "model.safetensors").unlink()
    # A real pickle: the runner must refuse it without ever opening it.
    torch.save({"weight": torch.zeros(2)}, target / "pytorch_model.bin")
    return target


def _missing_folder(good: Path, target: Path) -> Path:
    return target / "nowhere"


BAD_CASES = {
    "no config.json": (_no_config, ["has no config.json", "folder that contains config.json"]),
    "unknown architecture": (_unknown_architecture, ["'hearth_unknown'", "not an architecture"]),
    "needs remote code": (_remote_code, ["own Python code", "trust_remote_code is off"]),
    "shapes differ": (_wrong_shapes, ["do not match config.json", "model.safetensors has [", "download the model again"]),
    "weights missing": (_missing_weights, ["do not match config.json", "9 weights missing"]),
    "pickle only": (_pickle_only, ["pytorch_model.bin", "not loaded for safety", ".safetensors version"]),
    "no such folder": (_missing_folder, ["no such file or folder"]),
}


@pytest.mark.parametrize("case", list(BAD_CASES))
def test_bad_folder_gives_a_clear_runner_error(tiny_model: str, tmp_path: Path, case: str) -> None:
    make, phrases = BAD_CASES[case]
    folder = make(Path(tiny_model), tmp_path / "model")
    config = ModelConfig(path=str(folder), backend="hf", slots=1, context_length=64)
    with pytest.raises(RunnerError) as caught:
        load_runner(config, lambda fraction, message: None, lambda: False)
    message = str(caught.value)
    assert str(folder) in message, "the message names the file or folder"
    for phrase in phrases:
        assert phrase in message
    assert "Traceback" not in message and len(message) < 600


def test_a_device_or_mode_that_cannot_work_is_refused_before_loading(tiny_model: str) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    config = ModelConfig(path=tiny_model, backend="hf", device="cuda")
    with pytest.raises(RunnerError, match="sees no CUDA GPU"):
        load_runner(config, lambda fraction, message: None, lambda: False)


def test_flash_attention_on_where_flash_attn_cannot_run_is_refused_in_words(tiny_model: str) -> None:
    config = ModelConfig(path=tiny_model, backend="hf", device="cpu", flash_attention="on")
    with pytest.raises(RunnerError) as caught:
        load_runner(config, lambda fraction, message: None, lambda: False)
    message = str(caught.value)
    assert "flash-attn 2 needs" in message and "CUDA GPU" in message and "auto or off" in message
    runner = load_runner(replace(config, flash_attention="off"), lambda fraction, message: None, lambda: False)
    try:
        assert runner.info.attention == "SDPA (math)"  # what was asked for, so no "auto" in the gauge
    finally:
        runner.close()


def test_engine_reports_each_bad_folder_and_then_serves_the_good_model(tiny_model: str, tmp_path: Path) -> None:
    harness = EngineHarness()
    try:
        bad = [make(Path(tiny_model), tmp_path / name.replace(" ", "_")) for name, (make, _) in BAD_CASES.items()]
        for folder in bad[:3]:
            mark = harness.mark()
            harness.loop.send(LoadModel(ModelConfig(path=str(folder), backend="hf")))
            failed = harness.wait_loaded(after=mark)
            assert isinstance(failed, ModelLoadFailed) and str(folder) in failed.message
            assert not failed.previous_kept
        mark = harness.mark()
        harness.loop.send(LoadModel(ModelConfig(path=tiny_model, backend="hf", slots=2, context_length=128)))
        assert isinstance(harness.wait_loaded(after=mark), ModelLoaded)
        for folder in bad[3:]:
            mark = harness.mark()
            harness.loop.send(LoadModel(ModelConfig(path=str(folder), backend="hf")))
            failed = harness.wait_loaded(after=mark)
            assert isinstance(failed, ModelLoadFailed) and failed.previous_kept
        mark = harness.mark()
        harness.loop.send(Submit("chat", (ChatMessage("user", "Hello!"),), SamplingParams(temperature=0, max_new_tokens=6)))
        finished = harness.finished("chat", mark)
        assert finished.reason in ("stop", "length") and finished.stats.generated_tokens > 0
        assert harness.loop.model_info is not None and harness.loop.model_info.backend == "hf"
    finally:
        harness.close()
