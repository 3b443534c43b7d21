"""The transformers part: a random-weights Llama of a given shape, through the engine and transformers' own paths.

`make_model` writes the folder (the default model's tokenizer, made from its
skeleton by transformers itself, so the GPU machine's version reads it);
`mode_case` loads it in one quantization mode and measures, in this order:
the engine with the fast decode as configured and without it (1 and N chats
aggregate tok/s, TTFT, peak memory against the settings' estimate), then
`generate` with the default cache, `generate` with the static cache and
`generate_batch` on the same prompts.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any


def make_model(args: dict[str, Any]) -> dict[str, Any]:
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    skeleton, folder = Path(args["skeleton"]), Path(args["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(skeleton.parent), gguf_file=skeleton.name)
    tokenizer.save_pretrained(folder)
    config = LlamaConfig(vocab_size=len(tokenizer), max_position_embeddings=8192, tie_word_embeddings=True,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, **args["shape"])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        model: Any = LlamaForCausalLM(config)
    model = model.to(torch.bfloat16).eval()
    model.generation_config = GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
                                               pad_token_id=config.pad_token_id)
    model.save_pretrained(folder, safe_serialization=True)
    n_params = int(model.num_parameters())
    del model
    gc.collect()
    return {"folder": str(folder), "n_params": n_params, "vocab": len(tokenizer),
            "bytes": sum(p.stat().st_size for p in folder.iterdir() if p.is_file())}


def mode_case(args: dict[str, Any]) -> dict[str, Any]:
    from engine.protocol import ModelConfig

    figures: dict[str, Any] = {"quantization": args["mode"]}
    base = ModelConfig(path=args["folder"], backend="hf", slots=max(args["chats"]), context_length=args["context"],
                       quantization=args["mode"], batch_tokens=512)
    for label, fast in (("engine_fast", args["fast_decode"]), ("engine_eager", "off")):
        figures[label] = _engine(base, fast, args)
    figures["same_text"] = figures["engine_fast"]["text"] == figures["engine_eager"]["text"]
    figures["baselines"] = _baselines(base, args)
    figures["goals"] = _goals(figures, args["chats"])
    return figures


def _engine(base: Any, fast: str, args: dict[str, Any]) -> dict[str, Any]:
    from dataclasses import replace

    from engine.bench.harness import Bench
    from engine.bench.workloads import run_tabs, story_request
    from engine.gpucheck.memory_check import MemoryCheck
    from engine.protocol import CloseChat

    config = replace(base, fast_decode=fast)
    memory = MemoryCheck(on_gpu=not args["dry"])
    bench = Bench()
    bench.loop.start()
    try:
        began = time.monotonic()
        info = bench.load(config)
        load_s = time.monotonic() - began
        first = bench.serve([story_request("text", 0, args["tokens"])])[0]  # also the warm-up
        bench.loop.send(CloseChat("text"))
        runs = [run_tabs(bench, chats, args["tokens"]) for chats in args["chats"]]
        used = memory.after_load(config)
    finally:
        bench.loop.shutdown()
        gc.collect()
    return {"decode": info.decode, "device": info.device, "attention": info.attention, "load_s": round(load_s, 1),
            "model_bytes": info.model_bytes, "kv_cache_bytes": info.kv_cache_bytes, "runs": runs, "memory": used,
            "text": first.finished.text if first.finished else ""}


def _baselines(config: Any, args: dict[str, Any]) -> dict[str, Any]:
    """transformers' own paths on the model loaded as the runner loads it."""
    import torch

    from engine.bench.hf_baseline import generate_batch_tokens_per_second, generate_tokens_per_second
    from engine.bench.workloads import story_request
    from engine.chat_template import render_chat
    from engine.runners.hf.load import load
    from engine.runners.hf.text import chat_template, encode_prompt, tokenizer_adds_bos

    loaded = load(config, lambda fraction, message: None, lambda: False)
    tokenizer, model = loaded.tokenizer, loaded.model
    template = chat_template(tokenizer)
    prompts = [encode_prompt(tokenizer, render_chat(template, story_request(f"b{i}", i, 1).messages,
                                                     tokenizer.bos_token or "", tokenizer.eos_token or ""),
                             tokenizer_adds_bos(tokenizer)) for i in range(max(args["chats"]))]
    tokens, figures = args["tokens"], dict[str, Any]()
    runs = (("generate_tok_s", lambda: generate_tokens_per_second(model, prompts[:1], tokens)),
            ("generate_static_tok_s", lambda: generate_tokens_per_second(model, prompts[:1], tokens, cache="static")),
            ("generate_batch_tok_s", lambda: generate_batch_tokens_per_second(model, prompts, tokens)))
    try:
        for key, run in runs:
            began = time.monotonic()
            try:
                result = run()
                if result.generated_tokens == 0:
                    raise RuntimeError("it produced no tokens (see the log)")
                figures[key] = round(result.tokens_per_second, 2)
            except Exception as error:  # noqa: BLE001 - one baseline that fails is a finding; the others go on
                figures[key.replace("_tok_s", "_error")] = f"{type(error).__name__}: {str(error)[:300]}"
            figures[key.replace("_tok_s", "_s")] = round(time.monotonic() - began, 1)
    finally:
        loaded.model = model = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return figures


def _goals(figures: dict[str, Any], chats: list[int]) -> dict[str, Any]:
    """The issue's goals, from this run's figures: ratios, and whether each was met."""
    fast, baselines = figures["engine_fast"], figures["baselines"]
    rates = {run["tabs"]: run["aggregate_tok_s"] for run in fast["runs"]}
    goals: dict[str, Any] = {}
    if baselines.get("generate_tok_s"):
        goals["one_chat_over_generate"] = round(rates[chats[0]] / baselines["generate_tok_s"], 2)
        goals["one_chat_3x_generate"] = goals["one_chat_over_generate"] >= 3.0
    if baselines.get("generate_batch_tok_s"):
        goals["many_over_generate_batch"] = round(rates[chats[-1]] / baselines["generate_batch_tok_s"], 2)
        goals["many_at_least_generate_batch"] = goals["many_over_generate_batch"] >= 1.0
    memory = fast["memory"]
    peak, budget = memory.get("torch_max_reserved_bytes", memory.get("rss_growth_bytes")), \
        memory.get("estimate_device_bytes")
    if isinstance(peak, int) and isinstance(budget, int):
        goals["peak_over_budget"] = round(peak / budget, 3)
        goals["within_budget"] = peak <= budget
    return goals
