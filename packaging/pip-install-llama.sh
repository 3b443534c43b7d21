#!/bin/sh
# Install llama-cpp-python, with CUDA when this machine can build it.
# pip keeps the built wheel in its cache, so the ~8 minute compile happens once.
# An NVIDIA GPU without the CUDA toolkit: with a CUDA 13 driver (580 or newer) the toolkit comes
# from NVIDIA's wheels on PyPI (packaging/pypi_cuda.py, into the venv's cuda/ folder, ~550 MB);
# HEARTH_CUDA_FROM_PYPI=0 skips that. Any failure there falls back to the CPU build.
# Exactly the version pyproject.toml pins (the prompt copy's cell format was checked with it): another
# version already installed is replaced.
VERSION=0.3.36
PY="$1"
HERE=$(dirname "$0")
if "$PY" -c "import sys, importlib.metadata as m; sys.exit(m.version('llama-cpp-python') != '$VERSION')" 2>/dev/null; then
    exit 0
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    if command -v nvcc >/dev/null 2>&1; then
        echo "hearth: NVIDIA GPU and CUDA toolkit found: building llama-cpp-python with CUDA"
        CMAKE_ARGS="${CMAKE_ARGS:--DGGML_CUDA=on}" "$PY" -m pip install -q --no-binary llama-cpp-python "llama-cpp-python==$VERSION"
        exit $?
    fi
    CUDA=$("$PY" "$HERE/pypi_cuda.py" driver-cuda 2>/dev/null)
    case "$CUDA:${HEARTH_CUDA_FROM_PYPI:-1}" in
    13.*:1)
        CUDA_DIR="$(dirname "$(dirname "$PY")")/cuda"
        echo "hearth: an NVIDIA GPU (driver for CUDA $CUDA) but no CUDA toolkit (nvcc): fetching NVIDIA's"
        echo "hearth: CUDA $CUDA compiler and cuBLAS wheels from PyPI (~550 MB, into $CUDA_DIR) to build"
        echo "hearth: llama-cpp-python for this GPU (10-30 minutes). HEARTH_CUDA_FROM_PYPI=0 builds for the CPU."
        if "$PY" "$HERE/pypi_cuda.py" install "$CUDA_DIR" >/dev/null \
            && CMAKE_ARGS="$("$PY" "$HERE/pypi_cuda.py" cmake-args "$CUDA_DIR/toolkit")" "$PY" -m pip install -q --no-cache-dir \
                --no-binary llama-cpp-python "llama-cpp-python==$VERSION" \
            && "$PY" -c "import sys, llama_cpp; sys.exit(0 if llama_cpp.llama_supports_gpu_offload() else 1)"; then
            echo "hearth: llama-cpp-python is built with CUDA"
            exit 0
        fi
        echo "hearth: the CUDA build with the PyPI toolkit failed (see above); building for the CPU instead."
        "$PY" -m pip uninstall -q -y llama-cpp-python >/dev/null 2>&1
        ;;
    13.*:*)
        echo "hearth: an NVIDIA GPU is present but the CUDA toolkit (nvcc) is not; HEARTH_CUDA_FROM_PYPI=0:"
        echo "hearth: building llama-cpp-python for the CPU (the window says so; GPU layers have no effect)."
        ;;
    *)
        echo "hearth: an NVIDIA GPU is present but the CUDA toolkit (nvcc) is not, and the driver runs CUDA ${CUDA:-?}:"
        echo "hearth: the PyPI toolkit needs a CUDA 13 driver (580 or newer). GPU offload needs the CUDA toolkit"
        echo "hearth: (nvcc) or a newer driver; building llama-cpp-python for the CPU."
        ;;
    esac
fi
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" "$PY" -m pip install -q "llama-cpp-python==$VERSION"
