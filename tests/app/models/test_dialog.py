"""The Get models dialog against the stand-in Hub, driven like a person would: search, pick, download, use.

The dialog is shown standalone here (the window's menu entry opens the same dialog); a downloaded
model is then loaded by the real engine through the bridge, and answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.models.dialog import GetModelsDialog
from app.models.downloads import DownloadManager, Downloaded
from app.models.indicator import DownloadIndicator
from engine.protocol import ModelConfig
from engine.units import format_bytes
from tests.engine.hub.fixtures import GATED_REPO, GGUF_REPO, POPULAR_REPO, PROJECTOR_F16, Q4_1, TOKEN, VISION_REPO
from tests.engine.hub.fixtures import add_vision_repo, projectors  # noqa: F401 - a fixture
from tests.engine.hub.stand_in_hub import StandInHub

CONFIG = ModelConfig(path="", context_length=2048, slots=2, device="cpu")


@pytest.fixture
def dialog(qtbot, hub: StandInHub):
    downloads = DownloadManager()
    window = GetModelsDialog(downloads, CONFIG)
    qtbot.addWidget(window)
    window.show()
    yield window
    downloads.shutdown()
    window.close()


def open_repo(qtbot, dialog: GetModelsDialog, query: str, repo_id: str = "") -> None:
    """Type a repo id (or URL) into the search field and press Enter: the one result opens by itself."""
    dialog.query.setText(query)
    qtbot.keyClick(dialog.query, Qt.Key.Key_Return)
    wanted = repo_id or query
    qtbot.waitUntil(lambda: dialog.answer is not None and dialog.answer.listing.repo_id == wanted, timeout=20_000)


def test_search_pick_download_and_use(qtbot, dialog: GetModelsDialog, hub: StandInHub) -> None:
    qtbot.waitUntil(lambda: dialog.results.count() == 3, timeout=20_000)  # on opening: the most downloaded
    assert [dialog.results.item(i).text().split("\n")[0] for i in range(3)] == \
        [POPULAR_REPO, GGUF_REPO, f"{GATED_REPO} (gated)"]
    assert dialog.status.text() == "3 models found."
    open_repo(qtbot, dialog, GGUF_REPO)
    rows = dialog.files.row_texts()
    assert [row[1] for row in rows] == ["SmolLM2-135M-Instruct.Q8_0-00001-of-00003.gguf (3 parts)",
                                        Q4_1, "SmolLM2-135M-Instruct.Q4_0.gguf"]
    assert rows[0][0] == "★" and [row[5] for row in rows] == ["fits"] * 3 and rows[1][3] == "94 MiB"
    assert dialog.why.text().startswith("★ 8-bit (Q8_0) is the most precise that fits")
    assert "2 chats of 2,048 tokens" in dialog.memory_label.text()
    assert dialog.files.selected_choice().key.endswith("-00001-of-00003.gguf")  # the recommended one
    dialog.files.selectRow(1)
    assert dialog.download_button.text() == "Download 94 MiB"
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000) as finished:
        qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
    result: Downloaded = finished.args[0]
    assert result.repo_id == GGUF_REPO and Path(result.path).name == Q4_1 and result.backend == "llamacpp"
    assert "downloaded and verified (sha256)" in dialog.progress_label.text() and dialog.use_button.isVisible()
    assert dialog.files.row_texts()[1][3] == "downloaded" and dialog.download_button.text() == "Check and use"
    with qtbot.waitSignal(dialog.model_chosen) as chosen:
        qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
    assert chosen.args == [result.path, "llamacpp", "none"] and not dialog.isVisible()


def test_the_chosen_model_loads_in_the_engine(qtbot, dialog: GetModelsDialog) -> None:
    from app.bridge import EngineBridge

    open_repo(qtbot, dialog, f"https://huggingface.co/{GGUF_REPO}", GGUF_REPO)
    dialog.files.selectRow(2)  # Q4_0: the smallest
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000):
        dialog.download()
    with qtbot.waitSignal(dialog.model_chosen) as chosen:
        dialog.use()
    path, backend, _ = chosen.args
    bridge = EngineBridge()
    bridge.start()
    try:
        with qtbot.waitSignal(bridge.model_loaded, timeout=60_000) as loaded:
            bridge.load_model(ModelConfig(path=path, context_length=512, slots=1, threads=1))
        assert loaded.args[0].quantization == "Q4_0" and loaded.args[0].path == path
    finally:
        bridge.shutdown()


def test_a_vision_repo_fetches_the_projector_and_the_model_sees(qtbot, dialog: GetModelsDialog, hub: StandInHub,
                                                                 default_model: str,
                                                                 projectors: dict[str, Path]) -> None:  # noqa: F811
    from app.bridge import EngineBridge

    add_vision_repo(hub, default_model, projectors)
    open_repo(qtbot, dialog, VISION_REPO)
    [row] = dialog.files.row_texts()
    served = hub.repos[VISION_REPO].files
    assert row[1] == f"{Q4_1} + vision projector"
    assert dialog.files.cell(0, 1).toolTip().startswith(f"Comes with its vision projector {PROJECTOR_F16} (")
    assert row[3] == format_bytes(served[Q4_1].size + served[PROJECTOR_F16].size)
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000):
        dialog.download()
    with qtbot.waitSignal(dialog.model_chosen) as chosen:
        dialog.use()
    path = chosen.args[0]
    assert (Path(path).parent / PROJECTOR_F16).is_file()
    bridge = EngineBridge()
    bridge.start()
    try:
        with qtbot.waitSignal(bridge.model_loaded, timeout=60_000) as loaded:
            bridge.load_model(ModelConfig(path=path, context_length=512, slots=1, threads=1))
        assert "vision" in loaded.args[0].capabilities
    finally:
        bridge.shutdown()


def test_cancel_then_resume_and_the_status_bar_indicator(qtbot, dialog: GetModelsDialog, hub: StandInHub,
                                                         hub_env: Path) -> None:
    indicator = DownloadIndicator(dialog.downloads)
    qtbot.addWidget(indicator)
    open_repo(qtbot, dialog, GGUF_REPO)
    dialog.files.selectRow(1)
    size = hub.repos[GGUF_REPO].files[Q4_1].size
    hub.faults.bytes_per_second = size / 8
    dialog.download()
    qtbot.waitUntil(lambda: indicator.isVisible() and indicator.bar.value() > 150, timeout=20_000)
    assert indicator.label.text().startswith(f"⬇ {Q4_1} ") and dialog.cancel_button.isVisible()
    assert " of 94 MiB · " in dialog.progress_label.text() and " left" in dialog.progress_label.text()
    with qtbot.waitSignal(dialog.downloads.failed, timeout=20_000) as failed:
        qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    assert failed.args[1] == "cancelled" and "they are kept" in dialog.progress_label.text()
    assert not indicator.isVisible() and not dialog.use_button.isVisible()
    hub.faults.bytes_per_second = 0
    [partial] = [p.stat().st_size for p in hub_env.glob("hub/models--*/blobs/*.incomplete")]
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000):
        dialog.download()
    assert hub.transfers[-1] == (GGUF_REPO, Q4_1, partial, size - partial)  # asked for and sent: the rest only
    assert dialog.use_button.isVisible() and "downloaded and verified" in dialog.progress_label.text()


def test_offline_is_said_at_once(qtbot, hub: StandInHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    downloads = DownloadManager()
    window = GetModelsDialog(downloads, CONFIG)
    qtbot.addWidget(window)
    # said as the dialog opens (no wait for a reply): nothing was asked of the Hub
    assert window.status.text().startswith("Offline mode is on (HF_HUB_OFFLINE)")
    assert hub.requests == [] and window.results.count() == 0
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.stop()
    window.search()
    qtbot.waitUntil(lambda: "cannot be reached" in window.status.text(), timeout=5_000)
    assert "the connection was refused" in window.status.text()
    window.close()


def test_a_gated_repo_asks_for_a_token(qtbot, dialog: GetModelsDialog) -> None:
    open_repo(qtbot, dialog, GATED_REPO)
    assert "gated: needs a token" in dialog.repo_title.text()
    assert dialog.why.text().startswith("No verdicts yet: only accounts that accepted this model's license")
    assert dialog.files.row_texts()[0][4:] == ["?", "?"]
    with qtbot.waitSignal(dialog.downloads.failed, timeout=20_000) as failed:
        dialog.download()
    assert failed.args[1] == "gated" and "Accept the license on the model's page" in dialog.progress_label.text()
    qtbot.keyClicks(dialog.token, TOKEN)
    with qtbot.waitSignal(dialog.worker.repo_opened, timeout=20_000):  # with the token, the verdicts come
        qtbot.keyClick(dialog.token, Qt.Key.Key_Return)
    assert dialog.files.row_texts()[0][5] == "fits" and dialog.why.text().startswith("★ 4-bit (Q4_1)")
    with qtbot.waitSignal(dialog.downloads.finished, timeout=60_000):
        dialog.download()
    assert dialog.use_button.isVisible()
