"""The rule for making room: the check beside the chats' model, or the chats' model unloaded for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.quantcheck.memory_plan import HEADROOM_BYTES, WORKING_SET_BYTES, model_bytes, plan
from engine.quantcheck.check import ModelSpec
from engine.units import format_bytes

GIB = 1024**3


def test_a_gguf_takes_its_file_size_and_the_largest_model_counts(default_model: str, tmp_path: Path) -> None:
    assert model_bytes(ModelSpec(default_model)) == Path(default_model).stat().st_size
    assert model_bytes(ModelSpec(str(tmp_path / "missing.gguf"))) == 0  # the check itself says what is wrong
    small = ModelSpec(default_model)
    need = Path(default_model).stat().st_size + WORKING_SET_BYTES
    decided = plan([small, small], None, 10 * GIB)
    assert not decided.pause_chats and f"about {format_bytes(need)}, with 10.0 GiB free" in decided.text


def test_the_chats_model_stays_when_the_check_fits_beside_it(default_model: str) -> None:
    need = Path(default_model).stat().st_size + WORKING_SET_BYTES
    beside = plan([ModelSpec(default_model)], ("SmolLM2", 100 * 1024**2), need + HEADROOM_BYTES)
    assert not beside.pause_chats and "It runs beside SmolLM2; chats answer more slowly meanwhile." in beside.text
    short = plan([ModelSpec(default_model)], ("SmolLM2", 100 * 1024**2), need + HEADROOM_BYTES - 1)
    assert short.pause_chats and "the chats' model is unloaded while the check runs and loaded again" in short.text


def test_bitsandbytes_modes_need_less_than_full_precision(tmp_path_factory: pytest.TempPathFactory) -> None:
    pytest.importorskip("transformers")
    from tests.engine.runners.hf.tiny_hf import build_tiny_llama

    folder = str(build_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama"))
    sizes = [model_bytes(ModelSpec(folder, "hf", mode)) for mode in ("none", "int8", "nf4")]
    assert sizes[0] > sizes[1] > sizes[2] > 0
