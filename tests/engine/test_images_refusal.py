"""What a model that cannot see says: a llama.cpp model names the projector found beside it (which Hearth does not
read yet) instead of asking for one, and every backend says what would work."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from engine.images import cannot_see, projector_beside
from engine.protocol import ModelInfo


def model_info(path: str, name: str, backend: Literal["llamacpp", "hf", "remote"] = "llamacpp") -> ModelInfo:
    return ModelInfo(name=name, path=path, backend=backend, device="cpu", quantization="Q4_K_M",
                     attention="flash attention on", context_length=4096, slots=4, model_bytes=1,
                     kv_cache_bytes=1, gpu_offload=False)


def test_a_gguf_with_a_projector_beside_it_is_told_that_it_is_not_read_yet(tmp_path: Path) -> None:
    model = tmp_path / "gemma-3-4b-it-Q4_K_M.gguf"
    model.write_bytes(b"GGUF")
    info = model_info(str(model), name="gemma-3-4b-it")
    assert projector_beside(str(model)) == ""
    alone = cannot_see(info)
    assert "Hearth does not read llama.cpp vision projectors (mmproj) yet" in alone and "next to it" not in alone
    (tmp_path / "mmproj-gemma-3-4b-it-F16.gguf").write_bytes(b"GGUF")
    (tmp_path / "notes-mmproj.txt").write_text("not a projector")
    assert projector_beside(str(model)) == "mmproj-gemma-3-4b-it-F16.gguf"
    said = cannot_see(info)
    assert said.startswith("This model cannot see images: mmproj-gemma-3-4b-it-F16.gguf is next to it, but Hearth")
    assert said.endswith("transformers vision model folder (LLaVA, Idefics3/SmolVLM) instead of gemma-3-4b-it")


def test_other_backends_and_a_missing_folder(tmp_path: Path) -> None:
    assert projector_beside(str(tmp_path / "gone" / "m.gguf")) == "" and projector_beside("") == ""
    assert "are not sent to remote servers" in cannot_see(model_info("http://x", name="m", backend="remote"))
    assert cannot_see(model_info(str(tmp_path), name="tiny", backend="hf")).endswith("tiny has no vision encoder")
