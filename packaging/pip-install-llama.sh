#!/bin/sh
# Install llama-cpp-python, with CUDA when this machine can build it.
# pip keeps the built wheel in its cache, so the ~8 minute compile happens once.
PY="$1"
if "$PY" -c "import llama_cpp" 2>/dev/null; then exit 0; fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    if command -v nvcc >/dev/null 2>&1; then
        echo "hearth: NVIDIA GPU and CUDA toolkit found: building llama-cpp-python with CUDA"
        CMAKE_ARGS="${CMAKE_ARGS:--DGGML_CUDA=on}" "$PY" -m pip install -q --no-binary llama-cpp-python "llama-cpp-python>=0.3.36"
        exit $?
    fi
    echo "hearth: an NVIDIA GPU is present but the CUDA toolkit (nvcc) is not:"
    echo "hearth: GPU offload needs it; building llama-cpp-python for the CPU."
fi
CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" "$PY" -m pip install -q "llama-cpp-python>=0.3.36"
