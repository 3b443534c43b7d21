"""`python -m engine.bench --constrained` end to end on the default model, kept short: keys and sane numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import bench

pytestmark = pytest.mark.slow


def test_the_constrained_mode_measures_free_and_schema_turns(default_model: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "constrained.json"
    argv = ["--constrained", "--tabs", "1,2", "--max-tokens", "32", "--repeat", "1", "--model", default_model,
            "--threads", "1", "--json", str(out)]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    assert "runs" not in result and "speculative" not in result
    assert [case["tabs"] for case in result["constrained"]] == [1, 2]
    for case in result["constrained"]:
        assert case["backend"] == "llamacpp" and case["free_tok_s"] > 0 and case["schema_tok_s"] > 0
        assert case["free_tokens"] == 32 * case["tabs"], "free turns run to max tokens"
        assert 0 < case["schema_tokens"] <= 32 * case["tabs"] and 0.0 <= case["valid_fraction"] <= 1.0
    printed = capsys.readouterr().out
    assert "schema tok/s" in printed and "valid" in printed


def test_family_runs_the_constrained_case_on_a_familys_fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.families.build import family_model

    out = tmp_path / "family.json"
    argv = ["--constrained", "--family", "qwen3", "--tabs", "4", "--max-tokens", "160", "--repeat", "1",
            "--threads", "1", "--json", str(out)]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    assert Path(result["path"]).name == family_model("qwen3").name
    (case,) = result["constrained"]
    assert case["valid_fraction"] == 1.0, "under the schema every answer ends by itself and validates"
    # the keys of two people with their quotes and colons at least are forced, in each of 4 answers
    assert 4 * 2 * 4 <= case["forced_tokens"] < case["schema_tokens"]
    assert f"{case['forced_tokens'] / case['schema_tokens']:.0%}" in capsys.readouterr().out
    for wrong, said in ((["--family", "nope"], "--family takes one of"),
                        (["--family", "qwen3", "--model", "x.gguf"], "leave out --model")):
        with pytest.raises(SystemExit):
            bench.main(["--constrained", *wrong])
        assert said in capsys.readouterr().err
