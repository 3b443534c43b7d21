"""The small parts of getting models, each checked on its own: names, references, settings, progress."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from engine.catalog.hf_cache import cache_dir, delete_downloaded, downloaded_models
from engine.catalog.model_files import parse_split, split_parts, whole_models
from engine.hub.download import Hasher
from engine.hub.listing import HubFile, gguf_choices
from engine.hub.progress import DownloadProgress, Meter
from engine.hub.quants import precision_label, precision_rank, quant_from_name
from engine.hub.settings import HubSettings, RepoReference, parse_repo_reference


def test_split_names() -> None:
    split = parse_split("Q8_0/Model-Q8_0-00002-of-00003.gguf")
    assert split is not None and (split.prefix, split.index, split.count, split.is_first) == \
        ("Q8_0/Model-Q8_0", 2, 3, False)
    assert split.part_names() == [f"Q8_0/Model-Q8_0-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    assert parse_split("Model-Q8_0.gguf") is None and parse_split("x-00004-of-00003.gguf") is None
    assert parse_split("x-00001-of-00001.gguf") is None  # one part is a whole file
    first = Path("/m/a-00001-of-00002.gguf")
    assert split_parts(first) == [first, Path("/m/a-00002-of-00002.gguf")]
    assert whole_models([first, Path("/m/a-00002-of-00002.gguf"), Path("/m/b.gguf")]) == [first, Path("/m/b.gguf")]


@pytest.mark.parametrize(("name", "quant"), [
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"), ("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf", "Q4_K_M"),
    ("Llama-3.2-1B-Instruct-IQ4_XS.gguf", "IQ4_XS"), ("model-f16.gguf", "F16"), ("ggml-model-Q8_0.gguf", "Q8_0"),
    ("Qwen3-30B-A3B-UD-Q4_K_XL.gguf", "UD-Q4_K_XL"), ("gemma-3-4b-it-BF16.gguf", "BF16"), ("model.gguf", ""),
    ("Q4_K_M/Model-Q4_K_M-00001-of-00003.gguf", "Q4_K_M"), ("phi-4-Q2_K.gguf", "Q2_K")])
def test_quantization_from_the_file_name(name: str, quant: str) -> None:
    assert quant_from_name(name) == quant


def test_precision_order_and_labels() -> None:
    names = ["Q4_0", "IQ2_XS", "Q8_0", "F32", "Q4_K_M", "BF16", "Q6_K", "UD-Q4_K_XL", "Q5_K_M"]
    ordered = sorted(names, key=lambda q: precision_rank(q))
    assert ordered == ["BF16", "F32", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "UD-Q4_K_XL", "Q4_0", "IQ2_XS"]
    assert [precision_label(q) for q in ("F16", "Q8_0", "Q4_K_M", "nf4", "int8", "none")] == [
        "full precision (F16)", "8-bit (Q8_0)", "4-bit (Q4_K_M)", "4-bit (bitsandbytes nf4)",
        "8-bit (bitsandbytes int8)", "full precision"]


def test_a_split_model_missing_a_part_on_the_hub_is_not_offered() -> None:
    files = (HubFile("m-00001-of-00002.gguf", 10, "a" * 64, None), HubFile("n-Q4_0.gguf", 5, "b" * 64, None),
             HubFile("mmproj-model-f16.gguf", 3, "c" * 64, None))
    assert [c.key for c in gguf_choices(files)] == ["n-Q4_0.gguf"]


@pytest.mark.parametrize(("text", "reference"), [
    ("bartowski/Qwen2.5-7B-Instruct-GGUF", RepoReference("bartowski/Qwen2.5-7B-Instruct-GGUF")),
    ("https://huggingface.co/org/name", RepoReference("org/name")),
    ("huggingface.co/org/name/tree/v1.0", RepoReference("org/name", "v1.0")),
    ("https://hf.co/org/name/blob/main/sub/model-Q4_0.gguf", RepoReference("org/name", "main", "sub/model-Q4_0.gguf")),
    ("https://huggingface.co/models/org/name", RepoReference("org/name")),
    ("http://127.0.0.1:8080/org/name/resolve/abc/x.gguf", RepoReference("org/name", "abc", "x.gguf")),
    ("qwen 7b", None), ("smollm2", None), ("https://example.com/org/name", None), ("", None)])
def test_pasted_repo_ids_and_urls(text: str, reference: RepoReference | None) -> None:
    assert parse_repo_reference(text, "http://127.0.0.1:8080") == reference


def test_settings_are_read_from_the_environment_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH",
                 "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    plain = HubSettings.from_env()
    assert (plain.endpoint, plain.token, plain.cache, plain.offline) == \
        ("https://huggingface.co", None, tmp_path / "home" / "hub", False)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "token").write_text("hf_from_the_token_file\n")  # where `hf auth login` puts it
    assert HubSettings.from_env().token == "hf_from_the_token_file"
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    later = HubSettings.from_env()
    assert (later.endpoint, later.token, later.cache, later.offline) == \
        ("http://127.0.0.1:9", "hf_from_env", tmp_path / "elsewhere", True)
    assert HubSettings.from_env(token="hf_typed").token == "hf_typed" and cache_dir() == tmp_path / "elsewhere"


def test_loading_a_transformers_model_leaves_the_hub_reachable(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("bitsandbytes")
    from huggingface_hub import constants

    import engine.runners.hf.load  # noqa: F401
    from engine.runners.hf.quant import quantization_config

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    before = constants.HF_HUB_OFFLINE
    import torch

    from engine.protocol import ModelConfig

    quantization_config(ModelConfig(path="x", backend="hf", quantization="nf4"), torch.device("cpu"), torch.float32)
    assert "HF_HUB_OFFLINE" not in os.environ and constants.HF_HUB_OFFLINE == before


def test_progress_speed_and_time_left_on_a_clock() -> None:
    now = [100.0]
    events: list[DownloadProgress] = []
    meter = Meter("org/m", 1000, events.append, clock=lambda: now[0])
    meter.add_done(200, reused=True, file="m.gguf")  # on disk from before
    for _ in range(4):
        now[0] += 1.0
        meter.add_done(100, reused=False)  # 100 bytes a second
    last = events[-1]
    assert (last.done_bytes, last.reused_bytes, last.file) == (600, 200, "m.gguf")
    assert last.bytes_per_second == pytest.approx(100.0) and last.seconds_left == pytest.approx(4.0)
    assert last.fraction == pytest.approx(0.6)
    meter.add_done(400, reused=False)  # within 0.1 s of the last event: not sent
    assert len(events) == 5
    meter.finish()
    assert events[-1].stage == "done" and events[-1].seconds_left == 0.0


def test_git_object_ids_check_the_small_files() -> None:
    content = b'{"architectures": ["LlamaForCausalLM"]}\n'
    oid = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()  # what `git hash-object` gives
    good = Hasher(HubFile("config.json", len(content), None, oid))
    good.update(content)
    bad = Hasher(HubFile("config.json", len(content), None, oid))
    bad.update(content.replace(b"Llama", b"Mamba"))
    assert good.matches() and not bad.matches()


def test_deleting_one_quantization_keeps_the_others(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / "models--org--m-GGUF"
    snapshot = repo / "snapshots" / ("c" * 40)
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for name, etag, size in (("m-Q4_0.gguf", "1" * 64, 10), ("m-Q8_0.gguf", "2" * 64, 20)):
        (repo / "blobs" / etag).write_bytes(b"x" * size)
        (snapshot / name).symlink_to(f"../../blobs/{etag}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("c" * 40)
    models = downloaded_models(tmp_path / "hub")
    assert [(m.label, m.size_bytes, m.refs) for m in models] == [("org/m-GGUF · m-Q4_0.gguf", 10, ("main",)),
                                                                 ("org/m-GGUF · m-Q8_0.gguf", 20, ("main",))]
    assert delete_downloaded(models[0], tmp_path / "hub") == 10
    assert [m.label for m in downloaded_models(tmp_path / "hub")] == ["org/m-GGUF · m-Q8_0.gguf"]
    assert not (repo / "blobs" / ("1" * 64)).exists() and (repo / "blobs" / ("2" * 64)).exists()
    assert delete_downloaded(downloaded_models(tmp_path / "hub")[0], tmp_path / "hub") == 20
    assert downloaded_models(tmp_path / "hub") == [] and not repo.exists()


def test_one_header_per_model_in_a_repo_of_several_sizes() -> None:
    from engine.hub.listing import ModelChoice
    from engine.hub.remote import family

    def choice(path: str, quant: str) -> ModelChoice:
        return ModelChoice(path, "gguf", quant, (HubFile(path, 1, "a" * 64, None),))

    same = [choice("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Q4_K_M"), choice("Qwen2.5-7B-Instruct-Q8_0.gguf", "Q8_0"),
            choice("Q8_0/Qwen2.5-7B-Instruct-Q8_0-00001-of-00002.gguf", "Q8_0")]
    assert {family(c) for c in same} == {"qwen2-5-7b-instruct"}
    assert family(choice("Qwen2.5-1.5B-Instruct-Q4_K_M.gguf", "Q4_K_M")) != family(same[0])
