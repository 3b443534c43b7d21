"""The image-text model kinds the transformers runner reads pictures for, and what each needs beyond LLaVA's way.

Every kind here goes through AutoProcessor and the model's own vision tower; they differ in what the chat
template writes where a picture goes (the placeholder the processor expands), in the rotary positions of a
picture's tokens (Qwen2-VL's M-RoPE: time, row and column, the text after a picture moved on by the picture's
larger side, not by its token count), and in attention (Gemma 3: a picture's tokens see each other both ways).
Each kind was checked against transformers' own `generate` (tests/engine/runners/hf/test_vision_kinds.py).
A folder of any other image-text kind is refused at load: loading it as text, or with LLaVA's positions, would
answer, but wrongly.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.runners.base import RunnerError


@dataclass(frozen=True)
class VisionKind:
    name: str  # for people
    placeholder: str = "image_token"  # the processor's attribute naming what the template writes for a picture
    around: tuple[str, str] = ("", "")  # what the template writes around that placeholder
    mrope: bool = False  # 3-D rotary positions for picture tokens (engine/runners/hf/mrope.py)
    picture_sees_itself: bool = False  # a picture's tokens attend to each other both ways
    packages: tuple[str, ...] = ()  # what transformers needs to build this kind's processor

    def placeholder_text(self, processor: Any) -> str:
        return self.around[0] + str(getattr(processor, self.placeholder)) + self.around[1]

    def process(self, processor: Any, picture: Any) -> Any:
        """The processor's inputs for one PIL picture alone: its expansion of the placeholder, and its pixels."""
        try:
            return processor(text=self.placeholder_text(processor), images=[picture], return_tensors="pt",
                             add_special_tokens=False)
        except (ValueError, RuntimeError) as error:  # Qwen2-VL's resize refuses a side 200 times the other
            raise RunnerError(f"the picture ({picture.width} x {picture.height} pixels) cannot go to this "
                              f"{self.name} model: {error}") from error

    def prompt_tokens(self, processor: Any, width: int, height: int) -> int:
        """The tokens a picture of this size takes in the prompt, as the processor counts them (before sending)."""
        from PIL import Image

        return int(self.process(processor, Image.new("RGB", (width, height)))["input_ids"].shape[1])


KINDS: dict[str, VisionKind] = {
    "llava": VisionKind("LLaVA"),
    "llava_next": VisionKind("LLaVA-NeXT"),
    "idefics3": VisionKind("Idefics3"),
    "smolvlm": VisionKind("SmolVLM", packages=("torchvision", "num2words")),
    "qwen2_vl": VisionKind("Qwen2-VL", around=("<|vision_start|>", "<|vision_end|>"), mrope=True,
                           packages=("torchvision",)),
    "qwen2_5_vl": VisionKind("Qwen2.5-VL", around=("<|vision_start|>", "<|vision_end|>"), mrope=True,
                             packages=("torchvision",)),
    "gemma3": VisionKind("Gemma 3", placeholder="boi_token", picture_sees_itself=True),
}


def vision_kind(model_type: str) -> VisionKind:
    kind = KINDS.get(model_type)
    if kind is None:
        raise RunnerError(refusal(model_type))
    return kind


def refusal(model_type: str) -> str:
    names = ", ".join(kind.name for kind in KINDS.values())
    return (f"Hearth's transformers backend does not read pictures for {model_type!r} models yet (it does for "
            f"{names}); loading it anyway could answer wrongly about a picture. A GGUF of the model with its "
            "vision projector may load with the llama.cpp backend.")


def check_vision_kind(config_file: Path, model_type: str) -> None:
    """At load, before any weights: a vision folder of a kind not handled here is refused with a sentence."""
    if model_type not in KINDS:
        raise RunnerError(f"{config_file.parent}: {refusal(model_type)}")
    missing = [name for name in KINDS[model_type].packages if not installed(name)]
    if missing:
        raise RunnerError(f"{config_file.parent}: transformers reads {KINDS[model_type].name} pictures only with the "
                          f"{' and '.join(missing)} package{'s' if len(missing) > 1 else ''}: "
                          f"pip install {' '.join(missing)}, then load the model again.")


def installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def attention_for(raw: dict[str, Any], attention: str, setting: str) -> str:
    """flash-attn's packed kernel has no mask to let a picture's tokens see each other: under "auto" such a kind
    takes SDPA (with the setting on, a step with a picture is refused with a sentence, picture_steps.py)."""
    kind = KINDS.get(str(raw.get("model_type"))) if isinstance(raw.get("vision_config"), dict) else None
    if kind is not None and kind.picture_sees_itself and attention.startswith("flash_attention") and setting == "auto":
        return "sdpa"
    return attention
