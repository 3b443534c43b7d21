"""A safetensors repo (the transformers backend) from the stand-in Hub: sizes, 8-bit / 4-bit estimates,
a verified folder download, and the downloaded folder answers exactly as the original does."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.catalog.devices import DeviceMemory  # noqa: E402
from engine.catalog.memory import estimate  # noqa: E402
from engine.catalog.models import describe  # noqa: E402
from engine.hub.download import fetch_choice  # noqa: E402
from engine.hub.fit import assess, config_for  # noqa: E402
from engine.hub.listing import list_repo  # noqa: E402
from engine.hub.remote import describe_choices  # noqa: E402
from engine.hub.settings import HubSettings  # noqa: E402
from engine.protocol import ModelConfig  # noqa: E402
from tests.engine.hub.fixtures import FOLDER_REPO, add_folder_repo  # noqa: E402
from tests.engine.hub.stand_in_hub import StandInHub  # noqa: E402
from tests.engine.runners.hf.tiny_hf import answer_alone, prompt  # noqa: E402

pytestmark = pytest.mark.hf


def test_a_safetensors_repo_lists_sizes_and_quantized_footprints(hub: StandInHub, tiny_model: str) -> None:
    add_folder_repo(hub, Path(tiny_model))
    settings = HubSettings.from_env()
    listing = list_repo(FOLDER_REPO, settings)
    assert [(c.key, c.kind, c.quant) for c in listing.choices] == [
        ("safetensors:none", "hf", "none"), ("safetensors:int8", "hf", "int8"), ("safetensors:nf4", "hf", "nf4")]
    served = hub.repos[FOLDER_REPO].files
    wanted = {name for name in served if name != "README.md"}
    assert {f.path for f in listing.choices[0].files} == wanted
    assert listing.choices[0].download_bytes == sum(served[name].size for name in wanted)
    described = describe_choices(listing, settings)["safetensors:none"]
    local = describe(tiny_model)
    assert dataclasses.replace(described, path=local.path, name=local.name, file_bytes=local.file_bytes) == local
    config = ModelConfig(path="", context_length=256, slots=2, device="cpu")
    report = assess(listing, describe_choices(listing, settings), config,
                    DeviceMemory("cpu", "RAM", 8 << 30, 8 << 30), has_gpu=False)
    weights = [estimate(local, config_for(fit.choice, config, tiny_model), has_gpu=False, total_memory=8 << 30).weights_bytes for fit in report.fits]
    assert weights[0] > weights[1] > weights[2]  # full precision > 8-bit > 4-bit
    for fit in report.fits:  # the very figures the settings dialog shows for that choice
        assert fit.need_bytes == estimate(local, config_for(fit.choice, config, tiny_model), has_gpu=False, total_memory=8 << 30).total_bytes
    assert report.recommended == listing.choices[0] and report.why.startswith("full precision is the most precise")


def test_the_downloaded_folder_loads_and_answers_like_the_original(hub: StandInHub, tiny_model: str) -> None:
    from engine.runners.hf.runner import GREEDY, HfRunner

    add_folder_repo(hub, Path(tiny_model))
    settings = HubSettings.from_env()
    listing = list_repo(FOLDER_REPO, settings)
    path = fetch_choice(listing, listing.choices[0], settings)
    assert Path(path).name == listing.commit and sorted(p.name for p in Path(path).iterdir()) == \
        sorted(name for name in hub.repos[FOLDER_REPO].files if name != "README.md")
    answers = []
    for folder in (tiny_model, path):
        runner = HfRunner.load(ModelConfig(path=folder, backend="hf", slots=1, context_length=128),
                               lambda fraction, message: None, lambda: False)
        try:
            answers.append(answer_alone(runner, prompt(runner, "Hello!"), dataclasses.replace(GREEDY, max_new_tokens=12)))
        finally:
            runner.close()
    assert answers[0] == answers[1] and len(answers[1]) > 0


def _serve_folder(hub: StandInHub, repo_id: str, folder: Path, tokenizer_json: bytes | None = None) -> None:
    files: dict[str, Path | bytes] = {p.name: p for p in sorted(folder.iterdir()) if p.is_file()}
    if tokenizer_json is not None:
        files["tokenizer.json"] = tokenizer_json
    hub.add_repo(repo_id, files, ["safetensors", "transformers", "llama", "text-generation"],  # type: ignore[arg-type]
                 library_name="transformers")


def test_a_folder_is_offered_a_smaller_folder_of_its_vocabulary_as_draft_and_told_why_not_another(
        hub: StandInHub, tiny_model: str) -> None:
    """Get models' draft suggestion for a transformers repo: the candidates are the family's folders, compared by
    tokenizer.json; the pair's memory is counted in each choice's fit."""
    import json

    from engine.hub.draft_pick import suggest_draft
    from engine.hub.fit import repo_view

    folder = Path(tiny_model)
    _serve_folder(hub, "hearth-test/TinyChat-1.1B", folder)
    _serve_folder(hub, "hearth-test/TinyChat-110M", folder)
    swapped = json.loads((folder / "tokenizer.json").read_text())
    vocab = swapped["model"]["vocab"]
    first, second = (token for token, index in vocab.items() if index in (300, 301))
    vocab[first], vocab[second] = vocab[second], vocab[first]
    _serve_folder(hub, "hearth-test/OtherChat-1.1B", folder)
    _serve_folder(hub, "hearth-test/OtherChat-110M", folder, json.dumps(swapped).encode())
    config = ModelConfig(path="", context_length=256, slots=2, device="cpu")
    memory = DeviceMemory("cpu", "RAM", 8 << 30, 8 << 30)
    settings = HubSettings.from_env()
    view = repo_view("hearth-test/TinyChat-1.1B", settings, config)
    suggestion = suggest_draft(view, config, settings, memory, has_gpu=False)
    assert suggestion.found and suggestion.listing is not None and suggestion.choice is not None
    assert (suggestion.listing.repo_id, suggestion.choice.kind) == ("hearth-test/TinyChat-110M", "hf")
    tokens = len(json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"])
    assert f"the same vocabulary ({tokens:,} tokens), 110M parameters against 1.1B" in suggestion.why
    assert view.report is not None and set(suggestion.fits) == {choice.key for choice in view.listing.choices}
    for choice in view.listing.choices:  # as the estimate counts the pair from the folders on disk
        alone, paired = view.report.fit(choice.key), suggestion.fits[choice.key]
        pair = dataclasses.replace(config_for(choice, config, tiny_model), draft_model=tiny_model)
        assert alone is not None and paired.need_bytes > alone.need_bytes, choice.key
        assert paired.need_bytes == estimate(describe(tiny_model), pair, has_gpu=False,
                                             total_memory=8 << 30).total_bytes, choice.key
    refused = suggest_draft(repo_view("hearth-test/OtherChat-1.1B", settings, config), config, settings, memory,
                            has_gpu=False)
    assert not refused.found
    assert refused.why == (f"No draft model suggested: Token 300 is {second!r} in hearth-test/OtherChat-110M but "
                           f"{first!r} in hearth-test/OtherChat-1.1B: their vocabularies differ.")
