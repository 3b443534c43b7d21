"""A picture attached in the real window with a GGUF model and its projector (the default model, a random mlp
projector beside it): the chip says the tokens the picture takes before sending, counted by the loaded
projector's libmtmd (engine/picture_counts.py), the documents' room shrinks by them, and the turn's prompt holds
that many more, counted by the engine, beside the same question alone."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PIL")

from app.bridge import SamplingParams
from app.settings.store import Settings
from app.window.mainwindow import MainWindow
from engine.protocol import TurnStarted
from engine.randweights.mmproj import n_image_tokens, write_mmproj
from tests.app.helpers import LONG, wait_restored
from tests.engine.runners.hf.tiny_vision import picture

QUESTION = "What colour is it?"


def test_a_gguf_models_picture_is_counted_on_its_chip(qtbot, default_model: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "model"
    folder.mkdir()
    model = folder / Path(default_model).name
    model.symlink_to(default_model)
    write_mmproj(folder / "mmproj-random.gguf", 576)  # found beside the model: Settings' "Automatic"
    settings = Settings.load()
    settings.set("model.threads", 1)  # the GUI and other jobs share this machine's cores
    settings.set("model.context_length", 512)
    settings.set("model.path", str(model))
    settings.save()
    window = MainWindow()
    window.default_sampling = SamplingParams(temperature=0.0, max_new_tokens=2, seed=0)
    window.system_prompt = ""
    qtbot.addWidget(window)
    try:
        failures: list[str] = []
        window.bridge.model_load_failed.connect(failures.append)
        window.show()
        qtbot.waitUntil(lambda: bool(failures) or window.bridge.model_info is not None, timeout=LONG)
        assert failures == []
        wait_restored(qtbot, window)
        started: dict[str, TurnStarted] = {}
        window.bridge.turn_started.connect(lambda event: started.setdefault(event.chat_id, event))
        plain, info = window.current_tab(), window.bridge.model_info
        assert plain is not None and info is not None and "vision" in info.capabilities
        seeing = window.new_chat()
        room = seeing.attachments.room()
        path = tmp_path / "red.png"
        path.write_bytes(picture((200, 20, 20)))
        seeing.attachments.attach([path])
        chip = next(iter(seeing.attachments.pictures.values()))
        qtbot.waitUntil(lambda: chip.tokens is not None, timeout=LONG)
        tokens = n_image_tokens()
        assert chip.tokens == tokens and chip.label.text().endswith(f" · {tokens} tokens")
        assert seeing.attachments.room() == room - tokens  # the picture takes room the files' text had
        for tab in (plain, seeing):
            tab.input.setPlainText(QUESTION)
            tab.send()
        qtbot.waitUntil(lambda: not plain.answering and not seeing.answering, timeout=LONG)
        assert started[seeing.chat_id].prompt_tokens == started[plain.chat_id].prompt_tokens + tokens
        assert not [card for tab in (plain, seeing) for card in tab.view.cards() if card.role == "error"]
    finally:
        window.close()
