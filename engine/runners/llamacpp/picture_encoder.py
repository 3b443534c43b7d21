"""A picture's slices through libmtmd's vision encoder, beside the engine's steps rather than inside one.

On a CPU, encoding a picture takes seconds with a real projector, and the engine thread steps every chat: encoded
there, it stopped every other tab's answer for that long. libmtmd's vision (clip) context is its own, apart
from the llama context the steps decode with, so here it runs on a thread of its own; only putting the
rows into the slot's sequence (picture_rows.py) stays in the step. A chat whose next rows belong to a
picture not encoded yet sits its steps out (scheduling/plan.py asks `LlamaPictures.readable_until`) while
the other chats step on. One thread, one slice at a time (libmtmd's context has one output buffer), started
when there is a picture to encode and ended when there is none.

Where the projector's weights are on the GPU the encode stays in the step, as before: it takes tens of
milliseconds there, and two threads driving two ggml GPU backends at once has not been checked here.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Protocol, cast

import numpy as np
from llama_cpp import mtmd_cpp as mtmd

from engine.runners.base import RunnerError


NICENESS = 19  # where the idle class is refused: the encoder's threads below the steps' on a busy CPU


class Slice(Protocol):
    """What encoding needs of a picture's slice (pictures.Slice)."""

    first_id: int
    count: int
    chunk: Any  # mtmd_input_chunk_p until encoded, then None
    embeddings: np.ndarray | None


class SliceEncoder:
    """Encodes slices once each: on its own thread where `beside`, else when their rows are first wanted."""

    def __init__(self, ctx: Any, n_embd: int, beside: bool) -> None:
        self._ctx = ctx
        self._n_embd = n_embd
        self._beside = beside
        self._pending: dict[int, Future[None]] = {}  # first_id -> its encode, asked for and not yet taken
        self._jobs: deque[tuple[Slice, Future[None]]] = deque()  # asked for, not yet begun
        self._thread: threading.Thread | None = None  # the encoder's, while it has jobs
        self._lock = threading.Lock()  # the jobs and the thread
        self.encodes = 0  # slices run through the vision encoder: each once
        self.spans: deque[tuple[float, float]] = deque(maxlen=64)  # perf_counter() at each encode's start and end

    @property
    def beside(self) -> bool:
        """Whether encodes run on the encoder's thread (False: in the step that first wants the rows)."""
        return self._beside

    @beside.setter
    def beside(self, beside: bool) -> None:  # the bench compares the two
        self._beside = beside

    def ready(self, piece: Slice) -> bool:
        """Whether `piece`'s rows can go into a sequence now without waiting for the encoder; its encode
        starts here (beside the steps) where it has not. Without a thread of its own: always (the step encodes)."""
        if piece.embeddings is not None or not self._beside:
            return True
        future = self._pending.get(piece.first_id)
        if future is None:
            self._pending[piece.first_id] = future = Future()
            with self._lock:
                self._jobs.append((piece, future))
                if self._thread is None:
                    self._thread = threading.Thread(target=self._work, name="hearth-picture-encoder", daemon=True)
                    self._thread.start()
            return False
        return future.done()

    def _work(self) -> None:
        _be_nice()
        while True:
            with self._lock:
                if not self._jobs:
                    self._thread = None
                    return
                piece, future = self._jobs.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                self._encode(piece)
            except BaseException as error:  # the step that wants the rows raises it
                future.set_exception(error)
            else:
                future.set_result(None)

    def wait(self, timeout: float) -> None:
        """Until one started encode ends, or `timeout` seconds (a step with nothing else to do)."""
        running = [future for future in self._pending.values() if not future.done()]
        if running:
            wait(running, timeout, FIRST_COMPLETED)

    def embeddings(self, piece: Slice) -> np.ndarray:
        """The slice's rows: its encode's (waited for), or encoded now where none was started."""
        future = self._pending.pop(piece.first_id, None)
        if future is not None:
            future.result()  # the encoder's error, raised in the step that wants the rows
        if piece.embeddings is None:
            self._encode(piece)
        assert piece.embeddings is not None
        return piece.embeddings

    def _encode(self, piece: Slice) -> None:
        if piece.embeddings is not None:
            return
        started = time.perf_counter()
        if mtmd.mtmd_encode_chunk(self._ctx, piece.chunk) != 0:
            raise RunnerError("llama.cpp's vision encoder failed on the picture")
        self.spans.append((started, time.perf_counter()))
        self.encodes += 1
        out = mtmd.mtmd_get_output_embd(self._ctx)
        values = np.ctypeslib.as_array(cast(Any, out), shape=(piece.count * self._n_embd,))
        # a copy: the view is libmtmd's one output buffer, which the next encode overwrites (or moves)
        embeddings = np.array(values.reshape(piece.count, self._n_embd), dtype=np.float32, copy=True)
        mtmd.mtmd_input_chunk_free(piece.chunk)
        piece.chunk = None
        piece.embeddings = embeddings  # last: the step reads it without a lock once it is set

    def close(self) -> None:
        """Stops taking encodes and waits for the running one (the context is freed after this)."""
        with self._lock:
            self._beside = False
            for _, future in self._jobs:
                future.cancel()
            self._jobs.clear()
            thread = self._thread
        if thread is not None:
            thread.join()
        self._pending.clear()


def _be_nice() -> None:
    """This thread yields the CPU to the steps' threads. On Linux it is put in the idle scheduling class
    (SCHED_IDLE): a step's thread that wakes takes the core from it at once, where under a plain niceness
    it waits out the scheduler's wake-up granularity at each of the step's barriers (measured, gemma3's
    projector beside three answering chats on 2 idle cores: the chats 17-21% slower while it encodes, against
    27-34% at nice 19; docs/benchmarks.md). Linux keeps both per thread, and the threads ggml's OpenMP
    starts from this one inherit them. Where the class is refused, nice 19; elsewhere nothing changes: on
    macOS a thread's id is not a process id, and PRIO_PROCESS with it could name another process."""
    if not sys.platform.startswith("linux") or not hasattr(os, "setpriority"):
        return
    me = threading.get_native_id()
    try:
        os.sched_setscheduler(me, os.SCHED_IDLE, os.sched_param(0))
        return
    except (OSError, AttributeError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, me, min(19, os.getpriority(os.PRIO_PROCESS, me) + NICENESS))
    except OSError:
        pass
