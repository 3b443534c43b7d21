"""The Settings dialog's memory section: what the breakdown says about the weights."""

from __future__ import annotations

import dataclasses

from app.settings.memory_section import MemorySection
from engine.catalog.devices import DeviceMemory
from engine.catalog.memory import estimate
from engine.protocol import ModelConfig
from tests.engine.catalog.test_memory import MiB, TOY_GGUF

RAM = DeviceMemory("cpu", "RAM", free_bytes=16 << 30, total_bytes=32 << 30)


def test_the_breakdown_says_how_much_of_the_weights_is_the_repacked_copy(qtbot) -> None:
    section = MemorySection()
    qtbot.addWidget(section)
    config = ModelConfig(path="toy.gguf", context_length=1024, slots=1, device="cpu")
    section.show_estimate(estimate(dataclasses.replace(TOY_GGUF, quantization="Q4_0", repacked_bytes=80 * MiB), config, has_gpu=False, total_memory=RAM.total_bytes), RAM)
    assert "weights 560 MiB (of it 80 MiB repacked for the CPU)" in section.breakdown_label.text()
    section.show_estimate(estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM.total_bytes), RAM)
    assert "weights 480 MiB" in section.breakdown_label.text() and "repacked" not in section.breakdown_label.text()


def test_the_verdict_says_the_figure_after_load_and_the_one_with_every_chat_full(qtbot) -> None:
    section = MemorySection()
    qtbot.addWidget(section)
    config = ModelConfig(path="toy.gguf", context_length=4096, slots=4, device="cpu", prompt_copy="off")
    result = estimate(TOY_GGUF, config, has_gpu=False, total_memory=RAM.total_bytes)
    judged = section.show_estimate(result, RAM)
    assert judged.level == "fits"
    # 480 MiB of weights + 64 MiB of KV cache + the runtime; the compute buffer (98 MiB) only as prompts are read
    assert "Needs about 561 MiB once loaded, up to 659 MiB with every chat full; 16.0 GiB of 32.0 GiB RAM free." \
        in section.verdict_label.text()
