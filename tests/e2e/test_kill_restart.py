"""Killing Hearth mid-answer loses at most the last second: the restarted app shows the partial answer, interrupted.

The same holds mid-thinking: a reasoning model's thinking so far (here a remote one, the fake SSE server) comes back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.remote.sse_server import FakeServer
from tests.peek import peek

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "Write a very long story about a lighthouse keeper."


def app_env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, QT_QPA_PLATFORM="offscreen", HEARTH_CONFIG_DIR=str(tmp_path / "config"),
                HEARTH_DATA_DIR=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"))  # fmt: skip


def streaming_answer(database: Path, part: str = "text") -> str:
    """The text (or reasoning) saved so far of an answer still streaming, read without disturbing the writer ("" if none)."""
    row = peek(database, f"SELECT {part} FROM messages WHERE role = 'assistant' AND state = 'streaming'"
                         f" AND length({part}) > 0")
    return row[0] if row else ""


def test_a_killed_answer_comes_back_interrupted_after_restart(tmp_path: Path, default_model: str) -> None:
    env, database = app_env(tmp_path), tmp_path / "data" / "history.sqlite3"
    command = [sys.executable, "-m", "app", "--model", default_model, "--send", PROMPT,
               "--max-tokens", "1500", "--ignore-eos"]  # fmt: skip
    partial = _kill_when_saved(command, env, database, "text")
    result = subprocess.run([sys.executable, "-m", "app", "--dump-restored"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    restored = json.loads(result.stdout.strip().splitlines()[-1])
    assert restored["interrupted"] == 1 and len(restored["tabs"]) == 1
    tab = restored["tabs"][0]
    assert [m["role"] for m in tab["messages"]] == ["user", "assistant"]
    question, answer = tab["messages"]
    assert question["text"] == PROMPT and question["state"] == "complete"
    assert answer["state"] == "interrupted" and answer["text"].startswith(partial) and answer["text"].strip()
    assert "interrupted" in tab["notes"][-1]  # Regenerate is tested in tests/app/history/test_sync.py
    assert tab["title"].startswith("Write a very long story")


def _kill_when_saved(command: list[str], env: dict[str, str], database: Path, part: str) -> str:
    """Start the app, SIGKILL it once some of the answer's `part` is on disk; returns what was saved."""
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline, partial = time.monotonic() + 240, ""
        while not partial and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.2)
            partial = streaming_answer(database, part)
        assert partial, f"no partial {part} was saved while streaming"
        process.send_signal(signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return partial


@pytest.mark.slow
def test_a_thinking_killed_mid_stream_comes_back_after_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.settings.store import Settings

    env, database = app_env(tmp_path), tmp_path / "data" / "history.sqlite3"
    monkeypatch.setenv("HEARTH_CONFIG_DIR", env["HEARTH_CONFIG_DIR"])
    with FakeServer() as server:
        settings = Settings.load()
        settings.set("model.backend", "remote")
        settings.set("remote.url", server.url)
        settings.save()
        question = "scenario: slow-reasoning"
        partial = _kill_when_saved([sys.executable, "-m", "app", "--send", question], env, database, "reasoning")
        result = subprocess.run([sys.executable, "-m", "app", "--dump-restored"], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    restored = json.loads(result.stdout.strip().splitlines()[-1])
    assert restored["interrupted"] == 1 and len(restored["tabs"]) == 1
    tab = restored["tabs"][0]
    assert [(m["role"], m["state"]) for m in tab["messages"]] == [("user", "complete"), ("assistant", "interrupted")]
    answer = tab["messages"][1]
    assert answer["text"] == "" and answer["reasoning"].startswith(partial)
    thoughts = answer["reasoning"].split()
    assert thoughts and thoughts == [f"t{i}" for i in range(len(thoughts))]  # a clean prefix of what streamed
    assert "interrupted" in tab["notes"][-1]
