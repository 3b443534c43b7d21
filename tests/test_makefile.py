"""The Makefile's install logic, read with `make -n` (nothing runs): the whole app by default, the
torch pinned before anything can pull torch on the test path only, and a quick second run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def plan(target: str, venv: Path, *variables: str) -> list[str]:
    # Under `make test` this runs inside make: its MAKEFLAGS would add "Entering directory" lines.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    run = subprocess.run(["make", "--no-print-directory", "-n", target, f"VENV={venv}", *variables], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True, env=env)
    return run.stdout.splitlines()


def test_a_fresh_make_test_pins_torch_before_the_hf_extra(tmp_path: Path) -> None:
    lines = plan("test", tmp_path / "venv")
    pin = next(i for i, line in enumerate(lines) if 'install -q torch==2.14.1 torchvision==0.29.1' in line)
    full = next(i for i, line in enumerate(lines) if '-e ".[gguf,hf,default-model,gpu,server,remote]"' in line)
    llama = next(i for i, line in enumerate(lines) if "pip-install-llama.sh" in line)
    assert pin < llama < full and "import torch" in lines[pin]  # a torch already there is kept
    fixtures = next(i for i, line in enumerate(lines) if "-m tests.families.sources" in line)
    assert full < fixtures < len(lines) - 1  # the family fixtures' sources, fetched before the tests run
    # every test of what the app and the server do; the whole-program checks are CI's second step (test-heavy)
    assert "-m pytest -q -p no:cacheprovider" in lines[-1] and lines[-1].endswith('-m "not heavy"')
    assert lines[-1].split("-m pytest", 1)[1].count(" -m ") == 1


@pytest.mark.parametrize(("target", "selection"), [("test-fast", '-m "not slow and not heavy"'),
                                                   ("test-models", '-m "slow and not heavy"'),
                                                   ("test-heavy", "-m heavy")])
def test_each_tier_runs_alone_on_the_same_set_up(tmp_path: Path, target: str, selection: str) -> None:
    lines = plan(target, tmp_path / "venv")
    assert any('install -q torch==2.14.1 torchvision==0.29.1' in line for line in lines) and any('-e ".[all,test]"' in line for line in lines)
    assert "-m pytest -q -p no:cacheprovider" in lines[-1] and lines[-1].rstrip().endswith(selection)


def test_make_test_all_runs_every_tier_at_once(tmp_path: Path) -> None:
    last = plan("test-all", tmp_path / "venv")[-1]
    assert "-m pytest -q -p no:cacheprovider" in last and " -m " not in last.split("-m pytest", 1)[1]


def test_make_run_installs_the_whole_app_without_a_torch_pin(tmp_path: Path) -> None:
    lines = plan("run", tmp_path / "venv")
    assert any('-e ".[gguf,hf,default-model,gpu,server,remote]"' in line for line in lines)
    assert not any("torch==" in line for line in lines)  # users get the plain requirement
    light = plan("run", tmp_path / "venv", "EXTRAS=gguf,default-model")
    assert any('-e ".[gguf,default-model]"' in line for line in light)


def test_a_second_make_run_only_starts_the_app(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(shutil.which("python3") or "/usr/bin/python3")
    stamp = venv / ".installed-gguf-hf-default-model-gpu-server-remote"
    stamp.touch()
    lines = plan("run", venv)
    assert not any("pip" in line for line in lines) and lines[-1].endswith("-m app")
    assert any("pip install" in line for line in plan("run", venv, "EXTRAS=gguf,default-model"))  # other extras


def _install_llama(tmp_path: Path, installed: str | None) -> list[str]:
    """Run packaging/pip-install-llama.sh with a stand-in interpreter: its `-c` checks run for real against a
    site folder holding llama-cpp-python `installed` (or none), its pip commands are only written down."""
    site = tmp_path / "site"
    site.mkdir(parents=True)
    if installed:
        info = site / f"llama_cpp_python-{installed}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: {installed}\n")
    log = tmp_path / "pip.log"
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then PYTHONPATH={site} exec {shutil.which("python3")} "$@"; fi\n'
                      f'echo "$@" >> {log}\n')
    python.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no nvidia-smi: the CPU build
    subprocess.run(["sh", str(ROOT / "packaging/pip-install-llama.sh"), str(python)], env=env, check=True, timeout=60)
    return log.read_text().splitlines() if log.exists() else []


def test_llama_cpp_python_is_pinned_to_the_version_the_prompt_copy_was_checked_with(tmp_path: Path) -> None:
    import re

    from engine.tuning import PROMPT_COPY_LLAMA_CPP_VERSION

    pins = re.findall(r'"llama-cpp-python(?:\[server\])?([^"]*)"', (ROOT / "pyproject.toml").read_text())
    assert pins and set(pins) == {f"=={PROMPT_COPY_LLAMA_CPP_VERSION}"}
    assert _install_llama(tmp_path / "fresh", None) == [f"-m pip install -q llama-cpp-python=={PROMPT_COPY_LLAMA_CPP_VERSION}"]
    assert _install_llama(tmp_path / "other", "0.3.35") == [f"-m pip install -q llama-cpp-python=={PROMPT_COPY_LLAMA_CPP_VERSION}"]
    assert _install_llama(tmp_path / "same", PROMPT_COPY_LLAMA_CPP_VERSION) == []
