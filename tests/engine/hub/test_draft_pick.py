"""Get models' draft model suggestion (engine/hub/draft_pick.py): the names propose, the vocabularies decide,
against the stand-in Hub serving the default model under a larger model's name beside its real repo."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.catalog.devices import DeviceMemory
from engine.catalog.memory import estimate
from engine.hub.draft_pick import name_parts, rank_candidates, suggest_draft
from engine.hub.fit import config_for, repo_view
from engine.hub.remote import describe_gguf_remote
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig
from tests.engine.hub.fixtures import GGUF_REPO, Q4_1, Q8_0_PARTS
from tests.engine.hub.stand_in_hub import StandInHub
from tests.engine.quantcheck.gguf_copies import swap_two_tokens

GiB = 1 << 30
CONFIG = ModelConfig(path="", context_length=2048, slots=2, device="cpu")
PLENTY = DeviceMemory("cpu", "RAM", free_bytes=24 * GiB, total_bytes=32 * GiB)
TAGS = ["gguf", "llama", "text-generation"]


def test_names_propose_much_smaller_models_of_the_same_family() -> None:
    qwen = ["Qwen/Qwen2.5-7B-Instruct-GGUF", "Qwen/Qwen2.5-3B-Instruct-GGUF", "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
            "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "someone/Qwen2.5-0.5B-Instruct-GGUF", "Qwen/Qwen2-0.5B-Instruct-GGUF",
            "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "Qwen/Qwen2.5-0.5B-GGUF", "bartowski/Llama-3.2-1B-Instruct-GGUF"]
    assert rank_candidates("Qwen/Qwen2.5-7B-Instruct-GGUF", qwen) == [
        "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "Qwen/Qwen2.5-1.5B-Instruct-GGUF", "Qwen/Qwen2-0.5B-Instruct-GGUF",
        "Qwen/Qwen2.5-0.5B-GGUF", "someone/Qwen2.5-0.5B-Instruct-GGUF"]
    llama = ["bartowski/Llama-3.2-3B-Instruct-GGUF", "bartowski/Llama-3.2-1B-Instruct-GGUF",
             "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "someone/Llama-2-1B-GGUF"]
    assert rank_candidates("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", llama) == [
        "bartowski/Llama-3.2-1B-Instruct-GGUF"], "3B is not much smaller than 8B; Llama 2 is another family"
    parts = name_parts("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF")
    assert parts is not None and (parts.family, parts.query, parts.parameters) == ("llama-3", "llama-3", 8e9)
    assert name_parts("TheBloke/Mixtral-8x7B-v0.1-GGUF") is None and name_parts("org/phi-mini-GGUF") is None


def _serve_as(hub: StandInHub, repo_id: str, name: str, source: Path) -> None:
    hub.add_repo(repo_id, {name: source, "README.md": b"# a stand-in\n"}, TAGS)


def test_a_draft_of_the_same_vocabulary_is_found_and_counted_in_the_fit(hub: StandInHub, default_model: str) -> None:
    target = "hearth-test/SmolLM2-1.7B-Instruct-GGUF"
    _serve_as(hub, target, "SmolLM2-1.7B-Instruct.Q4_1.gguf", Path(default_model))
    _serve_as(hub, "hearth-test/SmolLM2-1B-Instruct-GGUF", "SmolLM2-1B-Instruct.Q4_1.gguf", Path(default_model))
    settings = HubSettings.from_env()
    view = repo_view(target, settings, CONFIG)
    suggestion = suggest_draft(view, CONFIG, settings, PLENTY, has_gpu=False)
    assert suggestion.found and suggestion.listing is not None and suggestion.choice is not None
    assert (suggestion.listing.repo_id, suggestion.choice.key) == (GGUF_REPO, Q8_0_PARTS[0]), "its Q8_0"
    assert suggestion.why.startswith(f"{GGUF_REPO} · SmolLM2-135M-Instruct.Q8_0-00001-of-00003.gguf (3 parts)")
    assert "135M parameters against 1.7B" in suggestion.why and "49,152 tokens" in suggestion.why
    draft = describe_gguf_remote(suggestion.listing, suggestion.choice, settings)
    draft_alone = estimate(draft, dataclasses.replace(CONFIG, path=draft.path, prompt_copy="off"), has_gpu=False,
                           total_memory=PLENTY.total_bytes)
    alone = view.report.fit("SmolLM2-1.7B-Instruct.Q4_1.gguf") if view.report else None
    paired = suggestion.fits["SmolLM2-1.7B-Instruct.Q4_1.gguf"]
    assert alone is not None and draft_alone.total_bytes > draft.tensor_bytes
    assert paired.need_bytes == alone.need_bytes + draft_alone.total_bytes, "the pair's need: both estimates"
    assert paired.level == "fits"
    assert config_for(paired.choice, CONFIG).draft_model is None, "the suggestion changes no settings"


def test_a_candidate_of_another_vocabulary_is_not_suggested_and_the_reason_is_given(
        hub: StandInHub, default_model: str, tmp_path: Path) -> None:
    swapped = tmp_path / "swapped.gguf"
    swap_two_tokens(default_model, swapped, 300, 301)  # "il" and "om"
    _serve_as(hub, "hearth-test/TinyChat-1.7B-GGUF", Q4_1, Path(default_model))
    _serve_as(hub, "hearth-test/TinyChat-360M-GGUF", "TinyChat-360M.Q4_1.gguf", swapped)
    settings = HubSettings.from_env()
    suggestion = suggest_draft(repo_view("hearth-test/TinyChat-1.7B-GGUF", settings, CONFIG), CONFIG, settings,
                               PLENTY, has_gpu=False)
    assert not suggestion.found
    assert suggestion.why == ("No draft model suggested: Token 300 is 'il' in hearth-test/TinyChat-360M-GGUF but 'om' "
                              "in hearth-test/TinyChat-1.7B-GGUF: their vocabularies differ.")
    lonely = suggest_draft(repo_view(GGUF_REPO, settings, CONFIG), CONFIG, settings, PLENTY, has_gpu=False)
    assert lonely.why == ("No draft model suggested: the Hub has no GGUF model of the smollm2 family with at most "
                          "25% of 135M parameters.")
