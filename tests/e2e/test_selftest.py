"""`python -m app --self-test` as packaging runs it: a real process, the real window offscreen, one JSON line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The offscreen platform says this for every main window; it is not about Hearth.
OFFSCREEN_NOISE = "This plugin does not support propagateSizeHints()"


def run_app(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", HEARTH_CONFIG_DIR=str(tmp_path / "config"),
               XDG_STATE_HOME=str(tmp_path / "state"), XDG_DATA_HOME=str(tmp_path / "data"))  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def stderr_problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and line.strip() != OFFSCREEN_NOISE]


def test_self_test_answers_in_two_tabs_at_once_and_prints_one_json_line(tmp_path: Path, default_model: str) -> None:
    result = run_app(tmp_path, "--self-test", "--max-tokens", "24")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    report = json.loads(lines[0])
    assert report["ok"] is True and report["tabs"] == 2
    assert len(report["tokens"]) == 2 and all(0 < n <= 24 for n in report["tokens"])
    assert report["aggregate_tok_s"] > 0 and report["window_shown_ms"] > 0 and report["max_gui_stall_ms"] >= 0
    assert set(report) == {"ok", "tabs", "tokens", "aggregate_tok_s", "window_shown_ms", "max_gui_stall_ms"}
    assert stderr_problems(result.stderr) == []  # no Qt warning, no traceback


def test_self_test_fails_with_a_reason_when_the_model_cannot_load(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF but not really")
    result = run_app(tmp_path, "--self-test", "--model", str(broken))
    assert result.returncode != 0
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ok"] is False and "broken.gguf" in report["error"]
    assert "self-test failed" in result.stderr
