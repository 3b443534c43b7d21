"""Loading a GGUF file with llama.cpp: checks, parameters, and llama.cpp's own log.

llama.cpp reports problems only through its log (a NULL model says nothing),
so its log goes to a small ring buffer instead of stderr: loading reads the
lines written since it started and turns them into a message a person can act
on, and into facts (flash attention resolved by "auto", layers offloaded).
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import threading
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import llama_cpp

from engine.protocol import ModelConfig
from engine.runners.base import LoadCancelled, Progress, RunnerError
from engine.runners.llamacpp.params import context_params
from engine.runners.llamacpp.repack import Overrides, repack_overrides

logger = logging.getLogger(__name__)
# ggml_log_level in this llama.cpp: 1 debug, 2 info, 3 warn, 4 error, 5 continuation
_LEVEL_INFO, _LEVEL_ERROR, _LEVEL_CONT = 2, 4, 5


class LlamaLog:
    """The last few hundred lines llama.cpp logged, numbered so a caller can read 'since'."""

    def __init__(self, keep: int = 400) -> None:
        self._lines: deque[tuple[int, int, str]] = deque(maxlen=keep)
        self._count = 0
        self._lock = threading.Lock()
        self._muted = 0
        # The C side keeps only a pointer: this object must outlive every call.
        self.callback = llama_cpp.llama_log_callback(self._on_log)

    def _on_log(self, level: int, text: bytes | None, _user_data: object) -> None:
        if level == _LEVEL_CONT or level < _LEVEL_INFO or not text or (self._muted and level < _LEVEL_ERROR):
            return  # progress dots and debug chatter
        try:
            line = text.decode("utf-8", errors="replace").strip()
        except Exception:  # noqa: BLE001 - an exception must never cross into C
            return
        with self._lock:
            self._count += 1
            self._lines.append((self._count, level, line))

    @contextmanager
    def errors_only(self) -> Iterator[None]:
        """Keep only errors meanwhile: the quantizer logs a few lines per tensor, which would push
        loading's own lines out of the ring."""
        with self._lock:
            self._muted += 1
        try:
            yield
        finally:
            with self._lock:
                self._muted -= 1

    def mark(self) -> int:
        with self._lock:
            return self._count

    def since(self, mark: int, min_level: int = _LEVEL_INFO) -> list[str]:
        with self._lock:
            return [text for number, level, text in self._lines if number > mark and level >= min_level]

    def errors_since(self, mark: int) -> list[str]:
        return self.since(mark, _LEVEL_ERROR)


_log: LlamaLog | None = None
_backend_ready = False


def llama_log() -> LlamaLog:
    """Install the quiet log once per process (llama.cpp's logger is global)."""
    global _log, _backend_ready
    if _log is None:
        _log = LlamaLog()
        llama_cpp.llama_log_set(_log.callback, ctypes.c_void_p(0))
    if not _backend_ready:
        llama_cpp.llama_backend_init()
        _backend_ready = True
    return _log


# ---------------------------------------------------------------- before loading


def check_file(path_text: str) -> Path:
    """Fail early, in words, on what llama.cpp would only log: missing, empty, not GGUF."""
    path = Path(path_text).expanduser()
    if not path.exists():
        raise RunnerError(f"The model file {path} does not exist. Check the path, or choose another model file.")
    if path.is_dir():
        raise RunnerError(
            f"{path} is a folder, not a GGUF file. Choose a .gguf file, or use the transformers backend for a "
            "Hugging Face model folder."
        )
    try:
        size = path.stat().st_size
        with path.open("rb") as file:
            head = file.read(64)
    except OSError as error:
        raise RunnerError(f"The model file {path} cannot be read ({error.strerror or error}). Check its permissions.")
    if size == 0:
        raise RunnerError(f"The model file {path} is empty (0 bytes): the download or copy failed. Download it again.")
    if not head.startswith(b"GGUF"):
        raise RunnerError(f"{path} is not a GGUF model file: {_what_it_is(head)}. Choose a .gguf file made for llama.cpp.")
    return path


def _what_it_is(head: bytes) -> str:
    if head.startswith(b"version https://git-lfs"):
        return "it is a Git LFS pointer, not the model itself (run `git lfs pull` in its repository)"
    if head.lstrip().lower().startswith((b"<!doctype", b"<html")):
        return "it is a web page, probably an error page saved instead of the download"
    if head.startswith(b"PK"):
        return "it is a zip archive (unpack it first)"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return f"it starts with the bytes {head[:4]!r} instead of 'GGUF'"
    return f"it is a text file starting with {text[:24]!r}"


def check_config(config: ModelConfig) -> None:
    if config.kv_cache_type != "f16" and config.flash_attention == "off":
        raise RunnerError(
            f"A {config.kv_cache_type} KV cache needs flash attention: llama.cpp cannot quantize the V cache "
            "without it. Set flash attention to auto or on, or the KV cache type to f16."
        )
    if config.slots < 1 or config.context_length < 16 or config.batch_tokens < 1:
        raise RunnerError(
            f"These settings cannot work: {config.slots} chats, a context of {config.context_length} tokens, "
            f"a batch of {config.batch_tokens} tokens. Use at least 1 chat, 16 tokens and 1 token."
        )
    most = llama_cpp.llama_max_parallel_sequences()
    if config.slots > most:
        raise RunnerError(f"llama.cpp serves at most {most} chats at once; {config.slots} were asked for.")


# ---------------------------------------------------------------- loading


def load_model(path: Path, config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> int:
    """The llama_model pointer; raises RunnerError or LoadCancelled."""
    log = llama_log()
    mark = log.mark()
    stopped = [False]
    last = [-1.0]

    def on_progress(fraction: float, _user_data: object) -> bool:
        try:
            if cancelled():
                stopped[0] = True
                return False
            if fraction - last[0] >= 0.01 or fraction >= 1.0:  # not thousands of events
                last[0] = fraction
                progress(float(fraction), "Loading weights")
        except Exception:  # noqa: BLE001 - an exception must never cross into C
            return True
        return True

    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = config.gpu_layers if config.gpu_layers >= 0 else -1
    params.use_extra_bufts = extra_buffers_usable()
    overrides = repacked_layout(path, config, params.use_extra_bufts)
    if overrides is not None:
        params.tensor_buft_overrides = overrides.address
    callback = llama_cpp.llama_progress_callback(on_progress)
    params.progress_callback = callback
    model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), params)
    del callback, overrides  # the C side no longer reads them
    if stopped[0] or (not model and cancelled()):
        if model:
            llama_cpp.llama_model_free(model)
        raise LoadCancelled(f"Loading {path.name} was cancelled.")
    if not model:
        raise RunnerError(load_failure(path, log.errors_since(mark)))
    return int(model)


def extra_buffers_usable() -> bool:
    """Whether llama.cpp may use its extra CPU weight layouts (AMX tiles, repacked blocks).

    Some virtual machines advertise Intel AMX yet fault on its instructions: the
    first multi-token decode then kills the whole process with SIGILL. AMX only
    speeds up prompt processing, so when both the build and the CPU claim AMX the
    extra layouts stay off, unless HEARTH_LLAMA_AMX=1 says the machine is known to be fine.
    """
    if os.environ.get("HEARTH_LLAMA_AMX") == "1":
        return True
    built_with_amx = b"AMX_INT8 = 1" in (llama_cpp.llama_print_system_info() or b"")
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")  # Linux only; elsewhere nothing to fear
    except OSError:
        return True
    return not (built_with_amx and " amx_tile" in flags)


def repacked_layout(path: Path, config: ModelConfig, extra_buffers: bool) -> Overrides | None:
    """The repacked weight layout where extra buffers are off and the weights stay on the CPU.

    On the CPU a repacked Q4_0 reads prompts faster than the plain layout and generates as fast
    (docs/benchmarks.md, the threads and layouts table).
    """
    if extra_buffers or (config.gpu_layers != 0 and llama_cpp.llama_supports_gpu_offload()):
        return None
    return repack_overrides(path)


@contextmanager
def same_model_params_for_highlevel(path: str | None = None) -> Iterator[None]:
    """Let llama-cpp-python's high-level `Llama` load weights as this runner does (benchmark, tests):
    the same extra buffers and, for the file at `path` on the CPU, the same repacked layout."""
    original = llama_cpp.llama_cpp.llama_model_default_params
    extra_buffers = extra_buffers_usable()
    overrides = repacked_layout(Path(path), ModelConfig(path=path, gpu_layers=0), extra_buffers) if path else None

    def patched() -> llama_cpp.llama_model_params:
        params = original()
        params.use_extra_bufts = extra_buffers
        if overrides is not None:
            params.tensor_buft_overrides = overrides.address
        return params

    llama_cpp.llama_cpp.llama_model_default_params = patched
    try:
        yield
    finally:
        llama_cpp.llama_cpp.llama_model_default_params = original


def load_failure(path: Path, errors: list[str]) -> str:
    detail = _last_reason(errors)
    joined = " ".join(errors).lower()
    if "unknown model architecture" in joined:
        hint = "This llama.cpp build does not know the model's architecture; a newer llama-cpp-python may."
    elif "file bounds" in joined or "failed to read" in joined or "corrupted" in joined:
        hint = "The file looks incomplete or damaged: download it again."
    else:
        hint = "Check that it is a complete GGUF model for llama.cpp; a newer llama-cpp-python may be needed."
    logger.warning("llama.cpp could not load %s:\n%s", path, "\n".join(errors))
    return f"The model file {path} could not be loaded. {hint} (llama.cpp says: {detail}.)"


def _last_reason(errors: list[str]) -> str:
    # The generic "failed to load model" lines follow the one that says why.
    specific = [e for e in errors if "failed to load model" not in e] or errors or ["no reason was given"]
    return re.sub(r"^[\w:]+: (error loading model: )?", "", specific[0]).rstrip(".")


def create_context(model: int, path: Path, config: ModelConfig, context_length: int, weights_on_gpu: bool) -> int:
    log = llama_log()
    mark = log.mark()
    context = llama_cpp.llama_init_from_model(model, context_params(config, context_length, weights_on_gpu))
    if not context:
        errors = log.errors_since(mark)
        detail = errors[-1] if errors else "no reason was given"
        logger.warning("llama.cpp could not create a context for %s (%d chats of %d tokens, %s KV cache, flash "
                       "attention %s):\n%s", path, config.slots, context_length, config.kv_cache_type,
                       config.flash_attention, "\n".join(errors))
        raise RunnerError(
            f"{path.name} could not be set up for {config.slots} chats of {context_length:,} tokens, most often "
            "because there is not enough memory for that. Lower the context or the number of parallel chats in "
            f"Settings{'' if config.kv_cache_type == 'f16' else ', or use an f16 KV cache'}. (llama.cpp says: {detail}.)"
        )
    return int(context)
