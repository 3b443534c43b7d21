"""The GUI probe on a tiny scripted stream: it runs the real window and hands back every figure
(no timing is asserted: machines differ; the figures are `python -m engine.bench --gui`'s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from app.misc.gui_probe import answer_text, long_chat, percentile, run
from engine.bench.cli import parse
from engine.bench.gui import gui_table, probe_command

KEYS = {"tabs", "tokens_per_tab", "steps_per_s", "switch_tab_ms", "streamed_s", "timer_ms", "timeouts", "lateness_p50_ms",
        "lateness_p99_ms", "lateness_max_ms", "lateness_mean_ms", "idle_lateness_p50_ms", "idle_lateness_p99_ms",
        "open_messages", "open_chat_s"}


def test_the_scripted_answers_are_full_of_code_and_tables() -> None:
    text = "".join(answer_text(400))
    assert len(answer_text(400)) == 400 and text.count("```python") >= 2 and "|---|---|---|" in text
    assert [m.role for m in long_chat(6)] == ["user", "assistant"] * 3
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0 and percentile([], 0.99) == 0.0


def test_the_probe_streams_into_tabs_and_opens_a_long_chat(qtbot) -> None:  # type: ignore[no-untyped-def]
    result = run(tabs=2, tokens=30, rate=200.0, messages=40)
    assert set(result) == KEYS
    assert result["tabs"] == 2 and result["open_messages"] == 40 and result["timeouts"] > 0
    assert result["lateness_p99_ms"] >= result["lateness_p50_ms"] >= 0.0
    assert "16 ms timer lateness" in gui_table({**result, "p99_goal_met": True, "open_goal_met": False})


def test_the_bench_runs_the_probe_as_a_child_process() -> None:
    assert parse(["--gui"]).gui  # no model is looked for
    command = probe_command(tabs=1, tokens=10, rate=500.0, messages=4)
    assert command[:3] == [sys.executable, "-m", "app.misc.gui_probe"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, check=True)
    assert set(json.loads(done.stdout.strip().splitlines()[-1])) == KEYS
