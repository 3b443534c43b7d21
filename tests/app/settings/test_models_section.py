"""The Several models settings: keep-alive, budget, loading by name, aliases; saved, read back, sent to the engine."""

from __future__ import annotations

from app.settings.models_options import GIB, default_budget_bytes, engine_options, keep_alive_s
from app.settings.models_section import ModelsSection
from app.settings.store import Settings, server_options
from engine.protocol import ModelConfig


def test_the_section_round_trips_through_the_settings_file(qtbot, tmp_path) -> None:
    path = tmp_path / "settings.json"
    settings = Settings.load(path)
    section = ModelsSection(3 * GIB)
    qtbot.addWidget(section)
    section.load(settings)
    assert section.keep_alive_spin.value() == 15 and not section.forever_check.isChecked()
    assert section.budget_spin.text() == "what fits here" and "3.0 GiB" in section.budget_hint.text()
    assert section.load_by_name_combo.currentData() == "local" and not section.unknown_default_check.isChecked()
    section.forever_check.setChecked(True)
    section.budget_spin.setValue(6.5)
    section.load_by_name_combo.setCurrentIndex(section.load_by_name_combo.findData("off"))
    section.unknown_default_check.setChecked(True)
    section.aliases_edit.setPlainText("gpt-4o = SmolLM2\n\nclaude=/models/other.gguf\n")
    assert section.problem() == ""
    section.collect(settings)
    settings.save()
    again = Settings.load(path)
    assert again.get("models.keep_alive_min") == -1.0 and keep_alive_s(again) < 0
    assert again.get("server.aliases") == ["gpt-4o = SmolLM2", "claude=/models/other.gguf"]
    options = engine_options(again, ModelConfig(path=""))
    assert options.budget_bytes == int(6.5 * GIB) and options.default_keep_alive_s < 0
    again.set("server.enabled", True)
    server = server_options(again)
    assert server is not None and server.aliases == (("gpt-4o", "SmolLM2"), ("claude", "/models/other.gguf"))
    assert server.allow_load_by_name is False and server.unknown_model_is_default is True
    reread = ModelsSection()
    qtbot.addWidget(reread)
    reread.load(again)
    assert reread.forever_check.isChecked() and not reread.keep_alive_spin.isEnabled()
    assert reread.load_by_name_combo.currentData() == "off" and reread.budget_spin.value() == 6.5 and reread.alias_lines() == again.get("server.aliases")


def test_defaults_keep_15_minutes_and_budget_what_fits(tmp_path) -> None:
    settings = Settings.load(tmp_path / "settings.json")
    options = engine_options(settings, ModelConfig(path="", device="cpu"))
    assert options.default_keep_alive_s == 15 * 60
    assert options.budget_bytes == default_budget_bytes(ModelConfig(path="", device="cpu")) > 0


def test_an_alias_line_without_equals_is_named(qtbot) -> None:
    section = ModelsSection()
    qtbot.addWidget(section)
    section.aliases_edit.setPlainText("good=model\njust-a-name")
    assert section.problem() == "An alias is written name=model; this line is not: just-a-name"
