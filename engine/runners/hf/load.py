"""Load a transformers model safely: check the files first, then load with progress.

Checks run before any weight is read, so a bad folder gets a sentence a person
can act on (which file, what is wrong, what to try) rather than a traceback:
no config.json, an architecture transformers does not know, a model that needs
its own Python code (`trust_remote_code` stays off), pickle-only weights
(never unpickled), weights that do not match the config.
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from engine.protocol import ModelConfig
from engine.runners.base import LoadCancelled, Progress, RunnerError
from engine.runners.hf.gguf_once import read_once
from engine.runners.hf.gguf_tokens import repair_gguf_tokens
from engine.runners.hf.progress import WEIGHTS_START, weights_progress
from engine.runners.hf.quant import (
    choose_attention,
    choose_device,
    choose_dtype,
    quantization_config,
)
from engine.runners.hf.vision import is_vision_config
from engine.runners.hf.vision_kinds import attention_for, check_vision_kind

# Nothing here reaches a hub: every from_pretrained gets local_files_only=True, and the
# one import that would fetch (bitsandbytes' hub kernels) runs offline (quant.py). The
# process itself stays online: HF_HUB_OFFLINE set here would silence the Get models dialog.

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")


@dataclass
class Source:
    folder: Path
    gguf_file: str | None
    name: str


@dataclass
class Loaded:
    model: Any
    tokenizer: Any
    source: Source
    device: torch.device
    dtype: torch.dtype
    attention: str
    quantization: str
    processor: Any = None  # a vision model's AutoProcessor (engine/runners/hf/vision.py); None: text only


def resolve_source(config: ModelConfig) -> Source:
    path = Path(config.path).expanduser()
    if not path.exists():
        raise RunnerError(f"{path}: no such file or folder. Choose a model folder or a .gguf file that exists.")
    if config.gguf_file or path.suffix.lower() == ".gguf":
        # gguf_file is relative to the model's folder (an absolute one stands alone); a .gguf path is the file
        folder = path if path.is_dir() else path.parent
        gguf_path = folder / config.gguf_file if config.gguf_file else path
        if not gguf_path.is_file():
            raise RunnerError(f"{gguf_path}: GGUF file not found.")
        return Source(gguf_path.parent, gguf_path.name, gguf_path.stem)
    if not path.is_dir():
        raise RunnerError(
            f"{path}: the transformers backend loads a model folder (config.json, *.safetensors, tokenizer files) "
            "or a .gguf file, not this file."
        )
    return Source(path, None, path.name)


def check_folder(folder: Path) -> dict[str, Any]:
    """The parsed config.json of a loadable folder, or a RunnerError saying why not."""
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise RunnerError(
            f"{folder} has no config.json. A Hugging Face model folder holds config.json, the *.safetensors "
            "weights and the tokenizer files: choose the folder that contains config.json, or a .gguf file."
        )
    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RunnerError(f"{config_file} is not valid JSON ({error}). The download may be incomplete.") from error
    if not isinstance(raw, dict):
        raise RunnerError(f"{config_file} does not hold a JSON object; it is not a model config.")
    _check_architecture(config_file, raw)
    _check_weights(folder)
    return raw


def _check_architecture(config_file: Path, raw: dict[str, Any]) -> None:
    from transformers import __version__ as transformers_version
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    model_type = raw.get("model_type")
    if "auto_map" in raw:
        raise RunnerError(
            f"{config_file} asks for the model's own Python code (auto_map: {sorted(raw['auto_map'])}). Hearth "
            "never runs code that comes with a model (trust_remote_code is off). Look for a version of this model "
            "supported by transformers itself, or a GGUF of it for the llama.cpp backend."
        )
    if not model_type or model_type not in CONFIG_MAPPING_NAMES:
        raise RunnerError(
            f"{config_file}: model_type {model_type!r} is not an architecture this transformers "
            f"({transformers_version}) knows. It may need remote code, which Hearth does not run, or a newer "
            "transformers; a GGUF of the model may load with the llama.cpp backend."
        )
    vision = is_vision_config(raw) and model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not vision:
        raise RunnerError(f"{config_file}: a {model_type!r} model does not generate text (no causal LM head).")
    if is_vision_config(raw):
        check_vision_kind(config_file, model_type)


def _check_weights(folder: Path) -> None:
    if any(folder.glob("*.safetensors")):
        return
    pickles = sorted(p.name for p in folder.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES)
    if pickles:
        raise RunnerError(
            f"{folder} has only pickle checkpoints ({', '.join(pickles[:3])}). Pickle checkpoints are not loaded "
            "for safety: unpickling can run arbitrary code. Use a .safetensors version of this model."
        )
    raise RunnerError(f"{folder} has no *.safetensors weight files.")


def load(config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> Loaded:
    progress(0.0, "checking files")
    source = resolve_source(config)
    raw: dict[str, Any] = {}
    if source.gguf_file is None:
        raw = check_folder(source.folder)
        if raw.get("quantization_config") and config.quantization != "none":
            raise RunnerError(
                f"{source.folder} holds an already quantized model ({raw['quantization_config'].get('quant_method')}); "
                "set quantization to none."
            )
    device = choose_device(config.device)
    dtype = choose_dtype(config.dtype, device)
    attention = attention_for(raw, choose_attention(device, dtype, config.flash_attention), config.flash_attention)
    quant, quant_label = quantization_config(config, device, dtype)
    _checkpoint(cancelled)
    with read_once() if source.gguf_file else nullcontext():
        progress(0.05, "loading tokenizer")
        tokenizer = load_tokenizer(source)
        processor = _load_processor(source) if is_vision_config(raw) else None
        _checkpoint(cancelled)
        progress(WEIGHTS_START, "loading weights")
        model = _load_weights(source, device, dtype, attention, quant, progress, cancelled, vision=processor is not None)
    label = quant_label or _dtype_label(dtype)
    return Loaded(model, tokenizer, source, device, dtype, model.config._attn_implementation, label, processor)


def _checkpoint(cancelled: Callable[[], bool]) -> None:
    if cancelled():
        raise LoadCancelled()


def _dtype_label(dtype: torch.dtype) -> str:
    return {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}.get(dtype, str(dtype))


def load_tokenizer(source: Source) -> Any:
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False}
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source.folder), **kwargs)
    except Exception as error:  # transformers raises many kinds here; a person needs one sentence
        if source.gguf_file:
            raise RunnerError(
                f"{source.folder / source.gguf_file}: transformers could not read this GGUF file ({_short(error)}). "
                "Try it with the llama.cpp backend."
            ) from error
        raise RunnerError(
            f"{source.folder}: the tokenizer could not be loaded ({_short(error)}). A model folder needs its "
            "tokenizer files (tokenizer.json or tokenizer.model, tokenizer_config.json)."
        ) from error
    # transformers' conversion loses markers that are not ASCII (DeepSeek's <｜User｜>): put back as llama.cpp has them
    return repair_gguf_tokens(tokenizer, source.folder / source.gguf_file) if source.gguf_file else tokenizer


def _load_processor(source: Source) -> Any:
    """A vision model's image processor (with its tokenizer), from the folder's own files, no code run."""
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(str(source.folder), local_files_only=True, trust_remote_code=False)
    except Exception as error:  # transformers raises many kinds here; a person needs one sentence
        raise RunnerError(
            f"{source.folder}: this vision model's image processor could not be loaded ({_short(error)}). "
            "Its folder needs processor_config.json or preprocessor_config.json."
        ) from error


def _load_weights(
    source: Source, device: torch.device, dtype: torch.dtype, attention: str, quant: Any,
    progress: Progress, cancelled: Callable[[], bool], vision: bool = False,
) -> Any:
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    model_class = AutoModelForImageTextToText if vision else AutoModelForCausalLM

    kwargs: dict[str, Any] = {
        "dtype": dtype,
        "device_map": str(device),
        "local_files_only": True,
        "trust_remote_code": False,
        "attn_implementation": attention,
        "output_loading_info": True,
    }
    if quant is not None:
        kwargs["quantization_config"] = quant
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    else:
        kwargs["use_safetensors"] = True
    with weights_progress(progress, cancelled, gguf=source.gguf_file is not None):
        try:
            result: Any = model_class.from_pretrained(str(source.folder), **kwargs)
            model, info = result
        except LoadCancelled:
            raise
        except Exception as error:
            raise RunnerError(_weights_error(source, error)) from error
    _check_loading_info(source, model, info)
    return model.eval()


def _weights_error(source: Source, error: Exception) -> str:
    text = _short(error)
    where = source.folder / source.gguf_file if source.gguf_file else source.folder
    if "mismatched_sizes" in text or "size mismatch" in text:
        return (
            f"{where}: the safetensors weights do not match config.json: tensor shapes differ"
            f"{_first_shape_difference(source)}. The folder may mix files of different models; "
            "download the model again."
        )
    if isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in text.lower():
        return f"{where}: not enough memory to load this model ({text}). Try 4-bit or 8-bit quantization."
    return (
        f"{where}: the model could not be loaded ({text}). If a download was interrupted, download the "
        "model again."
    )


def _first_shape_difference(source: Source) -> str:
    """ ' (e.g. NAME: file [a, b], config [c, d])' from the file headers and a weightless model."""
    try:
        from safetensors import safe_open
        from transformers import AutoConfig, AutoModelForCausalLM

        config = AutoConfig.from_pretrained(str(source.folder), local_files_only=True)
        with torch.device("meta"):
            expected = {k: list(v.shape) for k, v in AutoModelForCausalLM.from_config(config).state_dict().items()}
        for shard in sorted(source.folder.glob("*.safetensors")):
            with safe_open(str(shard), framework="pt") as handle:  # reads headers only
                for name in handle.keys():
                    found = list(handle.get_slice(name).get_shape())
                    if name in expected and expected[name] != found:
                        return f" (e.g. {name}: {shard.name} has {found}, config.json wants {expected[name]})"
    except Exception:  # only a detail for the message; never a reason to fail differently
        return ""
    return ""


def _check_loading_info(source: Source, model: Any, info: dict[str, Any]) -> None:
    # transformers fills weights missing from the files with random values and
    # only logs it; a model that silently talks nonsense is worse than an error.
    tied = set(getattr(model, "all_tied_weights_keys", {}) or {})
    missing = [k for k in info.get("missing_keys", ()) if k not in tied]
    mismatched = list(info.get("mismatched_keys", ()))
    if missing or mismatched:
        bad = [str(k) for k in (mismatched or missing)][:3]
        raise RunnerError(
            f"{source.folder}: the safetensors weights do not match config.json "
            f"({len(missing)} weights missing, {len(mismatched)} of the wrong shape, e.g. {', '.join(bad)}). "
            "The folder may mix files of different models; download the model again."
        )


def _short(error: BaseException, limit: int = 300) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
