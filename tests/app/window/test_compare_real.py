"""Compare on the real engine: the default GGUF and its Q4_0 requantization answer one message side by side.

The scripted tests (test_several_models.py) cover the panes' wiring; this one runs two real llama.cpp
models in the real window: the second loads on demand for its pane, both panes stream in the same
stretch of time once both are loaded, the gauge counts both models, and each pane's answer is what its model gives in a
plain tab alone (greedy; each model steps its one chat by itself, so the computation is the same).
"""

from __future__ import annotations

from app.models.library import LibraryModel
from tests.app.helpers import LONG, send_and_wait

QUESTION = "Name three fruits and their colours."


def test_compare_streams_two_real_models_at_once_and_each_answers_as_alone(  # type: ignore[no-untyped-def]
        qtbot, make_window, default_model: str, requantized_model: str) -> None:
    window = make_window(max_new_tokens=16)
    bridge = window.bridge
    window.tab_models.set_library([LibraryModel(default_model, "SmolLM2 Q4_1", "fits", ""),
                                   LibraryModel(requantized_model, "SmolLM2 Q4_0", "fits", "")])
    assert list(bridge.loaded_models) == [default_model] and requantized_model not in bridge.loaded_models
    order: list[str] = []
    bridge.token_received.connect(lambda chat_id, _text: order.append(chat_id))
    window.open_compare()
    dialog = window.compare_dialog
    dialog.set_checked([default_model, requantized_model])
    dialog.input.setPlainText(QUESTION)
    dialog.send()
    near, far = dialog.panes
    assert (near.path, far.path) == (default_model, requantized_model)
    assert "Loading SmolLM2 Q4_0" in far.shown_text(), "its model loads for it first"
    qtbot.waitUntil(lambda: requantized_model in bridge.loaded_models, timeout=LONG)
    qtbot.waitUntil(lambda: not near.answering and not far.answering, timeout=LONG)
    assert set(bridge.loaded_models) == {default_model, requantized_model}, "the first model stays loaded"
    for pane in (near, far):
        shown = pane.shown_text()  # rendered as Markdown: list numbers and marks are not text
        words = [word for word in pane.text.replace("*", " ").split() if word.isalpha()]
        assert words and all(word in shown for word in words), (pane.text, shown)
        assert "tok/s" in pane.stats_text() and "MiB" in pane.stats_text(), pane.stats_text()
    assert near.text != far.text, "two files with other weights: two answers (16 greedy tokens each)"
    answers = {near.path: near.text, far.path: far.text}
    # Again with both loaded: the two streams interleave (each had a token before the other had its last).
    order.clear()
    dialog.input.setPlainText("Why is the sky blue?")
    dialog.send()
    near, far = dialog.panes
    qtbot.waitUntil(lambda: not near.answering and not far.answering, timeout=LONG)
    steps = {pane.chat_id: [i for i, chat in enumerate(order) if chat == pane.chat_id] for pane in (near, far)}
    assert all(len(at) >= 8 for at in steps.values()), steps
    assert max(at[0] for at in steps.values()) < min(at[-1] for at in steps.values()), order
    qtbot.waitUntil(lambda: window.gauge.model_label.text().startswith("2 models"), timeout=LONG)
    # both answers are over, but each model's slots are freed in the engine's next stats, which may come later
    qtbot.waitUntil(lambda: window.gauge.details_html().count("tok/s · slots 0/4") == 2, timeout=LONG)
    details = window.gauge.details_html()  # each model by its file's name, with its memory and slots
    for path in (default_model, requantized_model):
        stem = path.rsplit("/", 1)[-1].removesuffix(".gguf")
        assert f"<u>{stem}</u>" in details and path in details, stem
    assert details.count("tok/s · slots 0/4") == 2 and "Loaded models</b>&nbsp;&nbsp;</td><td>2<" in details
    # each answer is what its model says in a plain tab, alone
    for path, answer in answers.items():
        tab = window.new_chat()
        tab.choose_model(path)
        qtbot.waitUntil(lambda: tab.model_ready, timeout=LONG)  # noqa: B023
        assert send_and_wait(qtbot, tab, QUESTION) == answer, path
        assert tab.model_path == path
