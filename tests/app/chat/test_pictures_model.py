"""A picture attached in the real window reaches the real transformers runner (a tiny LLaVA built in code):
its chip says the tokens it will take before sending (the model's processor, counted off the GUI thread), and
the turn's prompt holds that many more, counted by the engine, beside the same question alone."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("PIL")

from app.bridge import SamplingParams
from app.settings.store import Settings
from app.window.mainwindow import MainWindow
from engine.protocol import TurnStarted
from tests.app.helpers import LONG, wait_restored
from tests.engine.runners.hf.tiny_vision import IMAGE_TOKENS, picture

pytestmark = pytest.mark.hf
QUESTION = "What colour is it?"


def plain_ready(window: MainWindow) -> bool:
    return window.bridge.model_info is not None


def test_the_pictures_tokens_reach_the_runner(qtbot, vision_model: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings.load()
    settings.set("model.threads", 1)  # the GUI and other jobs share this machine's cores
    settings.set("model.context_length", 256)
    settings.set("model.device", "cpu")
    settings.set("model.path", vision_model)  # a folder: the transformers backend
    settings.save()
    window = MainWindow()
    window.default_sampling = SamplingParams(temperature=0.0, max_new_tokens=2, seed=0)
    window.system_prompt = ""
    qtbot.addWidget(window)
    try:
        failures: list[str] = []
        window.bridge.model_load_failed.connect(failures.append)
        window.show()
        qtbot.waitUntil(lambda: bool(failures) or plain_ready(window), timeout=LONG)
        assert failures == []
        wait_restored(qtbot, window)
        started: dict[str, TurnStarted] = {}
        window.bridge.turn_started.connect(lambda event: started.setdefault(event.chat_id, event))
        plain, info = window.current_tab(), window.bridge.model_info
        assert plain is not None and info is not None and "vision" in info.capabilities
        assert plain.model_info() == info
        seeing = window.new_chat()
        path = tmp_path / "red.png"
        path.write_bytes(picture((200, 20, 20)))
        seeing.attachments.attach([path])
        chip = next(iter(seeing.attachments.pictures.values()))
        assert "cannot see" not in chip.label.text()
        qtbot.waitUntil(lambda: chip.tokens is not None, timeout=LONG)
        assert chip.tokens == IMAGE_TOKENS and chip.label.text().endswith(f" · {IMAGE_TOKENS} tokens")
        for tab in (plain, seeing):
            tab.input.setPlainText(QUESTION)
            tab.send()
        qtbot.waitUntil(lambda: not plain.answering and not seeing.answering, timeout=LONG)
        assert started[seeing.chat_id].prompt_tokens == started[plain.chat_id].prompt_tokens + IMAGE_TOKENS
        assert [len(m.images) for m in seeing.messages if m.role == "user"] == [1]
        assert not [card for tab in (plain, seeing) for card in tab.view.cards() if card.role == "error"]
    finally:
        window.close()
