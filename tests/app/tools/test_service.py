"""ToolService's order of events: a listing or a result reaches the chat from the event loop, after it asked.

A server that answers at once (its future already done when the service attaches its callback) is
what a running server does on a busy machine; a stand-in manager makes that certain here.
"""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

import pytest

from app.settings.store import Settings
from app.tools.service import ToolService
from engine.protocol import ToolSpec
from engine.tools.manager import ServerTools
from engine.tools.results import ToolResult


class AnsweredManager:
    """Every listing and call is done before anyone waits for it."""

    def list_tools(self, server: str) -> Future[ServerTools]:
        done: Future[ServerTools] = Future()
        done.set_result(ServerTools(server, (ToolSpec(f"{server}_tool", "", "{}"),)))
        return done

    def call(self, server: str, tool: str, arguments: str, timeout_s: float, limit: int) -> Future[ToolResult]:
        done: Future[ToolResult] = Future()
        done.set_result(ToolResult(f"{tool} ran"))
        return done


@pytest.fixture
def service(settings_dir: Path, monkeypatch: pytest.MonkeyPatch) -> ToolService:
    settings_dir.mkdir(parents=True, exist_ok=True)
    (settings_dir / "mcp.json").write_text(json.dumps({"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}))
    manager = AnsweredManager()
    monkeypatch.setattr(ToolService, "_ensure_manager", lambda self: manager)
    return ToolService(Settings.load())


def test_a_turn_waits_for_every_server_even_when_the_first_answers_at_once(qtbot, service: ToolService) -> None:  # type: ignore[no-untyped-def]
    ready: list[list[str]] = []
    service.prepare(lambda: ready.append(sorted(service.offered())))
    assert ready == []  # not inside prepare
    qtbot.waitUntil(lambda: bool(ready))
    assert ready == [["a_tool", "b_tool"]]


def test_a_result_arrives_after_the_call_returned(qtbot, service: ToolService) -> None:  # type: ignore[no-untyped-def]
    results: list[str] = []
    service.call_finished.connect(lambda token, result: results.append(f"{token}: {result.text}"))
    assert service.call("t1", "a", "a_tool", "{}") is not None and results == []
    qtbot.waitUntil(lambda: bool(results))
    assert results == ["t1: a_tool ran"]
