"""Get models' verdicts at a real size: a 1B-shaped Q4_K_M header, sized as the settings dialog sizes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.catalog.description import ModelDescription
from engine.catalog.devices import DeviceMemory
from engine.catalog.memory import estimate
from engine.catalog.models import describe
from engine.randweights.gguf_model import LlamaShape, write_header
from engine.hub.fit import assess, config_for
from engine.hub.listing import HubFile, ModelChoice, RepoListing
from engine.protocol import ModelConfig

GiB, MiB = 1 << 30, 1 << 20
# Llama-3.2-1B's layers with SmolLM2's vocabulary: ~1.07 billion parameters
ONE_B = LlamaShape(layers=16, embedding=2048, feed_forward=8192, heads=32, kv_heads=8, vocab=49152,
                   name="random 1B")
# what llama.cpp's Q4_K_M mix puts where (the V projection and the down projection one step finer)
Q4_K_M_TYPES = {"token_embd.weight": "Q6_K", "attn_q.weight": "Q4_K", "attn_k.weight": "Q4_K",
                "attn_v.weight": "Q6_K", "attn_output.weight": "Q4_K", "ffn_gate.weight": "Q4_K",
                "ffn_up.weight": "Q4_K", "ffn_down.weight": "Q6_K"}
MOSTLY_Q4_K_M = 15
LAPTOP = DeviceMemory("cpu", "RAM", free_bytes=24 * GiB, total_bytes=32 * GiB)


@pytest.fixture(scope="module")
def one_b(tmp_path_factory: pytest.TempPathFactory) -> ModelDescription:
    path = write_header(tmp_path_factory.mktemp("one-b") / "random-1b.Q4_K_M.gguf", ONE_B, Q4_K_M_TYPES,
                        MOSTLY_Q4_K_M)
    return describe(str(path))


def _listing(model: ModelDescription) -> RepoListing:
    file = HubFile(Path(model.path).name, model.file_bytes, "0" * 64, None)
    choice = ModelChoice(file.path, "gguf", "Q4_K_M", (file,))
    return RepoListing("hearth-test/Random-1B-GGUF", "main", "c" * 40, False, (file,), (choice,))


def test_the_header_is_a_1b_q4_k_m_file(one_b: ModelDescription) -> None:
    assert 1.0e9 < one_b.n_params < 1.1e9 and one_b.quantization == "Q4_K_M" and one_b.layers == 16
    assert 600 * MiB < one_b.file_bytes < 750 * MiB


def test_get_models_sizes_a_1b_gguf_as_settings_does(one_b: ModelDescription) -> None:
    """The F32 prompt copy of a 1B model (4 GB) is not what "auto" takes: the verdict must not count it."""
    listing = _listing(one_b)
    config = ModelConfig(path="", context_length=4096, slots=4, device="cpu")
    report = assess(listing, {listing.choices[0].key: one_b}, config, LAPTOP, has_gpu=False)
    fit = report.fits[0]
    settings = estimate(one_b, config_for(fit.choice, config, one_b.path), has_gpu=False,
                        total_memory=LAPTOP.total_bytes)
    assert settings.prompt_copy_bytes == 0
    assert fit.need_bytes == settings.device_bytes
    # weights ~650 MiB, 4 x 4096 cells of KV cache (512 MiB), the runtime: well under 2 GiB, not ~6 GiB
    assert 1 * GiB < fit.need_bytes < 2 * GiB and fit.level == "fits"
    assert report.ram_bytes == LAPTOP.total_bytes


def test_the_estimate_cannot_be_made_without_the_machines_memory(one_b: ModelDescription) -> None:
    config = ModelConfig(path=one_b.path)
    with pytest.raises(TypeError):
        estimate(one_b, config, has_gpu=False)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="RAM"):
        estimate(one_b, config, has_gpu=False, total_memory=0)
