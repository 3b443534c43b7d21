"""A tab's message buttons on a scripted engine: Edit, Cancel edit, Delete and "< 1/2 >" as indexes into its messages."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.bridge import ChatMessage, SamplingParams
from app.chat.tab import ChatTab
from engine.protocol import TurnFinished
from tests.app.scripted_bridge import NO_STATS, ScriptedBridge


def make_tab(qtbot) -> tuple[ChatTab, ScriptedBridge]:  # type: ignore[no-untyped-def]
    bridge = ScriptedBridge()
    tab = ChatTab(bridge, lambda: (SamplingParams(temperature=0.0), ""), "Chat 1", chat_id="chat")  # type: ignore[arg-type]
    qtbot.addWidget(tab)
    tab.set_model_ready(True)
    tab.set_conversation([ChatMessage("user", "Name a fruit."), ChatMessage("assistant", "Apple."),
                          ChatMessage("user", "Another?"), ChatMessage("assistant", "Pear.")])
    tab.show()
    return tab, bridge


def click(qtbot, button) -> None:  # type: ignore[no-untyped-def]
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_edit_then_send_replaces_the_message_and_what_follows(qtbot) -> None:
    tab, bridge = make_tab(qtbot)
    edits: list[tuple[str, int, str]] = []
    tab.message_edited.connect(lambda *args: edits.append(args))
    click(qtbot, tab.view.message_cards()[2].edit_button)
    assert tab.input.toPlainText() == "Another?" and tab.message_actions.editing_index == 2
    assert tab.send_button.text() == "Send edit" and tab.cancel_edit_button.isVisible()
    tab.input.setPlainText("A vegetable?")
    click(qtbot, tab.send_button)
    assert [m.content for m in tab.messages] == ["Name a fruit.", "Apple.", "A vegetable?"]
    assert edits == [("chat", 2, "A vegetable?")]
    assert [m.content for m in bridge.submitted[-1][1]] == ["Name a fruit.", "Apple.", "A vegetable?"]
    assert tab.send_button.text() == "Send" and not tab.cancel_edit_button.isVisible()


def test_cancel_edit_leaves_everything_as_it_was(qtbot) -> None:
    tab, bridge = make_tab(qtbot)
    click(qtbot, tab.view.message_cards()[0].edit_button)
    click(qtbot, tab.cancel_edit_button)
    assert tab.message_actions.editing_index is None and tab.input.toPlainText() == ""
    assert len(tab.messages) == 4 and bridge.submitted == []


def test_delete_drops_the_message_and_everything_below(qtbot) -> None:
    tab, _ = make_tab(qtbot)
    deleted: list[tuple[str, int]] = []
    tab.messages_deleted.connect(lambda *args: deleted.append(args))
    click(qtbot, tab.view.message_cards()[1].delete_button)
    assert [m.content for m in tab.messages] == ["Name a fruit."] and len(tab.view.message_cards()) == 1
    assert deleted == [("chat", 1)] and tab.regenerate_button.isEnabled()


def test_no_edit_delete_or_branch_step_while_answering(qtbot) -> None:
    tab, bridge = make_tab(qtbot)
    steps: list[tuple[str, int, int]] = []
    tab.branch_step_requested.connect(lambda *args: steps.append(args))
    tab.view.message_cards()[3].branch_bar.set_position(2, 2)
    click(qtbot, tab.view.message_cards()[3].branch_bar.previous_button)
    assert steps == [("chat", 3, -1)]
    tab.regenerate()  # answering now
    assert tab.answering and bridge.submitted
    click(qtbot, tab.view.message_cards()[0].edit_button)
    click(qtbot, tab.view.message_cards()[0].delete_button)
    click(qtbot, tab.view.message_cards()[2].branch_bar.previous_button)
    assert tab.message_actions.editing_index is None and len(tab.messages) == 3 and steps == [("chat", 3, -1)]
    tab.on_token("Plum.")  # the window routes engine events to their tab; here the test does
    tab.on_turn_finished(TurnFinished("chat", "stop", NO_STATS, "Plum."))
    assert not tab.answering and tab.messages[-1].content == "Plum."
