"""The thread that fills a step's token masks while the forward pass runs, and when it gets a core.

A step's masks depend only on each matcher's state after the tokens sampled so far, which is known
before the pass starts; the logits they apply to come out of the pass. So the masks fill on a thread
of their own meanwhile (llguidance drops the GIL while it computes, and so do llama_decode and torch),
and after the pass only adding them to the logits is left. One long-lived thread does it, woken per
step: a new thread per step costs its start on every token (tens of microseconds on a quiet machine,
milliseconds on a loaded one), where a 152k-token vocabulary's mask itself takes 30-400 us.

`OverlapChoice` decides, on a CPU whose every core the pass would take, between filling the masks
after the pass, as sampling asks for them, and giving the masks one of the pass's threads: whichever
the measured times say is cheaper.
Either way the masks are the same, so the answer is too; only its speed differs.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

EMA_WEIGHT = 0.1  # weight of the newest time in the running averages
EXPLORE_EVERY = 128  # constrained steps between two tries of the choice not taken


class MaskWorker:
    """Runs one job at a time on its own daemon thread: `submit` hands it over, `wait` joins it."""

    def __init__(self, name: str = "constraint-masks") -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._done = threading.Event()
        self._busy = False
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        if self._busy:
            raise RuntimeError("The mask thread is still filling the last step's masks.")
        self._busy = True
        self._done.clear()
        self._jobs.put(job)

    def wait(self) -> None:
        """Until the job handed over last has ended; its exception, if any, is raised here."""
        if not self._busy:
            return
        self._done.wait()
        self._busy = False
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def close(self) -> None:
        self.wait()
        self._jobs.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except BaseException as error:  # handed to the engine thread by wait()
                self._failure = error
            self._done.set()


class OverlapChoice:
    """Whether a CPU pass that would take every core should run on one thread fewer, the masks filling
    on the freed core beside it, rather than on every core with the masks filled after it.

    After the pass, a step costs pass(t) + the masks sampling asked for (a greedy sample the constraint
    allows asks for none: SlotConstraints.best); beside, about max(pass(t - 1), every mask). Each is
    measured as the steps go (running averages): the pass on every core first, then one step on one
    thread fewer, then whichever costs less, with one step of the other every EXPLORE_EVERY constrained
    steps so that a changed load or batch shows. What each wins differs by model: for 135M-parameter
    SmolLM2 the masks are 2-13% of a step and a thread fewer costs the pass more than that; on a narrow
    model with a 152k-token vocabulary a full mask costs about what the pass does
    (docs/benchmarks.md, constrained decoding)."""

    def __init__(self) -> None:
        self.after_s: float | None = None  # running average of a step's masks filled after the pass
        self.beside_s: float | None = None  # and of a step's masks filled beside it
        self._pass_s: dict[int, float] = {}  # threads -> running average of a constrained decode pass
        self._steps = 0

    def threads(self, threads: int) -> int:
        """The threads for this constrained step's pass, given the `threads` it would take."""
        if threads < 2 or self.after_s is None:
            return threads
        every, fewer = self._pass_s.get(threads), self._pass_s.get(threads - 1)
        if every is None:
            return threads
        if fewer is None or self.beside_s is None:
            return threads - 1  # one try, to measure it
        self._steps += 1
        beside = max(fewer, self.beside_s) < every + self.after_s
        if self._steps % EXPLORE_EVERY == 0:
            beside = not beside
        return threads - 1 if beside else threads

    def record_masks(self, seconds: float, beside: bool) -> None:
        if beside:
            self.beside_s = _average(self.beside_s, seconds)
        else:
            self.after_s = _average(self.after_s, seconds)

    def record_pass(self, threads: int, seconds: float) -> None:
        self._pass_s[threads] = _average(self._pass_s.get(threads), seconds)


def _average(old: float | None, new: float) -> float:
    return new if old is None else old + EMA_WEIGHT * (new - old)
