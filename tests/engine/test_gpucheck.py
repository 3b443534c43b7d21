"""`python -m engine.gpucheck`: the dry run of every step on the CPU, the plan's checks, the sources and the models."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from engine.gpucheck import cli, plan
from engine.gpucheck.prepare import keep_member, strip_sdist

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.heavy  # every step of the GPU check, each in its own process, with real (random-weight) models
def test_the_dry_run_runs_every_step_on_cpu_stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("llama_cpp")
    monkeypatch.chdir(REPO)  # the children import engine from the checkout
    out = tmp_path / "out"
    code = cli.main(["--dry-run", "--part", "all", "--out", str(out), "--folder", str(tmp_path / "not-prepared")])
    data = json.loads((out / "gpucheck-all.json").read_text())
    steps = {step["name"]: step for step in data["steps"]}
    failed = {name: step["error"] for name, step in steps.items() if step["status"] != "ok"}
    assert code == 0 and not failed, failed
    assert data["dry_run"] and data["machine"]["python"]
    assert steps["load libllama into llama-cpp-python"]["figures"]["gpu_offload"] is False  # the CPU build
    models = steps["random-weights GGUFs"]["figures"]
    assert models["default"]["n_params"] < models["large"]["n_params"]
    engine = [step["figures"] for name, step in steps.items() if name.startswith("engine: ")]
    assert [e["attention"] for e in engine] == ["flash attention on"] * 2 + ["flash attention off", "flash attention on"]
    for case in engine:
        assert case["gpu_offload"] is False and case["device"] == "cpu" and "CPU only" in case["notes"][0]
        assert [run["generated_tokens"] for run in case["runs"]] == [8, 16]
        assert case["memory"]["estimate_device_bytes"] > 0 and case["memory"]["gauge"] == "RAM (process RSS)"
    nf4 = steps["transformers nf4"]["figures"]
    assert nf4["engine_fast"]["decode"] == "static cache, eager (CUDA graphs need a GPU)"
    assert nf4["engine_eager"]["decode"] == "eager"
    assert nf4["engine_fast"]["kv_cache_bytes"] > nf4["engine_eager"]["kv_cache_bytes"]  # the spare row
    for engine_run in (nf4["engine_fast"], nf4["engine_eager"]):
        assert [run["generated_tokens"] for run in engine_run["runs"]] == [6, 12]
    assert all(nf4["baselines"][key] > 0 for key in ("generate_tok_s", "generate_static_tok_s", "generate_batch_tok_s"))
    assert {"one_chat_over_generate", "many_over_generate_batch", "peak_over_budget"} <= set(nf4["goals"])
    log = (out / "gpucheck-all.log").read_text()
    assert "== transformers nf4: ok" in log and "GPUCHECK-RESULT" in log


def sdist(path: Path, names: list[str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name in names:
            data = name.encode()
            info = tarfile.TarInfo(f"llama_cpp_python-0.3.36/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_sources_keep_what_a_cuda_build_reads(tmp_path: Path) -> None:
    kept_names = ["CMakeLists.txt", "llama_cpp/llama_cpp.py", "vendor/llama.cpp/CMakeLists.txt",
                  "vendor/llama.cpp/src/llama.cpp", "vendor/llama.cpp/ggml/src/ggml-alloc.c",
                  "vendor/llama.cpp/ggml/src/ggml-cuda/fattn.cu", "vendor/llama.cpp/ggml/src/ggml-cpu/ops.cpp",
                  "vendor/llama.cpp/vendor/nlohmann/json.hpp", "vendor/llama.cpp/ggml/include/ggml-vulkan.h"]
    dropped_names = ["docs/index.md", "tests/test_llama.py", "vendor/llama.cpp/models/ggml-vocab.gguf",
                     "vendor/llama.cpp/tools/server/server.cpp", "vendor/llama.cpp/gguf-py/gguf/gguf.py",
                     "vendor/llama.cpp/ggml/src/ggml-vulkan/ggml-vulkan.cpp", "vendor/llama.cpp/media/logo.png",
                     "vendor/llama.cpp/ggml/src/ggml-metal/ggml-metal.m", ".git/HEAD"]
    source = sdist(tmp_path / "sdist.tar.gz", kept_names + dropped_names)
    assert strip_sdist(source, tmp_path / "cuda.tar.gz") == (len(kept_names), len(dropped_names))
    with tarfile.open(tmp_path / "cuda.tar.gz") as tar:
        assert sorted(m.name.split("/", 1)[1] for m in tar) == sorted(kept_names)
    assert keep_member("llama_cpp_python-0.3.36/")


def prepared(folder: Path) -> plan.Manifest:
    for relative, size in (("common/a.whl", 1000), ("llama/src.tar.gz", 3000), ("hf/b.whl", 5000)):
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(b"x" * size)
    manifest = plan.Manifest([plan.artifact(folder, name, "test") for name in
                              ("common/a.whl", "llama/src.tar.gz", "hf/b.whl")], "test")
    manifest.save(folder)
    return manifest


def test_the_plan_carries_each_part_its_own_folders(tmp_path: Path) -> None:
    manifest = prepared(tmp_path / ".gpucheck")
    runs = {run.part: run for run in plan.run_plans(manifest.artifacts, REPO)}
    assert runs["llama"].carry == (".gpucheck/common", ".gpucheck/llama") and runs["llama"].carried_bytes == 4000
    assert runs["hf"].carry == (".gpucheck/common", ".gpucheck/hf") and runs["hf"].carried_bytes == 6000
    assert runs["hf"].tree_bytes == plan.tree_bytes(REPO) > 100_000
    assert runs["hf"].command == "PYTHONUNBUFFERED=1 python3 -m engine.gpucheck --part hf --out $OUT"
    assert plan.check(tmp_path / ".gpucheck", REPO) == []


def test_the_plan_check_finds_missing_changed_and_oversized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / ".gpucheck"
    assert "run `python -m engine.gpucheck --prepare` first" in plan.check(folder, REPO)[0]
    prepared(folder)
    (folder / "hf/b.whl").unlink()
    (folder / "llama/src.tar.gz").write_bytes(b"y" * 3000)
    assert plan.check(folder, REPO) == ["llama/src.tar.gz changed since it was prepared", "hf/b.whl is missing"]
    assert plan.check(folder, REPO, ("hf",)) == ["hf/b.whl is missing"]  # what the hf run carries, no more
    monkeypatch.setattr(plan, "CARRY_LIMIT_BYTES", plan.tree_bytes(REPO) + 2000)
    prepared(folder)
    problems = plan.check(folder, REPO)
    assert [p.split(" carries ")[0] for p in problems] == ["run llama", "run hf"]
    assert all(p.endswith("MiB limit") for p in problems)


def test_a_copy_without_git_counts_every_file_but_the_prepared_folder(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "x.py").write_bytes(b"a" * 100)
    (tmp_path / ".gpucheck" / "hf").mkdir(parents=True)
    (tmp_path / ".gpucheck" / "hf" / "big.whl").write_bytes(b"b" * 5000)
    assert plan.tree_bytes(tmp_path) == 100


def test_the_skeleton_and_a_random_file_of_the_default_models_shape(default_model: str, tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    from engine.randweights import gguf_model

    real = gguf.GGUFReader(default_model)  # each read of a 49k-token vocabulary takes seconds: once per file here
    skeleton = gguf_model.write_skeleton(default_model, tmp_path / "skeleton.gguf", reader=real)
    assert skeleton.stat().st_size < 3 << 20
    kept = gguf.GGUFReader(skeleton)
    assert not kept.tensors
    for key in ("tokenizer.ggml.tokens", "tokenizer.chat_template", "llama.block_count"):
        assert kept.get_field(key).contents() == real.get_field(key).contents()
    shape = gguf_model.shape_of(kept)
    assert (shape.layers, shape.embedding, shape.kv_heads, shape.vocab, shape.tied) == (30, 576, 3, 49152, True)
    expected = sorted((t.name, tuple(int(n) for n in t.shape), t.tensor_type.name) for t in real.tensors)
    ours = gguf_model.llama_tensors(shape, gguf_model.skeleton_types(kept))
    assert sorted((t.name, t.shape, t.type) for t in ours) == expected
    tiny = gguf_model.scaled(shape, layers=1, embedding=64, feed_forward=128, heads=2, kv_heads=1)
    written = gguf.GGUFReader(gguf_model.write_random(skeleton, tmp_path / "tiny.gguf", tiny, reader=kept))
    tensors = {t.name: t for t in written.tensors}
    assert written.get_field("llama.embedding_length").contents() == 64
    assert (tensors["blk.0.attn_norm.weight"].data == 1.0).all()
    assert tensors["blk.0.ffn_up.weight"].tensor_type.name == "Q4_1"
    blocks = gguf.quants.dequantize(tensors["blk.0.ffn_up.weight"].data, tensors["blk.0.ffn_up.weight"].tensor_type)
    assert 0.015 < float(blocks.std()) < 0.025 and abs(float(blocks.mean())) < 0.002
