"""A GGUF repo with vision projectors on the (stand-in) Hub: Get models lists each model with its folder's
projector (F16 first), counts its bytes in the download and the memory verdict, fetches it verified beside the
model, and the downloaded model loads seeing pictures."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from engine.hub.download import fetch_choice
from engine.hub.fit import assess
from engine.hub.listing import HubFile, gguf_choices, list_repo
from engine.hub.remote import describe_choices
from engine.hub.settings import HubSettings
from engine.images import can_see, projector_beside
from engine.protocol import ModelConfig
from tests.engine.hub.fixtures import GGUF_REPO, PROJECTOR_F16 as F16, PROJECTOR_Q8 as Q8, Q4_1, VISION_REPO
from tests.engine.hub.fixtures import add_vision_repo, projectors  # noqa: F401 - a fixture
from tests.engine.hub.stand_in_hub import StandInHub
from tests.engine.hub.test_download import plenty


@pytest.fixture()
def vision_hub(hub: StandInHub, default_model: str, projectors: dict[str, Path]) -> StandInHub:  # noqa: F811
    add_vision_repo(hub, default_model, projectors)
    return hub


def test_the_projector_of_the_models_folder_is_chosen_most_precise_first() -> None:
    def file(path: str) -> HubFile:
        return HubFile(path, 10, "a" * 64, None)

    files = tuple(map(file, ["m-Q4_K_M.gguf", "mmproj-m-Q8_0.gguf", "mmproj-m-F32.gguf", "mmproj-m-BF16.gguf",
                             "q8/m-Q8_0.gguf", "q8/mmproj-m-Q8_0.gguf", "bare/m-Q2_K.gguf"]))
    chosen = {c.key: c.projector.path if c.projector else None for c in gguf_choices(files)}
    assert chosen == {"m-Q4_K_M.gguf": "mmproj-m-BF16.gguf", "q8/m-Q8_0.gguf": "q8/mmproj-m-Q8_0.gguf",
                      "bare/m-Q2_K.gguf": None}
    with_f16 = gguf_choices((*files, file("mmproj-m-f16.gguf")))
    assert [c.projector.path for c in with_f16 if c.key == "m-Q4_K_M.gguf" and c.projector] == ["mmproj-m-f16.gguf"]
    assert all(c.parts == 1 for c in with_f16)


def test_listed_with_the_model_counted_in_size_and_memory(vision_hub: StandInHub) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(VISION_REPO, settings)
    [choice] = listing.choices
    served = vision_hub.repos[VISION_REPO].files
    assert choice.projector is not None and choice.projector.path == F16
    assert choice.label == f"{Q4_1} + vision projector" and choice.parts == 1
    assert choice.download_bytes == served[Q4_1].size + served[F16].size and choice.model_bytes == served[Q4_1].size
    plain = list_repo(GGUF_REPO, settings)
    config = ModelConfig(path="", context_length=2048, slots=2, device="cpu")
    with_projector = assess(listing, describe_choices(listing, settings), config, plenty(), False).fit(Q4_1)
    without = assess(plain, describe_choices(plain, settings), config, plenty(), False).fit(Q4_1)
    assert with_projector.need_bytes - without.need_bytes == served[F16].size


def test_fetched_verified_beside_the_model_which_then_sees(vision_hub: StandInHub,
                                                         projectors: dict[str, Path]) -> None:  # noqa: F811
    from engine.runners.llamacpp.runner import LlamaCppRunner

    settings = HubSettings.from_env()
    listing = list_repo(VISION_REPO, settings)
    path = fetch_choice(listing, listing.choices[0], settings)
    assert Path(path).name == Q4_1 and projector_beside(path) == F16
    assert hashlib.sha256((Path(path).parent / F16).read_bytes()).hexdigest() == \
        hashlib.sha256(projectors[F16].read_bytes()).hexdigest()
    assert not (Path(path).parent / Q8).exists()
    assert vision_hub.served.get((VISION_REPO, Q8), 0) == 0
    runner = LlamaCppRunner.load(ModelConfig(path=path, context_length=256, slots=1, threads=1, prompt_copy="off"),
                                 lambda *_: None, lambda: False)
    try:
        assert can_see(runner.info)
    finally:
        runner.close()
