"""This machine's limits, measured in the same run: read bandwidth and matrix throughput, and what they allow a model.

Decoding a token reads every weight the step uses (the whole output layer, one
row of the token embedding when it is a separate tensor) and the KV cache up to
that position, so tokens/s can be no more than bandwidth / those bytes. Reading a
prompt costs ~2 FLOP per weight per token plus attention, so the prompt limit is
the GEMM throughput over that. Both are measured with numpy on the same thread
count as the engine: a streaming read of a buffer far larger than the caches,
split over the threads, and a square fp32 GEMM (numpy's BLAS).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

READ_BYTES = 1 << 30  # far over any L3: the read comes from DRAM
GEMM_SIZE = 2048
REPEATS = 5


def read_bandwidth(threads: int, nbytes: int = READ_BYTES) -> float:
    """Bytes per second of a streaming read split over `threads` (numpy's reductions release the GIL).

    A uint8 maximum is the fastest read numpy has here (AVX2, 32 bytes an instruction): 2-core AMD VM,
    11.6 GB/s a thread against 8.3 for a uint64 OR and 5.9 for a float32 sum. A core reads at most that
    much alone whatever the DRAM allows, as ggml's threads do."""
    words = np.ones(nbytes, dtype=np.uint8)
    parts = np.array_split(words, threads)
    best = 0.0
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(REPEATS):
            started = time.perf_counter()
            list(pool.map(np.maximum.reduce, parts))
            best = max(best, words.nbytes / (time.perf_counter() - started))
    return best


def gemm_flops(size: int = GEMM_SIZE) -> float:
    """FLOP per second of a size x size fp32 matrix product (numpy's BLAS, its own thread count)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((size, size), dtype=np.float32), rng.standard_normal((size, size), dtype=np.float32)
    a @ b  # the BLAS's threads started
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - started)
    return 2.0 * size**3 / best


def bytes_per_token(tensor_bytes: int, embedding_bytes: int, tied: bool, kv_bytes_per_cell: int, position: int) -> int:
    """What one decode step of one chat reads: the weights it uses and the KV cache up to `position`."""
    weights = tensor_bytes if tied else tensor_bytes - embedding_bytes  # an untied embedding: one row a token
    return weights + kv_bytes_per_cell * position


def flop_per_token(matrix_params: int, layers: int, attention_width: int, position: int) -> float:
    """2 FLOP per matrix weight, plus QK^T and AV over `position` cells of every layer."""
    return 2.0 * matrix_params + 4.0 * layers * attention_width * position


def model_figures(path: str) -> dict[str, Any]:
    """What the limits need from the file: its tensors' bytes, the embedding's, the matrix parameters, its shape."""
    import gguf

    reader = gguf.GGUFReader(path)
    from engine.randweights.gguf_model import shape_of

    shape = shape_of(reader)
    tensor_bytes = sum(int(t.n_bytes) for t in reader.tensors)
    embedding = next(t for t in reader.tensors if t.name == "token_embd.weight")
    matrices = sum(int(t.n_elements) for t in reader.tensors if len(t.shape) > 1 and (t.name != "token_embd.weight"))
    if shape.tied:
        matrices += int(embedding.n_elements)  # the output layer is the embedding read again
    kv_per_cell = 2 * shape.layers * shape.kv_heads * shape.head_dim * 2  # K and V in F16
    return {"shape": shape, "tensor_bytes": tensor_bytes, "embedding_bytes": int(embedding.n_bytes),
            "matrix_params": matrices, "kv_bytes_per_cell": kv_per_cell}


def limits(path: str, threads: int, decode_position: int, prompt_tokens: int) -> dict[str, float]:
    """The machine's two figures and the decode and prompt limits of the file at `path`."""
    figures = model_figures(path)
    shape = figures["shape"]
    bandwidth, flops = read_bandwidth(threads), gemm_flops()
    read = bytes_per_token(figures["tensor_bytes"], figures["embedding_bytes"], shape.tied,
                           figures["kv_bytes_per_cell"], decode_position)
    # a prompt's tokens see on average half of it before them
    work = flop_per_token(figures["matrix_params"], shape.layers, shape.heads * shape.head_dim, prompt_tokens // 2)
    return {"read_bandwidth_gb_s": bandwidth / 1e9, "gemm_gflop_s": flops / 1e9, "bytes_per_token": read,
            "decode_limit_tok_s": bandwidth / read, "prompt_limit_tok_s": flops / work}
