"""House rules: app/ and engine/ are mypy clean, and nothing imported or assigned goes unused.

mypy is a test dependency (the `test` extra): when it is missing this test fails
and says so, rather than skipping and letting type errors through unnoticed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.heavy  # the whole tree: about a minute
def test_app_and_engine_are_mypy_clean() -> None:
    assert importlib.util.find_spec("mypy") is not None, "mypy is not installed: pip install -e '.[test]'"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "app/", "engine/"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def test_no_unused_imports_or_variables() -> None:
    """Dead imports and assignments are how half-removed code hides (ruff's F401, F811, F841)."""
    assert importlib.util.find_spec("ruff") is not None, "ruff is not installed: pip install -e '.[test]'"
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F401,F811,F841", "app", "engine", "tests"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
