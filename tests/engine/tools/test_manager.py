"""The ToolManager against real MCP servers written with the SDK (tests/engine/tools/mcp_server.py).

One stdio server is started per module and shared; the tests that break it (crash) come last
and the manager starts it again by itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from engine.tools.config import ServerConfig
from engine.tools.manager import ToolManager
from tests.engine.tools.conftest import stdio_server

WAIT_S = 60  # starting a Python MCP server on a busy machine takes seconds
SECRETS = {"probe.TOKEN": "s3cret-value"}  # what the keyring holds, for these tests


@pytest.fixture(scope="module")
def manager(tool_folder: Path, http_server: str) -> Iterator[ToolManager]:
    manager = ToolManager([
        stdio_server(tool_folder),
        ServerConfig("http", url=http_server),
        ServerConfig("missing", command="/no/such/program-for-tools"),
        ServerConfig("dies", command=sys.executable, args=("-c", "import sys; print('bad token in config', file=sys.stderr); sys.exit(2)")),
        replace(stdio_server(tool_folder, "keyed"), env=(("PROBE_TOKEN", "${keyring:probe.TOKEN}"),)),
        replace(stdio_server(tool_folder, "unkeyed"), env=(("PROBE_TOKEN", "${keyring:nowhere}"),)),
    ], secrets=lambda name: SECRETS.get(name, ""))
    yield manager
    manager.shutdown()
    assert manager.running() == ()


def test_lists_the_tools_with_their_schemas(manager: ToolManager) -> None:
    listed = manager.list_tools("test").result(WAIT_S)
    assert listed.error == ""
    names = [tool.name for tool in listed.tools]
    assert names == ["add", "read_file", "sleep", "fail", "big", "crash", "env"]
    add = listed.tools[0]
    assert add.description == "Add two numbers."
    assert json.loads(add.parameters)["required"] == ["a", "b"]
    assert "test" in manager.running()


def test_calls_add_and_reads_a_file(manager: ToolManager) -> None:
    assert manager.call("test", "add", '{"a": 2, "b": 3}').result(WAIT_S).text == "5.0"
    read = manager.call("test", "read_file", '{"name": "notes.txt"}').result(WAIT_S)
    assert (read.text, read.is_error) == ("the kettle is on\n", False)


def test_a_raising_tool_is_an_error_result(manager: ToolManager) -> None:
    result = manager.call("test", "fail", '{"reason": "no kettle"}').result(WAIT_S)
    assert result.is_error and "it failed: no kettle" in result.text


def test_a_big_result_is_cut_with_a_note(manager: ToolManager) -> None:
    result = manager.call("test", "big", "{}", limit=1000).result(WAIT_S)
    assert result.cut_from == 1 << 20
    assert result.text.startswith("x" * 1000) and result.text.count("x") == 1000
    assert "cut to the first 1,000 of its 1,048,576 characters" in result.text
    assert result.notes == (result.text.split("\n\n")[-1],)


def test_a_hanging_tool_is_cut_off_after_the_timeout(manager: ToolManager) -> None:
    result = manager.call("test", "sleep", '{"seconds": 30}', timeout_s=0.2).result(WAIT_S)
    assert result.is_error and "did not answer within 0.2 s" in result.text
    assert manager.call("test", "add", '{"a": 1, "b": 1}').result(WAIT_S).text == "2.0"  # the server goes on


def test_a_cancelled_call_leaves_the_server_working(manager: ToolManager) -> None:
    call = manager.call("test", "sleep", '{"seconds": 30}')
    assert call.cancel() or call.cancelled()
    assert manager.call("test", "add", '{"a": 4, "b": 4}').result(WAIT_S).text == "8.0"


def test_arguments_that_are_not_an_object_run_nothing(manager: ToolManager) -> None:
    assert "not valid JSON" in manager.call("test", "add", '{"a": ').result(WAIT_S).text
    assert "JSON object" in manager.call("test", "add", "[1, 2]").result(WAIT_S).text


def test_the_http_server_lists_and_calls(manager: ToolManager) -> None:
    listed = manager.list_tools("http").result(WAIT_S)
    assert listed.error == "" and "add" in [tool.name for tool in listed.tools]
    assert manager.call("http", "add", '{"a": 20, "b": 22}').result(WAIT_S).text == "42.0"


def test_a_command_that_does_not_exist_says_so(manager: ToolManager) -> None:
    listed = manager.list_tools("missing").result(WAIT_S)
    assert listed.tools == ()
    assert '"missing" (/no/such/program-for-tools)' in listed.error and "was not found" in listed.error
    assert manager.call("missing", "add", "{}").result(WAIT_S).is_error


def test_a_server_that_fails_to_start_shows_its_stderr(manager: ToolManager) -> None:
    listed = manager.list_tools("dies").result(WAIT_S)
    assert "Its last output:\nbad token in config" in listed.error


def test_a_keyring_reference_reaches_the_child_as_its_value(manager: ToolManager) -> None:
    assert manager.call("keyed", "env", '{"name": "PROBE_TOKEN"}').result(WAIT_S).text == "s3cret-value"


def test_a_secret_not_stored_says_which_and_starts_nothing(manager: ToolManager) -> None:
    listed = manager.list_tools("unkeyed").result(WAIT_S)
    assert listed.tools == () and 'The tool server "unkeyed" (' in listed.error
    assert 'needs the secret "nowhere" from the keyring, which is not stored' in listed.error
    assert "unkeyed" not in manager.running()
    assert manager.call("keyed", "add", '{"a": 1, "b": 1}').result(WAIT_S).text == "2.0"  # the others work on


def test_a_crash_mid_call_is_an_error_and_the_next_call_starts_it_again(manager: ToolManager) -> None:
    crashed = manager.call("test", "crash", "{}").result(WAIT_S)
    assert crashed.is_error and "failed during the call of crash" in crashed.text
    assert manager.call("test", "add", '{"a": 1, "b": 2}').result(WAIT_S).text == "3.0"


def test_an_unknown_server_is_an_error(manager: ToolManager) -> None:
    assert "no tool server" in manager.call("nowhere", "add", "{}").result(WAIT_S).text
