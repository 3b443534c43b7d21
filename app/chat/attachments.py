"""Files attached to a chat's next message: an Attach button, drop and paste, one chip per file.

Pictures (PNG, JPEG, WebP: app/chat/pictures.py) take the same paths and get a chip of their own;
they go in the message's `images`, never in its text, and only to a model that can see.

A chip shows the file's name, pages, tokens and whether it goes in whole or is searched (or why it
cannot be read); "reading 30%" / "indexing 40%" while the worker (app/chat/attachment_worker.py)
is at it. Sending takes the chips: `message_text` builds the user message from them and the
question (engine/documents/prompt.py) and clears them. Each chat's index is a file of its own
under the data folder's documents/, deleted with the chat.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import platformdirs
from PySide6.QtCore import QEvent, QObject, QUrl, Signal
from PySide6.QtGui import QDropEvent, QGuiApplication, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QWidget,
)

from app.chat.attachment_worker import DocumentWorker, ReadFile
from app.chat.document_vectors import Vectors
from app.chat.flow_layout import FlowLayout
from app.chat.pictures import PictureChip, clipboard_picture, is_picture_file, read_picture, remove_button
from engine.documents.index import DocumentIndex, index_path
from engine.documents.retrieval import Hit
from engine.documents.prompt import Attachment, assemble, plan, room_left
from engine.images import ImageError, can_see, cannot_see
from engine.paths import user_path
from engine.protocol import ChatMessage, ImagePart, ModelInfo

log = logging.getLogger(__name__)
DATA_DIR_ENV = "HEARTH_DATA_DIR"  # the folder the chat history uses
_CHIP_CHARS = 80
ANSWER_RESERVE_TOKENS = 1024  # kept free for the answer (a quarter of a small context at most)
_FILE_FILTER = ("Documents and pictures (*.png *.jpg *.jpeg *.webp *.txt *.md *.markdown *.rst *.pdf *.docx *.pptx *.xlsx *.epub *.html *.htm "
                "*.py *.js *.ts *.c *.h *.cpp *.rs *.go *.java *.json *.yaml *.yml *.toml *.csv);;All files (*)")


def documents_folder() -> Path:
    override = os.environ.get(DATA_DIR_ENV)
    base = Path(user_path(override)) if override else Path(platformdirs.user_data_dir("Hearth", appauthor=False))
    return base / "documents"


class AttachmentChip(QFrame):
    remove_requested = Signal(int)

    def __init__(self, key: int, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key, self.name = key, name
        self.read: ReadFile | None = None
        self.doc_id: int | None = None
        self.error = ""
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(f"{name} · reading…", self)
        close = remove_button(self, name, lambda: self.remove_requested.emit(self.key))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 2, 2)
        layout.addWidget(self.label)
        layout.addWidget(close)

    def show_state(self, mode: str, status: str = "") -> None:
        if self.error:
            shown = self.error if len(self.error) <= _CHIP_CHARS else self.error[:_CHIP_CHARS].rsplit(" ", 1)[0] + "…"
            self.label.setText(f"⚠ {shown}")  # the whole sentence in the tooltip: the row holds several chips
            self.setToolTip(self.error)
            return
        parts = [self.name]
        if self.read is not None:
            parts += [f"{self.read.pages} page{'s' * (self.read.pages != 1)}",
                      f"{'' if self.read.exact else '≈'}{self.read.tokens:,} tokens", mode]
        if status:
            parts.append(status)
        self.label.setText(" · ".join(parts))


class AttachmentsBar(QWidget):
    """Above the input: the Attach button and the chips of the files the next message takes."""

    changed = Signal()

    def __init__(self, chat_id: Callable[[], str], conversation: Callable[[], Sequence[ChatMessage]],
                 context_length: Callable[[], int], model_info: Callable[[], ModelInfo | None], input_box: QWidget,
                 parent: QWidget | None = None, vectors: Callable[[], Vectors | None] = lambda: None) -> None:
        super().__init__(parent)
        self._chat_id, self._conversation, self._context_length = chat_id, conversation, context_length
        self._model_info = model_info
        self.chips: dict[int, AttachmentChip] = {}
        self.pictures: dict[int, PictureChip] = {}
        self._status: dict[int, str] = {}
        self._notes: dict[int, str] = {}  # after indexing: why a file is searched by its words only
        self._next_key = 0
        self._vectors = vectors
        self.worker = DocumentWorker(self._index_file(), lambda: info.path if (info := model_info()) else "", self,
                                     vectors)
        self.worker.progressed.connect(self._on_progress)
        self.worker.read.connect(self._on_read)
        self.worker.indexed.connect(self._on_indexed)
        self.worker.failed.connect(self._on_failed)
        self.worker.words_only.connect(self._on_words_only)
        self.attach_button = QPushButton("Attach…", self)
        self.attach_button.setToolTip("Attach files to the next message (or drop or paste them into the input)")
        self.attach_button.clicked.connect(self._on_attach_clicked)
        self._row = FlowLayout(self)  # many chips wrap onto more rows rather than widen the window
        self._row.setContentsMargins(0, 0, 0, 4)
        self._row.addWidget(self.attach_button)
        self._input = input_box
        input_box.installEventFilter(self)
        viewport = getattr(input_box, "viewport", None)
        if viewport is not None:
            viewport().installEventFilter(self)

    def _index_file(self) -> Path:
        return index_path(documents_folder(), self._chat_id())

    # ------------------------------------------------------------ adding and removing

    def attach(self, paths: Sequence[Path]) -> None:
        for path in paths:
            key, self._next_key = self._next_key, self._next_key + 1
            if is_picture_file(Path(path)):
                try:
                    self._add_picture(key, Path(path).name, read_picture(Path(path)))
                except ImageError as error:
                    self._add_picture(key, Path(path).name, None, str(error))
                continue
            chip = AttachmentChip(key, Path(path).name, self)
            chip.remove_requested.connect(self._on_remove)
            self.chips[key] = chip
            self._row.insertWidget(self._row.count(), chip)
            self.worker.add(key, Path(path))
        self.refresh()

    def attach_picture(self, image: ImagePart, name: str = "pasted picture") -> None:
        key, self._next_key = self._next_key, self._next_key + 1
        self._add_picture(key, name, image)
        self.refresh()

    def _add_picture(self, key: int, name: str, image: ImagePart | None, error: str = "") -> None:
        chip = PictureChip(key, name, image, error, self)
        chip.remove_requested.connect(self._on_remove)
        self.pictures[key] = chip
        self._row.insertWidget(self._row.count(), chip)

    def _on_attach_clicked(self) -> None:
        names, _ = QFileDialog.getOpenFileNames(self, "Attach files", "", _FILE_FILTER)
        self.attach([Path(name) for name in names])

    def _on_remove(self, key: int) -> None:
        chip = self.chips.pop(key, None) or self.pictures.pop(key, None)
        if chip is not None:
            chip.deleteLater()
        self._status.pop(key, None)
        self._notes.pop(key, None)
        self.refresh()

    def clear(self) -> None:
        for key in [*self.chips, *self.pictures]:
            self._on_remove(key)

    # ------------------------------------------------------------ pictures

    def show_pictures(self, images: Sequence[ImagePart]) -> None:
        """These pictures on the chips instead of any there (an edited message's: they go with it again)."""
        for key in list(self.pictures):
            self._on_remove(key)
        for number, image in enumerate(images, 1):
            self.attach_picture(image, f"picture {number}")

    def images(self) -> tuple[ImagePart, ...]:
        """The pictures the next message takes (chips with an error take none)."""
        return tuple(chip.image for chip in self.pictures.values() if chip.image is not None)

    def picture_problem(self) -> str:
        """Why the tab's model will not take pictures ("" : it can, or its model is not known yet)."""
        info = self._model_info()
        return cannot_see(info) if info is not None and not can_see(info) else ""

    def refusal(self) -> str:
        """Why the next message cannot be sent as it is ("" : it can): pictures for a model that cannot see."""
        problem = self.picture_problem()
        if problem and self.images():
            return f"{problem}. Remove the picture or choose a model that can see; nothing was sent."
        return ""

    # ------------------------------------------------------------ the worker's reports

    def _on_progress(self, key: int, what: str, share: float) -> None:
        if key in self.chips:
            self._status[key] = f"{what} {share:.0%}"
            self.refresh()

    def _on_read(self, read: ReadFile) -> None:
        if read.key in self.chips:
            self.chips[read.key].read = read
            self.refresh()

    def _on_indexed(self, key: int, doc_id: int) -> None:
        if key in self.chips:
            self.chips[key].doc_id = doc_id
            self._status.pop(key, None)
            self.refresh()

    def _on_words_only(self, key: int, why: str) -> None:
        if key in self.chips:
            self._notes[key] = why
            self.refresh()

    def _on_failed(self, key: int, message: str) -> None:
        if key in self.chips:
            self.chips[key].error = message
            self._status.pop(key, None)
            self.refresh()

    # ------------------------------------------------------------ whole or searched

    def room(self) -> int:
        count, _ = self.worker.counter()
        conversation = sum(count(message.content) + 8 for message in self._conversation())  # 8: the role's markers
        context = self._context_length()
        return room_left(context, conversation, min(ANSWER_RESERVE_TOKENS, context // 4))

    def _attachments(self) -> list[Attachment]:
        return [Attachment(-1 if chip.doc_id is None else chip.doc_id, chip.name, chip.read.pages, chip.read.text,
                           chip.read.tokens) for chip in self.chips.values() if chip.read is not None and not chip.error]

    def refresh(self) -> None:
        whole, _ = plan(self._attachments(), self.room())
        whole_names = {attachment.name for attachment in whole}
        for key, chip in self.chips.items():
            note = self._notes.get(key, "")
            chip.show_state("whole" if chip.name in whole_names else "searched",
                            self._status.get(key) or ("by words only" if note else ""))
            if note and not chip.error:
                chip.setToolTip(note)
        self.show_picture_states()
        self.changed.emit()

    def show_picture_states(self) -> None:
        """Each picture's chip says whether the tab's model can see it (the model may have changed)."""
        problem = self.picture_problem()
        for picture in self.pictures.values():
            picture.show_state(problem)

    def message_text(self, question: str) -> str:
        """The user message for `question` with the attached files; the chips are cleared."""
        attachments = self._attachments()
        if not attachments:
            self.clear()
            return question
        count, _ = self.worker.counter()
        index = DocumentIndex(self._index_file())
        vectors = self._vectors()

        def search(text: str, doc_ids: Sequence[int], limit: int) -> list[Hit]:
            ids = [i for i in doc_ids if i >= 0]
            if vectors is not None and index.vector_model() == vectors.name:
                try:
                    return index.search(text, limit, ids, embed=vectors.embed, embed_model=vectors.name)
                except Exception:  # the model went away: the words still find the passages
                    log.warning("searching by meaning failed; by words only", exc_info=True)
            return index.search(text, limit, ids)

        try:
            prompt = assemble(question, attachments, self.room(), count, search)
        finally:
            index.close()
        self.clear()
        return prompt.text

    # ------------------------------------------------------------ drop and paste into the input

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove) and _local_files(event.mimeData().urls()):  # type: ignore[attr-defined]
            event.acceptProposedAction()  # type: ignore[attr-defined]
            return True
        if kind == QEvent.Type.Drop and isinstance(event, QDropEvent):
            files = _local_files(event.mimeData().urls())
            if files:
                event.acceptProposedAction()
                self.attach(files)
                return True
        if kind == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) and event.matches(QKeySequence.StandardKey.Paste):
            mime = QGuiApplication.clipboard().mimeData()
            files = _local_files(mime.urls()) if mime is not None else []
            if files:
                self.attach(files)
                return True
            pasted = clipboard_picture(mime) if mime is not None and not mime.hasText() else None
            if pasted is not None:  # a screenshot: pixels, no file
                self.attach_picture(pasted)
                return True
        return super().eventFilter(watched, event)

    def shutdown(self) -> None:
        self.worker.wait()


def _local_files(urls: Sequence[QUrl]) -> list[Path]:
    return [Path(url.toLocalFile()) for url in urls if url.isLocalFile() and Path(url.toLocalFile()).is_file()]
