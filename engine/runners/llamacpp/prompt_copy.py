"""Reading long prompts on the CPU with a full-precision copy of the weights.

For a quantized type like Q4_1 ggml has no matrix-matrix kernel on x86, so each prompt token is one
more pass of dot products over the weights; the same weights widened to F32 go through llamafile's
matrix kernels, which read a prompt chunk as one matrix product (docs/benchmarks.md has the figures).

So the runner keeps a second context over an F32 copy of the file (`full_precision_copy`, made once
with llama_model_quantize and kept in the cache folder; F32 from a quantized type is exact: the
quantized values, widened), with one cache stream and flash attention. A long prompt chunk is read
there, but its last token, whose logits are sampled (`LlamaCppRunner._read_with_copy`); the chat's
cells stay in the copy's sequence 0 until the generating context next needs that chat, and then
move over (`PromptReader.flush`, rewritten by seqstate.py for the other cache's layout). Every token
is sampled from the quantized weights' logits, and generation stays on them: it reads every weight
once per token, and the copy has 4-6x the bytes.

`PromptReader.takes` decides per chunk: at least MIN_TOKENS tokens, and where the chat's cells are
not in the copy yet, at least MIN_SHARE_OF_CELLS of them (moving cells costs time too). `check`
moves two tokens both ways at load, so a cell format the code does not know is refused then, not in
the middle of a chat. Whether the copy is made at all is catalog/prompt_copy_rule.py's rule (the
estimate counts by the same rule); the thresholds and their measurements are in engine/tuning.py.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import llama_cpp

from engine.protocol import ModelConfig
from engine.runners.base import CacheFull, RunnerError, SlotWork
from engine.runners.llamacpp import seqstate
from engine.runners.llamacpp.batch import free_handles, put_tokens
from engine.runners.llamacpp.load import extra_buffers_usable, llama_log
from engine.tuning import PROMPT_COPY_MIN_SHARE_OF_CELLS, PROMPT_COPY_MIN_TOKENS
from engine.units import format_bytes

log = logging.getLogger(__name__)

COPY_TYPE = "F32"
MIN_TOKENS = PROMPT_COPY_MIN_TOKENS  # shorter chunks stay in the generating context
MIN_SHARE_OF_CELLS = PROMPT_COPY_MIN_SHARE_OF_CELLS  # a chunk's share of the chat's cells, to be worth moving them


# ---------------------------------------------------------------- the copy on disk


def copy_folder() -> Path:
    override = os.environ.get("HEARTH_CACHE_DIR")
    if override:
        return Path(override) / "prompt-copies"
    import platformdirs

    return platformdirs.user_cache_path("Hearth", appauthor=False) / "prompt-copies"


def full_precision_copy(source: Path, threads: int, expected_bytes: int = 0) -> Path:
    """The F32 copy of `source`, made on first use; remade when the source or the copy changed.

    Beside the copy a small record names the source (path, size, modification time) and the copy's
    size; a copy that does not match its record is not used. A copy made for an earlier version of
    the same file is deleted.
    """
    folder = copy_folder()
    stat = source.stat()
    resolved = str(source.resolve())
    family = f"{source.stem}.{hashlib.sha256(resolved.encode()).hexdigest()[:8]}"
    target = folder / f"{family}.{stat.st_size:x}.{COPY_TYPE}.gguf"
    record = target.with_suffix(".json")
    identity = {"source": resolved, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    if _matches(target, record, identity):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    remove_older_copies(folder, family)
    free = shutil.disk_usage(folder).free
    if expected_bytes and free < expected_bytes * 1.1:
        raise RunnerError(f"The {COPY_TYPE} copy for reading prompts needs {format_bytes(expected_bytes)} of disk in "
                          f"{folder}; {format_bytes(free)} are free.")
    partial = folder / f"{target.name}.{os.getpid()}.partial"  # another Hearth process may be writing its own
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_ALL_F32
    params.allow_requantize = True
    params.nthread = max(1, threads)
    with llama_log().errors_only():
        failed = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
    if failed:
        partial.unlink(missing_ok=True)
        raise RunnerError(f"llama.cpp could not write a {COPY_TYPE} copy of {source.name} into {folder}.")
    os.replace(partial, target)
    record.write_text(json.dumps({**identity, "copy_size": target.stat().st_size}), encoding="utf-8")
    return target


def remove_older_copies(folder: Path, family: str) -> None:
    """Delete the copies (and their records) made for earlier versions of a file, and copies a crashed
    process left half written; not the one another Hearth process is writing now (its pid is alive),
    nor a file another process has open where the system keeps it (Windows): the next start tries again."""
    import psutil

    for older in folder.glob(f"{glob.escape(family)}.*.{COPY_TYPE}.*"):
        if older.suffix == ".partial":
            writer = older.name.rsplit(".", 2)[-2]
            if writer.isdigit() and int(writer) != os.getpid() and psutil.pid_exists(int(writer)):
                continue
        try:
            older.unlink(missing_ok=True)
        except OSError:
            pass


def _matches(target: Path, record: Path, identity: dict[str, object]) -> bool:
    try:
        saved = json.loads(record.read_text(encoding="utf-8"))
        size = target.stat().st_size
    except (OSError, ValueError):
        return False
    return all(saved.get(key) == value for key, value in identity.items()) and saved.get("copy_size") == size


# ---------------------------------------------------------------- reading with it


@dataclass
class _Held:
    slot: int
    length: int  # positions 0..length-1 of `slot` are in the copy's sequence 0
    ahead: bool  # the copy has cells the generating context does not have yet


class PromptReader:
    """A one-stream context over the copy, with flash attention, that reads long prompt chunks.

    It holds at most one chat's cells at a time, in its sequence 0. After a chunk the cells stay
    there (`ahead`) until the generating context needs that chat: `flush` moves them over.
    """

    def __init__(self, model: int, context: int, main: int, streams: int, layers: int) -> None:
        self._model: int | None = model
        self._context: int | None = context
        self._main = main
        self._streams = streams
        self._layers = layers
        self._main_v_trans = True
        self._own_v_trans = False
        self._capacity = int(llama_cpp.llama_n_batch(context))
        self._cells = int(llama_cpp.llama_n_ctx(context))
        self._batch: llama_cpp.llama_batch | None = llama_cpp.llama_batch_init(self._capacity, 0, 1)
        self._held: _Held | None = None

    @property
    def context(self) -> int:
        assert self._context is not None
        return self._context

    def check(self) -> None:
        """Read two tokens here, move them to the generating context's sequence 0 and back: the state
        format and both caches' layouts are learned (or refused) now, not in the middle of a chat."""
        self._decode([1, 1], 0)
        try:
            state = seqstate.read(self.context, 0)
            self._own_v_trans = seqstate.parse(state, self._layers).v_trans
            # Whether the generating cache stores V transposed (no flash attention) shows in what it accepts.
            for v_trans in (True, False):
                if seqstate.write(self._main, 0, seqstate.convert(state, self._layers, self._streams, 0, v_trans)):
                    self._main_v_trans = v_trans
                    break
            else:
                raise seqstate.StateFormatError("the generating context refused the copy's cells")
            back = seqstate.convert(seqstate.read(self._main, 0), self._layers, 1, 0, self._own_v_trans)
            if not seqstate.write(self.context, 0, back):
                raise seqstate.StateFormatError("the copy's context refused the generating context's cells")
        finally:
            llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self._main), 0, -1, -1)
            llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self.context), 0, -1, -1)

    def takes(self, item: SlotWork) -> bool:
        if item.draft or not max(MIN_TOKENS, 2) <= len(item.tokens) <= self._capacity:  # the last token is not read here
            return False
        if item.start_pos + len(item.tokens) > self._cells:
            return False  # the generating context says what is full
        held = self._held
        if held is not None and held.slot == item.slot and held.length == item.start_pos:
            return True
        return len(item.tokens) >= (item.start_pos + len(item.tokens)) * MIN_SHARE_OF_CELLS

    def read(self, item: SlotWork) -> None:
        """Put the chunk into the copy's cache, after the chat's cells there (moved in if needed)."""
        held = self._held
        if held is None or held.slot != item.slot or held.length != item.start_pos:
            self._take(item.slot, item.start_pos)
        self._decode(item.tokens, item.start_pos)
        self._held = _Held(item.slot, item.start_pos + len(item.tokens), ahead=True)

    def _take(self, slot: int, length: int) -> None:
        if self._held is not None and self._held.ahead:
            self.flush(self._held.slot)
        self._held = None
        memory = llama_cpp.llama_get_memory(self.context)
        llama_cpp.llama_memory_seq_rm(memory, 0, -1, -1)
        if length:
            state = seqstate.convert(seqstate.read(self._main, slot), self._layers, 1, 0, self._own_v_trans)
            if not seqstate.write(self.context, 0, state):
                raise _read_failed(f"the copy's cache refused chat {slot}'s {length} cells")
            llama_cpp.llama_memory_seq_rm(memory, 0, length, -1)
        self._held = _Held(slot, length, ahead=False)

    def flush(self, slot: int) -> None:
        """Give the generating context the cells of `slot` the copy has and it has not."""
        held = self._held
        if held is None or held.slot != slot or not held.ahead:
            return
        state = seqstate.convert(seqstate.read(self.context, 0), self._layers, self._streams, slot, self._main_v_trans)
        if not seqstate.write(self._main, slot, state):
            self._held = None
            raise _read_failed(f"the generating context refused chat {slot}'s {held.length} cells from the copy")
        held.ahead = False

    def forget(self, slot: int) -> None:
        """`slot` changes in the generating context: what the copy holds of it is stale."""
        if self._held is not None and self._held.slot == slot:
            self._held = None

    def _decode(self, tokens: list[int], start: int) -> None:
        """Cells only: the runner samples from the generating context."""
        batch = self._batch
        assert batch is not None
        batch.n_tokens = put_tokens(batch, 0, tokens, start, 0)
        result = llama_cpp.llama_decode(self.context, batch)
        if result == 1:
            raise CacheFull("The prompt copy's cache has no room for this chunk.")
        if result != 0:
            raise _read_failed(f"llama_decode of {len(tokens)} prompt tokens in the copy returned {result}")

    def memory_bytes(self, kv_cache: int) -> int:
        """The copy's weights and its cache."""
        assert self._model is not None
        return int(llama_cpp.llama_model_size(self._model)) + kv_cache

    def close(self) -> None:
        free_handles(self._batch, self._context, self._model)
        self._batch, self._context, self._model = None, None, None


def _read_failed(detail: str) -> RunnerError:
    """The turn ends with what the user can do; what went wrong inside goes to the log."""
    log.warning("reading a prompt with the F32 copy failed: %s", detail)
    return RunnerError("Reading this chat's prompt with the faster F32 copy failed, so the answer stopped. Send it "
                       "again; if it happens again, turn \"Prompt reading copy\" off in Settings.")


def open_reader(
    source: Path, config: ModelConfig, main: int, context_length: int, threads: int, expected_bytes: int,
    context_params: Callable[[], llama_cpp.llama_context_params],
) -> PromptReader:
    """Make (or find) the copy, load it on the CPU and check that cells move both ways."""
    path = full_precision_copy(source, threads, expected_bytes)
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = 0
    params.use_extra_bufts = extra_buffers_usable()  # where AMX faults, not even for the copy
    model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), params)
    if not model:
        raise RunnerError(f"llama.cpp could not load the prompt copy {path}.")
    context = 0
    try:
        cp = context_params()
        cp.n_ctx = context_length
        cp.n_seq_max = 1
        cp.n_threads = cp.n_threads_batch = threads
        cp.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
        cp.n_batch = min(cp.n_batch, context_length)
        cp.n_ubatch = min(cp.n_ubatch, cp.n_batch)
        context = int(llama_cpp.llama_init_from_model(model, cp) or 0)
        if not context:
            raise RunnerError(f"llama.cpp could not create a context for the prompt copy {path.name}.")
        streams = config.slots
        reader = PromptReader(int(model), context, main, streams, int(llama_cpp.llama_model_n_layer(model)))
    except BaseException:
        free_handles(None, context, model)
        raise
    try:
        reader.check()
    except BaseException:
        reader.close()  # its batch too
        raise
    return reader
