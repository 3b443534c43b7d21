"""`python -m engine.bench --pictures [--family NAME]`: a picture sent beside chats that are answering.

Per family, a vision projector of that family's type with random weights (engine/randweights/), beside a
text model it fits: the bundled SmolLM2 for "llava" (an mlp projector) and "gemma3" (its SigLIP projector
and pooling), the family's own random text model for "qwen2.5vl", "qwen3vl" (M-RoPE) and "smolvlm"
(Idefics3's tiles and markers). Random weights answer nothing true but cost what their sizes cost: the
projectors here are a ViT of ENCODER_BLOCKS blocks over a PICTURE_PIXELS-square picture, sized so an encode
takes about a second on a laptop CPU, as a real projector's does.

Through the real EngineLoop: TEXT_TABS chats answer, their tokens timed; then a fourth sends a picture.
Measured: the picture's tokens, its encode (the encoder's own clock), the text chats' decode speed before
and while it encodes, and the picture chat's first token beside the same question without a picture. Each
encode mode in turn: "beside" (the encoder's thread, the default where the projector is on the CPU) and
"in_step" (as before: the step that first wants the rows encodes, every chat waits).
"""

from __future__ import annotations

import io
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from engine.bench.harness import Bench, BenchError, Turn
from engine.protocol import Cancel, ChatMessage, ImagePart, ModelConfig, SamplingParams, Submit, Token, TurnFinished

FAMILIES = ("llava", "gemma3", "qwen2.5vl", "qwen3vl", "smolvlm")
PROJECTORS = {"gemma3": "gemma3", "qwen2.5vl": "qwen2.5vl_merger", "qwen3vl": "qwen3vl_merger", "smolvlm": "idefics3"}
TEXT_ARCH = {"qwen2.5vl": "qwen2vl", "qwen3vl": "qwen3vl", "smolvlm": "llama"}  # else the bundled model
PICTURE_PIXELS = 224
ENCODER_BLOCKS = 8
TEXT_TABS = 3
BEFORE_S = 3.0  # the text chats' speed alone, over this long
QUESTION = "What is in this picture?"


def write_family(family: str, default_model: str, folder: Path) -> tuple[str, str]:
    """The text model and projector of `family` (paths), written into `folder`."""
    from engine.randweights.mmproj import write_mmproj
    from engine.randweights.vision_projectors import IDEFICS3_TOKENS, write_vision_projector
    from engine.randweights.vision_text import TextShape, write_vision_text_model

    if family == "llava":
        return default_model, str(write_mmproj(folder / "mmproj-mlp.gguf", 576))
    model, width = default_model, 576
    if family in TEXT_ARCH:
        shape = TextShape()
        markers = IDEFICS3_TOKENS if family == "smolvlm" else ()
        model = str(write_vision_text_model(folder / f"random-{family}.gguf", default_model, TEXT_ARCH[family],
                                            shape, extra_tokens=markers))
        width = shape.embedding
    # Gemma 3 pools the patch grid to 4 x 4 rows; the others merge 2 x 2 patches (SmolVLM: per tile)
    size = PICTURE_PIXELS if family != "smolvlm" else PICTURE_PIXELS // 2
    merge = PICTURE_PIXELS // 16 if family == "gemma3" else 2
    projector = write_vision_projector(folder / f"mmproj-{family}.gguf", PROJECTORS[family], width, image_size=size,
                                       merge=merge, blocks=ENCODER_BLOCKS)
    return model, str(projector)


def picture(seed: int) -> ImagePart:
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (PICTURE_PIXELS, PICTURE_PIXELS, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return ImagePart(out.getvalue(), "image/png")


def measure_pictures(args: Any) -> dict[str, Any]:
    family = args.family or "llava"
    if family not in FAMILIES:
        raise BenchError(f"--pictures --family takes one of {', '.join(FAMILIES)}, not {family!r}")
    from engine.catalog.default_model import default_model_path

    default_model = str(default_model_path())
    cases = []
    with tempfile.TemporaryDirectory(prefix="hearth-bench-pictures-") as folder:
        model, projector = write_family(family, default_model, Path(folder))
        bench = Bench()
        bench.loop.start()
        try:
            config = ModelConfig(path=model, mmproj=projector, context_length=4096, slots=TEXT_TABS + 1,
                                 **({"threads": args.threads} if args.threads else {}))
            info = bench.load(config)
            if "vision" not in info.capabilities:
                raise BenchError(f"llama.cpp did not take the {family} projector")
            encoder = bench.loop.pool.models[0].runner.pictures.encoder  # type: ignore[union-attr]
            for mode in ("beside", "in_step"):
                encoder.beside = mode == "beside"
                for repeat in range(args.repeat):
                    cases.append(_case(bench, encoder, family, mode, 100 * repeat + (mode == "beside")))
        finally:
            bench.loop.shutdown()
    return {"pictures": _best(cases), "pictures_runs": cases}


def _best(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per mode, the run whose text chats went fastest before the picture (the quietest machine)."""
    best: dict[str, dict[str, Any]] = {}
    for case in cases:
        if case["mode"] not in best or case["text_tok_s_before"] > best[case["mode"]]["text_tok_s_before"]:
            best[case["mode"]] = case
    return list(best.values())


def _case(bench: Bench, encoder: Any, family: str, mode: str, seed: int) -> dict[str, Any]:
    tag = f"{mode}-{seed}"
    long = SamplingParams(temperature=0, max_new_tokens=3000, ignore_eos=True, speculative="off")
    texts = [Submit(f"text-{tag}-{i}", (ChatMessage("user", f"Tell me a long story, number {i}."),), long)
             for i in range(TEXT_TABS)]
    times: list[float] = []  # each text chat's tokens, when they came
    for submit in texts:
        bench.loop.send(submit)
    _until(bench, times, lambda at, event: len(times) >= 2 * TEXT_TABS)  # all answering
    started = time.perf_counter()
    _until(bench, times, lambda at, event: at - started >= BEFORE_S)
    before = [at for at in times if at >= started]
    encodes = encoder.encodes
    one = SamplingParams(temperature=0, max_new_tokens=1, ignore_eos=True, speculative="off")
    seeing = Submit(f"picture-{tag}", (ChatMessage("user", QUESTION, images=(picture(seed),)),), one)
    turn = Turn(seeing.chat_id, time.perf_counter())
    bench.loop.send(seeing)
    _until(bench, times, lambda at, event: _finished(turn, at, event))
    spans = list(encoder.spans)[-(encoder.encodes - encodes):] if encoder.encodes > encodes else []
    if not spans:
        raise BenchError("the picture was not encoded")
    first, last = spans[0][0], spans[-1][1]
    during = [at for at in times if first <= at <= last]
    for submit in texts:
        bench.loop.send(Cancel(submit.chat_id))
    plain = bench.serve([Submit(f"plain-{tag}", (ChatMessage("user", QUESTION),), one)])[0]
    alone = bench.serve([Submit(f"alone-{tag}", (ChatMessage("user", QUESTION, images=(picture(seed + 7),)),), one)])[0]
    rate_before = len(before) / (before[-1] - started) if before else 0.0
    rate_during = len(during) / (last - first)
    return {"family": family, "mode": mode, "image_tokens": turn.prompt_tokens - plain.prompt_tokens,
            "encodes": len(spans), "encode_ms": 1000 * sum(end - begin for begin, end in spans),
            "ttft_ms_beside_text_tabs": 1000 * (turn.ttft_s), "ttft_ms_with": 1000 * alone.ttft_s,
            "ttft_ms_without": 1000 * plain.ttft_s, "text_tok_s_before": rate_before,
            "decode_tok_s_text_tabs_beside": rate_during,
            "text_slowdown": 1 - rate_during / rate_before if rate_before else 0.0}


def _finished(turn: Turn, at: float, event: Any) -> bool:
    if getattr(event, "chat_id", "") != turn.chat_id:
        return False
    if isinstance(event, Token) and turn.first_token_at is None:
        turn.first_token_at = at
    if isinstance(event, TurnFinished):
        if event.reason not in ("stop", "length"):
            raise BenchError(f"the picture's chat ended with {event.reason}: {event.message}")
        turn.finished = event
        turn.prompt_tokens = event.stats.prompt_tokens
        return True
    return False


def _until(bench: Bench, times: list[float], done: Callable[[float, Any], bool]) -> None:
    """Events until `done(at, event)`; each text chat's token's time goes into `times`."""
    while True:
        at, event = bench.next_event()
        if isinstance(event, Token) and event.chat_id.startswith("text-"):
            times.append(at)
        if done(at, event):
            return


def pictures_table(result: dict[str, Any]) -> str:
    lines = [f"{'family':>10} {'mode':>8} {'rows':>5} {'encode ms':>10} {'text tok/s before':>18} "
             f"{'while encoding':>15} {'slowdown':>9} {'ttft with':>10} {'without':>8}"]
    for case in result["pictures"]:
        lines.append(f"{case['family']:>10} {case['mode']:>8} {case['image_tokens']:>5} {case['encode_ms']:10.0f} "
                     f"{case['text_tok_s_before']:18.1f} {case['decode_tok_s_text_tabs_beside']:15.1f} "
                     f"{case['text_slowdown']:9.0%} {case['ttft_ms_with']:10.0f} {case['ttft_ms_without']:8.0f}")
    return "\n".join(lines)
