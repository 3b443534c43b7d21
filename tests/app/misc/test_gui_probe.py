"""The GUI probe on a tiny scripted stream: it runs the real window and hands back every figure
(no timing is asserted: machines differ; the figures are `python -m engine.bench --gui`'s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from app.chat.message_list import SHOWN_AT_ONCE
from app.misc.gui_probe import answer_text, long_chat, percentile, run
from engine.bench.cli import parse
from engine.bench.gui import gui_table, probe_command, responsiveness_lines
from engine.bench.gui_startup import measure_startup

KEYS = {"tabs", "tokens_per_tab", "steps_per_s", "switch_tab_ms", "streamed_s", "timer_ms", "timeouts", "lateness_p50_ms",
        "lateness_p99_ms", "lateness_max_ms", "lateness_mean_ms", "idle_lateness_p50_ms", "idle_lateness_p99_ms",
        "open_messages", "open_chat_s", "long_chat_messages", "long_chat_open_ms", "long_chat_cards_at_open",
        "scroll_ticks", "scroll_p50_late_ms", "scroll_p99_late_ms", "scroll_max_late_ms", "scroll_cards_made",
        "scroll_most_laid_out"}
STARTUP_KEYS = {"cold_start_runs", "cold_start_first_ms", "cold_start_ms", "cold_start_usable_ms", "cold_start_model_ms",
                "idle_cpu_percent", "idle_seconds"}


def test_the_scripted_answers_are_full_of_code_and_tables() -> None:
    text = "".join(answer_text(400))
    assert len(answer_text(400)) == 400 and text.count("```python") >= 2 and "|---|---|---|" in text
    assert [m.role for m in long_chat(6)] == ["user", "assistant"] * 3
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0 and percentile([], 0.99) == 0.0


def test_the_probe_streams_into_tabs_and_opens_a_long_chat(qtbot) -> None:  # type: ignore[no-untyped-def]
    result = run(tabs=2, tokens=30, rate=200.0, messages=40, long_messages=60, scroll_ticks=40)
    assert set(result) == KEYS
    assert result["tabs"] == 2 and result["open_messages"] == 40 and result["timeouts"] > 0
    assert result["lateness_p99_ms"] >= result["lateness_p50_ms"] >= 0.0
    # The chat written to the history opens with only its last messages as cards; scrolling up makes more.
    assert result["long_chat_messages"] == 60 and result["long_chat_cards_at_open"] == SHOWN_AT_ONCE
    assert result["long_chat_open_ms"] > 0 and result["scroll_ticks"] == 40 and result["scroll_cards_made"] > 0
    assert result["scroll_p99_late_ms"] >= result["scroll_p50_late_ms"] >= 0.0
    assert 0 < result["scroll_most_laid_out"] <= SHOWN_AT_ONCE + result["scroll_cards_made"]
    started = {"cold_start_runs": 2, "cold_start_first_ms": 900.0, "cold_start_ms": 800.0, "cold_start_usable_ms": 1500.0,
               "cold_start_model_ms": 700.0, "idle_cpu_percent": 0.1, "idle_seconds": 5.0}
    table = gui_table({**result, **started, "p99_goal_met": True, "open_goal_met": False, "scroll_goal_met": True,
                       "usable_goal_met": True})
    assert "16 ms timer lateness" in table and "60-message chat from the history" in table
    assert "input takes a key at 1500.0 ms (goal <= 2000: met), the model ready 700.0 ms after" in table


def test_the_bench_runs_the_probe_as_a_child_process() -> None:
    assert parse(["--gui"]).gui  # no model is looked for
    command = probe_command(tabs=1, tokens=10, rate=500.0, messages=4, long_messages=4, scroll_ticks=3)
    assert command[:3] == [sys.executable, "-m", "app.misc.gui_probe"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, check=True)
    assert set(json.loads(done.stdout.strip().splitlines()[-1])) == KEYS


def test_the_app_reports_its_start_and_its_idle_cpu(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = str(tmp_path / "missing.gguf")  # no model is loaded: the window comes up, the model is never ready
    result = measure_startup(runs=1, idle_s=0.5, model=missing)
    assert set(result) == STARTUP_KEYS and result["cold_start_runs"] == 1
    assert result["cold_start_ms"] == result["cold_start_first_ms"] > 0
    assert result["cold_start_model_ms"] is None
    usable = result["cold_start_usable_ms"]  # the input may take a key while the load is tried, and stops when it fails
    assert usable is None or usable >= result["cold_start_ms"]
    assert result["idle_cpu_percent"] >= 0.0 and result["idle_seconds"] > 0
    lines = responsiveness_lines({**result, "long_chat_messages": 5000, "long_chat_open_ms": 1.0,
                                  "long_chat_cards_at_open": 12, "scroll_ticks": 3, "scroll_p50_late_ms": 0.0,
                                  "scroll_p99_late_ms": 1.0, "scroll_max_late_ms": 1.0, "scroll_cards_made": 2,
                                  "cold_start_usable_ms": None})
    assert "input takes a key at never (no model)" in lines[2] and "idle CPU" in lines[3]
