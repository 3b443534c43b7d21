"""Compare on the scripted bridge: panes render as a chat while they stream, a follow-up goes to every pane,
and a comparison is stored as one chat that the sidebar reopens with its panes and the export carries."""

from __future__ import annotations

import json

from app.bridge import TurnStats
from app.chat.code_block import CodeBlock
from app.chat.markdown_view import MessageBrowser
from app.history.comparison import COMPARE
from app.models.library import LibraryModel
from tests.app.helpers import wait_restored
from tests.app.scripted_bridge import model_info

DEFAULT = "/models/test.gguf"
OTHER = "/models/other-Q8_0.gguf"
LIBRARY = [LibraryModel(DEFAULT, "Test model", "fits", ""), LibraryModel(OTHER, "Other model", "fits", "")]
FENCED = ["Use ", "this:\n\n", "```py", "thon\nprint(", "'hi')\n", "```\n", "\nDone."]


def compare(qtbot, scripted_window, question: str = "Show me code"):  # type: ignore[no-untyped-def]
    window = scripted_window()
    wait_restored(qtbot, window)
    window.bridge.finish_loading(model_info(OTHER, name="Other model"))
    window.tab_models.set_library(LIBRARY)
    window.open_compare()
    dialog = window.compare_dialog
    dialog.set_checked([DEFAULT, OTHER])
    dialog.input.setPlainText(question)
    dialog.send()
    return window, dialog


def read(qtbot, reader, chat_id: str):  # type: ignore[no-untyped-def]
    """What the history thread answers (it has written everything queued before the read)."""
    got: list[object] = []
    reader(chat_id, on_done=got.append)
    qtbot.waitUntil(lambda: bool(got))
    return got[0]


def test_a_fenced_code_block_becomes_the_chats_code_block_while_the_pane_streams(qtbot, scripted_window) -> None:
    window, dialog = compare(qtbot, scripted_window)
    near, far = dialog.panes
    for pane in (near, far):
        window.bridge.begin_turn(pane.chat_id)
    for chunk in FENCED[:5]:  # the fence is still open: the answer has not ended
        for pane in (near, far):
            window.bridge.token_received.emit(pane.chat_id, chunk)
    for pane in (near, far):
        qtbot.waitUntil(lambda pane=pane: pane.answer_card().browser.code_blocks == ["print('hi')"])
        assert pane.answering
        pieces = pane.answer_card().browser.pieces()
        assert [type(piece) for piece in pieces] == [MessageBrowser, CodeBlock]
        assert pieces[0].toPlainText() == "Use this:" and pieces[1].language == "python"
    client = window.history_ui.client
    client.flush_streaming()  # what its timer does each second: the answers so far are stored
    streaming = [m for m in read(qtbot, client.load_chat, dialog.writer.chat_id).messages if m.role == "assistant"]
    assert [(m.text, m.state) for m in streaming] == [("".join(FENCED[:5]), "streaming")] * 2
    for pane in (near, far):
        window.bridge.finish(pane.chat_id, "".join(FENCED), stats=TurnStats(9, 0, 9, 0.1, 20.0, 0.5))
    assert [m.content for m in near.messages] == ["Show me code", "".join(FENCED)]
    assert [type(p) for p in far.answer_card().browser.pieces()] == [MessageBrowser, CodeBlock, MessageBrowser]
    assert "20.0 tok/s" in far.answer_card().footer.text()


def test_a_follow_up_goes_to_every_pane_each_continuing_its_own_conversation(qtbot, scripted_window) -> None:
    window, dialog = compare(qtbot, scripted_window, "Name a colour")
    bridge = window.bridge
    near, far = dialog.panes
    bridge.answer(near.chat_id, "Red.")
    bridge.answer(far.chat_id, "Blue.")
    dialog.input.setPlainText("And a fruit?")
    dialog.send()
    assert dialog.panes == [near, far], "the same panes go on"
    sent = {chat_id: [(m.role, m.content) for m in messages] for chat_id, messages, _ in bridge.submitted[-2:]}
    system = [("system", window.system_prompt)]  # the app's default, as a first turn sends it
    assert window.system_prompt and sent == {
        near.chat_id: system + [("user", "Name a colour"), ("assistant", "Red."), ("user", "And a fruit?")],
        far.chat_id: system + [("user", "Name a colour"), ("assistant", "Blue."), ("user", "And a fruit?")]}
    assert bridge.models[-2:] == [DEFAULT, OTHER]
    assert near.answering and far.answering
    assert [card.role for card in far.view.cards()] == ["user", "assistant", "user", "assistant"]
    dialog.input.setPlainText("Too soon")
    dialog.send()
    assert "Wait for every answer" in dialog.hint.text() and len(bridge.submitted) == 4


def test_a_comparison_is_stored_reopened_with_its_panes_and_exported(qtbot, scripted_window) -> None:
    window, dialog = compare(qtbot, scripted_window, "Name a colour")
    bridge, client = window.bridge, window.history_ui.client
    near, far = dialog.panes
    bridge.answer(near.chat_id, "Red.", stats=TurnStats(5, 0, 2, 0.1, 30.0, 0.2))
    bridge.answer(far.chat_id, "Blue.", stats=TurnStats(5, 0, 2, 0.1, 12.0, 0.2))
    dialog.input.setPlainText("And a fruit?")
    dialog.send()
    bridge.answer(near.chat_id, "Cherry.")
    bridge.answer(far.chat_id, "Plum.")
    chat_id = dialog.writer.chat_id
    snapshot = read(qtbot, client.load_chat, chat_id)
    assert snapshot.chat.title == "Compare: Name a colour" and not snapshot.chat.is_open
    panes = snapshot.chat.settings[COMPARE]["panes"]
    assert [(p["model"], p["name"]) for p in panes] == [(DEFAULT, "Test model"), (OTHER, "Other model")]
    rows = {m.id: m for m in snapshot.messages}
    question = next(m for m in snapshot.messages if m.parent_id is None)
    assert (question.role, question.text) == ("user", "Name a colour") and len(snapshot.messages) == 7
    for pane, answers in zip(panes, (["Red.", "Cherry."], ["Blue.", "Plum."])):
        first = rows[pane["answer"]]
        follow_up = next(m for m in snapshot.messages if m.parent_id == first.id)
        second = next(m for m in snapshot.messages if m.parent_id == follow_up.id)
        assert (first.parent_id, first.text, follow_up.text, second.text) == (question.id, answers[0], "And a fruit?",
                                                                              answers[1])
        assert first.state == second.state == "complete"
    assert rows[panes[1]["answer"]].timings["decode_tokens_per_second"] == 12.0
    exported = json.loads(read(qtbot, client.export_json, chat_id))
    assert [(p["model"], [(m["role"], m["content"]) for m in p["messages"]]) for p in exported["compare"]] == [
        (DEFAULT, [("user", "Name a colour"), ("assistant", "Red."), ("user", "And a fruit?"), ("assistant", "Cherry.")]),
        (OTHER, [("user", "Name a colour"), ("assistant", "Blue."), ("user", "And a fruit?"), ("assistant", "Plum.")])]
    assert "## Other model" in read(qtbot, client.export_markdown, chat_id)
    qtbot.waitUntil(lambda: chat_id in window.sidebar.sidebar.chat_ids())
    dialog.close()
    tabs = len(window.chat_tabs())
    window.history_ui.open_chat(chat_id)  # as the sidebar does
    qtbot.waitUntil(lambda: window.compare_dialog is not None and len(window.compare_dialog.panes) == 2)
    again = window.compare_dialog
    assert again is not dialog and len(window.chat_tabs()) == tabs, "a comparison opens in Compare, not as a tab"
    assert [(p.path, [m.content for m in p.messages]) for p in again.panes] == [
        (DEFAULT, ["Name a colour", "Red.", "And a fruit?", "Cherry."]),
        (OTHER, ["Name a colour", "Blue.", "And a fruit?", "Plum."])]
    assert "12.0 tok/s" in again.panes[1].view.cards()[1].footer.text()
    assert sorted(again.checked_paths()) == sorted([DEFAULT, OTHER])
    again.input.setPlainText("And a tree?")
    again.send()  # continues the stored comparison
    assert [m.content for m in bridge.submitted[-1][1]][-3:] == ["And a fruit?", "Plum.", "And a tree?"]
    bridge.answer(again.panes[1].chat_id, "Oak.")
    bridge.answer(again.panes[0].chat_id, "Elm.")
    assert len(read(qtbot, client.load_chat, chat_id).messages) == 11
    assert not read(qtbot, client.chat, chat_id).is_open, "not restored as a tab at the next start"
