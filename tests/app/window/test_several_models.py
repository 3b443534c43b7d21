"""Several models in the window, on the scripted bridge: each tab's picker, Compare's panes, the gauge, the history."""

from __future__ import annotations

from app.bridge import TurnStats
from app.misc.scripted_bridge import model_stats
from app.models.library import LibraryModel
from tests.app.helpers import wait_restored
from tests.app.scripted_bridge import model_info

DEFAULT = "/models/test.gguf"
OTHER = "/models/other-Q8_0.gguf"
LIBRARY = [LibraryModel(DEFAULT, "Test model", "fits", "Needs about 460 MiB."),
           LibraryModel(OTHER, "Other model", "tight", "Needs about 9 GiB; 10 GiB free.")]
OTHER_INFO = model_info(OTHER, name="Other model", model_bytes=200 << 20, kv_cache_bytes=100 << 20)


def send(tab, text: str) -> None:  # type: ignore[no-untyped-def]
    tab.input.setPlainText(text)
    tab.send()


def test_picking_a_model_loads_it_beside_the_other_and_later_turns_name_it(qtbot, scripted_window) -> None:
    window = scripted_window()
    bridge = window.bridge
    window.tab_models.set_library(LIBRARY)
    first, second = window.current_tab(), window.new_chat()
    texts = first.model_picker.item_texts()
    assert texts == ["Test model — fits · loaded", "Other model — tight"], "each model with its fit here"
    first.model_picker.choose(OTHER)
    config, _ = bridge.loads[-1]
    assert config.path == OTHER and config.backend == "llamacpp" and len(bridge.loads) == 2
    bridge.progress(OTHER, 0.4)
    assert not first.model_ready and first.reason.text() == "Loading Other model… 40%"
    assert first.input.isEnabled(), "typing goes on while it loads: a send waits in the queue"
    assert second.input.isEnabled() and second.reason.text() == "", "the other tab is not held up"
    send(second, "Still there?")
    bridge.answer(second.chat_id, "Yes.")
    assert second.messages[-1].content == "Yes." and bridge.models[-1] == DEFAULT
    bridge.finish_loading(OTHER_INFO)
    assert first.input.isEnabled() and first.reason.text() == ""
    send(first, "Hello")
    assert bridge.submitted[-1][0] == first.chat_id and bridge.models[-1] == OTHER
    assert window.new_chat().model_path == OTHER, "a new tab starts on the model chosen last"
    bridge.unloaded(OTHER, "idle", "Unloaded Other model (idle for 15 min).")
    assert first.input.isEnabled() and "loads again when you send" in first.reason.text()
    assert second.input.isEnabled()
    bridge.answer(first.chat_id, "Hi.")
    loads = len(bridge.loads)
    send(first, "Back again")
    assert len(bridge.loads) == loads + 1 and bridge.loads[-1][0].path == OTHER, "the send loads it again first"
    assert bridge.models[-1] == OTHER
    send(second, "And you?")
    assert len(bridge.loads) == loads + 1, "a loaded model is not loaded again"
    bridge.finish_loading(OTHER_INFO)
    bridge.unloaded(OTHER, "request")
    assert not first.input.isEnabled() and "Choose it above" in first.reason.text(), "unloaded on purpose: say so"


def test_a_failed_load_is_said_in_the_tab_that_asked_and_keeps_the_window_model(qtbot, scripted_window) -> None:
    window = scripted_window()
    window.tab_models.set_library(LIBRARY)
    first, second = window.current_tab(), window.new_chat()
    first.model_picker.choose(OTHER)
    window.bridge.fail_loading(OTHER, "Needs 9.0 GiB, 2.0 GiB free after unloading what is idle.")
    assert "Needs 9.0 GiB" in first.reason.text() and not first.input.isEnabled()
    assert second.input.isEnabled() and window.model.config_in_effect.path == DEFAULT
    assert window.bridge.model_info.path == DEFAULT


def test_compare_streams_two_models_at_once_and_continues_one_as_a_chat(qtbot, scripted_window) -> None:
    window = scripted_window()
    bridge = window.bridge
    window.tab_models.set_library(LIBRARY)
    window.open_compare()
    dialog = window.compare_dialog
    assert dialog.checked_paths() == [DEFAULT]
    dialog.set_checked([DEFAULT, OTHER])
    dialog.input.setPlainText("Why is the sky blue?")
    dialog.send()
    near, far = dialog.panes
    assert bridge.submitted[-1][0] == near.chat_id and bridge.models[-1] == DEFAULT
    assert bridge.loads[-1][0].path == OTHER, "the model not loaded yet is loaded for its pane"
    assert "Loading Other model" in far.shown_text()
    bridge.finish_loading(OTHER_INFO)
    assert bridge.submitted[-1][0] == far.chat_id and bridge.models[-1] == OTHER
    assert bridge.submitted[-1][1][-1].content == "Why is the sky blue?"
    for pane in (near, far):
        bridge.begin_turn(pane.chat_id)
    for word in ("Light ", "scatters ", "more."):  # both streams interleave, neither finished
        bridge.token_received.emit(near.chat_id, "near:" + word)
        bridge.token_received.emit(far.chat_id, "far:" + word)
    qtbot.waitUntil(lambda: "more." in near.shown_text() and "more." in far.shown_text())
    assert near.answering and far.answering
    bridge.stats(chat_tokens_per_second=((near.chat_id, 30.0), (far.chat_id, 11.0)),
                 models=(model_stats(model_info()), model_stats(OTHER_INFO)))
    assert near.stats_text().startswith("30.0 tok/s") and far.stats_text().startswith("11.0 tok/s")
    assert "300 MiB" in far.stats_text(), "the pane's model memory: weights and KV cache"
    bridge.finish(far.chat_id, "far:Light scatters more.", stats=TurnStats(6, 0, 3, 0.25, 12.5, 1.0))
    assert not far.answering and far.stats_text() == "12.5 tok/s · TTFT 250 ms · 300 MiB"
    assert far.continue_button.isEnabled() and not near.continue_button.isEnabled()
    far.continue_button.click()
    tab = window.current_tab()
    assert tab.model_path == OTHER and bridge.chat_models[tab.chat_id] == OTHER
    assert [(m.role, m.content) for m in tab.messages] == [("user", "Why is the sky blue?"),
                                                          ("assistant", "far:Light scatters more.")]
    send(tab, "And at sunset?")
    assert bridge.models[-1] == OTHER
    assert [m.content for m in bridge.submitted[-1][1][-3:]] == ["Why is the sky blue?", "far:Light scatters more.",
                                                                 "And at sunset?"]
    dialog.close()
    assert {near.chat_id, far.chat_id} <= set(bridge.closed) and not window._panes_by_chat


def test_the_gauge_shows_each_model_its_chats_and_the_budget(qtbot, scripted_window) -> None:
    window = scripted_window()
    first = window.current_tab()
    window.bridge.finish_loading(OTHER_INFO)
    window.bridge.stats(tokens_per_second=40.0, budget_bytes=2 << 30, models=(
        model_stats(OTHER_INFO, tokens_per_second=15.0, slots_busy=1, chats=(first.chat_id,)),
        model_stats(model_info(), tokens_per_second=25.0, idle_s=0.0)))
    assert window.gauge.model_label.text() == "2 models · 760 MiB of 2.0 GiB"
    details = window.gauge.details_html()
    assert "Other model" in details and "Test model" in details
    assert "15.0 tok/s · slots 1/4" in details and "25.0 tok/s" in details
    assert first.title in details, "which model the running chat uses"
    assert "760 MiB used of 2.0 GiB" in details and "Q4_1" in details


def test_a_restored_chat_keeps_its_model(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    window.tab_models.set_library(LIBRARY)
    window.current_tab().model_picker.choose(OTHER)
    chat_id = window.current_tab().chat_id
    window.close()
    again = scripted_window()
    wait_restored(qtbot, again)
    tab = next(tab for tab in again.chat_tabs() if tab.chat_id == chat_id)
    assert tab.model_path == OTHER and tab.model_picker.path == OTHER
    assert any(config.path == OTHER for config, _ in again.bridge.loads), "its model is loaded again"


def test_each_tab_offers_thinking_by_its_own_model_not_the_one_loaded_last(qtbot, scripted_window) -> None:
    window = scripted_window()
    bridge = window.bridge
    window.tab_models.set_library(LIBRARY)
    first, second = window.current_tab(), window.new_chat()
    assert first.think_control.capabilities == ()
    second.model_picker.choose(OTHER)
    bridge.finish_loading(model_info(OTHER, name="Other model", capabilities=("thinking_switch",),
                                     context_length=32768))
    assert bridge.model_info.path == OTHER, "the model loaded last is the other one"
    assert second.think_control.capabilities == ("thinking_switch",) and second.model_info().context_length == 32768
    assert first.think_control.capabilities == (), "the first tab's model cannot think: no switch there"
    assert first.model_info().path == DEFAULT
    first.set_model_ready(True)  # the window refreshing every tab must not hand it the other model's switch
    assert first.think_control.capabilities == ()


def test_the_details_popup_wraps_long_values_and_shows_every_row(qtbot, scripted_window) -> None:
    from app.status.gauge import POPUP_MAX_WIDTH

    window = scripted_window()
    folder = "/models/" + "a-folder-with-a-long-name/" * 8
    others = [model_info(f"{folder}other-{n}-Q8_0.gguf", name=f"Other model {n}") for n in range(4)]
    for info in others:
        window.bridge.finish_loading(info)
    window.bridge.stats(tokens_per_second=40.0, budget_bytes=8 << 30,
                        models=(*map(model_stats, others), model_stats(model_info())))
    long_path = others[-1].path
    window.gauge.show_details()
    popup = window.gauge._popup
    assert popup is not None and popup.isVisible()
    assert popup.width() <= POPUP_MAX_WIDTH, "a long path wraps instead of widening the popup"
    # every row is there: the popup is as tall as its wrapped text (Qt's adjustSize would cut it at 2/3 of the screen)
    assert popup.height() >= popup.heightForWidth(popup.width()) > 0
    assert "Budget" in popup.text() and long_path in popup.text()
    popup.close()
