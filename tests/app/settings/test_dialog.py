"""The settings dialog on real models: metadata fills the fields, the estimate follows, Apply persists."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.settings.store import Settings
from app.settings.capabilities import Capabilities, probe_capabilities
from app.settings.dialog import SettingsDialog
from app.settings.widgets import item_enabled
from engine.catalog.models import discover
from engine.protocol import ModelConfig, SamplingParams

TINY_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
               "max_position_embeddings": 2048, "torch_dtype": "float16"}


def write_tiny_hf_folder(folder: Path) -> Path:
    """config.json + random float16 safetensors, Llama-shaped, fixed seed."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    shapes = {"model.embed_tokens.weight": (256, 64), "model.norm.weight": (64,), "lm_head.weight": (256, 64)}
    for i in range(2):
        for name, shape in (("self_attn.q_proj", (64, 64)), ("self_attn.k_proj", (32, 64)),
                            ("self_attn.v_proj", (32, 64)), ("self_attn.o_proj", (64, 64)),
                            ("mlp.gate_proj", (128, 64)), ("mlp.up_proj", (128, 64)), ("mlp.down_proj", (64, 128)),
                            ("input_layernorm", (64,)), ("post_attention_layernorm", (64,))):
            shapes[f"model.layers.{i}.{name}.weight"] = shape
    folder.mkdir(parents=True)
    save_file({k: rng.standard_normal(v).astype(np.float16) for k, v in shapes.items()}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    return folder


TINY_PARAMS = 256 * 64 * 2 + 64 + 2 * (64 * 64 * 2 + 32 * 64 * 2 + 128 * 64 * 3 + 64 * 2)


@pytest.fixture(scope="module")
def capabilities() -> Capabilities:
    return probe_capabilities()  # the real machine: no CUDA here, flash-attn not installed


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    return Settings.load()


@pytest.fixture
def make_dialog(qtbot, tmp_path: Path, capabilities: Capabilities):  # type: ignore[no-untyped-def]
    def make(settings: Settings, caps: Capabilities | None = None) -> SettingsDialog:
        # only the bundled model and the recent list: the user's own folders are not the test's business
        entries = discover(settings.get("model.recent"), folder=tmp_path / "no-models", hf_cache=False)
        dialog = SettingsDialog(settings, entries=entries, capabilities=caps or capabilities)
        qtbot.addWidget(dialog)
        return dialog

    return make


def test_default_gguf_fills_the_fields_from_its_metadata(make_dialog, settings: Settings, default_model: str) -> None:
    dialog = make_dialog(settings)
    assert dialog.description is not None and dialog.description.path == default_model
    assert dialog.form.file_type_label.text() == "Q4_1"
    assert dialog.form.backend_combo.currentData() == "llamacpp"
    assert dialog.form.context_spin.maximum() == 8192  # capped at the trained context
    assert dialog.form.context_spin.value() == 4096
    assert "30 layers, 3 KV heads x 64" in dialog.models.metadata_label.text()
    assert "Q4_1" in dialog.models.list.currentItem().text()
    estimate = dialog.current_estimate()
    assert estimate is not None and estimate.kv_cache_bytes == 2 * 30 * 3 * 64 * 4096 * 4 * 2
    assert "one per chat, all reserved at load" in dialog.form.kv_note_label.text()
    assert "360 MiB" in dialog.memory.breakdown_label.text()  # the KV cache in the breakdown
    assert dialog.memory.verdict_label.text().count("Fits.") == 1


def test_tiny_hf_folder_fills_the_fields(make_dialog, settings: Settings, tmp_path: Path) -> None:
    dialog = make_dialog(settings)
    folder = write_tiny_hf_folder(tmp_path / "tiny-llama")
    assert dialog.open_model(str(folder))
    assert dialog.form.backend_combo.currentData() == "hf"
    assert not item_enabled(dialog.form.backend_combo, 0)  # llama.cpp cannot load a folder
    assert "GGUF files only" in dialog.form.backend_combo.itemData(0, 3)  # Qt.ToolTipRole
    assert dialog.form.context_spin.maximum() == 2048 and dialog.form.context_spin.value() == 2048
    assert f"{TINY_PARAMS:,} parameters" in dialog.models.metadata_label.text()
    assert "2 layers, 2 KV heads x 16" in dialog.models.metadata_label.text()
    estimate = dialog.current_estimate()
    # compute dtype "auto" on the CPU: float32, as the HF runner loads it there
    assert estimate is not None and estimate.weights_bytes == TINY_PARAMS * 4
    assert estimate.kv_cache_bytes == 2 * 2 * 2 * 16 * 2048 * 4 * 4
    assert "f16" in dialog.models.metadata_label.text()  # as stored in the file
    assert "one per chat (on the CPU they grow" in dialog.form.kv_note_label.text()


def test_the_estimate_follows_context_slots_and_quantization(make_dialog, settings: Settings, tmp_path: Path) -> None:
    dialog = make_dialog(settings)

    def kv_and_total() -> tuple[int, int]:
        estimate = dialog.current_estimate()
        assert estimate is not None
        return estimate.kv_cache_bytes, estimate.total_bytes

    kv, total = kv_and_total()
    text = dialog.memory.breakdown_label.text()
    dialog.form.context_spin.setValue(2048)
    assert kv_and_total()[0] == kv // 2 and kv_and_total()[1] < total
    assert dialog.memory.breakdown_label.text() != text
    dialog.form.slots_spin.setValue(1)
    assert kv_and_total()[0] == 2 * 30 * 3 * 64 * 2048 * 2
    dialog.form.kv_type_combo.setCurrentIndex(dialog.form.kv_type_combo.findData("q8_0"))
    assert kv_and_total()[0] == int(2 * 30 * 3 * 64 * 2048 * 34 / 32)
    assert dialog.form.kv_note_label.text() == "One KV cache of 2,048 positions for the one chat."

    dialog.open_model(str(write_tiny_hf_folder(tmp_path / "tiny")))
    weights = dialog.current_estimate().weights_bytes
    dialog.form.quant_combo.setCurrentIndex(dialog.form.quant_combo.findData("nf4"))
    assert dialog.form.double_quant_check.isEnabled()
    quantized = dialog.current_estimate().weights_bytes
    assert quantized < weights
    assert quantized == int((TINY_PARAMS - 16384 * 2 - 64 * 5) * (0.5 + 4 / 64)) + (16384 * 2 + 64 * 5) * 4
    dialog.form.dtype_combo.setCurrentIndex(dialog.form.dtype_combo.findData("bfloat16"))
    assert dialog.current_estimate().weights_bytes == quantized - (16384 * 2 + 64 * 5) * 2


def test_impossible_options_are_disabled_with_a_reason(make_dialog, settings: Settings, capabilities) -> None:
    assert not capabilities.gpus, "this test describes a machine without CUDA"
    dialog = make_dialog(settings)
    cuda = dialog.form.device_combo.findData("cuda")
    assert not item_enabled(dialog.form.device_combo, cuda)
    assert "No NVIDIA GPU" in dialog.form.device_combo.itemData(cuda, 3)
    assert not dialog.form.gpu_layers_spin.isEnabled() and "CPU" in dialog.form.gpu_layers_spin.toolTip()
    # a quantized KV cache needs flash attention
    dialog.form.flash_combo.setCurrentIndex(dialog.form.flash_combo.findData("off"))
    assert not item_enabled(dialog.form.kv_type_combo, dialog.form.kv_type_combo.findData("q4_0"))
    assert "flash attention" in dialog.form.kv_type_combo.itemData(2, 3)
    # transformers: flash attention "on" needs flash-attn and CUDA
    dialog.form.backend_combo.setCurrentIndex(dialog.form.backend_combo.findData("hf"))
    assert not item_enabled(dialog.form.flash_combo, dialog.form.flash_combo.findData("on"))
    assert "flash-attn is not installed" in dialog.form.flash_combo.itemData(1, 3)
    assert not dialog.form.double_quant_check.isEnabled()  # only for 4-bit


def test_missing_libraries_disable_their_options(make_dialog, settings: Settings) -> None:
    dialog = make_dialog(settings, Capabilities(llama_cpp=True, transformers=False, bitsandbytes=False))
    assert not item_enabled(dialog.form.backend_combo, 1)
    assert "transformers" in dialog.form.backend_combo.itemData(1, 3)
    for index in (1, 2, 3):
        assert not item_enabled(dialog.form.quant_combo, index)
    assert "bitsandbytes is not installed" in dialog.form.quant_combo.itemData(2, 3)


def test_apply_emits_the_config_and_settings_survive_a_restart(qtbot, make_dialog, settings: Settings,
                                                               default_model: str) -> None:
    dialog = make_dialog(settings)
    dialog.form.context_spin.setValue(2048)
    dialog.form.slots_spin.setValue(2)
    dialog.form.kv_type_combo.setCurrentIndex(dialog.form.kv_type_combo.findData("q8_0"))
    dialog.form.temperature_spin.setValue(0.3)
    dialog.form.seed_spin.setValue(42)
    dialog.form.system_prompt_edit.setPlainText("Answer briefly.")
    with qtbot.waitSignal(dialog.model_config_applied) as loaded, qtbot.waitSignal(dialog.sampling_applied) as sampled:
        dialog.apply()
    assert loaded.args[0] == ModelConfig(path=default_model, context_length=2048, slots=2, kv_cache_type="q8_0")
    assert sampled.args == [SamplingParams(temperature=0.3, seed=42), "Answer briefly."]

    # Apply again with nothing changed: no reload, the sampling defaults still go out
    with qtbot.assertNotEmitted(dialog.model_config_applied), qtbot.waitSignal(dialog.sampling_applied):
        dialog.apply()

    restarted = Settings.load()
    assert restarted.message == ""
    assert restarted.get("model.context_length") == 2048 and restarted.get("model.path") == ""  # "" = the default
    again = make_dialog(restarted)
    assert (again.form.context_spin.value(), again.form.slots_spin.value()) == (2048, 2)
    assert again.form.kv_type_combo.currentData() == "q8_0"
    assert again.form.temperature_spin.value() == pytest.approx(0.3) and again.form.seed_spin.value() == 42
    assert again.form.system_prompt_edit.toPlainText() == "Answer briefly."
    assert again.current_config() == loaded.args[0]


def test_a_chosen_hf_folder_is_remembered(qtbot, make_dialog, settings: Settings, tmp_path: Path) -> None:
    folder = write_tiny_hf_folder(tmp_path / "tiny")
    dialog = make_dialog(settings)
    dialog.open_model(str(folder))
    dialog.form.quant_combo.setCurrentIndex(dialog.form.quant_combo.findData("nf4"))
    with qtbot.waitSignal(dialog.model_config_applied) as loaded:
        dialog.apply()
    assert (loaded.args[0].backend, loaded.args[0].path, loaded.args[0].quantization) == ("hf", str(folder), "nf4")
    again = make_dialog(Settings.load())
    assert again.description is not None and again.description.path == str(folder)
    assert again.form.backend_combo.currentData() == "hf" and again.form.quant_combo.currentData() == "nf4"
    sources = [again.models.list.item(row).text() for row in range(again.models.list.count())]
    assert any("Recently used" in text and "tiny" in text for text in sources)


def test_a_corrupt_settings_file_opens_with_defaults(make_dialog, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HEARTH_CONFIG_DIR", str(tmp_path / "config"))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.json").write_text('{"settings": {"model.slots": ', encoding="utf-8")
    settings = Settings.load()
    assert "default settings" in settings.message
    dialog = make_dialog(settings)
    assert dialog.form.slots_spin.value() == 4 and dialog.form.context_spin.value() == 4096
    assert (tmp_path / "config" / "settings.json.bak").exists()


def test_a_broken_model_file_is_explained_and_the_choice_kept(make_dialog, settings: Settings, tmp_path: Path,
                                                              default_model: str) -> None:
    dialog = make_dialog(settings)
    broken = tmp_path / "half-downloaded.gguf"
    broken.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert not dialog.open_model(str(broken))
    assert "half-downloaded.gguf" in dialog.models.error_label.text() and "download it again" in dialog.models.error_label.text()
    assert dialog.description is not None and dialog.description.path == default_model


def test_a_load_error_is_shown_and_apply_can_retry(qtbot, make_dialog, settings: Settings) -> None:
    dialog = make_dialog(settings)
    dialog.form.slots_spin.setValue(3)
    with qtbot.waitSignal(dialog.model_config_applied):
        dialog.apply()
    dialog.show_load_error("SmolLM2 could not be loaded: out of memory. Try a shorter context.")
    assert "out of memory" in dialog.models.error_label.text()
    with qtbot.waitSignal(dialog.model_config_applied) as retried:
        dialog.apply()  # same settings: tried again because the last attempt failed
    assert retried.args[0].slots == 3 and dialog.models.error_label.text() == ""


def test_the_local_api_is_off_by_default_and_another_address_needs_a_key(qtbot, make_dialog, settings: Settings) -> None:
    from engine.server.options import ServerOptions

    dialog = make_dialog(settings)
    server = dialog.server
    assert not server.enabled_check.isChecked() and server.host == "127.0.0.1" and not server.port_spin.isEnabled()
    server.enabled_check.setChecked(True)
    server.host_combo.setCurrentIndex(server.host_combo.findData("0.0.0.0"))
    server.port_spin.setValue(9123)
    with qtbot.assertNotEmitted(dialog.server_applied):
        assert dialog.apply() is False
    assert "set an API key" in server.problem_label.text()
    assert Settings.load().get("server.enabled") is False  # nothing was saved
    server.key_edit.setText("sekrit")
    server.origins_edit.setText("http://localhost:3000, https://app.example")
    with qtbot.waitSignal(dialog.server_applied) as applied:
        assert dialog.apply() is True
    assert applied.args[0] == ServerOptions(host="0.0.0.0", port=9123, api_key="sekrit",
                                            cors_origins=("http://localhost:3000", "https://app.example"))
    assert server.problem_label.text() == ""
    assert "sekrit" not in settings.path.read_text(encoding="utf-8")  # the key went to the keyring or a 0600 file
    with qtbot.assertNotEmitted(dialog.server_applied):
        dialog.apply()  # unchanged: the server is not restarted
    again = make_dialog(Settings.load())
    assert (again.server.host, again.server.port_spin.value(), again.server.key_edit.text()) == ("0.0.0.0", 9123, "sekrit")
    dialog.show_server_error("Port 9123 on 0.0.0.0 is already in use by another program.")
    assert "already in use" in server.problem_label.text()
    with qtbot.waitSignal(dialog.server_applied):
        dialog.apply()  # the same options are tried again after a failure
