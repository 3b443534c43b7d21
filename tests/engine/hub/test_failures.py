"""What goes wrong with downloads, and what the user is told: cancel and resume, corruption, gated,
missing repos, a server that goes away, a full disk, offline. Nothing half-done is ever offered."""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any

import pytest

import engine.hub.download as download_module
import engine.hub.transfer as transfer_module
from engine.catalog.hf_cache import downloaded_models
from engine.hub.download import fetch_choice
from engine.hub.errors import (ConnectionLost, DownloadCancelled, GatedRepo, HubOffline, HubUnreachable, NotEnoughDisk,
                               RepoNotFound, VerificationFailed)
from engine.hub.listing import list_repo
from engine.hub.progress import DownloadProgress
from engine.hub.search import search
from engine.hub.settings import HubSettings
from tests.engine.hub.fixtures import GATED_REPO, GGUF_REPO, Q4_1, TOKEN
from tests.engine.hub.stand_in_hub import StandInHub


def partials(home: Path) -> list[Path]:
    return sorted((home / "hub").glob("models--*/blobs/*.incomplete"))


def offered(home: Path) -> list[str]:
    return [model.path for model in downloaded_models(home / "hub")]


def cancel_at(home: Path, fraction: float, size: int) -> Any:
    """A Cancel pressed once `fraction` of the file is on disk."""
    return lambda: any(p.stat().st_size >= fraction * size for p in partials(home))


def test_cancel_at_half_then_resume_fetches_only_the_rest(hub: StandInHub, hub_env: Path) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    choice = listing.choice(Q4_1)
    with pytest.raises(DownloadCancelled, match="they are kept, and the next download resumes there"):
        fetch_choice(listing, choice, settings, cancelled=cancel_at(hub_env, 0.5, choice.download_bytes))
    [partial] = partials(hub_env)
    kept = partial.stat().st_size
    assert 0.45 * choice.download_bytes <= kept <= 0.6 * choice.download_bytes
    assert offered(hub_env) == []  # half a file is not a model
    resumed: list[DownloadProgress] = []
    path = fetch_choice(listing, choice, settings, resumed.append)
    # only the rest was asked for and sent (the cancelled request's own count may still be settling)
    assert hub.transfers[-1] == (GGUF_REPO, Q4_1, kept, choice.download_bytes - kept)
    assert resumed[-1].reused_bytes == kept and resumed[-1].done_bytes == choice.download_bytes
    assert partials(hub_env) == [] and offered(hub_env) == [path]


def test_a_crashed_download_resumes_where_it_stopped(hub: StandInHub, hub_env: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    size = hub.repos[GGUF_REPO].files[Q4_1].size
    hub.faults.bytes_per_second = size / 6  # about six seconds for the whole file
    root = Path(__file__).resolve().parents[3]
    process = subprocess.Popen([sys.executable, "-m", "engine.hub", "get", GGUF_REPO, Q4_1], cwd=root,
                               env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (partials(hub_env) and partials(hub_env)[0].stat().st_size > 0.4 * size):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # no cleanup, no goodbye: a crash
    process.communicate()
    kept = partials(hub_env)[0].stat().st_size
    assert offered(hub_env) == []
    hub.faults.bytes_per_second = 0
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    path = fetch_choice(listing, listing.choice(Q4_1), settings)
    assert hub.transfers[-1] == (GGUF_REPO, Q4_1, kept, size - kept)  # the rest, not a byte more
    assert offered(hub_env) == [path]


def test_corrupted_bytes_are_refused_deleted_and_never_offered(hub: StandInHub, hub_env: Path) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    hub.faults.corrupt[(GGUF_REPO, Q4_1)] = 12_345_678  # one byte flipped on the way
    with pytest.raises(VerificationFailed) as failure:
        fetch_choice(listing, listing.choice(Q4_1), settings)
    message = str(failure.value)
    assert Q4_1 in message and "sha256" in message and "has been deleted" in message
    assert partials(hub_env) == [] and offered(hub_env) == []
    assert not list((hub_env / "hub").glob("models--*/blobs/*"))  # no blob kept
    del hub.faults.corrupt[(GGUF_REPO, Q4_1)]
    path = fetch_choice(listing, listing.choice(Q4_1), settings)
    assert offered(hub_env) == [path]


def test_a_damaged_blob_left_by_another_tool_is_checked_and_refused(hub: StandInHub, hub_env: Path) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    file = listing.choice(Q4_1).files[0]
    blob = hub_env / "hub" / "models--hearth-test--SmolLM2-135M-Instruct-GGUF" / "blobs" / file.etag
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"\0" * file.size)  # the right name and size, the wrong bytes
    with pytest.raises(VerificationFailed, match="already in the cache"):
        fetch_choice(listing, listing.choice(Q4_1), settings)
    assert not blob.exists() and hub.bytes_served() == 0 and offered(hub_env) == []


def test_a_repo_that_does_not_exist(hub: StandInHub) -> None:
    with pytest.raises(RepoNotFound, match="There is no model hearth-test/no-such-model on the Hub"):
        list_repo("hearth-test/no-such-model", HubSettings.from_env())
    with pytest.raises(RepoNotFound, match="no revision"):
        list_repo(GGUF_REPO, HubSettings.from_env(), revision="v9")


def test_a_gated_repo_asks_for_the_license_and_a_token(hub: StandInHub, hub_env: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GATED_REPO, settings)  # its page and file list are public, as on the Hub
    assert listing.gated
    with pytest.raises(GatedRepo) as anonymous:
        fetch_choice(listing, listing.choice(Q4_1), settings)
    assert "accept the license on the model's page" in str(anonymous.value).lower()
    assert f"{hub.endpoint}/{GATED_REPO}" in str(anonymous.value) and "(401)" in str(anonymous.value)
    with pytest.raises(GatedRepo, match=r"with the token given \(403\)"):
        fetch_choice(listing, listing.choice(Q4_1), settings.with_token("hf_not_the_right_one"))
    assert offered(hub_env) == [] and hub.bytes_served() == 0
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    path = fetch_choice(listing, listing.choice(Q4_1), HubSettings.from_env())
    assert offered(hub_env) == [path]


def test_the_server_vanishing_mid_download(hub: StandInHub, hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    choice = listing.choice(Q4_1)
    hub.faults.drop_after[(GGUF_REPO, Q4_1)] = (40 << 20, True)  # 40 MiB, then the server is gone
    waits: list[float] = []
    monkeypatch.setattr(transfer_module, "_wait", lambda seconds, cancelled: waits.append(seconds))
    with pytest.raises(ConnectionLost) as lost:
        fetch_choice(listing, choice, settings)
    assert waits == [0.5, 1.5] == list(transfer_module.RETRY_WAIT_S)  # a few quick retries, then the user is told
    assert "40 MiB of" in str(lost.value) and "download again to resume" in str(lost.value)
    assert [p.stat().st_size for p in partials(hub_env)] == [40 << 20] and offered(hub_env) == []
    hub.start()  # back, on the same address
    path = fetch_choice(listing, choice, settings)
    assert hub.transfers[-1] == (GGUF_REPO, Q4_1, 40 << 20, choice.download_bytes - (40 << 20))
    assert offered(hub_env) == [path]


def test_a_dropped_connection_is_resumed_by_itself(hub: StandInHub, hub_env: Path) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    choice = listing.choice(Q4_1)
    hub.faults.drop_after[(GGUF_REPO, Q4_1)] = (30 << 20, False)  # one drop; the server stays
    path = fetch_choice(listing, choice, settings)
    assert hub.bytes_served(GGUF_REPO) == choice.download_bytes  # the retry asked only for the rest
    assert offered(hub_env) == [path]


def test_not_enough_disk_is_said_before_any_byte(hub: StandInHub, hub_env: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    monkeypatch.setattr(download_module, "free_disk_bytes", lambda folder: 50 << 20)
    with pytest.raises(NotEnoughDisk) as full:
        fetch_choice(listing, listing.choice(Q4_1), settings)
    assert "needs 94 MiB more and 50 MiB are free" in str(full.value) and "Nothing was downloaded" in str(full.value)
    assert hub.bytes_served() == 0 and offered(hub_env) == []


def test_the_disk_filling_up_mid_download(hub: StandInHub, hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    real_open = transfer_module._open_partial

    class FillsUp:
        """The .incomplete file on a disk with 20 MiB left: writes beyond that fail as the OS fails them."""

        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def write(self, data: bytes) -> int:
            if self.stream.tell() + len(data) > 20 << 20:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.stream.write(data)

        def __enter__(self) -> "FillsUp":
            return self

        def __exit__(self, *exc: object) -> None:
            self.stream.close()

    monkeypatch.setattr(transfer_module, "_open_partial", lambda path, have: FillsUp(real_open(path, have)))
    with pytest.raises(NotEnoughDisk, match="The disk filled up while downloading"):
        fetch_choice(listing, listing.choice(Q4_1), settings)
    assert offered(hub_env) == [] and [p.stat().st_size for p in partials(hub_env)] == [20 << 20]


def test_offline_mode_answers_at_once_and_downloaded_models_still_work(
        hub: StandInHub, hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    path = fetch_choice(listing, listing.choice(Q4_1), settings)
    requests = len(hub.requests)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = HubSettings.from_env()
    connections = count_connections(monkeypatch)
    with pytest.raises(HubOffline, match="HF_HUB_OFFLINE"):
        search("smol", offline)
    with pytest.raises(HubOffline):
        list_repo(GGUF_REPO, offline)
    assert connections == [] and len(hub.requests) == requests  # not asked at all: nothing to wait for
    # what is downloaded needs no network: checked again, not fetched
    assert fetch_choice(listing, listing.choice(Q4_1), offline) == path and len(hub.requests) == requests
    assert offered(hub_env) == [path]


def count_connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every TCP connection the Hub code opens from now on (its reachability check's included)."""
    import socket

    opened: list[tuple[str, int]] = []
    connect = socket.create_connection

    def counted(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
        opened.append(address)
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", counted)
    return opened


def test_an_unreachable_hub_is_said_at_once(hub: StandInHub, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = HubSettings.from_env()
    hub.stop()
    connections = count_connections(monkeypatch)
    with pytest.raises(HubUnreachable, match=r"cannot be reached: the connection was refused"):
        search("smol", settings)
    assert len(connections) == 1  # one refused connection says it: no retries, no waiting
