"""Pictures attached in the real window (scripted engine): a chip per picture, a refusal where the model
cannot see (nothing sent, nothing lost), the picture in the next Submit's images and a thumbnail on the card."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication, QImage, QKeySequence
from PySide6.QtWidgets import QApplication, QToolButton

from app.chat.pictures import CANNOT_SEE
from tests.app.scripted_bridge import model_info

PIL = pytest.importorskip("PIL.Image")
SEEING = model_info(capabilities=("vision",), backend="hf", name="Tiny seer")


def picture_file(folder: Path, name: str, colour: tuple[int, int, int], kind: str = "PNG") -> Path:
    image = PIL.new("RGB", (60, 40), colour)
    out = io.BytesIO()
    image.save(out, format=kind)
    path = folder / name
    path.write_bytes(out.getvalue())
    return path


def test_a_model_that_sees_gets_the_picture_and_the_card_shows_it(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(info=SEEING)
    tab = window.current_tab()
    png, jpeg = picture_file(tmp_path, "red.png", (200, 20, 20)), picture_file(tmp_path, "blue.jpg", (20, 20, 200), "JPEG")
    tab.attachments.attach([png, jpeg])
    labels = [chip.label.text() for chip in tab.attachments.pictures.values()]
    assert labels[0].startswith("red.png · PNG, ") and labels[1].startswith("blue.jpg · JPEG, ")
    assert not any(CANNOT_SEE in label for label in labels)
    assert tab.attachments.chips == {}  # no document chip, no text extraction for a picture
    tab.input.setPlainText("What colours are these?")
    tab.send()
    message = window.bridge.submitted[-1][1][-1]
    assert message.content == "What colours are these?"
    assert [image.mime for image in message.images] == ["image/png", "image/jpeg"]
    assert message.images[0].data == png.read_bytes()
    card = tab.view.cards()[-2]
    assert card.role == "user" and card.pictures is not None and len(card.pictures.labels) == 2
    assert card.pictures.labels[0].pixmap().height() == 40  # small pictures are not enlarged
    assert tab.attachments.pictures == {}  # the chips went with the message
    window.bridge.answer(tab.chat_id, "Red and blue.")


def test_a_model_that_cannot_see_refuses_and_keeps_everything(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()  # the scripted GGUF: no vision projector
    tab = window.current_tab()
    tab.attachments.attach([picture_file(tmp_path, "red.webp", (200, 20, 20), "WEBP")])
    chip = next(iter(tab.attachments.pictures.values()))
    assert chip.label.text() == f"red.webp · ⚠ {CANNOT_SEE}"
    assert "has no vision projector. Put its mmproj-*.gguf file" in chip.toolTip()
    tab.input.setPlainText("What is this?")
    tab.send()
    assert window.bridge.submitted == []
    assert tab.input.toPlainText() == "What is this?" and len(tab.attachments.pictures) == 1
    assert tab.reason.isVisible() and tab.reason.text().endswith("nothing was sent.")
    (close,) = chip.findChildren(QToolButton)  # the user takes the picture away with its "×": the text goes alone
    assert (close.text(), close.toolTip()) == ("×", "Remove red.webp")
    qtbot.mouseClick(close, Qt.MouseButton.LeftButton)
    assert tab.attachments.pictures == {} and not tab.reason.isVisible()
    tab.send()
    assert window.bridge.submitted[-1][1][-1].images == ()


def test_a_file_named_like_a_picture_that_is_not_one(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(info=SEEING)
    tab = window.current_tab()
    fake = tmp_path / "cat.png"
    fake.write_bytes(b"GIF89a" + bytes(64))
    tab.attachments.attach([fake])
    chip = next(iter(tab.attachments.pictures.values()))
    assert chip.label.text() == "⚠ cat.png: not a PNG, JPEG or WebP picture, so it cannot be attached."
    tab.input.setPlainText("Look")
    tab.send()
    assert window.bridge.submitted[-1][1][-1].images == ()


def test_dropped_and_pasted_pictures(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(info=SEEING)
    tab = window.current_tab()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(picture_file(tmp_path, "dropped.png", (1, 2, 3))))])
    buttons, keys = Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(QPoint(5, 5), Qt.DropAction.CopyAction, mime, buttons, keys)
    QApplication.sendEvent(tab.input.viewport(), enter)
    QApplication.sendEvent(tab.input.viewport(), QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime, buttons, keys))
    screenshot = QImage(30, 20, QImage.Format.Format_RGB32)
    screenshot.fill(Qt.GlobalColor.darkGreen)
    QGuiApplication.clipboard().setImage(screenshot)
    tab.input.setFocus()
    qtbot.keySequence(tab.input, QKeySequence.StandardKey.Paste)
    assert [chip.name for chip in tab.attachments.pictures.values()] == ["dropped.png", "pasted picture"]
    pasted = tab.attachments.images()[1]
    assert pasted.mime == "image/png" and QImage.fromData(pasted.data).size().width() == 30
    assert tab.input.toPlainText() == ""


def test_an_edited_message_keeps_its_pictures(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window(info=SEEING)
    tab = window.current_tab()
    tab.attachments.attach([picture_file(tmp_path, "red.png", (200, 20, 20))])
    tab.input.setPlainText("What colour?")
    tab.send()
    sent = window.bridge.submitted[-1][1][-1].images
    window.bridge.answer(tab.chat_id, "Red.")
    tab.message_actions.begin_edit(0)
    assert [chip.name for chip in tab.attachments.pictures.values()] == ["picture 1"]
    tab.message_actions.cancel_edit()
    assert tab.attachments.pictures == {}
    tab.message_actions.begin_edit(0)
    tab.input.setPlainText("Which colour, exactly?")
    tab.send()
    assert [(m.content, m.images) for m in tab.messages] == [("Which colour, exactly?", sent)]
    assert window.bridge.submitted[-1][1][-1].images == sent


def test_many_chips_wrap_instead_of_widening_the_window(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()  # cannot see: the longest chips
    window.resize(800, 600)
    tab = window.current_tab()
    tab.attachments.attach([picture_file(tmp_path, f"picture-{n}.png", (n * 40, 20, 20)) for n in range(6)])
    qtbot.waitUntil(lambda: len({chip.y() for chip in tab.attachments.pictures.values()}) >= 3)
    one_row = sum(chip.sizeHint().width() for chip in tab.attachments.pictures.values())
    assert window.minimumSizeHint().width() < one_row / 2  # the window need not hold them side by side
    assert max(chip.geometry().right() for chip in tab.attachments.pictures.values()) <= tab.attachments.width()


def test_earlier_pictures_are_left_out_for_a_model_that_cannot_see_and_it_says_so(qtbot, scripted_window,  # type: ignore[no-untyped-def]
                                                                                  tmp_path: Path) -> None:
    window = scripted_window(info=SEEING)
    tab = window.current_tab()
    tab.attachments.attach([picture_file(tmp_path, "red.png", (200, 20, 20))])
    tab.input.setPlainText("What colour?")
    tab.send()
    window.bridge.answer(tab.chat_id, "Red.")
    window.bridge.finish_loading(model_info())  # the next model cannot see
    tab.set_model_ready(True)
    tab.input.setPlainText("Thanks. And in French?")
    tab.send()
    assert [m.images for m in window.bridge.submitted[-1][1]] == [(), (), (), ()]
    assert tab.reason.text() == "The earlier pictures were left out: this model cannot see them."
    assert len(tab.messages[0].images) == 1  # kept in the chat, for a model that can see


def test_the_chip_follows_the_tabs_model(qtbot, scripted_window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window = scripted_window()
    tab = window.current_tab()
    tab.attachments.attach([picture_file(tmp_path, "red.png", (200, 20, 20))])
    chip = next(iter(tab.attachments.pictures.values()))
    assert CANNOT_SEE in chip.label.text()
    window.bridge.finish_loading(SEEING)  # the tab's model is now one that sees
    tab.set_model_ready(True)
    assert chip.label.text().startswith("red.png · PNG, ") and CANNOT_SEE not in chip.label.text()
