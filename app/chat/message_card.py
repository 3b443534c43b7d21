"""One message of the transcript as a card: who wrote it, its buttons, its rendered text, a footer.

The header holds who, "< 1/2 >" among its alternatives, Edit, Delete, Read aloud (answers) and Copy; below come an
answer's folded Thinking block (app/chat/thinking_block.py), a MessageView with the Markdown
(text pieces and code blocks) and a footer line for an answer's numbers. A card takes the
keyboard focus (the list steps through cards with Alt+Up / Alt+Down) and tells a screen reader
whose message it is and how long ("Assistant, 42 words"), with the text as its description.
A user message that was spoken has a quiet line under its text ("Dictated · 3.1 s · en"); where the person
changed the words before sending, the line says "edited" and its tooltip holds what was heard.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QAccessible, QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.chat.branch_bar import BranchBar
from app.chat.file_chips import FileChips
from app.chat.message_view import MessageView
from app.chat.pictures import Thumbnails
from app.chat.thinking_block import ThinkingBlock
from app.misc.accessibility import set_role
from engine.protocol import Dictation, ImagePart

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System", "error": "Error", "tool": "Tool result"}
SPOKEN_CHARS = 2000  # a message's text as its accessible description: enough to read, not a whole book


class MessageCard(QFrame):
    """One message: header with a copy button, the rendered text, an optional footer."""

    copied = Signal(str)  # what went to the clipboard
    citation_clicked = Signal(int)
    edit_requested = Signal()
    delete_requested = Signal()
    read_aloud_requested = Signal()  # the speaker button: read this answer aloud (again: stop)

    def __init__(self, role: str, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self.setObjectName(f"{role}Message")
        # Focusable (Alt+Up / Alt+Down step through the messages): a screen reader says whose it is and
        # how long, then reads the text (its description).
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        set_role(self, QAccessible.Role.ListItem)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        self.title = QLabel(ROLE_TITLES.get(role, role))
        self.title.setObjectName("messageRole")
        self.copy_button = QToolButton()
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy the answer as Markdown (without its thinking)" if role == "assistant"
                                    else "Copy this message as Markdown")
        self.copy_button.setAccessibleName("Copy message")
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy_text)
        self.branch_bar = BranchBar(self)
        self.edit_button = self._tool_button("Edit", "Edit this message and send it as a new branch", self.edit_requested)
        self.delete_button = self._tool_button("Delete", "Delete this message and everything below it", self.delete_requested)
        self.read_aloud_button = self._tool_button("Read aloud", "Read this answer aloud with the voice of "
                                                   "Settings > Voice; again: stop", self.read_aloud_requested)
        self.read_aloud_button.setAccessibleName("Read aloud")
        self.thinking_block = ThinkingBlock(self)
        self.pictures: Thumbnails | None = None  # a user message's pictures, above its text
        self.files: FileChips | None = None  # ... and the files it went with
        self.browser = MessageView(self)  # text pieces and code blocks
        self.browser.copied.connect(self.copied)
        self.browser.citation_clicked.connect(self.citation_clicked)
        self.footer = QLabel()
        self.footer.setProperty("role", "hint")
        self.footer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.footer.hide()
        self.dictation_mark = QLabel()  # a spoken message: that it was dictated, how long, in which language
        self.dictation_mark.setObjectName("dictationMark")
        self.dictation_mark.setProperty("role", "hint")
        self.dictation_mark.hide()
        self._words = 0
        self._build_layout()
        # Only now: showing a widget that has no parent yet would open it as a window of its own.
        self.edit_button.setVisible(role == "user")
        self.delete_button.setVisible(role in ("user", "assistant"))
        self.read_aloud_button.setVisible(role == "assistant")
        self.set_text(text)

    def _build_layout(self) -> None:
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title)
        header.addStretch(1)
        for widget in (self.branch_bar, self.edit_button, self.delete_button, self.read_aloud_button, self.copy_button):
            header.addWidget(widget)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.thinking_block)
        layout.addWidget(self.browser)
        layout.addWidget(self.dictation_mark)
        layout.addWidget(self.footer)

    def _tool_button(self, text: str, tip: str, signal: SignalInstance) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.clicked.connect(signal)
        return button

    def set_text(self, text: str) -> None:
        self.browser.set_markdown(text)
        spoken = self.browser.toPlainText()  # as shown: no Markdown marks, no code fences
        self._words = len(spoken.split())
        self._name_for_reader()
        self.setAccessibleDescription(spoken[:SPOKEN_CHARS])

    def _name_for_reader(self) -> None:
        """Whose message, how long, and whether it was spoken: "You, 9 words, dictated"."""
        words = f"{self._words} word{'' if self._words == 1 else 's'}"
        dictated = ", dictated" if self.dictation_mark.text() else ""
        self.setAccessibleName(f"{ROLE_TITLES.get(self.role, self.role)}, {words}{dictated}")

    def text(self) -> str:
        return self.browser.markdown_text()

    def set_thinking(self, text: str) -> None:
        """A reasoning model's thinking, folded under its "Thinking" header; never mixed into the answer."""
        self.thinking_block.set_text(text)

    def set_pictures(self, images: tuple[ImagePart, ...]) -> None:
        if images and self.pictures is None:
            self.pictures = Thumbnails(images, self)
            layout = self.layout()
            assert isinstance(layout, QVBoxLayout)
            layout.insertWidget(layout.indexOf(self.browser), self.pictures)

    def set_files(self, files: list[tuple[str, str]]) -> None:
        if files and self.files is None:
            self.files = FileChips(files, self)
            layout = self.layout()
            assert isinstance(layout, QVBoxLayout)
            layout.insertWidget(layout.indexOf(self.browser), self.files)

    def set_dictation(self, dictation: Dictation | None, text: str) -> None:
        """Mark a spoken message (`text`: the words as sent and shown); None leaves a typed message unmarked."""
        if dictation is None:
            return
        edited = dictation.transcript.strip() != text.strip()
        facts = [f"{dictation.seconds:.1f} s", dictation.language] + (["edited"] if edited else [])
        self.dictation_mark.setText(" · ".join(["Dictated", *(fact for fact in facts if fact)]))
        spoken = ", ".join(fact for fact in ("Dictated", f"{dictation.seconds:.1f} seconds", dictation.language,
                                             "edited before sending" if edited else "") if fact)
        heard = f"Heard: \u201c{dictation.transcript}\u201d" if edited else ""
        model = f"Transcribed by {dictation.model}" if dictation.model else ""
        self.dictation_mark.setToolTip("\n".join(line for line in (heard, model) if line) or "Spoken, not typed")
        self.dictation_mark.setAccessibleName(spoken)
        self.dictation_mark.setAccessibleDescription(heard)
        self.dictation_mark.show()
        self._name_for_reader()

    def add_part(self, widget: QWidget) -> None:
        """A part below the text, above the footer (an answer's tool calls: app/chat/tool_card.py)."""
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(layout.indexOf(self.footer), widget)

    def set_footer(self, text: str) -> None:
        self.footer.setText(text)
        self.footer.setVisible(bool(text))

    def copy_text(self) -> None:
        self._to_clipboard(self.text())

    def copy_code(self, index: int) -> None:
        blocks = self.browser.code_block_widgets()
        if 0 <= index < len(blocks):
            blocks[index].copy()

    def _to_clipboard(self, text: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(text)
