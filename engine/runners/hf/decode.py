"""The fast decode step: one token per chat over a static per-slot KV cache, shaped for CUDA graphs.

Eager transformers decode is bound by the CPU launching ~10 kernels per layer
(a 1.5B model on an H200: 23 ms a step, 42 tok/s); replaying the same kernels
as one CUDA graph removes that. A graph fixes every shape and address, so a
decode step here is always `bucket` rows (1, 2, 4, 8 ... up to the slots),
each row one slot's token: the ids, positions and cache rows live in one
static buffer that a step overwrites, keys are written into the slot cache's
own storage (the same tensors the packed prompt path fills, so the two mix
freely) and attention reads each row's whole slot, masked beyond its position.
Rows a step does not need point at one spare slot row, so padding never
touches a chat. Prompt chunks still take the packed path (runner.py): their
shapes change with every step.

On the CPU the same step runs eagerly: it is the code a graph records, so
tests there check every index and the mask; only the replay is CUDA's.
torch.compile(mode="reduce-overhead") would do the same capture, but compiles
each bucket for tens of seconds at load; plain graph capture takes a few
forward passes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from engine.runners.base import SlotWork
from engine.runners.hf.cache import SlotCache, SlotLayer

CHECK_STEPS = 8  # decode steps each way when "auto" times the graphs against the eager step at load
CHECK_TOLERANCE = 0.02  # relative L2 difference of the logits allowed between the two paths


def buckets(slots: int) -> tuple[int, ...]:
    """Batch sizes a graph is captured for: powers of two below `slots`, and `slots`."""
    sizes, size = [], 1
    while size < slots:
        sizes.append(size)
        size *= 2
    return (*sizes, slots)


@dataclass
class StepRows:
    """The static inputs of one bucket: what a step writes before the graph (or the eager step) reads."""

    staging: torch.Tensor  # [4, bucket] long: ids, positions, flat write rows, slot rows
    input_ids: torch.Tensor  # [bucket, 1] views of `staging`
    position_ids: torch.Tensor
    write_rows: torch.Tensor  # [bucket] slot * capacity + position
    slot_rows: torch.Tensor  # [bucket] which slot row each batch row attends to


class DecodeLayer(CacheLayerMixin):
    """One layer of a decode step: writes into a SlotLayer's storage, reads whole slot rows."""

    is_sliding = False

    def __init__(self, storage: SlotLayer, rows: StepRows) -> None:
        super().__init__()
        self.storage, self.rows = storage, rows
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        raise AssertionError("the slot cache is allocated before a decode step runs")

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        keys, values = self.storage.keys, self.storage.values
        assert keys is not None and values is not None
        # [bucket, heads, 1, dim] -> [bucket, heads, dim]: one new row per slot
        keys.view(-1, *keys.shape[2:]).index_copy_(0, self.rows.write_rows, key_states[:, :, 0])
        values.view(-1, *values.shape[2:]).index_copy_(0, self.rows.write_rows, value_states[:, :, 0])
        # [bucket, capacity, heads, dim] -> [bucket, heads, capacity, dim]
        return (keys.index_select(0, self.rows.slot_rows).transpose(1, 2),
                values.index_select(0, self.rows.slot_rows).transpose(1, 2))

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        assert self.storage.keys is not None
        return self.storage.keys.shape[1], 0

    def get_seq_length(self) -> int:
        return 0  # positions come in position_ids; the mask is built here, 4D

    def get_max_length(self) -> int:
        assert self.storage.keys is not None
        return self.storage.keys.shape[1]


class DecodeCache(Cache):
    def __init__(self, slot_cache: SlotCache, rows: StepRows) -> None:
        layers: list[Any] = [DecodeLayer(layer, rows) for layer in slot_cache.layers if isinstance(layer, SlotLayer)]
        super().__init__(layers=layers)


class StaticDecoder:
    """Decode steps of one token per slot, eagerly or replayed from CUDA graphs."""

    def __init__(self, cache: SlotCache, call: Callable[..., torch.Tensor], additive_mask: bool) -> None:
        """`call(input_ids, position_ids, mask, cache)` runs the model and returns the last logits `[rows, vocab]`."""
        first = next(layer for layer in cache.layers if isinstance(layer, SlotLayer))
        assert first.keys is not None, "the slot cache must hold its storage (one warm-up step) first"
        self.cache, self.call = cache, call
        self.device = first.keys.device
        self.spare_row = cache.rows - 1  # never a chat's
        self.capacity = int(first.keys.shape[1])
        self.buckets = buckets(cache.slots)
        self.rows = {bucket: self._rows(bucket) for bucket in self.buckets}
        self._positions = torch.arange(self.capacity, device=self.device)
        self._additive = additive_mask
        self._dtype = first.keys.dtype
        self.graphs: dict[int, tuple[Any, torch.Tensor]] = {}  # bucket -> (CUDAGraph, its logits)

    def _rows(self, bucket: int) -> StepRows:
        staging = torch.zeros(4, bucket, dtype=torch.long, device=self.device)
        staging[2] = self.spare_row * self.capacity  # padding: the spare row, position 0
        staging[3] = self.spare_row
        return StepRows(staging, staging[0].view(bucket, 1), staging[1].view(bucket, 1), staging[2], staging[3])

    def bucket_for(self, count: int) -> int | None:
        return next((bucket for bucket in self.buckets if bucket >= count), None)

    def step(self, slots: list[int], tokens: list[int], positions: list[int]) -> torch.Tensor:
        """Logits `[len(slots), vocab]`, row i for slots[i] after its token tokens[i] at positions[i]."""
        count = len(slots)
        bucket = self.bucket_for(count)
        assert bucket is not None, f"{count} rows is more than the largest bucket"
        pad = bucket - count
        host = torch.tensor([
            tokens + [0] * pad,
            positions + [0] * pad,
            [slot * self.capacity + position for slot, position in zip(slots, positions)]
            + [self.spare_row * self.capacity] * pad,
            slots + [self.spare_row] * pad,
        ], dtype=torch.long)
        self.rows[bucket].staging.copy_(host, non_blocking=False)
        graph = self.graphs.get(bucket)
        if graph is None:
            return self._forward(bucket)[:count]
        graph[0].replay()
        return graph[1][:count]

    def _forward(self, bucket: int) -> torch.Tensor:
        """The step a graph records: every input read from `self.rows[bucket]`, nothing from Python."""
        rows = self.rows[bucket]
        allowed = (self._positions[None, :] <= rows.position_ids)[:, None, None, :]  # [bucket, 1, 1, capacity]
        mask: torch.Tensor = allowed
        if self._additive:  # eager attention adds the mask to the scores
            floor = torch.finfo(self._dtype).min
            mask = torch.zeros(allowed.shape, dtype=self._dtype, device=self.device).masked_fill(~allowed, floor)
        return self.call(rows.input_ids, rows.position_ids, mask, DecodeCache(self.cache, rows))

    # ------------------------------------------------------------ CUDA graphs

    def capture(self) -> None:
        """One graph per bucket, largest first, sharing one memory pool; raises what capture raised."""
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream(self.device)
        for bucket in sorted(self.buckets, reverse=True):
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):  # allocator and cuBLAS warm-up outside the capture
                for _ in range(2):
                    self._forward(bucket)
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool):
                logits = self._forward(bucket)
            self.graphs[bucket] = (graph, logits)
        torch.cuda.synchronize(self.device)

    def drop_graphs(self) -> None:
        self.graphs.clear()


@dataclass(frozen=True)
class LoadCheck:
    """What "auto" measured at load: the graphs' step against the eager one, on slot 0."""

    eager_ms: float
    graph_ms: float
    relative_error: float

    @property
    def correct(self) -> bool:
        return self.relative_error <= CHECK_TOLERANCE

    @property
    def faster(self) -> bool:
        return self.graph_ms < self.eager_ms


def time_steps(run_step: Callable[[int], torch.Tensor], start: int, device: torch.device) -> tuple[float, torch.Tensor]:
    """Median milliseconds of CHECK_STEPS steps at positions start, start+1, ...; the first step's logits."""
    first: torch.Tensor | None = None
    times = []
    for offset in range(CHECK_STEPS):
        began = time.perf_counter()
        logits = run_step(start + offset)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append((time.perf_counter() - began) * 1000)
        if first is None:
            first = logits.float().clone()
    assert first is not None
    return sorted(times)[len(times) // 2], first


def relative_error(found: torch.Tensor, expected: torch.Tensor) -> float:
    return float((found - expected).norm() / expected.norm().clamp_min(1e-12))


def is_decode_step(work: Sequence[SlotWork]) -> bool:
    """One token per slot, each sampled: the only step shape a graph can replay."""
    return all(len(item.tokens) == 1 and item.sample for item in work)


PackedStep = Callable[[int, int], torch.Tensor]  # (token, position) -> slot 0's logits by today's packed path


def choose_decode(decoder: StaticDecoder, mode: str, token: int, packed: PackedStep) -> tuple[StaticDecoder | None, str]:
    """The decoder to use (None: the packed path for every step) and what the gauge says about it.

    Slot 0 holds one token at position 0 (the warm-up); the check runs at positions 1.. and the runner
    clears the slot afterwards.
    """
    if decoder.device.type != "cuda":
        if mode == "on":
            return decoder, "static cache, eager (CUDA graphs need a GPU)"
        return None, "eager"
    try:
        decoder.capture()
    except Exception as error:  # noqa: BLE001 - e.g. a quantized kernel that syncs with the host
        decoder.drop_graphs()
        return (decoder if mode == "on" else None), f"eager: CUDA graphs could not be captured ({_short(error)})"
    used, label = decide(mode, _load_check(decoder, token, packed), decoder.buckets)
    if used:
        return decoder, label
    decoder.drop_graphs()
    return None, label


def decide(mode: str, check: LoadCheck, sizes: tuple[int, ...]) -> tuple[bool, str]:
    """Whether captured graphs serve the decode steps, and the gauge's words for it."""
    if mode == "on" or (check.correct and check.faster):
        return True, (f"CUDA graphs, batches of {'/'.join(map(str, sizes))} "
                      f"({check.eager_ms / check.graph_ms:.1f}x the eager step at load)")
    why = "slower than" if check.correct else f"{check.relative_error:.1%} off"
    return False, f"eager: CUDA graphs were {why} the eager step at load"


def _load_check(decoder: StaticDecoder, token: int, packed: PackedStep) -> LoadCheck:
    eager_ms, eager_logits = time_steps(lambda position: packed(token, position), 1, decoder.device)
    graph_ms, graph_logits = time_steps(lambda position: decoder.step([0], [token], [position])[0], 1, decoder.device)
    return LoadCheck(eager_ms, graph_ms, relative_error(graph_logits, eager_logits))


def _short(error: BaseException, limit: int = 160) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
