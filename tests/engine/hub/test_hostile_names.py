"""A hostile mirror (HF_ENDPOINT) names files, checksums and commits that would lead out of the cache: refused,
nothing written anywhere, while an honest file of the same repo downloads as usual."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from engine.hub.download import download, fetch_choice
from engine.hub.errors import UnsafeHubPath
from engine.hub.fit import downloaded_choices
from engine.hub.listing import list_repo
from engine.hub.settings import HubSettings
from tests.engine.hub.stand_in_hub import StandInFile, StandInHub, StandInRepo

REPO = "hearth-test/Hostile"
HONEST = "honest/model.gguf"
PAYLOAD = b"GGUF" + b"\0" * 60


class RenamedCommit(StandInRepo):
    commit_override = ""

    @property
    def commit(self) -> str:
        return self.commit_override or super().commit


@pytest.fixture()
def mirror(hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInHub]:
    server = StandInHub()
    monkeypatch.setenv("HF_ENDPOINT", server.start())
    yield server
    server.stop()


def serve(mirror: StandInHub, files: dict[str, StandInFile], commit: str = "") -> None:
    repo = RenamedCommit(REPO, files, ["gguf"])
    repo.commit_override = commit
    mirror.repos[REPO] = repo


def everything_under(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.mark.parametrize("name", ["../../outside.gguf", "honest/../../../outside.gguf", "/tmp/outside.gguf",
                                  "..\\..\\outside.gguf", "C:/outside.gguf"])
def test_a_file_name_that_leaves_the_cache_is_refused(mirror: StandInHub, hub_env: Path, tmp_path: Path,
                                                      name: str) -> None:
    serve(mirror, {HONEST: StandInFile(HONEST, PAYLOAD), name: StandInFile(name, PAYLOAD)})
    settings = HubSettings.from_env()
    listing = list_repo(REPO, settings)
    before = everything_under(tmp_path)
    hostile = next(file for file in listing.files if file.path == name)
    with pytest.raises(UnsafeHubPath, match="outside the model's folder"):
        download(REPO, "main", listing.commit, [hostile], settings)
    with pytest.raises(UnsafeHubPath):
        downloaded_choices(listing, settings)  # the listing itself says so: Get models shows the message
    assert everything_under(tmp_path) - before <= {"hf-home/hub/models--hearth-test--Hostile"}
    assert mirror.bytes_served(REPO) == 0
    honest = next(file for file in listing.files if file.path == HONEST)
    snapshot = download(REPO, "main", listing.commit, [honest], settings)
    assert (snapshot / HONEST).read_bytes() == PAYLOAD


def test_a_checksum_that_is_a_path_is_refused(mirror: StandInHub, hub_env: Path) -> None:
    hostile = StandInFile("model.gguf", PAYLOAD)
    hostile.sha256 = "../../../../escaped"  # the mirror's LFS sha256, which names the blob in the cache
    serve(mirror, {"model.gguf": hostile})
    settings = HubSettings.from_env()
    listing = list_repo(REPO, settings)
    with pytest.raises(UnsafeHubPath, match="not a sha256"):
        fetch_choice(listing, listing.choice("model.gguf"), settings)
    assert not any(path.name.startswith("escaped") for path in hub_env.parent.rglob("*"))
    assert mirror.bytes_served(REPO) == 0


def test_a_commit_that_is_a_path_is_refused(mirror: StandInHub, hub_env: Path) -> None:
    serve(mirror, {"model.gguf": StandInFile("model.gguf", PAYLOAD)}, commit="../../../snapshots-elsewhere")
    settings = HubSettings.from_env()
    listing = list_repo(REPO, settings)
    assert listing.commit == "../../../snapshots-elsewhere"
    with pytest.raises(UnsafeHubPath, match="not a commit id"):
        fetch_choice(listing, listing.choice("model.gguf"), settings)
    assert not any(path.name == "snapshots-elsewhere" for path in hub_env.parent.rglob("*"))


def test_a_revision_that_is_a_path_is_refused(mirror: StandInHub, hub_env: Path) -> None:
    serve(mirror, {"model.gguf": StandInFile("model.gguf", PAYLOAD)})
    settings = HubSettings.from_env()
    listing = list_repo(REPO, settings)
    with pytest.raises(UnsafeHubPath, match="revision"):
        download(REPO, "../../../refs-elsewhere", listing.commit, listing.choice("model.gguf").files, settings)
    assert not any(path.name == "refs-elsewhere" for path in hub_env.parent.rglob("*"))
