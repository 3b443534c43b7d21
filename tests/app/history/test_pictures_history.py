"""Pictures in the chat history: stored with their message, restored with their thumbnails after a restart,
deleted with the message or the chat, listed in the Markdown export and carried through JSON export and import."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from app.history.records import HistoryImportError
from app.history.store import HistoryStore
from engine.protocol import ImagePart
from tests.app.helpers import wait_restored
from tests.app.scripted_bridge import model_info

PIL = pytest.importorskip("PIL.Image")


def picture_bytes(colour: tuple[int, int, int], kind: str = "PNG") -> bytes:
    out = io.BytesIO()
    PIL.new("RGB", (50, 30), colour).save(out, format=kind)
    return out.getvalue()


RED = ImagePart(picture_bytes((200, 20, 20)), "image/png")
BLUE = ImagePart(picture_bytes((20, 20, 200), "JPEG"), "image/jpeg")


def image_rows(store: HistoryStore) -> int:
    return int(store._db.execute("SELECT COUNT(*) FROM message_images").fetchone()[0])


def test_stored_loaded_deleted_exported_imported(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "history.sqlite3")
    chat = store.create_chat()
    asked = store.add_message(chat.id, "user", "What are these?", images=(RED, BLUE))
    store.add_message(chat.id, "assistant", "Red and blue.", asked.id)
    loaded = store.load_chat(chat.id).path()
    assert loaded[0].images == (RED, BLUE) and loaded[1].images == ()
    markdown = store.export_markdown(chat.id)
    assert f"*Picture 1: image/png, {len(RED.data):,} bytes*" in markdown
    assert f"*Picture 2: image/jpeg, {len(BLUE.data):,} bytes*" in markdown
    exported = store.export_json(chat.id)
    copy = store.import_json(exported)
    assert store.load_chat(copy.id).path()[0].images == (RED, BLUE)
    assert image_rows(store) == 4
    store.delete_message(store.load_chat(copy.id).path()[0].id)  # the message and its pictures
    assert image_rows(store) == 2
    store.delete_chat(chat.id)
    assert store.purge_deleted() == 1
    assert image_rows(store) == 0
    broken = json.loads(exported)
    broken["hearth"]["messages"][0]["images"] = [{"mime": "image/png", "data": "R0lGODlh"}]  # a GIF's first bytes
    with pytest.raises(HistoryImportError, match="hearth message 1: picture 1: the image is not a PNG, JPEG or WebP"):
        store.import_json(json.dumps(broken))
    store.close()


def test_a_picture_comes_back_after_a_restart(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seeing = model_info(capabilities=("vision",), backend="hf")
    window = scripted_window(info=seeing)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    path = tmp_path / "red.png"
    path.write_bytes(RED.data)
    tab.attachments.attach([path])
    tab.input.setPlainText("What colour?")
    tab.send()
    window.bridge.answer(tab.chat_id, "Red.")
    chat_id = tab.chat_id
    window.close()  # joins the history thread: everything is on disk
    again = scripted_window(info=seeing)
    wait_restored(qtbot, again)
    restored = again.current_tab()
    assert restored.chat_id == chat_id
    assert [(m.role, m.images) for m in restored.messages] == [("user", (RED,)), ("assistant", ())]
    card = restored.view.cards()[0]
    assert card.pictures is not None and card.pictures.labels[0].pixmap().width() == 50
    restored.input.setPlainText("And now?")
    restored.send()  # the picture goes to the model again with the conversation
    assert again.bridge.submitted[-1][1][1].images == (RED,)
