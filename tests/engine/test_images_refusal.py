"""What a model that cannot see says: a llama.cpp model without a projector is asked for its mmproj-*.gguf beside
it; one whose projector llama.cpp would not use names it; every backend says what would work."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from engine.images import cannot_see, projector_beside
from engine.protocol import ModelInfo


def model_info(path: str, name: str, backend: Literal["llamacpp", "hf", "remote"] = "llamacpp") -> ModelInfo:
    return ModelInfo(name=name, path=path, backend=backend, device="cpu", quantization="Q4_K_M",
                     attention="flash attention on", context_length=4096, slots=4, model_bytes=1,
                     kv_cache_bytes=1, gpu_offload=False)


def test_a_gguf_is_asked_for_its_projector_or_told_which_one_failed(tmp_path: Path) -> None:
    model = tmp_path / "gemma-3-4b-it-Q4_K_M.gguf"
    model.write_bytes(b"GGUF")
    info = model_info(str(model), name="gemma-3-4b-it")
    assert projector_beside(str(model)) == ""
    alone = cannot_see(info)
    assert alone == ("This model cannot see images: gemma-3-4b-it has no vision projector. Put its mmproj-*.gguf "
                     "file (from the model's download page) in the same folder, or choose it in Settings (Vision "
                     "projector), and load the model again")
    (tmp_path / "mmproj-gemma-3-4b-it-F16.gguf").write_bytes(b"GGUF")
    (tmp_path / "notes-mmproj.txt").write_text("not a projector")
    assert projector_beside(str(model)) == "mmproj-gemma-3-4b-it-F16.gguf"
    said = cannot_see(info)
    assert said == ("This model cannot see images: mmproj-gemma-3-4b-it-F16.gguf is next to it, but llama.cpp could "
                    "not use it as a vision projector for gemma-3-4b-it (see the log)")


def test_other_backends_and_a_missing_folder(tmp_path: Path) -> None:
    assert projector_beside(str(tmp_path / "gone" / "m.gguf")) == "" and projector_beside("") == ""
    assert cannot_see(model_info("http://x:8000/v1", name="m", backend="remote")) == (
        "This model cannot see images: http://x:8000/v1 lists m as taking no pictures")
    assert cannot_see(model_info(str(tmp_path), name="tiny", backend="hf")).endswith("tiny has no vision encoder")
