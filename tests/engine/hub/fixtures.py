"""Fixtures around the stand-in Hub: real model files to serve, and a Hub per test with HF_* pointing at it.

Import the fixtures into a test module (`from tests.engine.hub.fixtures import hub, ...`).
The GGUF repo holds the bundled model (Q4_1), a Q4_0 and a Q8_0 made from it with
llama.cpp's own quantizer, the Q8_0 written as a real three-part gguf-split model.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Iterator

import pytest

from tests.engine.hub.stand_in_hub import StandInFile, StandInHub
from tests.engine.templateless_gguf import copy_into

GGUF_REPO = "hearth-test/SmolLM2-135M-Instruct-GGUF"
POPULAR_REPO = "hearth-test/Popular-Chat-GGUF"
GATED_REPO = "hearth-test/Gated-GGUF"
FOLDER_REPO = "hearth-test/tiny-llama"
TOKEN = "hf_standin_token_for_tests"
Q4_1 = "SmolLM2-135M-Instruct.Q4_1.gguf"
Q4_0 = "SmolLM2-135M-Instruct.Q4_0.gguf"
UNNAMED = "popular-chat.gguf"  # the bundled Q4_1 under a name that does not say its quantization
Q8_0_PARTS = [f"Q8_0/SmolLM2-135M-Instruct.Q8_0-{i:05d}-of-00003.gguf" for i in (1, 2, 3)]
README = b"---\nlicense: apache-2.0\n---\n# SmolLM2-135M-Instruct, GGUF (a stand-in for the tests)\n"


def requantize(source: Path, target: Path, file_type: int) -> Path:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = file_type
    params.allow_requantize = True
    params.nthread = 1
    assert llama_cpp.llama_model_quantize(str(source).encode(), str(target).encode(), ctypes.byref(params)) == 0
    return target


def write_split(source: Path, target: Path, parts: int) -> list[Path]:
    """A real gguf-split copy (what llama.cpp's gguf-split writes): metadata in part 1, tensors spread."""
    import gguf

    reader = gguf.GGUFReader(source)
    architecture = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    assert architecture is not None, f"{source} has no architecture"
    arch = architecture.contents()
    per_part = -(-len(reader.tensors) // parts)
    writer = gguf.GGUFWriter(target, arch, split_max_tensors=per_part)
    copy_into(writer, reader)
    return sorted(target.parent.glob(f"{target.stem}-*-of-*.gguf"))


@pytest.fixture(scope="session")
def gguf_repo_files(tmp_path_factory: pytest.TempPathFactory, default_model: str) -> dict[str, StandInFile]:
    import llama_cpp

    folder = tmp_path_factory.mktemp("gguf-repo")
    q4_0 = requantize(Path(default_model), folder / Q4_0, llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0)
    q8_0 = requantize(Path(default_model), folder / "whole-Q8_0.gguf", llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0)
    (folder / "Q8_0").mkdir()
    parts = write_split(q8_0, folder / "Q8_0" / "SmolLM2-135M-Instruct.Q8_0.gguf", 3)
    assert [f"Q8_0/{p.name}" for p in parts] == Q8_0_PARTS
    files: dict[str, Path | bytes] = {Q4_1: Path(default_model), Q4_0: q4_0, "README.md": README,
                                      ".gitattributes": b"*.gguf filter=lfs\n"}
    files.update(dict(zip(Q8_0_PARTS, parts)))
    files[UNNAMED] = Path(default_model)
    return {path: StandInFile(path, source) for path, source in files.items()}


@pytest.fixture()
def hub_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HF_HOME; no token, not offline, plain HTTP (no Xet)."""
    home = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HOME", str(home))
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH",
                 "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    return home


@pytest.fixture()
def hub(hub_env: Path, gguf_repo_files: dict[str, StandInFile],
        monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInHub]:
    """The stand-in Hub with three GGUF repos, running, and HF_ENDPOINT pointing at it."""
    server = StandInHub()
    gguf_tags = ["gguf", "llama", "text-generation", "conversational"]
    files = {path: file for path, file in gguf_repo_files.items() if path != UNNAMED}
    server.add_repo(GGUF_REPO, files, gguf_tags, downloads=5_000, likes=40, last_modified="2026-10-01T10:00:00.000Z")
    server.add_repo(POPULAR_REPO, {UNNAMED: gguf_repo_files[UNNAMED]}, gguf_tags, downloads=90_000, likes=7,
                    last_modified="2026-08-01T10:00:00.000Z")
    server.add_repo(GATED_REPO, {Q4_1: gguf_repo_files[Q4_1]}, gguf_tags, downloads=10, likes=900, gated=True,
                    token=TOKEN, last_modified="2026-11-20T10:00:00.000Z")
    monkeypatch.setenv("HF_ENDPOINT", server.start())
    yield server
    server.stop()


def add_folder_repo(server: StandInHub, folder: Path) -> None:
    """The tiny transformers model (tests/engine/runners/hf/tiny_hf.py) as a safetensors repo."""
    files: dict[str, Path | bytes | StandInFile] = {p.name: p for p in sorted(folder.iterdir()) if p.is_file()}
    files["README.md"] = b"# tiny-llama (random weights, for tests)\n"
    server.add_repo(FOLDER_REPO, files, ["safetensors", "transformers", "llama", "text-generation"],
                    downloads=3, likes=1, library_name="transformers")


VISION_REPO = "hearth-test/SmolVision-GGUF"
PROJECTOR_F16 = "mmproj-SmolVision-F16.gguf"
PROJECTOR_Q8 = "mmproj-SmolVision-Q8_0.gguf"


@pytest.fixture(scope="session")
def projectors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two random mlp vision projectors for the default model (engine/randweights/mmproj.py), as F16 and Q8_0."""
    from engine.randweights.mmproj import write_mmproj

    folder = tmp_path_factory.mktemp("projectors")
    return {name: write_mmproj(folder / name, 576, seed=seed)
            for seed, name in enumerate((PROJECTOR_F16, PROJECTOR_Q8), start=1)}


def add_vision_repo(server: StandInHub, default_model: str, projectors: dict[str, Path]) -> None:
    """The default model with two vision projectors beside it, as llama.cpp's vision GGUF repos ship them."""
    server.add_repo(VISION_REPO, {Q4_1: Path(default_model), PROJECTOR_Q8: projectors[PROJECTOR_Q8],
                                  PROJECTOR_F16: projectors[PROJECTOR_F16],
                                  "README.md": b"# a stand-in vision GGUF repo\n"}, ["gguf", "image-text-to-text"])
