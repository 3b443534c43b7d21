"""`python -m engine.hub` against the stand-in Hub: what a person sees, and the exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.engine.hub.fixtures import GATED_REPO, GGUF_REPO, POPULAR_REPO, Q4_0, Q8_0_PARTS, UNNAMED
from tests.engine.hub.stand_in_hub import StandInHub

ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.hub", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, check=False)


def test_search_files_get_list_delete(hub: StandInHub, hub_env: Path) -> None:
    found = cli("search", "smollm2")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines() == [f"{GGUF_REPO} · 5,000 downloads · 40 likes · updated 2026-10-01"]
    files = cli("files", GGUF_REPO, "--context", "2048", "--slots", "2", "--device", "cpu")
    assert files.returncode == 0, files.stderr
    lines = files.stdout.splitlines()
    assert lines[0].startswith(f"{GGUF_REPO} at ") and "for CPU (" in lines[0]
    assert lines[1].startswith("* SmolLM2-135M-Instruct.Q8_0-00001-of-00003.gguf (3 parts)") and "fits: Needs about" \
        in lines[1]
    assert lines[2].startswith("  SmolLM2-135M-Instruct.Q4_1.gguf") and lines[3].startswith("  " + Q4_0)
    assert lines[4].startswith("Recommended (*): 8-bit (Q8_0) is the most precise that fits")
    got = cli("get", GGUF_REPO, "q4_0")
    assert got.returncode == 0, got.stderr
    path = got.stdout.strip()
    assert path.endswith(f"/snapshots/{hub.repos[GGUF_REPO].commit}/{Q4_0}") and Path(path).is_file()
    assert "Downloading SmolLM2-135M-Instruct.Q4_0.gguf" in got.stderr and "done" in got.stderr
    again = cli("files", GGUF_REPO).stdout.splitlines()
    assert "downloaded" in again[3] and "downloaded" not in again[1]  # and its verdict read from the file itself
    listed = cli("list")
    assert listed.returncode == 0 and listed.stdout.split() [2:] == [f"{GGUF_REPO}", "·", Q4_0, path]
    deleted = cli("delete", GGUF_REPO, Q4_0)
    assert deleted.returncode == 0 and deleted.stdout.startswith("Deleted 1 model, ")
    assert not Path(path).exists() and cli("list").stdout == ""


def test_failures_exit_non_zero_with_one_sentence(hub: StandInHub, hub_env: Path) -> None:
    missing = cli("get", "hearth-test/nothing-here")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("error: There is no model hearth-test/nothing-here on the Hub")
    gated = cli("get", GATED_REPO)
    assert gated.returncode == 1 and "Accept the license on the model's page" in gated.stderr
    listed = cli("files", GATED_REPO)  # a gated repo still shows its files and sizes
    assert listed.returncode == 0 and "sizes only" in listed.stdout and "94 MiB" in listed.stdout
    no_file = cli("get", GGUF_REPO, "Q2_K")
    assert no_file.returncode == 1 and f"has no model file 'Q2_K'. Its models: {Q8_0_PARTS[0]}," in no_file.stderr
    offline = cli("search", "smol", env={"HF_HUB_OFFLINE": "1"})
    assert offline.returncode == 1 and "Offline mode is on" in offline.stderr
    assert hub.bytes_served() == 0 and cli("list").stdout == ""  # not a byte of a model was fetched


def test_the_quantization_comes_from_the_header_once_downloaded(hub: StandInHub, hub_env: Path) -> None:
    before = cli("files", POPULAR_REPO).stdout.splitlines()[1]
    assert before.split()[:2] == ["*", UNNAMED] and before.split()[2] == "?"  # the name does not say
    assert cli("get", POPULAR_REPO, UNNAMED).returncode == 0
    after = cli("files", POPULAR_REPO).stdout.splitlines()[1]
    assert after.split()[2:4] == ["Q4_1", "downloaded"]
