"""The glue between the tabs and the chat history: what the tabs show is what gets saved.

HistoryUI never sees the window: it works through a TabHost (MainWindow is one),
and the window connects its events (tabs opened, closed, moved; the engine's
tokens and finished turns) to the `on_*` methods. With each tab's own
`conversation_changed` they become HistoryClient calls, none of which blocks.
Writing what the tabs do (new chats, messages, streaming answers) is
app/history/tab_writer.py's part; this side reads: on startup the stored open
tabs replace the empty first tab; answers a crash cut short come back with an
"(interrupted)" note and Regenerate. Tool calls are stored with their answer and each result as a
"tool" message with how the call ended (its approval); a call that has no result after a restart
shows as interrupted and is never run again by itself. A reasoning model's thinking is stored with
its answer as it streams, and comes back folded ("Thought for 12 s"); each chat's
Think choice and its panel's system prompt and sampling (app/history/chat_settings.py) are stored in its settings; a user message's pictures are stored with it (app/history/images.py)
and come back as thumbnails. Storage problems show in `label` (placed in
the status bar) while the chats stay in memory. Branches, edits, deletes and
scroll positions are app/history/branches.py's part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QLabel

from app.bridge import ChatMessage, TurnFinished
from app.chat.tab import ChatTab
from app.history.branches import BranchKeeper
from app.history.chat_settings import PANEL
from app.history.client import HistoryClient
from app.history.comparison import is_comparison
from app.history.records import ChatSnapshot
from app.history.restored_cards import INTERRUPTED_NOTE, show_stored_notes
from app.history.tab_writer import TabWriter
from app.history.worker import StartupReport


class TabHost(Protocol):
    """What HistoryUI needs from whoever holds the tabs."""

    def chat_tabs(self) -> list[ChatTab]: ...

    def current_tab(self) -> ChatTab | None: ...

    def new_chat(self, title: str = "", chat_id: str = "") -> ChatTab:
        """A new tab, the last one; a stored chat's title and id when it is reopened."""

    def close_tab(self, tab: ChatTab) -> None: ...

    def select_tab(self, tab: ChatTab) -> None: ...

    def chat_record(self) -> tuple[str, dict[str, Any]]:
        """What a new chat is stored with: the model's name and the sampling settings."""


__all__ = ["INTERRUPTED_NOTE", "HistoryUI", "TabHost"]


class HistoryUI(QObject):
    """Saves every tab's conversation as it happens and restores the open tabs at startup."""

    restored = Signal()  # the stored tabs are on screen (or there were none, or no history)
    comparison_opened = Signal(object)  # the ChatSnapshot of a stored comparison: Compare shows it, not a tab

    def __init__(self, host: TabHost, path: str | Path | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.client = HistoryClient(path, parent=self)
        self.branches = BranchKeeper(self)
        self.ready = False
        self.problem_text = ""
        self.report: StartupReport | None = None
        self._restoring = False
        self.writer = TabWriter(self.client, self.tab, self.branches.refresh, lambda: self._restoring)
        self._ids = self.writer.ids  # chat id -> stored ids of the tab's messages (the writer's, shared)
        self._states: dict[str, str] = {}  # message id -> state it was restored with
        self._closed = False
        self.label = QLabel()
        self.label.setObjectName("historyProblem")
        self.label.setWordWrap(False)
        self.label.hide()
        self.client.opened.connect(self._on_opened)
        self.client.unavailable.connect(self._on_unavailable)
        self.client.error_occurred.connect(self.show_problem)
        self.client.start()

    # ------------------------------------------------------------ problems

    def show_problem(self, message: str) -> None:
        """Visible until the next problem; the chats stay in memory either way."""
        self.problem_text = message
        self.label.setText(f"Chat history: {message}")
        self.label.setToolTip(message)
        self.label.show()

    def _on_unavailable(self, message: str) -> None:
        self.show_problem(message)  # it already says the chats stay in this window but are not saved
        self._finish_startup()

    # ------------------------------------------------------------ startup

    def _on_opened(self, report: StartupReport) -> None:
        self.report = report
        if report.recovered_from:
            self.show_problem(f"The history file was damaged; it was moved to {report.recovered_from} "
                              "and a fresh one was started.")
        placeholders = [tab for tab in self.host.chat_tabs() if not tab.messages and not tab.answering]
        if report.tabs:
            self._restoring = True
            try:
                for snapshot in report.tabs:
                    self.show_snapshot(snapshot)
                for tab in placeholders:
                    self.host.close_tab(tab)
                self.select(report.current_tab)
            finally:
                self._restoring = False
        self._finish_startup()
        if report.tabs and placeholders:  # the window's first empty tab, stored when it opened: not a chat
            self.client.drop_empty_closed_chats()

    def _finish_startup(self) -> None:
        self.ready = True
        self.save_tabs()
        self.restored.emit()

    def show_snapshot(self, snapshot: ChatSnapshot) -> ChatTab:
        """A stored chat as a new tab (the last one), its active branch shown where it was read."""
        restoring, self._restoring = self._restoring, True
        try:
            tab = self.host.new_chat(snapshot.chat.title, snapshot.chat.id)
        finally:
            self._restoring = restoring
        tab.title_from_user = not snapshot.chat.title_auto
        tab.set_think_settings(snapshot.chat.settings)
        tab.panel.restore(snapshot.chat.settings.get(PANEL, {}))
        if snapshot.chat.settings.get("model_path"):
            tab.choose_model(snapshot.chat.settings["model_path"])  # the chat's own model, loaded if it is not
        self.render(tab, snapshot)
        self.branches.show_positions(snapshot)
        self.branches.restore_scroll(tab, snapshot)
        return tab

    def render(self, tab: ChatTab, snapshot: ChatSnapshot) -> None:
        """Show the chat's active branch in the tab."""
        path = [m for m in snapshot.path() if m.role != "system"
                and (m.text or m.reasoning or m.tool_calls or m.role in ("user", "tool"))]
        results = {m.tool_call_id: (m.finish_reason or "").split() for m in path if m.role == "tool"}
        servers = {call: server for m in path if m.tool_calls and isinstance(m.timings.get("tool_servers"), dict)
                   for call, server in m.timings["tool_servers"].items() if isinstance(server, str)}
        tab.set_conversation([ChatMessage(m.role, m.text, m.reasoning, m.tool_calls, m.tool_call_id, m.tool_name,
                                          m.images, m.dictation) for m in path],
                             {call: words[0] if words else "" for call, words in results.items()},
                             {call: "error" in words for call, words in results.items()}, servers)
        self._ids[tab.chat_id] = [m.id for m in path]
        self._states.update({m.id: m.state for m in path})
        show_stored_notes(tab, path)

    def select(self, chat_id: str | None) -> bool:
        tab = self.tab(chat_id) if chat_id else None
        if tab is not None:
            self.host.select_tab(tab)
        return tab is not None

    def save_tabs(self) -> None:
        if self._restoring or self._closed or not self.ready:
            return
        tabs = self.host.chat_tabs()
        current = self.host.current_tab()
        self.client.set_open_tabs([tab.chat_id for tab in tabs], current=current.chat_id if current else None)

    # ------------------------------------------------------------ tabs and messages (the window's events)

    def on_chat_opened(self, tab: ChatTab) -> None:
        self._ids.setdefault(tab.chat_id, [])
        tab.conversation_changed.connect(self.writer.conversation_changed)
        self.branches.attach(tab)
        tab.title_changed.connect(lambda title, tab=tab: self.writer.title_changed(tab, title))
        tab.think_settings_changed.connect(self.client.update_chat_settings)
        tab.model_chosen.connect(lambda chat_id, path: self.client.update_chat_settings(chat_id, {"model_path": path}))
        tab.panel.changed.connect(lambda tab=tab: self.writer.store_panel(tab))
        if self._restoring:
            return
        model, settings = self.host.chat_record()
        self.writer.create_chat(tab, model, settings)
        self.save_tabs()

    def store_conversation(self, tab: ChatTab) -> None:
        """A tab that starts with its messages (a Compare pane continued as a chat): each one is stored."""
        self.writer.store_conversation(tab)

    def on_chat_closed(self, chat_id: str) -> None:
        self.branches.save_scroll(chat_id)
        self.branches.snapshots.pop(chat_id, None)
        self._ids.pop(chat_id, None)  # a streaming answer is still finished when its turn ends
        self.save_tabs()

    def tab(self, chat_id: str) -> ChatTab | None:
        return next((tab for tab in self.host.chat_tabs() if tab.chat_id == chat_id), None)

    def ids(self, chat_id: str) -> list[str]:
        """The stored ids of the messages the chat's tab shows (a throwaway list for a closed chat)."""
        return self._ids.get(chat_id, [])

    def on_turn_started(self, chat_id: str) -> None:
        self.writer.turn_started(chat_id)

    def on_token(self, chat_id: str, text: str) -> None:
        self.writer.token(chat_id, text)

    def on_reasoning(self, chat_id: str, text: str) -> None:
        self.writer.reasoning(chat_id, text)

    def on_turn_finished(self, event: TurnFinished) -> None:
        self.writer.turn_finished(event)

    # ------------------------------------------------------------ the chat list, export, import

    def open_chat(self, chat_id: str) -> None:
        """Show a stored chat: select its tab, or reopen it as the last tab."""
        if self.select(chat_id):
            return
        self.client.open_tab(chat_id)
        self.client.load_chat(chat_id, on_done=self._show_and_select, on_error=self.show_problem)

    def _show_and_select(self, snapshot: ChatSnapshot) -> None:
        if is_comparison(snapshot.chat.settings):
            self.comparison_opened.emit(snapshot)  # save_tabs below closes the tab open_chat marked open
        elif not self.select(snapshot.chat.id):
            self.show_snapshot(snapshot)
            self.select(snapshot.chat.id)
        self.save_tabs()

    def rename_chat(self, chat_id: str, title: str) -> None:
        tab = self.tab(chat_id)
        if tab is not None:
            tab.rename(title)  # its title_changed renames the tab and stores the name
        else:
            self.client.rename_chat(chat_id, title)

    def delete_chat(self, chat_id: str) -> None:
        """Close its tab if open, then delete it (purged at the next start)."""
        tab = self.tab(chat_id)
        if tab is not None:
            self.host.close_tab(tab)
        self.client.delete_chat(chat_id)

    def export_current(self, kind: str, path: str | Path) -> None:
        """Write the current chat as "markdown" or "json" to `path` (the file is written on this thread)."""
        tab = self.host.current_tab()
        if tab is not None:
            self.export_chat(tab.chat_id, kind, path)

    def export_chat(self, chat_id: str, kind: str, path: str | Path) -> None:
        """Write any stored chat (the sidebar's Export) as "markdown" or "json" to `path`."""
        exporter = self.client.export_markdown if kind == "markdown" else self.client.export_json
        exporter(chat_id, on_done=lambda text: self._write_file(Path(path), text), on_error=self.show_problem)

    def _write_file(self, path: Path, text: str) -> None:
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as error:
            self.show_problem(f"Could not write {path}: {error.strerror or error}. Choose another folder.")

    def import_path(self, path: str | Path) -> None:
        """A new chat from an exported JSON file, opened as the last tab; a bad file is explained."""
        self.client.import_file(str(path), on_done=lambda chat: self.open_chat(chat.id), on_error=self.show_problem)

    # ------------------------------------------------------------ end

    def close(self) -> None:
        """Answers still streaming are stored as interrupted; then the history thread is joined."""
        if self._closed:
            return
        self.writer.interrupt_all()
        self.branches.save_all_scrolls()
        self._closed = True
        self.client.close()

    def dump(self) -> dict[str, object]:
        """What the window shows from the history, for `--dump-restored` and tests."""
        tabs = []
        for tab in self.host.chat_tabs():
            ids = self._ids.get(tab.chat_id, [])
            messages = [{"role": m.role, "text": m.content, "reasoning": m.reasoning,
                         "state": self._states.get(i, "complete")} for m, i in zip(tab.messages, ids)]
            notes = [card.footer.text() for card in tab.view.cards()]
            tabs.append({"chat_id": tab.chat_id, "title": tab.title, "messages": messages,
                         "regenerate_enabled": tab.regenerate_button.isEnabled(), "notes": notes})
        current = self.host.current_tab()
        return {"tabs": tabs, "current": current.chat_id if current else None, "problem": self.problem_text,
                "interrupted": self.report.interrupted_messages if self.report else 0}

