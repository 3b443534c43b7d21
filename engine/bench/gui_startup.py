"""Cold start and idle CPU of the real app, for `python -m engine.bench --gui`.

`python -m app --startup-probe SECONDS` (app/misc/startup_probe.py) prints a line when the window is
shown, when its input takes a key (it does while the model loads: a message sent then waits for it),
when the model is ready, and its idle CPU;
each moment is timed here from just before the process was started, so Python's start and every
import count. It runs more than once in the same settings and history folders: the first run pays
for cold disk caches, the figures are the last run's (the goal is for a start after the first).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

from engine.bench.harness import BenchError

GOAL_COLD_START_MS = 2000.0
GOAL_IDLE_CPU_PERCENT = 1.0
RUN_TIMEOUT_S = 300


def startup_command(idle_s: float, model: str | None = None) -> list[str]:
    command = [sys.executable, "-m", "app", "--startup-probe", f"{idle_s:g}"]
    return command + (["--model", model] if model else [])


def startup_environment(folder: str) -> dict[str, str]:
    environment = dict(os.environ)
    environment["HEARTH_CONFIG_DIR"] = os.path.join(folder, "config")  # never the user's settings or chats
    environment["HEARTH_DATA_DIR"] = os.path.join(folder, "data")
    if not environment.get("DISPLAY") and not environment.get("WAYLAND_DISPLAY"):
        environment.setdefault("QT_QPA_PLATFORM", "offscreen")
    return environment


def run_once(idle_s: float, folder: str, model: str | None = None) -> dict[str, Any]:
    """One start: ms from before the process start to each moment it reports, and its idle CPU."""
    moments: dict[str, Any] = {}
    with tempfile.TemporaryFile(mode="w+") as errors:
        started = time.perf_counter()
        process = subprocess.Popen(startup_command(idle_s, model), stdout=subprocess.PIPE, stderr=errors, text=True,
                                   env=startup_environment(folder))
        try:
            _read_moments(process.stdout, started, moments)  # type: ignore[arg-type]
            process.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        if process.returncode != 0 or "idle" not in moments:
            errors.seek(0)
            raise BenchError(f"the app's startup probe failed (exit {process.returncode}): {errors.read()[-2000:]}")
    return moments


def _read_moments(stream: IO[str], started: float, moments: dict[str, Any]) -> None:
    for line in stream:
        arrived_ms = (time.perf_counter() - started) * 1000
        if not line.startswith("{"):
            continue
        report = json.loads(line)
        moments[report.pop("event")] = {"ms": round(arrived_ms, 1), **report}


def measure_startup(runs: int = 3, idle_s: float = 5.0, model: str | None = None) -> dict[str, Any]:
    """The first start and the last one (ms to shown, to usable, to the model ready), and idle CPU."""
    with tempfile.TemporaryDirectory(prefix="hearth-start-") as folder:
        starts = [run_once(idle_s, folder, model) for _ in range(max(runs, 1))]
    first, last = starts[0], starts[-1]
    usable, ready = last["usable"], last["ready"]
    return {"cold_start_runs": len(starts), "cold_start_first_ms": first["shown"]["ms"],
            "cold_start_ms": last["shown"]["ms"],
            "cold_start_usable_ms": usable["ms"] if usable["typed"] else None,  # typing, while the model loads
            "cold_start_model_ms": round(ready["ms"] - last["shown"]["ms"], 1) if ready["model"] else None,
            "idle_cpu_percent": last["idle"]["cpu_percent"], "idle_seconds": last["idle"]["seconds"]}
