"""`python -m engine.bench --pictures`: a picture sent beside answering chats, each encode mode, on the bundled
model with a random mlp projector (one repeat): the JSON's keys and counts, the table's line per mode. The
speeds themselves are the bench's to report, never a test's to assert."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import bench


def test_pictures_mode_writes_a_case_per_encode_mode(default_model: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pictures.json"
    assert bench.main(["--pictures", "--family", "llava", "--repeat", "1", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    cases = {case["mode"]: case for case in figures["pictures"]}
    assert set(cases) == {"beside", "in_step"} and len(figures["pictures_runs"]) == 2
    for case in cases.values():
        assert case["family"] == "llava" and case["image_tokens"] == 16 and case["encodes"] == 1
        assert {"encode_ms", "ttft_ms_with", "ttft_ms_without", "decode_tok_s_text_tabs_beside",
                "text_tok_s_before", "text_slowdown"} <= set(case)
        assert case["text_tok_s_before"] > 0 and case["encode_ms"] > 0
    table = capsys.readouterr().out
    assert "slowdown" in table and " beside " in table and " in_step " in table


def test_pictures_mode_names_its_families(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--pictures", "--family", "minicpmv"]) == 1
    assert "llava, gemma3, qwen2.5vl, qwen3vl, smolvlm" in capsys.readouterr().err
