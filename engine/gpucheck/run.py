"""The run: each part's steps in order of importance, timed, into one JSON and one log under the out folder.

On the GPU machine a part assumes nothing but the checkout and its carried
folders (a fresh machine per run works). `--dry-run` runs the same steps on
the CPU with tiny shapes, the venv's packages and its CPU llama.cpp, so the
script is exercised by `make test` between the times a GPU is lent.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from engine.gpucheck import plan
from engine.gpucheck.record import Recorder, StepFailed, child_env

LARGE_BODY = dict(layers=32, embedding=4096, feed_forward=14336, heads=32, kv_heads=8, name="random 7B body")
HF_SHAPE = dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                num_key_value_heads=2)  # ~1.4B with the 49,152-token vocabulary: Qwen2.5-1.5B's body


@dataclass(frozen=True)
class Profile:
    dry: bool
    tabs: tuple[int, ...] = (1, 4, 8)
    max_tokens: int = 128
    context: int = 4096
    default_shape: dict[str, Any] | None = None  # None: the default model's own
    large_shape: dict[str, Any] = field(default_factory=lambda: dict(LARGE_BODY))
    hf_shape: dict[str, Any] = field(default_factory=lambda: dict(HF_SHAPE))
    hf_chats: tuple[int, ...] = (1, 8)
    hf_tokens: int = 64
    hf_modes: tuple[str, ...] = ("none", "nf4", "int8")
    fast_decode: str = "auto"


GPU = Profile(dry=False)
DRY = Profile(dry=True, tabs=(1, 2), max_tokens=8, context=512,
              # heads of 32: a q8_0 KV cache wants whole blocks of 32 per head
              default_shape=dict(layers=2, embedding=64, feed_forward=128, heads=2, kv_heads=1, name="tiny"),
              large_shape=dict(layers=2, embedding=128, feed_forward=256, heads=4, kv_heads=2, name="tiny large"),
              hf_shape=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2), hf_chats=(1, 2), hf_tokens=6, fast_decode="on",
              hf_modes=("nf4",))  # one mode covers the code; the GPU run has bf16, nf4 and int8


@dataclass
class Context:
    recorder: Recorder
    profile: Profile
    folder: Path  # .gpucheck
    work: Path  # scratch: sources, build, models, installed wheels
    paths: list[Path] = field(default_factory=list)  # added to the children's PYTHONPATH
    variables: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return child_env(self.paths, self.variables)

    def child(self, name: str, args: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        return self.recorder.child(name, {"dry": self.profile.dry, **args}, self.env(), timeout_s)


def machine(recorder: Recorder) -> dict[str, Any]:
    figures: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform(),
                               "cpus": os.cpu_count()}
    for package in ("torch", "transformers", "accelerate", "nvidia-ml-py", "bitsandbytes", "gguf"):
        try:
            figures[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            figures[package] = None
    for tool, argv in (("gpu", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]),
                       ("nvcc", ["nvcc", "--version"]), ("cmake", ["cmake", "--version"])):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            figures[tool] = (done.stdout.strip().splitlines() or [""])[-1 if tool == "nvcc" else 0]
        except (OSError, subprocess.TimeoutExpired):
            figures[tool] = None
    return figures


def install(context: Context, folders: tuple[str, ...]) -> dict[str, Any]:
    """The carried wheels into a target folder the children import from (on the CPU: pip's dry run only)."""
    wheels = sorted(str(p) for name in folders for p in (context.folder / name).glob("*.whl"))
    if not wheels:
        raise StepFailed(f"no wheels in {', '.join(folders)}: run --prepare on the CPU machine")
    target = context.work / "site"
    argv = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
            "--no-cache-dir", "--upgrade", "--target", str(target), *wheels]
    if context.profile.dry:
        argv.insert(argv.index("--no-index"), "--dry-run")
    context.recorder.command(argv, 300)
    if not context.profile.dry:
        context.paths.append(target)
    return {"wheels": [Path(w).name for w in wheels], "target": str(target)}


def plan_check(context: Context, parts: tuple[str, ...]) -> dict[str, Any]:
    problems = plan.check(context.folder, Path.cwd(), parts)
    if problems:
        raise StepFailed("; ".join(problems))
    return {"folder": str(context.folder)}


def run_llama(context: Context) -> None:
    recorder, profile = context.recorder, context.profile
    archives = sorted((context.folder / "llama").glob("*.tar.gz"))
    skeleton = context.folder / plan.SKELETON
    built = recorder.step("build llama.cpp", lambda: _build(context, archives))
    if built.status != "ok":
        return
    context.variables["LLAMA_CPP_LIB_PATH"] = built.figures["lib_dir"]
    if built.figures.get("python_path"):
        context.paths.insert(0, Path(built.figures["python_path"]))
    loaded = recorder.step("load libllama into llama-cpp-python", lambda: context.child("llama_load", {}, 120))
    if loaded.status != "ok":
        return
    models_folder = context.work / "models"
    made = recorder.step("random-weights GGUFs", lambda: context.child("llama_models", {
        "skeleton": str(_skeleton(context, skeleton)), "folder": str(models_folder),
        "default_shape": profile.default_shape, "large_shape": profile.large_shape}, 240))
    if made.status != "ok":
        return
    cases = (("default", "on", "f16"), ("large", "on", "f16"), ("default", "off", "f16"), ("default", "on", "q8_0"))
    for model, flash, kv in cases:
        args = {"model": made.figures[model]["path"], "flash": flash, "kv": kv, "tabs": list(profile.tabs),
                "max_tokens": profile.max_tokens, "slots": max(profile.tabs), "context": profile.context}
        recorder.step(f"engine: {model} model, flash attention {flash}, KV {kv}",
                      partial(context.child, "llama_engine", args, 180), needs_s=30)


def _build(context: Context, archives: list[Path]) -> dict[str, Any]:
    from engine.gpucheck.llama_steps import build

    if not archives:
        if context.profile.dry:  # nothing prepared here: the venv's own build stands in
            import llama_cpp

            return {"lib_dir": str(Path(llama_cpp.__file__).parent / "lib"), "python_path": "",
                    "note": "not prepared: the stripped sources were not configured"}
        raise StepFailed("no llama-cpp-python sources carried (.gpucheck/llama)")
    # on the GPU machine inside the checkout's ignored folder, so that a warm machine's next call reuses it
    work = context.work if context.profile.dry else context.folder / "build"
    return build(context.recorder, archives[-1], work, context.profile.dry, os.cpu_count() or 4)


def _skeleton(context: Context, prepared: Path) -> Path:
    """The carried skeleton; in a dry run with nothing prepared, one made here from the default model."""
    if prepared.is_file() or not context.profile.dry:
        return prepared
    from engine.catalog.default_model import default_model_path
    from engine.randweights.gguf_model import write_skeleton

    model = default_model_path()
    if model is None:
        raise StepFailed("no skeleton prepared and no default model to make one from")
    return write_skeleton(model, context.work / "skeleton.gguf")


def run_hf(context: Context) -> None:
    recorder, profile = context.recorder, context.profile
    skeleton = _skeleton(context, context.folder / plan.SKELETON)
    made = recorder.step("random-weights Llama folder", lambda: context.child("hf_model", {
        "skeleton": str(skeleton), "folder": str(context.work / "hf-model"), "shape": profile.hf_shape}, 240))
    if made.status != "ok":
        return
    for mode in profile.hf_modes:
        args = {"folder": made.figures["folder"], "mode": mode, "chats": list(profile.hf_chats),
                "tokens": profile.hf_tokens, "context": 2048 if not profile.dry else 256,
                "fast_decode": profile.fast_decode}
        recorder.step(f"transformers {mode}", partial(context.child, "hf_mode", args, 300), needs_s=60)


def run_part(part: str, out: Path, folder: Path, dry: bool, deadline_s: float | None = None,
             modes: tuple[str, ...] | None = None) -> Path:
    """One part ("llama", "hf" or "all"); the JSON's path. `modes`: the transformers quantizations to run."""
    profile = DRY if dry else GPU
    if modes:
        profile = replace(profile, hf_modes=modes)
    recorder = Recorder(out, part, dry, deadline_s or sum(plan.DEADLINE_S.values()))
    work = Path(tempfile.mkdtemp(prefix="hearth-gpucheck-"))
    context = Context(recorder, profile, folder, work)
    try:
        recorder.data["machine"] = recorder.step("machine", lambda: machine(recorder)).figures
        prepared = (folder / plan.MANIFEST).is_file()
        parts = ("llama", "hf") if part == "all" else (part,)
        if prepared or not dry:
            recorder.step("plan", lambda: plan_check(context, parts))
        carried = tuple(sorted({f for p in parts for f in plan.RUN_FOLDERS[p]}))
        if prepared or not dry:
            recorder.step("install carried wheels", lambda: install(context, carried))
        for name in parts:
            (run_llama if name == "llama" else run_hf)(context)
    finally:
        recorder.close()
        shutil.rmtree(work, ignore_errors=True)
    return recorder.json_path
