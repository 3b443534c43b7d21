"""Describing models from their files (GGUF metadata, HF config + safetensors headers) and finding them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engine.catalog.description import ModelReadError
from engine.catalog.gguf import read_gguf_header
from engine.catalog.models import describe, discover

TINY_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
               "max_position_embeddings": 2048, "torch_dtype": "float16", "tie_word_embeddings": False}
# by hand: embeddings 256*64 + 2 layers * (q 64*64 + k 32*64 + v 32*64 + o 64*64 + 3 * 128*64 + 2 norms 64)
# + final norm 64 + lm_head 256*64
TINY_PARAMS = 16384 + 2 * (4096 + 2048 + 2048 + 4096 + 3 * 8192 + 128) + 64 + 16384
TINY_UNQUANTIZED = 16384 + 2 * 128 + 64 + 16384  # embeddings, norms, lm_head


def write_tiny_hf_folder(folder: Path, seed: int = 0) -> Path:
    """A Llama-shaped folder: config.json + random float16 safetensors + a tokenizer stub."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    shapes = {"model.embed_tokens.weight": (256, 64), "model.norm.weight": (64,), "lm_head.weight": (256, 64)}
    for i in range(2):
        prefix = f"model.layers.{i}."
        shapes.update({prefix + "self_attn.q_proj.weight": (64, 64), prefix + "self_attn.k_proj.weight": (32, 64),
                       prefix + "self_attn.v_proj.weight": (32, 64), prefix + "self_attn.o_proj.weight": (64, 64),
                       prefix + "mlp.gate_proj.weight": (128, 64), prefix + "mlp.up_proj.weight": (128, 64),
                       prefix + "mlp.down_proj.weight": (64, 128), prefix + "input_layernorm.weight": (64,),
                       prefix + "post_attention_layernorm.weight": (64,)})
    folder.mkdir(parents=True, exist_ok=True)
    save_file({name: rng.standard_normal(shape).astype(np.float16) for name, shape in shapes.items()},
              str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    return folder


def write_tiny_gguf(path: Path, file_type: int | None) -> Path:
    import gguf

    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny")
    writer.add_context_length(1024)
    writer.add_block_count(2)
    writer.add_embedding_length(32)
    writer.add_head_count(4)
    writer.add_head_count_kv(1)
    if file_type is not None:
        writer.add_file_type(file_type)
    rng = np.random.default_rng(0)
    writer.add_tensor("token_embd.weight", rng.standard_normal((100, 32)).astype(np.float16))
    for i in range(2):
        writer.add_tensor(f"blk.{i}.attn_q.weight", rng.standard_normal((32, 32)).astype(np.float16))
        writer.add_tensor(f"blk.{i}.attn_norm.weight", rng.standard_normal(32).astype(np.float32))
    writer.add_tensor("output_norm.weight", rng.standard_normal(32).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_default_gguf_is_described_from_its_metadata(default_model: str) -> None:
    model = describe(default_model)
    assert (model.kind, model.architecture, model.quantization) == ("gguf", "llama", "Q4_1")
    # SmolLM2-135M: 30 layers, 9 heads of 64 (576 wide), 3 KV heads, 49152 tokens, trained on 8192
    assert (model.layers, model.heads, model.kv_heads, model.head_dim) == (30, 9, 3, 64)
    assert (model.embedding_length, model.vocab_size, model.trained_context_length) == (576, 49152, 8192)
    assert 134_000_000 < model.n_params < 135_000_000
    assert model.file_bytes == Path(default_model).stat().st_size
    assert len(model.layer_bytes) == 30 and len(set(model.layer_bytes)) == 1  # identical layers
    assert model.tied_embeddings  # SmolLM2 ties its output to the token embedding
    assert 0.95 * model.file_bytes < model.tensor_bytes < model.file_bytes
    assert model.default_backend == "llamacpp"
    assert model.name == "SmolLM2-135M-Instruct.Q4_1"


def test_gguf_sizes_agree_with_llama_cpp(default_model: str) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    params = llama_cpp.llama_model_default_params()
    params.use_extra_bufts = False  # as the engine does on CPUs that fault on AMX; sizes do not change
    model = llama_cpp.llama_model_load_from_file(default_model.encode(), params)
    try:
        assert describe(default_model).tensor_bytes == llama_cpp.llama_model_size(model)
        assert describe(default_model).n_params == llama_cpp.llama_model_n_params(model)
    finally:
        llama_cpp.llama_model_free(model)


@pytest.mark.parametrize(("file_type", "label"), [(1, "F16"), (7, "Q8_0"), (15, "Q4_K_M"), (3, "Q4_1"), (None, "F16")])
def test_gguf_file_type_names(tmp_path: Path, file_type: int | None, label: str) -> None:
    # without a file type field the type holding most bytes names the file
    model = describe(write_tiny_gguf(tmp_path / "tiny.gguf", file_type))
    assert model.quantization == label
    assert (model.layers, model.kv_heads, model.head_dim, model.trained_context_length) == (2, 1, 8, 1024)
    assert model.layer_bytes == (32 * 32 * 2 + 32 * 4,) * 2
    assert model.n_params == 100 * 32 + 2 * (32 * 32 + 32) + 32
    # tied: the output head is the token embedding plus the output norm
    assert model.output_bytes == 100 * 32 * 2 + 32 * 4


def test_header_walk_agrees_with_the_gguf_packages_reader(tmp_path: Path) -> None:
    from gguf import GGUFReader

    path = write_tiny_gguf(tmp_path / "tiny.gguf", 15)
    fields, tensors = read_gguf_header(path)
    reader = GGUFReader(path)
    assert [(t.name, int(t.n_bytes), int(t.n_elements), t.tensor_type.name) for t in reader.tensors] == tensors
    assert {key: field.contents() for key, field in reader.fields.items() if not key.startswith("GGUF.")} == fields


def test_hf_folder_is_described_from_config_and_safetensors_headers(tmp_path: Path) -> None:
    model = describe(write_tiny_hf_folder(tmp_path / "tiny-llama"))
    assert (model.kind, model.name, model.architecture) == ("hf", "tiny-llama", "LlamaForCausalLM")
    assert (model.n_params, model.unquantized_params) == (TINY_PARAMS, TINY_UNQUANTIZED)
    assert (model.layers, model.heads, model.kv_heads, model.head_dim) == (2, 4, 2, 16)
    assert (model.trained_context_length, model.dtype, model.quantization) == (2048, "float16", "f16")
    assert model.tensor_bytes == TINY_PARAMS * 2
    assert model.default_backend == "hf"


def test_unreadable_models_get_a_message_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"this is not a model at all")
    with pytest.raises(ModelReadError, match="broken.gguf"):
        describe(bad)
    with pytest.raises(ModelReadError, match="does not exist"):
        describe(tmp_path / "missing.gguf")
    folder = tmp_path / "no-config"
    folder.mkdir()
    with pytest.raises(ModelReadError, match="config.json"):
        describe(folder)
    (folder / "config.json").write_text("{}", encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ModelReadError, match="model.safetensors"):
        describe(folder)


def test_discovery_finds_default_models_folder_recent_and_hf_cache(tmp_path: Path, default_model: str) -> None:
    folder = tmp_path / "models"
    write_tiny_gguf(folder / "tiny.gguf", 1)
    write_tiny_hf_folder(folder / "tiny-llama")
    (folder / "broken.gguf").write_bytes(b"nope")
    snapshot = tmp_path / "hub" / "models--someone--tiny-cached" / "snapshots" / "0123abcd"
    write_tiny_hf_folder(snapshot)
    blob = write_tiny_gguf(tmp_path / "hub" / "models--someone--tiny-cached" / "blobs" / "e3b0c442", 7)
    (snapshot / "tiny.Q8_0.gguf").symlink_to(blob)  # the hub's layout: snapshot files link to blobs
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    recent = write_tiny_gguf(tmp_path / "elsewhere.gguf", 7)

    entries = discover(recent=[str(recent), default_model, str(tmp_path / "gone.gguf")], folder=folder,
                       hf_cache=tmp_path / "hub")
    by_source = [(entry.source, Path(entry.path).name) for entry in entries]
    assert by_source == [("Bundled default", Path(default_model).name), ("Recently used", "elsewhere.gguf"),
                         ("Models folder", "broken.gguf"), ("Models folder", "tiny.gguf"),
                         ("Models folder", "tiny-llama"), ("Downloaded", "0123abcd"),
                         ("Downloaded", "tiny.Q8_0.gguf")]
    broken = entries[2]
    assert broken.description is None and "broken.gguf" in broken.error
    assert entries[-2].description is not None and entries[-2].description.name == "someone/tiny-cached"
    assert entries[-1].description is not None and entries[-1].description.name == "tiny.Q8_0"
    assert entries[1].description is not None and entries[1].description.quantization == "Q8_0"


def test_discovery_without_a_hub_cache_or_folder(tmp_path: Path) -> None:
    entries = discover(folder=tmp_path / "none", hf_cache=tmp_path / "no-hub")
    assert [entry.source for entry in entries] == ["Bundled default"]


@pytest.mark.parametrize(("path", "name"), [
    ("/models/SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.Q4_1"),
    ("/models/Q8_0/Llama-3.1-8B.Q8_0-00001-of-00003.gguf", "Llama-3.1-8B.Q8_0"),
    ("/hf/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots/0123abcd", "HuggingFaceTB/SmolLM2-135M-Instruct"),
    ("/models/tiny-llama", "tiny-llama")])
def test_a_model_is_named_as_its_user_knows_it(path: str, name: str) -> None:
    """The gauge, the window title and hearth-serve show this, not a GGUF's general.name (a training run's label)."""
    from engine.catalog.model_files import known_name

    assert known_name(path) == name
