"""The llama.cpp part: build libllama with CUDA there, load it, and measure the engine on random-weights GGUFs.

`build` runs in the parent (cmake and ninja, logged); the rest are child steps
(engine/gpucheck/child.py) that print their figures. On the CPU (`--dry-run`)
the build only configures the stripped sources without CUDA and the venv's own
CPU libllama stands in for the CUDA one.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

from engine.gpucheck.plan import sha256
from engine.gpucheck.record import Recorder, StepFailed

BUILD_TARGET = "llama"  # pulls in ggml, ggml-base, ggml-cpu and ggml-cuda; nothing of common/ or tools/
CMAKE_FLAGS = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=ON", "-DLLAMA_BUILD_COMMON=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_TOOLS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
               "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_NATIVE=ON"]


def unpack(archive: Path, work: Path) -> Path:
    """The sdist's folder under `work/src`, fresh."""
    target = work / "src"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(target, filter="data")
    [folder] = [p for p in target.iterdir() if p.is_dir()]
    return folder


def find_nvcc() -> Path | None:
    found = shutil.which("nvcc")
    for candidate in (found, "/usr/local/cuda/bin/nvcc", *sorted(Path("/usr/local").glob("cuda-*/bin/nvcc"))):
        if candidate and Path(candidate).is_file():
            return Path(candidate).resolve()
    return None


def build(recorder: Recorder, archive: Path, work: Path, dry: bool, jobs: int) -> dict[str, Any]:
    """Configure (and on a GPU build) libllama in `work`; figures include `lib_dir` and the sources' python path.

    A build of the same sources already in `work` is reused: on the GPU machine `work` is an ignored
    folder of the checkout, which a machine kept warm between two calls still has.
    """
    stamp = work / "build-stamp.txt"
    reused = _reusable(work, stamp, archive) if not dry else None
    if reused is not None:
        return reused
    sdist, build_dir = _sources(archive, work, fresh=dry), work / "build"
    source = sdist / "vendor" / "llama.cpp"
    flags = list(CMAKE_FLAGS)
    figures: dict[str, Any] = {"python_path": str(sdist)}
    if dry:
        recorder.command(["cmake", "-S", str(source), "-B", str(build_dir), *flags, "-DGGML_CUDA=OFF"], 300)
        import llama_cpp

        figures.update(configured=True, lib_dir=str(Path(llama_cpp.__file__).parent / "lib"),
                       python_path="", note="configure only; the venv's CPU libllama stands in")
        return figures
    nvcc = find_nvcc()
    if nvcc is None:
        raise StepFailed("no nvcc on this machine")
    flags += ["-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=native", f"-DCMAKE_CUDA_COMPILER={nvcc}"]
    flags += toolkit_flags(recorder, nvcc, work)
    env = dict(os.environ, PATH=f"{nvcc.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    recorder.command(["cmake", "-S", str(source), "-B", str(build_dir), *flags], 300, env=env)
    recorder.command(["cmake", "--build", str(build_dir), "--target", BUILD_TARGET, "-j", str(jobs)],
                     recorder.left_s - 60, env=env)
    libraries = sorted(build_dir.rglob("libllama.so"))
    if not libraries:
        raise StepFailed("the build produced no libllama.so")
    lib_dir = libraries[0].parent
    figures.update(lib_dir=str(lib_dir), nvcc=str(nvcc),
                   libraries={p.name: p.stat().st_size for p in sorted(lib_dir.glob("lib*.so*")) if p.is_file()})
    stamp.write_text(json.dumps({"archive": sha256(archive), **figures}), encoding="utf-8")
    return figures


def _sources(archive: Path, work: Path, fresh: bool) -> Path:
    """The unpacked sdist; kept with its build folder when the same archive was unpacked before.

    A build stopped at the deadline then goes on where it stopped in the next call (ninja is incremental).
    """
    marker = work / "sources.sha256"
    digest = sha256(archive)
    folders = [p for p in (work / "src").glob("*") if p.is_dir()]
    if not fresh and folders and marker.is_file() and marker.read_text(encoding="utf-8") == digest:
        return folders[0]
    shutil.rmtree(work / "build", ignore_errors=True)
    sdist = unpack(archive, work)
    marker.write_text(digest, encoding="utf-8")
    return sdist


def _reusable(work: Path, stamp: Path, archive: Path) -> dict[str, Any] | None:
    try:
        figures = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if figures.pop("archive", None) != sha256(archive) or not (Path(figures["lib_dir"]) / "libllama.so").is_file():
        return None
    return {**figures, "reused": "the build of an earlier call on this machine"}


def toolkit_flags(recorder: Recorder, nvcc: Path, work: Path) -> list[str]:
    """CMake flags for cuBLAS where the toolkit beside nvcc lacks it (a toolkit made of PyPI wheels)."""
    root = nvcc.parent.parent
    if any((root / lib).glob("libcublas.so") for lib in ("lib64", "lib", "targets/x86_64-linux/lib")):
        return []
    recorder.log(f"{root} has no libcublas.so: assembling a toolkit from the nvidia-* wheels of this Python")
    assembled = work / "cuda-toolkit"
    argv = [sys.executable, "packaging/pypi_cuda.py", "assemble", str(assembled),
            "--nvcc-root", str(root)]
    recorder.command(argv, 120)
    return [f"-DCUDAToolkit_ROOT={assembled}", f"-DCMAKE_CUDA_COMPILER={assembled / 'bin' / 'nvcc'}"]


# ---------------------------------------------------------------- children


def load_check(args: dict[str, Any]) -> dict[str, Any]:
    """Import llama_cpp (LLAMA_CPP_LIB_PATH chooses the library) and ask it what it can do."""
    import llama_cpp

    llama_cpp.llama_backend_init()
    info = (llama_cpp.llama_print_system_info() or b"").decode(errors="replace")
    return {"llama_cpp": llama_cpp.__file__, "version": llama_cpp.__version__,
            "lib_path": os.environ.get("LLAMA_CPP_LIB_PATH", ""), "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
            "system_info": info.strip()}


def make_models(args: dict[str, Any]) -> dict[str, Any]:
    """The default model's shape (or the dry run's tiny one) and a larger body, random weights."""
    import time

    import gguf

    from engine.randweights.gguf_model import scaled, shape_of, write_random

    skeleton, folder = Path(args["skeleton"]), Path(args["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    reader = gguf.GGUFReader(skeleton)
    base = shape_of(reader)
    figures: dict[str, Any] = {}
    for name, change in (("default", args.get("default_shape")), ("large", args["large_shape"])):
        shape = scaled(base, **change) if change else base
        began = time.monotonic()
        path = write_random(skeleton, folder / f"random-{name}.gguf", shape, reader=reader)
        figures[name] = {"path": str(path), "bytes": path.stat().st_size, "n_params": shape.n_params,
                         "shape": f"{shape.layers}x{shape.embedding}, ff {shape.feed_forward}, "
                                  f"{shape.heads}/{shape.kv_heads} heads", "seconds": round(time.monotonic() - began, 1)}
    return figures


def engine_case(args: dict[str, Any]) -> dict[str, Any]:
    """Load one configuration into the real EngineLoop; tabs at once; what the gauge would read."""
    from engine.bench.harness import Bench
    from engine.bench.workloads import run_tabs, story_request
    from engine.gpucheck.memory_check import MemoryCheck
    from engine.protocol import CloseChat, ModelConfig

    config = ModelConfig(path=args["model"], backend="llamacpp", slots=args["slots"], context_length=args["context"],
                         gpu_layers=-1, flash_attention=args["flash"], kv_cache_type=args["kv"])
    memory = MemoryCheck(on_gpu=not args["dry"])
    bench = Bench()
    bench.loop.start()
    try:
        info = bench.load(config)
        bench.serve([story_request("warm-up", 0, 8)])
        bench.loop.send(CloseChat("warm-up"))
        loaded = memory.after_load(config)
        runs = [run_tabs(bench, tabs, args["max_tokens"]) for tabs in args["tabs"]]
    finally:
        bench.loop.shutdown()
    return {"gpu_offload": info.gpu_offload, "device": info.device, "attention": info.attention,
            "quantization": info.quantization, "notes": list(info.notes), "model_bytes": info.model_bytes,
            "kv_cache_bytes": info.kv_cache_bytes, "runs": runs, "memory": loaded}
