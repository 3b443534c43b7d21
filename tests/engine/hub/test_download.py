"""Getting a model from the (stand-in) Hub: search, files, verdicts, a verified download, and it answers."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from engine.catalog.devices import DeviceMemory
from engine.hub.download import fetch_choice
from engine.hub.fit import assess
from engine.hub.listing import list_repo
from engine.hub.progress import DownloadProgress
from engine.hub.remote import describe_choices
from engine.hub.search import search
from engine.hub.settings import HubSettings
from engine.protocol import ModelConfig
from tests.engine.hub.fixtures import GGUF_REPO, POPULAR_REPO, Q4_0, Q4_1, Q8_0_PARTS
from tests.engine.hub.stand_in_hub import StandInHub

GiB = 1 << 30


def test_search_finds_gguf_repos_sorted_by_downloads_likes_and_date(hub: StandInHub) -> None:
    settings = HubSettings.from_env()
    by_downloads = search("gguf", settings)
    assert [r.repo_id for r in by_downloads] == [POPULAR_REPO, GGUF_REPO, "hearth-test/Gated-GGUF"]
    assert by_downloads[0].downloads == 90_000 and by_downloads[1].likes == 40 and by_downloads[2].gated
    assert [r.repo_id for r in search("gguf", settings, sort="likes")][0] == "hearth-test/Gated-GGUF"
    newest = search("gguf", settings, sort="last_modified")
    assert [r.last_modified.month for r in newest if r.last_modified] == [11, 10, 8]
    assert [r.repo_id for r in search("smollm2", settings)] == [GGUF_REPO]
    assert search("safetensors", settings, fmt="safetensors") == []
    # a pasted URL is looked up, not searched
    pasted = search(f"https://huggingface.co/{GGUF_REPO}/tree/main", settings)
    assert [r.repo_id for r in pasted] == [GGUF_REPO] and pasted[0].formats == ("gguf",)
    assert all(path.startswith("/api/models") for _, path in hub.requests)  # no telemetry, no registry fetch
    query = dict(item.split("=") for item in hub.requests[0][1].split("?")[1].split("&"))
    assert query["filter"] == "gguf" and query["pipeline_tag"] == "text-generation" and query["sort"] == "downloads"


def plenty() -> DeviceMemory:
    return DeviceMemory("cpu", "RAM", 16 * GiB, 16 * GiB)


def test_a_repos_files_are_listed_split_models_as_one(hub: StandInHub) -> None:
    listing = list_repo(GGUF_REPO, HubSettings.from_env())
    assert [c.key for c in listing.choices] == [Q8_0_PARTS[0], Q4_1, Q4_0]  # most precise first
    q8 = listing.choices[0]
    assert q8.quant == "Q8_0" and q8.parts == 3 and [f.path for f in q8.files] == Q8_0_PARTS
    assert q8.label == "SmolLM2-135M-Instruct.Q8_0-00001-of-00003.gguf (3 parts)"
    served = hub.repos[GGUF_REPO].files
    assert q8.download_bytes == sum(served[p].size for p in Q8_0_PARTS)
    assert [f.sha256 for f in q8.files] == [served[p].sha256 for p in Q8_0_PARTS]
    assert listing.choice(Q4_1).quant == "Q4_1" and listing.commit == hub.repos[GGUF_REPO].commit


def test_verdicts_follow_the_decision_tree(hub: StandInHub, default_model: str) -> None:
    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    descriptions = describe_choices(listing, settings)
    # the prompt copy off: whether "auto" takes it depends on the RAM each case below gives (test_fit_sizes.py)
    config = ModelConfig(path="", context_length=2048, slots=2, prompt_copy="off")
    assert {d.n_params for d in descriptions.values()} == {134_515_008}  # one shape for every quantization
    assert {d.layers for d in descriptions.values()} == {30}
    roomy = assess(listing, descriptions, config, plenty(), has_gpu=False)
    assert roomy.recommended is not None and roomy.recommended.key == Q8_0_PARTS[0]
    assert [f.level for f in roomy.fits] == ["fits"] * 3
    assert roomy.why.startswith("8-bit (Q8_0) is the most precise that fits in 16.0 GiB free RAM")
    q8_need, q4_1_need = roomy.fit(Q8_0_PARTS[0]).need_bytes, roomy.fit(Q4_1).need_bytes
    # on the CPU llama.cpp holds Q4_0's layer matrices twice (mapped and repacked): more than Q4_1
    assert q8_need > q4_1_need and roomy.fit(Q4_0).need_bytes > q4_1_need
    middle = (q8_need + q4_1_need) // 2
    squeezed = assess(listing, descriptions, config, DeviceMemory("cpu", "RAM", middle, 10 * middle), False)
    assert squeezed.recommended is not None and squeezed.recommended.key == Q4_1
    assert [f.level for f in squeezed.fits][:2] == ["does not fit", "fits"]
    assert "8-bit (Q8_0) would need" in squeezed.why and "4-bit (Q4_1) is the most precise" in squeezed.why
    tight = assess(listing, descriptions, config, DeviceMemory("cpu", "RAM", middle, int(middle * 1.1)), False)
    assert tight.recommended is not None and tight.recommended.key == Q4_1 and "tightly" in tight.why
    none = assess(listing, descriptions, config, DeviceMemory("cpu", "RAM", 50 << 20, 50 << 20), False)
    assert none.recommended is None and "Choose a smaller model" in none.why
    # the estimate from the Hub's headers is the one the settings dialog makes from the file itself
    from engine.catalog.memory import estimate
    from engine.catalog.models import describe

    local = estimate(describe(default_model), dataclasses.replace(config, path=default_model), has_gpu=False, total_memory=plenty().total_bytes).total_bytes
    assert abs(roomy.fit(Q4_1).need_bytes - local) <= 0.02 * local
    assert descriptions[Q4_1].repacked_bytes == 0 < descriptions[Q4_0].repacked_bytes, "scaled from the Q4_0 header"


def test_download_with_progress_is_verified_and_the_model_answers(hub: StandInHub, hub_env: Path) -> None:
    from huggingface_hub import hf_hub_download

    from engine.catalog.hf_cache import downloaded_models
    from engine.catalog.models import describe, discover
    from engine.protocol import ChatMessage, LoadModel, ModelLoaded, SamplingParams, Submit
    from tests.engine.engine_harness import EngineHarness

    settings = HubSettings.from_env()
    listing = list_repo(GGUF_REPO, settings)
    choice = listing.choice(Q8_0_PARTS[0])
    events: list[DownloadProgress] = []
    path = fetch_choice(listing, choice, settings, events.append)

    snapshot = hub_env / "hub" / "models--hearth-test--SmolLM2-135M-Instruct-GGUF" / "snapshots" / listing.commit
    assert path == str(snapshot / Q8_0_PARTS[0])
    assert hub.bytes_served(GGUF_REPO) == choice.download_bytes  # every byte once
    done = [e.done_bytes for e in events]
    assert done == sorted(done) and events[-1].done_bytes == events[-1].total_bytes == choice.download_bytes
    assert events[-1].stage == "done" and any(e.bytes_per_second > 0 for e in events)
    assert any(e.seconds_left is not None and e.seconds_left > 0 for e in events[:-1])
    for part in choice.files:  # each blob is named by its sha256 and really has it
        link = snapshot / part.path
        assert link.is_symlink() and Path(link.resolve()).name == part.sha256
        assert hashlib.sha256(link.read_bytes()).hexdigest() == part.sha256
    assert (snapshot.parent.parent / "refs" / "main").read_text() == listing.commit
    # other tools find it where they look, without the network
    assert hf_hub_download(GGUF_REPO, Q8_0_PARTS[1], cache_dir=hub_env / "hub", local_files_only=True) == \
        str(snapshot / Q8_0_PARTS[1])
    models = downloaded_models(hub_env / "hub")
    assert [(m.repo_id, m.path, m.size_bytes) for m in models] == [(GGUF_REPO, path, choice.download_bytes)]
    offered = [e for e in discover(hf_cache=hub_env / "hub") if e.source == "Downloaded"]
    assert [e.path for e in offered] == [path]  # part 1 stands for the model; parts 2 and 3 are not offered
    described = describe(path)
    assert described.n_params == 134_515_008 and described.file_bytes == choice.download_bytes

    engine = EngineHarness()
    try:
        engine.loop.send(LoadModel(ModelConfig(path=path, context_length=512, slots=1, threads=2)))
        loaded = engine.wait_loaded()
        assert isinstance(loaded, ModelLoaded), loaded
        assert loaded.info.quantization == "Q8_0" and loaded.info.n_params == 134_515_008
        mark = engine.mark()
        question = (ChatMessage("system", "You are a helpful assistant."),
                    ChatMessage("user", "What is the capital of France?"))
        engine.loop.send(Submit("c1", question, SamplingParams(temperature=0, max_new_tokens=16, ignore_eos=True)))
        answered = engine.finished("c1", mark)
        assert (answered.reason, answered.stats.generated_tokens) == ("length", 16) and answered.text
    finally:
        engine.close()
