"""Device, dtype, attention and bitsandbytes choices for the HF runner.

Each choice is checked before loading: a quantization mode that cannot run on
this CPU or GPU is reported as a sentence, not as a traceback halfway through
reading the weights.
"""

from __future__ import annotations

import importlib.util
import logging
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from engine.protocol import ModelConfig
from engine.runners.base import RunnerError

# bitsandbytes warns on every 8-bit matmul that inputs are cast to fp16; once
# per token per layer is noise, not news.
warnings.filterwarnings("ignore", message="MatMul8bitLt: inputs will be cast")


def choose_device(requested: str) -> torch.device:
    if requested in ("", "auto"):
        return torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
    try:
        device = torch.device(requested)
    except RuntimeError as error:
        raise RunnerError(f"device {requested!r} is not a device name (try auto, cpu, cuda or cuda:0).") from error
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RunnerError(
                f"device {requested!r} was asked for, but this torch ({torch.__version__}) sees no CUDA GPU. "
                "Choose cpu or auto, or install a CUDA build of torch."
            )
        index = device.index or 0
        if index >= torch.cuda.device_count():
            raise RunnerError(f"device {requested!r}: there are only {torch.cuda.device_count()} CUDA devices.")
        return torch.device("cuda", index)
    if device.type != "cpu":
        raise RunnerError(f"device {requested!r} is not supported by Hearth (use cpu or cuda).")
    return device


def choose_dtype(requested: str, device: torch.device) -> torch.dtype:
    if requested != "auto":
        return {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[requested]
    if device.type == "cuda":
        major, _ = torch.cuda.get_device_capability(device)
        return torch.bfloat16 if major >= 8 else torch.float16
    # On the CPU fp32 decodes much faster than bf16, which only wins the prefill (docs/benchmarks.md).
    # Chat is decode.
    return torch.float32


def flash_attn_usable(device: torch.device, dtype: torch.dtype) -> bool:
    if device.type != "cuda" or dtype not in (torch.float16, torch.bfloat16):
        return False
    if importlib.util.find_spec("flash_attn") is None:
        return False
    major, _ = torch.cuda.get_device_capability(device)
    return major >= 8  # flash-attn 2 needs Ampere or newer


def choose_attention(device: torch.device, dtype: torch.dtype, setting: str = "auto") -> str:
    """transformers' attention implementation for the flash attention setting.

    "auto" takes flash-attn 2 where it can run (a CUDA GPU, half precision, the package), SDPA
    elsewhere: on the CPU SDPA reads a long prompt and generates after it faster than eager attention
    (docs/benchmarks.md).
    """
    usable = flash_attn_usable(device, dtype)
    if setting == "on" and not usable:
        raise RunnerError(
            "Flash attention is set to on, but flash-attn 2 needs the flash-attn package, a CUDA GPU "
            "(Ampere or newer) and fp16 or bf16 weights. Set flash attention to auto or off."
        )
    if usable and setting != "off":
        return "flash_attention_2"
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        return "sdpa"
    return "eager"


def attention_label(implementation: str, device: torch.device, dtype: torch.dtype) -> str:
    """What the gauge shows: the kernel actually in effect."""
    if implementation == "flash_attention_2":
        return "flash-attn 2"
    if implementation != "sdpa":
        return implementation
    if device.type != "cuda":
        return "SDPA (math)"
    half = dtype in (torch.float16, torch.bfloat16)
    if half and torch.backends.cuda.flash_sdp_enabled():
        return "SDPA (flash kernel)"
    if torch.backends.cuda.mem_efficient_sdp_enabled():
        return "SDPA (memory-efficient kernel)"
    return "SDPA (math)"


def chosen_by_auto(label: str) -> str:
    """The label with the note that "auto" chose it: "SDPA (math, auto)", "flash attention off (auto)"."""
    return f"{label[:-1]}, auto)" if label.endswith(")") else f"{label} (auto)"


def quantization_config(config: ModelConfig, device: torch.device, dtype: torch.dtype) -> tuple[Any, str]:
    """A BitsAndBytesConfig (None for "none") and its label, once the mode is known to run here."""
    mode = config.quantization
    if mode == "none":
        return None, ""
    _probe_bitsandbytes(mode, device, dtype)
    from transformers import BitsAndBytesConfig

    if mode == "int8":
        return BitsAndBytesConfig(load_in_8bit=True), "int8"
    quant = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type=mode,
        bnb_4bit_compute_dtype=dtype,
        bnb_4bit_use_double_quant=config.double_quant,
    )
    label = f"{mode}{' double-quant' if config.double_quant else ''}, compute {_short_dtype(dtype)}"
    return quant, label


def _short_dtype(dtype: torch.dtype) -> str:
    return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}.get(dtype, str(dtype))


def _probe_bitsandbytes(mode: str, device: torch.device, dtype: torch.dtype) -> None:
    """Run one tiny quantized layer on the device: the honest answer to "will it work here"."""
    if importlib.util.find_spec("bitsandbytes") is None:
        raise RunnerError(f"{mode} quantization needs the bitsandbytes package: pip install bitsandbytes.")
    # Its CPU backend logs a warning when the optional `kernels` package (hub
    # kernels) is absent; Hearth never fetches kernels, so that is expected.
    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
    try:
        with _hub_out_of_reach():
            import bitsandbytes as bnb

        layer = _tiny_layer(bnb, mode, dtype).to(device)
        with torch.inference_mode():
            out = layer(torch.ones(2, 64, dtype=dtype, device=device))
        if not torch.isfinite(out).all():
            raise RuntimeError("the quantized layer gave non-finite numbers")
    except Exception as error:
        where = f"{device.type.upper()} ({_device_name(device)})"
        raise RunnerError(
            f"{mode} quantization does not work on this {where} with bitsandbytes: {error}. "
            "Choose quantization none, or another mode."
        ) from error


@contextmanager
def _hub_out_of_reach() -> Iterator[None]:
    """Importing bitsandbytes fetches "hub kernels" when the optional `kernels` package is there.

    A model load never reaches a hub, so that import runs in huggingface_hub's
    offline mode (its constant: the library reads HF_HUB_OFFLINE only when it is
    imported); only the import, so the rest of the process can still reach the Hub.
    """
    from huggingface_hub import constants

    saved = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved


def _tiny_layer(bnb: Any, mode: str, dtype: torch.dtype) -> Any:
    torch.manual_seed(0)
    if mode == "int8":
        layer = bnb.nn.Linear8bitLt(64, 64, bias=False, has_fp16_weights=False)
        layer.weight = bnb.nn.Int8Params(torch.randn(64, 64, dtype=torch.float16), requires_grad=False)
        return layer
    layer = bnb.nn.Linear4bit(64, 64, bias=False, compute_dtype=dtype, quant_type=mode)
    layer.weight = bnb.nn.Params4bit(torch.randn(64, 64, dtype=dtype), requires_grad=False, quant_type=mode)
    return layer


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return platform.processor() or platform.machine()
