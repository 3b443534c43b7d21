"""`python -m app.misc.gui_probe`: is the window smooth? One JSON line of figures.

A 16 ms timer on the GUI thread notes how late each timeout comes while a
scripted engine (no model: only the window is measured) streams answers full of
code blocks and tables into several tabs at once, from another thread as the
real engine does; the current tab changes every second, so catching up on a
hidden tab's answer is part of it. Then a chat of many messages is opened and
timed until it is laid out. `python -m engine.bench --gui` runs this as a child
process (engine/ never imports Qt). History and settings go to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

TIMER_MS = 16
SWITCH_TAB_MS = 1000
IDLE_MS = 2000  # the same timer with nothing streaming first: what the machine alone costs
LONG_CHAT_MESSAGES = 5000  # the chat opened from the history and scrolled through (app/misc/gui_long_chat.py)
SCROLL_TICKS = 300  # ~5 s of scrolling up


def answer_text(tokens: int, seed: int = 0) -> list[str]:
    """A Markdown answer of about `tokens` word-sized pieces: paragraphs, code blocks, tables, lists."""
    parts: list[str] = []
    index = seed
    while sum(len(part.split()) for part in parts) < tokens:
        index += 1
        parts.append(f"Step {index}: the function below reads the file, counts the words and keeps the totals "
                     f"in a dictionary, so the report can be sorted by frequency afterwards.\n\n")
        parts.append(f"```python\ndef count_words_{index}(path: str) -> dict[str, int]:\n"
                     f"    totals: dict[str, int] = {{}}\n    with open(path, encoding='utf-8') as file:\n"
                     f"        for line in file:\n            for word in line.split():\n"
                     f"                totals[word] = totals.get(word, 0) + 1  # a long comment that makes this line wider than the card\n"
                     f"    return totals\n```\n\n")
        parts.append("| word | count | share |\n|---|---|---|\n" + "".join(
            f"| w{index}_{row} | {row * 7} | {row * 1.5:.1f}% |\n" for row in range(1, 5)) + "\n")
        parts.append(f"- first, call `count_words_{index}`\n- then sort the items\n- print the top ten\n\n")
    words = "".join(parts).split(" ")
    pieces = [word + " " for word in words[:-1]] + [words[-1]]
    return pieces[:tokens] if len(pieces) > tokens else pieces


def long_chat(messages: int) -> list[Any]:
    from app.bridge import ChatMessage

    chat = []
    for index in range(messages // 2):
        chat.append(ChatMessage("user", f"Question {index}: how do I count words in a file?"))
        chat.append(ChatMessage("assistant", "".join(answer_text(60 if index % 5 else 150, seed=index))))
    return chat


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class LatenessTimer:
    """A 16 ms precise timer; `lateness_ms` grows by how much later than 16 ms each timeout came."""

    def __init__(self) -> None:
        from PySide6.QtCore import Qt, QTimer

        self.lateness_ms: list[float] = []
        self._last = 0.0
        self._timer = QTimer(interval=TIMER_MS)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._on_timeout)

    def start(self) -> None:
        self._last = time.perf_counter()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _on_timeout(self) -> None:
        now = time.perf_counter()
        self.lateness_ms.append(max(0.0, (now - self._last) * 1000 - TIMER_MS))
        self._last = now


def stream(bridge: Any, chat_ids: list[str], tokens: int, rate: float, done: Any) -> None:
    """The engine's part, on its own thread: one token per tab per step, `rate` steps a second."""
    from app.misc.scripted_bridge import NO_STATS
    from engine.protocol import TurnFinished, TurnStarted

    answers = [answer_text(tokens, seed=index * 1000) for index in range(len(chat_ids))]
    for chat_id in chat_ids:
        bridge.turn_started.emit(TurnStarted(chat_id, prompt_tokens=10, reused_tokens=0))
    start = time.perf_counter()
    for step in range(max(len(answer) for answer in answers)):
        for chat_id, answer in zip(chat_ids, answers):
            if step < len(answer):
                bridge.token_received.emit(chat_id, answer[step])
        time.sleep(max(0.0, start + (step + 1) / rate - time.perf_counter()))
    for chat_id, answer in zip(chat_ids, answers):
        bridge.turn_finished.emit(TurnFinished(chat_id, "stop", NO_STATS, "".join(answer)))
    done.emit()


def run(tabs: int, tokens: int, rate: float, messages: int, switch_ms: int = SWITCH_TAB_MS,
        long_messages: int = LONG_CHAT_MESSAGES, scroll_ticks: int = SCROLL_TICKS) -> dict[str, Any]:
    from PySide6.QtCore import QEventLoop, QObject, QTimer, Signal
    from PySide6.QtWidgets import QApplication

    from app.misc.gui_long_chat import measure_long_chat, write_long_chat
    from app.misc.scripted_bridge import ScriptedBridge, model_info
    from app.window.mainwindow import MainWindow

    class Done(QObject):
        finished = Signal()

    application = QApplication.instance() or QApplication(sys.argv[:1])
    long_chat_id = write_long_chat(long_chat(long_messages))  # into the history the window opens
    bridge = ScriptedBridge()
    window = MainWindow(bridge, model_path="/models/probe.gguf")  # type: ignore[arg-type]
    window.resize(1200, 800)
    window.show()
    while bridge.model_config is None:  # the window asks for its model once it is on screen
        application.processEvents()
    bridge.finish_loading(model_info(name="Scripted model"))
    first = window.current_tab()
    assert first is not None  # a new window opens with one tab
    chat_tabs = [first] + [window.new_chat() for _ in range(tabs - 1)]
    for index, tab in enumerate(chat_tabs):
        tab.set_model_ready(True)
        tab.input.setPlainText(f"Show me how to count words, example {index}.")
        tab.send()
    idle = _idle_lateness(application)
    done, loop, probe = Done(), QEventLoop(), LatenessTimer()
    done.finished.connect(loop.quit)
    switcher = QTimer(interval=max(switch_ms, 1))
    switcher.timeout.connect(lambda: window.switch_tab(1))
    engine = threading.Thread(target=stream, args=(bridge, [t.chat_id for t in chat_tabs], tokens, rate, done.finished),
                              name="probe-engine", daemon=True)
    started = time.perf_counter()
    probe.start()
    if switch_ms > 0:
        switcher.start()
    engine.start()
    loop.exec()
    streamed_s = time.perf_counter() - started
    probe.stop()
    switcher.stop()
    engine.join()
    application.processEvents()
    open_s = _open_long_chat(window, application, messages)
    from_history = _long_chat_figures(measure_long_chat(window, application, long_chat_id, scroll_ticks), long_messages)
    window.close()
    late = probe.lateness_ms
    return {"tabs": tabs, "tokens_per_tab": tokens, "steps_per_s": rate, "switch_tab_ms": switch_ms,
            "streamed_s": round(streamed_s, 2),
            "timer_ms": TIMER_MS, "timeouts": len(late), "lateness_p50_ms": round(percentile(late, 0.5), 2),
            "lateness_p99_ms": round(percentile(late, 0.99), 2), "lateness_max_ms": round(max(late, default=0.0), 2),
            "lateness_mean_ms": round(statistics.fmean(late), 2) if late else 0.0,
            "idle_lateness_p50_ms": round(percentile(idle, 0.5), 2), "idle_lateness_p99_ms": round(percentile(idle, 0.99), 2),
            "open_messages": messages, "open_chat_s": round(open_s, 3), **from_history}


def _idle_lateness(application: Any) -> list[float]:
    """The timer's lateness with the window open and nothing happening: the machine's own share."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop, probe = QEventLoop(), LatenessTimer()
    QTimer.singleShot(IDLE_MS, loop.quit)
    probe.start()
    loop.exec()
    probe.stop()
    return probe.lateness_ms


def _long_chat_figures(measured: dict[str, Any], messages: int) -> dict[str, Any]:
    late = measured["lateness_ms"]
    return {"long_chat_messages": messages, "long_chat_open_ms": round(measured["open_s"] * 1000, 1),
            "long_chat_cards_at_open": measured["cards_at_open"], "scroll_ticks": len(late),
            "scroll_p50_late_ms": round(percentile(late, 0.5), 2), "scroll_p99_late_ms": round(percentile(late, 0.99), 2),
            "scroll_max_late_ms": round(max(late, default=0.0), 2), "scroll_cards_made": measured["cards_made"],
            "scroll_most_laid_out": measured["most_laid_out"]}


def _open_long_chat(window: Any, application: Any, messages: int) -> float:
    chat = long_chat(messages)
    started = time.perf_counter()
    tab = window.new_chat("A long chat", messages=chat)
    application.processEvents()  # laid out and painted once
    tab.view.verticalScrollBar().maximum()
    return time.perf_counter() - started


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m app.misc.gui_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=4, help="tabs streaming at once (default 4)")
    parser.add_argument("--tokens", type=int, default=2000, help="tokens of each answer (default 2000)")
    parser.add_argument("--rate", type=float, default=60.0, help="tokens a second into each tab (default 60)")
    parser.add_argument("--messages", type=int, default=500, help="messages of the chat opened at the end (default 500)")
    parser.add_argument("--long-messages", type=int, default=LONG_CHAT_MESSAGES,
                        help=f"messages of the chat opened from the history and scrolled (default {LONG_CHAT_MESSAGES})")
    parser.add_argument("--scroll-ticks", type=int, default=SCROLL_TICKS,
                        help=f"16 ms ticks of scrolling up through it (default {SCROLL_TICKS})")
    parser.add_argument("--switch-ms", type=int, default=SWITCH_TAB_MS,
                        help=f"change the current tab this often; 0: never (default {SWITCH_TAB_MS})")
    args = parser.parse_args(argv)
    if args.tabs < 1 or args.tokens < 1 or args.rate <= 0 or args.messages < 2 or args.long_messages < 2:
        parser.error("--tabs, --tokens, --rate must be positive and --messages, --long-messages at least 2")
    if args.scroll_ticks < 1:
        parser.error("--scroll-ticks must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen" if not os.environ.get("DISPLAY") else "xcb")
    with tempfile.TemporaryDirectory(prefix="hearth-probe-") as folder:
        os.environ["HEARTH_CONFIG_DIR"] = os.path.join(folder, "config")  # never the user's settings or chats
        os.environ["HEARTH_DATA_DIR"] = os.path.join(folder, "data")
        result = run(args.tabs, args.tokens, args.rate, args.messages, args.switch_ms, args.long_messages,
                     args.scroll_ticks)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
