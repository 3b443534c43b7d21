"""A CUDA toolkit that CMake can build llama.cpp with, made of NVIDIA's wheels on PyPI.

Most machines with an NVIDIA GPU have the driver but not the CUDA toolkit.
NVIDIA publishes the compiler and the libraries a llama.cpp build needs as
wheels (CUDA 13: nvidia-cuda-nvcc, -cuda-crt, -nvvm, -cuda-cccl,
-cuda-runtime, -cublas; all unpack into one tree, nvidia/cu13/). What they
lack for CMake's FindCUDAToolkit is what a wheel cannot hold: the unversioned
library links (libcublas.so -> libcublas.so.13), lib64, and the driver stub
(lib/stubs/libcuda.so, here a link to the installed driver's libcuda.so.1).
`assemble` builds that tree out of links; `install` first puts the wheels in
a folder of their own (never the venv's site-packages, where torch may want
other versions of the same libraries); `cmake-args` prints the flags.

  python packaging/pypi_cuda.py install .venv/cuda       # wheels + assembled toolkit
  python packaging/pypi_cuda.py cmake-args .venv/cuda/toolkit  # -DGGML_CUDA=on -DCUDAToolkit_ROOT=...
  python packaging/pypi_cuda.py assemble DIR [--nvcc-root R]  # from wheels already importable here

Only the standard library: it runs before anything else is installed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

# The CUDA 13 wheels, pinned to the driver's minor version at install (13.0 for driver 580).
WHEELS = ("nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-cccl", "nvidia-cuda-runtime",
          "nvidia-cublas")
TREE = ("nvidia", "cu13")
DRIVER_PLACES = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64",
                 "/usr/lib/wsl/lib")


class ToolkitError(Exception):
    pass


def driver_cuda_version() -> tuple[int, int] | None:
    """The newest CUDA the installed driver runs, from nvidia-smi's header ("CUDA Version: 13.0")."""
    try:
        text = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def wheel_trees(extra: list[Path]) -> list[Path]:
    """Every nvidia/cu13 folder in `extra` and on this Python's path."""
    places = [*extra, *(Path(p) for p in sys.path if p)]
    trees: list[Path] = []
    for place in places:
        tree = place.joinpath(*TREE)
        if tree.is_dir() and tree.resolve() not in [t.resolve() for t in trees]:
            trees.append(tree)
    return trees


def driver_library() -> Path | None:
    for place in (*os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep), *DRIVER_PLACES):
        if place and (Path(place) / "libcuda.so.1").exists():
            return Path(place) / "libcuda.so.1"
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"libcuda\.so\.1 \(.*x86-64.*\) => (\S+)", listing) or re.search(r"libcuda\.so\.1 .*=> (\S+)",
                                                                                       listing)
    return Path(found.group(1)) if found else None


def assemble(target: Path, sources: list[Path], driver: Path | None) -> Path:
    """Link every file of `sources` (first one wins) into `target`, then add what CMake looks for."""
    target.mkdir(parents=True, exist_ok=True)
    for source in sources:
        for path in sorted(source.rglob("*")):
            if path.is_dir():
                continue
            link = target / path.relative_to(source)
            if link.exists() or link.is_symlink():
                continue
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(path.resolve())
    lib = target / "lib"
    lib.mkdir(exist_ok=True)
    for versioned in sorted(lib.glob("lib*.so.*")):
        plain = lib / (versioned.name.split(".so.")[0] + ".so")
        if not plain.exists():
            plain.symlink_to(versioned.name)
    if not (target / "lib64").exists():
        (target / "lib64").symlink_to("lib")
    if driver is not None and not (lib / "stubs" / "libcuda.so").exists():
        (lib / "stubs").mkdir(exist_ok=True)
        (lib / "stubs" / "libcuda.so").symlink_to(driver)
    _check(target, driver)
    return target


def _check(root: Path, driver: Path | None) -> None:
    wanted = ["bin/nvcc", "include/cuda_runtime.h", "include/cublas_v2.h", "lib/libcudart.so", "lib/libcublas.so",
              "lib/libcublasLt.so", "nvvm/bin/cicc"]
    missing = [name for name in wanted if not (root / name).exists()]
    if driver is None:
        missing.append("the NVIDIA driver's libcuda.so.1")
    if missing:
        raise ToolkitError(f"{root} lacks {', '.join(missing)}: install the wheels {', '.join(WHEELS)}")


def install(target: Path, version: tuple[int, int]) -> Path:
    """The wheels for the driver's CUDA `version` into target/wheels, the toolkit into target/toolkit."""
    if version[0] != 13:
        raise ToolkitError(f"the driver runs CUDA {version[0]}.{version[1]}; the PyPI toolkit here is CUDA 13's "
                           "(driver 580 or newer). Install the CUDA toolkit itself, or a newer driver.")
    wheels = target / "wheels"
    pins = [f"{name}=={version[0]}.{version[1]}.*" for name in WHEELS]
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:", "--upgrade",
               "--target", str(wheels), *pins]
    subprocess.run(command, check=True)
    return assemble(target / "toolkit", wheel_trees([wheels]), driver_library())


def cmake_args(root: Path) -> str:
    """The flags that build llama.cpp with the toolkit at `root` (install's target/toolkit, or assemble's folder)."""
    # the runtime and cuBLAS live in the wheels' folder, not on the loader's path: the libraries say where
    return (f"-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=native -DCUDAToolkit_ROOT={root} "
            f"-DCMAKE_CUDA_COMPILER={root / 'bin' / 'nvcc'} -DCMAKE_SHARED_LINKER_FLAGS=-Wl,-rpath,{root / 'lib'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pypi_cuda.py", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("install", "assemble", "cmake-args", "driver-cuda"))
    parser.add_argument("target", nargs="?", type=Path, help="install: the folder for wheels/ and toolkit/; "
                        "assemble: the toolkit folder; cmake-args: the toolkit folder")
    parser.add_argument("--nvcc-root", type=Path, help="assemble: a toolkit folder to take first (nvcc, headers)")
    args = parser.parse_args(argv)
    try:
        if args.action == "driver-cuda":
            version = driver_cuda_version()
            print(f"{version[0]}.{version[1]}" if version else "")
            return 0 if version else 1
        if args.target is None:
            parser.error(f"{args.action} needs a target folder")
        if args.action == "cmake-args":
            print(cmake_args(args.target))
        elif args.action == "assemble":
            sources = ([args.nvcc_root] if args.nvcc_root else []) + wheel_trees([])
            print(assemble(args.target, sources, driver_library()))
        else:
            version = driver_cuda_version()
            if version is None:
                raise ToolkitError("nvidia-smi does not say which CUDA version the driver runs")
            print(install(args.target, version))
    except (ToolkitError, subprocess.CalledProcessError, OSError) as error:
        print(f"hearth: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
