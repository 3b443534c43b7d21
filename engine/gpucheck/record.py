"""One JSON and one log per run: every step timed, the JSON rewritten after each step.

A run that is killed at its limit still leaves every finished step on disk.
Measurements run in child processes (`python -m engine.gpucheck.child`), so a
crash in one (a CUDA fault, a kernel that aborts) fails that step alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

RESULT_PREFIX = "GPUCHECK-RESULT "  # the child's last stdout line of this kind holds its figures


@dataclass
class StepResult:
    name: str
    status: str  # "ok", "failed", "skipped"
    seconds: float
    figures: dict[str, Any] = field(default_factory=dict)
    error: str = ""


class StepFailed(Exception):
    pass


class Recorder:
    def __init__(self, out: Path, part: str, dry_run: bool, deadline_s: float) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.json_path = out / f"gpucheck-{part}.json"
        self.log_path = out / f"gpucheck-{part}.log"
        self.log_file = self.log_path.open("w", encoding="utf-8")
        self.started = time.monotonic()
        self.deadline_s = deadline_s
        self.data: dict[str, Any] = {"part": part, "dry_run": dry_run, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                                     "steps": []}

    def log(self, text: str) -> None:
        stamp = f"[{time.monotonic() - self.started:7.1f}s] "
        for line in text.rstrip("\n").splitlines() or [""]:
            self.log_file.write(stamp + line + "\n")
        self.log_file.flush()
        print(stamp + text.rstrip("\n").splitlines()[0] if text.strip() else stamp, flush=True)

    @property
    def left_s(self) -> float:
        return self.deadline_s - (time.monotonic() - self.started)

    def step(self, name: str, action: Callable[[], dict[str, Any]], needs_s: float = 0.0) -> StepResult:
        """Run one step unless too little time is left; record it either way."""
        if self.left_s < needs_s:
            result = StepResult(name, "skipped", 0.0, error=f"{self.left_s:.0f} s left, {needs_s:.0f} s needed")
        else:
            self.log(f"== {name}")
            began = time.monotonic()
            try:
                result = StepResult(name, "ok", 0.0, action())
            except Exception as error:  # noqa: BLE001 - one failed step is a figure, not the end of the run
                result = StepResult(name, "failed", 0.0, error=f"{type(error).__name__}: {error}")
            result.seconds = round(time.monotonic() - began, 2)
        self.log(f"== {name}: {result.status} in {result.seconds:.1f} s {result.error}")
        self.data["steps"].append(asdict(result))
        self.save()
        return result

    def save(self) -> None:
        self.data["total_seconds"] = round(time.monotonic() - self.started, 1)
        self.json_path.write_text(json.dumps(self.data, indent=2) + "\n", encoding="utf-8")

    def close(self) -> None:
        self.save()
        self.log_file.close()

    # ------------------------------------------------------------ commands and children

    def command(self, argv: list[str], timeout_s: float, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> str:
        """Run a command, its output into the log; its output back; StepFailed on a non-zero exit."""
        self.log("$ " + " ".join(argv))
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=max(1.0, timeout_s),
                                  env=env, cwd=cwd)
        except subprocess.TimeoutExpired as error:
            self.log(_text(error.stdout) + _text(error.stderr))
            raise StepFailed(f"{argv[0]} ran past {timeout_s:.0f} s") from error
        output = done.stdout + done.stderr
        self.log(output)
        if done.returncode != 0:
            tail = " | ".join(output.strip().splitlines()[-3:])
            raise StepFailed(f"{Path(argv[0]).name} exited {done.returncode}: {tail[-400:]}")
        return done.stdout

    def child(self, name: str, args: dict[str, Any], env: dict[str, str], timeout_s: float) -> dict[str, Any]:
        """`python -m engine.gpucheck.child name` in a fresh process; its figures."""
        argv = [sys.executable, "-m", "engine.gpucheck.child", name, json.dumps(args)]
        stdout = self.command(argv, min(timeout_s, self.left_s), env=env)
        found = [line[len(RESULT_PREFIX):] for line in stdout.splitlines() if line.startswith(RESULT_PREFIX)]
        if not found:
            raise StepFailed(f"{name} printed no result")
        return dict(json.loads(found[-1]))


def child_env(extra_paths: list[Path], variables: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **variables)
    paths = [str(path) for path in extra_paths] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(Path.cwd()), *paths])
    return env


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
