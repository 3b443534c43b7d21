"""The line under an answer: its turn's figures, the speculative drafts' acceptance among them."""

from __future__ import annotations

from app.bridge import SamplingParams
from app.chat.tab import ChatTab
from engine.protocol import TurnFinished, TurnStats
from tests.app.scripted_bridge import ScriptedBridge


def answered(qtbot, stats: TurnStats) -> str:  # type: ignore[no-untyped-def]
    tab = ChatTab(ScriptedBridge(), lambda: (SamplingParams(temperature=0.0), ""), "Chat 1", chat_id="chat")  # type: ignore[arg-type]
    qtbot.addWidget(tab)
    tab.set_model_ready(True)
    tab.input.setPlainText("Repeat this: plums and pears.")
    tab.send()
    tab.on_token("plums and pears.")
    tab.on_turn_finished(TurnFinished("chat", "stop", stats, "plums and pears."))
    return tab.view.cards()[-1].footer.text()


def test_an_answer_with_drafts_says_how_many_drafted_tokens_were_accepted(qtbot) -> None:
    footer = answered(qtbot, TurnStats(12, 0, 9, 0.2, 40.0, 0.5, drafted_tokens=8, accepted_tokens=6))
    assert footer.startswith("9 tokens · 40.0 tok/s") and footer.endswith("75% of 8 drafted tokens accepted")


def test_an_answer_without_drafts_says_nothing_about_them(qtbot) -> None:
    footer = answered(qtbot, TurnStats(12, 0, 9, 0.2, 40.0, 0.5))
    assert "9 tokens" in footer and "drafted" not in footer and "fixed" not in footer


def test_an_answer_under_a_format_says_how_many_tokens_it_fixed(qtbot) -> None:
    footer = answered(qtbot, TurnStats(12, 0, 9, 0.2, 40.0, 0.5, forced_tokens=4))
    assert footer.endswith("· 4 fixed by the format") and "drafted" not in footer


def test_an_answer_cut_at_the_limit_with_nothing_to_show_says_so(qtbot) -> None:
    tab = ChatTab(ScriptedBridge(), lambda: (SamplingParams(temperature=0.0), ""), "Chat 1", chat_id="chat")  # type: ignore[arg-type]
    qtbot.addWidget(tab)
    tab.set_model_ready(True)
    tab.input.setPlainText("Use the add tool.")
    tab.send()
    tab.on_turn_finished(TurnFinished("chat", "length", TurnStats(12, 0, 24, 0.2, 40.0, 0.5), ""))
    (error,) = [card for card in tab.view.cards() if card.role == "error"]
    assert "token limit" in error.text() and "Max tokens" in error.text()
    assert [m.role for m in tab.messages] == ["user"] and not tab.answering
