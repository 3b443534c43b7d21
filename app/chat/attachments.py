"""Files attached to a chat's next message: an Attach button, drop and paste, one chip per file.

Pictures (PNG, JPEG, WebP: app/chat/pictures.py) take the same paths and get a chip of their own;
they go in the message's `images`, never in its text, and only to a model that can see.

A chip (app/chat/attachment_chip.py) shows the file's name, pages, tokens and whether it goes in
whole or is searched (or why it cannot be read); "reading 30%" / "indexing 40%" while the worker
(app/chat/attachment_worker.py) is at it. Drops and pastes into the input come through
app/chat/drop_paste.py. Sending takes the chips: `message_text` builds the user message from them and the
question (engine/documents/prompt.py) and clears them. Each chat's index is a file of its own
under the data folder's documents/, deleted with the chat.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import platformdirs
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QPushButton, QWidget

from app.chat.attachment_chip import AttachmentChip
from app.chat.attachment_worker import DocumentWorker, ReadFile
from app.chat.document_vectors import Vectors
from app.chat.drop_paste import DropAndPaste
from app.chat.flow_layout import FlowLayout
from app.chat.pictures import PictureChip, is_picture_file, read_picture
from engine.documents.index import DocumentIndex, index_path
from engine.documents.prompt import Attachment, assemble, plan, room_left
from engine.documents.retrieval import Hit
from engine.images import ImageError, can_see, cannot_see
from engine.paths import user_path
from engine.protocol import ChatMessage, ImagePart, ModelInfo

log = logging.getLogger(__name__)
DATA_DIR_ENV = "HEARTH_DATA_DIR"  # the folder the chat history uses
ANSWER_RESERVE_TOKENS = 1024  # kept free for the answer (a quarter of a small context at most)
_FILE_FILTER = ("Documents and pictures (*.png *.jpg *.jpeg *.webp *.txt *.md *.markdown *.rst *.pdf *.docx *.pptx *.xlsx *.epub *.html *.htm "
                "*.py *.js *.ts *.c *.h *.cpp *.rs *.go *.java *.json *.yaml *.yml *.toml *.csv);;All files (*)")


def documents_folder() -> Path:
    override = os.environ.get(DATA_DIR_ENV)
    base = Path(user_path(override)) if override else Path(platformdirs.user_data_dir("Hearth", appauthor=False))
    return base / "documents"


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
        self.worker.picture_counted.connect(self._on_picture_counted)
        self.attach_button = QPushButton("Attach…", self)
        self.attach_button.setToolTip("Attach files to the next message (or drop or paste them into the input)")
        self.attach_button.clicked.connect(self._on_attach_clicked)
        self._row = FlowLayout(self)  # many chips wrap onto more rows rather than widen the window
        self._row.setContentsMargins(0, 0, 0, 4)
        self._row.addWidget(self.attach_button)
        self._input = input_box
        self._drops = DropAndPaste(self.attach, self.attach_picture, self)  # drop and paste into the input
        self._drops.watch(input_box)

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

    def _on_picture_counted(self, key: int, model: str, tokens: int) -> None:
        chip = self.pictures.get(key)
        info = self._model_info()
        if chip is not None and info is not None and info.path == model:  # not a count for a model since left
            chip.tokens = tokens
            self.refresh()  # the picture takes room the files' text had: whole or searched again

    def _on_failed(self, key: int, message: str) -> None:
        if key in self.chips:
            self.chips[key].error = message
            self._status.pop(key, None)
            self.refresh()

    # ------------------------------------------------------------ whole or searched

    def room(self) -> int:
        count, _ = self.worker.counter()
        conversation = sum(count(message.content) + 8 for message in self._conversation())  # 8: the role's markers
        conversation += self.picture_tokens()
        context = self._context_length()
        return room_left(context, conversation, min(ANSWER_RESERVE_TOKENS, context // 4))

    def picture_tokens(self) -> int:
        """The prompt tokens the attached pictures take, as counted for the tab's model (0 for one not counted yet)."""
        return sum(chip.tokens or 0 for chip in self.pictures.values() if chip.image is not None)

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
        info = self._model_info()
        model = info.path if info is not None else ""
        for key, picture in self.pictures.items():
            if picture.image is not None and not problem and picture.counted_for != model:
                picture.counted_for, picture.tokens = model, None  # counted again for this model (off this thread)
                self.worker.count_picture(key, picture.image)
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
        if vectors is not None and index.vector_model() == vectors.name \
                and not self.worker.wait_until_prepared(vectors):
            vectors = None  # its model could not be loaded: the words still find the passages

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

    def shutdown(self) -> None:
        self.worker.wait()
