"""`hearth-serve --draft-model` (llama-server's --model-draft): what it refuses in words before loading anything,
and the ModelConfig it loads with."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.server.cli import _config, parse


def test_a_draft_model_flag_that_cannot_work_is_refused_in_words(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    model, text = tmp_path / "model.gguf", tmp_path / "notes.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    text.write_text("not a model")
    folder = tmp_path / "hf-model"
    folder.mkdir()
    for argv, said in ((["--model", str(model), "--draft-model", str(text)], f"--draft-model {text} is not a GGUF file"),
                       (["--model", str(model), "--draft-model", str(tmp_path / "gone.gguf")], "cannot be read"),
                       (["--model", str(folder), "--draft-model", str(model)],
                        f"--draft-model {model} is not a transformers model folder (no config.json)"),
                       (["--models-dir", str(tmp_path), "--draft-model", str(model)], "--draft-model needs --model")):
        with pytest.raises(SystemExit):
            parse(argv)
        assert said in capsys.readouterr().err


def test_the_draft_model_reaches_the_models_config(tmp_path: Path) -> None:
    model, draft = tmp_path / "big.gguf", tmp_path / "small.gguf"
    for path in (model, draft):
        path.write_bytes(b"GGUF" + bytes(60))
    config = _config(parse(["--model", str(model), "--model-draft", str(draft), "--slots", "2"]))
    assert (config.path, config.draft_model, config.slots, config.backend) == (str(model), str(draft), 2, "llamacpp")
    assert _config(parse(["--model", str(model)])).draft_model is None


def test_a_transformers_model_drafts_with_a_transformers_folder(tmp_path: Path) -> None:
    model, draft = tmp_path / "big", tmp_path / "small"
    for folder in (model, draft):
        folder.mkdir()
        (folder / "config.json").write_text("{}")
    config = _config(parse(["--model", str(model), "--draft-model", str(draft)]))
    assert (config.backend, config.draft_model) == ("hf", str(draft))
