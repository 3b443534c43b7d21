"""`python -m engine.bench --shape`: the random-weight file of a shape (written, requantized, cached), the limits'
arithmetic, and the "size" row's JSON and table. The figures themselves live in the bench, not here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import pytest

from engine import bench
from engine.bench import shapes, size
from engine.bench.limits import bytes_per_token, flop_per_token
from engine.bench.size import size_table
from engine.randweights.gguf_model import LlamaShape, shape_of


@pytest.mark.slow  # writes (or reads) a GGUF of 49,152 tokens: seconds, so the model tier
def test_the_tiny_shape_is_written_in_q8_0_with_its_layers_width_heads_and_the_bundled_vocabulary() -> None:
    path = shapes.shape_model("tiny", "Q8_0", log=lambda line: None)
    reader = gguf.GGUFReader(path)
    shape = shape_of(reader)
    assert (shape.layers, shape.embedding, shape.feed_forward, shape.heads, shape.kv_heads, shape.vocab) == (
        2, 256, 512, 4, 2, 49152)
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    assert types["blk.1.ffn_down.weight"] == "Q8_0" and types["blk.0.attn_norm.weight"] == "F32"
    assert reader.get_field("general.file_type").contents() == shapes.Q8_0_FILE_TYPE
    assert path.name == "tiny-random-Q8_0.gguf" and path.parent == shapes.shape_folder()


@pytest.mark.slow  # writes (or reads) a GGUF of 49,152 tokens: seconds, so the model tier
def test_q4_k_m_is_llama_cpps_own_requantization_and_the_step_file_is_gone() -> None:
    path = shapes.shape_model("tiny", "Q4_K_M", threads=1, log=lambda line: None)
    reader = gguf.GGUFReader(path)
    types = {t.name: t.tensor_type.name for t in reader.tensors}
    # llama-quantize's rules: a tied embedding is the output layer, in Q6_K; the matrices in Q4_K (or Q6_K)
    assert types["token_embd.weight"] == "Q6_K"
    assert types["blk.0.attn_q.weight"] == "Q4_K"
    assert reader.get_field("general.file_type").contents() == 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    assert sorted(p.name for p in path.parent.iterdir() if "Q4_K_M" in p.name) == [path.name]
    written = path.stat().st_mtime_ns
    assert shapes.shape_model("tiny", "Q4_K_M", log=lambda line: None).stat().st_mtime_ns == written  # cached


@pytest.mark.slow  # writes (or reads) a GGUF of 49,152 tokens: seconds, so the model tier
def test_the_tokenizer_is_padded_to_the_real_vocabulary_with_control_tokens() -> None:
    from engine.catalog.default_model import default_model_path

    reader = gguf.GGUFReader(default_model_path())
    fields = shapes.padded_vocabulary(reader, 49152 + 3, 49152)
    tokens, kinds = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"]
    assert len(tokens) == len(kinds) == 49155
    assert tokens[-3:] == ["<|hearth_unused_49152|>", "<|hearth_unused_49153|>", "<|hearth_unused_49154|>"]
    assert kinds[-3:] == [shapes.CONTROL_TOKEN] * 3 and tokens[:2] == list(reader.get_field("tokenizer.ggml.tokens").contents())[:2]
    assert shapes.padded_vocabulary(reader, 49152, 49152) == {}
    with pytest.raises(ValueError, match="smaller than the bundled"):
        shapes.padded_vocabulary(reader, 1000, 49152)


def test_the_real_shapes_have_their_configs_numbers() -> None:
    one_b, eight_b = shapes.SHAPES["Llama-3.2-1B"], shapes.SHAPES["Llama-3.1-8B"]
    assert (one_b.layers, one_b.embedding, one_b.head_dim, one_b.vocab, one_b.tied) == (16, 2048, 64, 128256, True)
    assert eight_b.tied is False and eight_b.head_dim == 128
    assert shapes.SHAPES["Qwen2.5-1.5B"].vocab == 151936
    # the 1B's 128k output layer is a fifth of its parameters: why the vocabulary is padded to the real size
    assert 0.2 < one_b.vocab * one_b.embedding / one_b.n_params < 0.3


def test_a_token_reads_the_output_layer_but_one_row_of_an_untied_embedding() -> None:
    assert bytes_per_token(1000, 300, True, 10, 5) == 1050
    assert bytes_per_token(1000, 300, False, 10, 5) == 750
    assert flop_per_token(100, 2, 8, 10) == 200 + 4 * 2 * 8 * 10


ROW: dict[str, Any] = {
    "shape": "Llama-3.2-1B", "quant": "Q4_K_M", "file_bytes": 3 << 29, "decode_tok_s": {"1": 20.0, "4": 40.5, "8": 50.0},
    "highlevel_tok_s": 19.0, "peer_server_4_tok_s": 18.2, "decode_limit_tok_s": 30.0, "prompt_tok_s": 45.0,
    "prompt_limit_tok_s": 44.0, "ttft_ms_p99_4": 2500.0, "estimate_error": {"after_load": 0.031, "kv_full": -0.012},
    "step_cost_ratio": {"1": 1.1, "2": 1.2, "4": 1.5, "8": 2.25}, "threads": 2, "load_average": [1.0, 1.1, 1.2],
    "load_average_after": [1.5, 1.2, 1.2], "attention": "flash attention off (auto)",
}


def test_the_table_has_one_line_per_row_and_a_dash_for_a_part_not_run() -> None:
    partial = {key: ROW[key] for key in ("shape", "quant", "file_bytes", "decode_limit_tok_s")}
    text = size_table({"size": [ROW, partial], "max_tokens": 64, "note": "random weights"})
    lines = text.splitlines()
    assert "random weights" in lines[0] and "64 tokens" in lines[0]
    assert lines[2].split(" | ") == ["Llama-3.2-1B", "Q4_K_M", "1.50 GiB", "20.0/40.5/50.0", "19.0", "18.2", "30.0",
                                     "45.0", "44.0", "2500", "+3.1% / -1.2%", "1:1.10 2:1.20 4:1.50 8:2.25"]
    assert "load average before [1.0, 1.1, 1.2]" in lines[3]
    assert lines[4].split(" | ")[3:6] == ["-", "-", "-"] and lines[4].split(" | ")[6] == "30.0"


def test_each_memory_figure_is_checked_against_its_own_measurement() -> None:
    figures = {"estimated_bytes": 2_000, "estimated_after_load_bytes": 1_650, "measured_bytes": 1_600}
    row = size.memory_row(figures, 2_050)
    assert row["estimate_error"] == {"after_load": 1_650 / 1_600 - 1, "kv_full": 2_000 / 2_050 - 1}
    assert (row["rss_after_load_bytes"], row["rss_kv_full_bytes"], row["estimated_after_load_bytes"]) == \
        (1_600, 2_050, 1_650)
    assert "estimate_error" not in size.memory_row({"measured_bytes": 1_600}, 2_050)  # no estimate: no error


def test_shape_refuses_a_model_path_and_an_unknown_part(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.main(["--shape", "tiny", "--size-parts", "decode,nonsense"])
    assert "--size-parts takes some of" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--shape", "tiny", "--quant", "nf4"])
    assert "--shape wants a GGUF type" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_size_run_writes_the_row_of_every_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "size.json"
    argv = ["--shape", "tiny", "--quant", "Q8_0", "--max-tokens", "4", "--repeat", "1", "--threads", "1",
            "--size-parts", "decode,prompt,memory,highlevel,steps", "--json", str(out)]
    assert bench.main(argv) == 0, capsys.readouterr().err
    [row] = json.loads(out.read_text())["size"]
    assert row["shape"] == "tiny" and row["quant"] == "Q8_0" and row["file_bytes"] == shapes.shape_path(
        "tiny", "Q8_0").stat().st_size
    assert set(row["decode_tok_s"]) == {"1", "4", "8"} and min(row["decode_tok_s"].values()) > 0
    assert 1900 < row["prompt_tokens"] < 2200 and row["prompt_tok_s"] > 0
    assert 3800 < row["filled_tokens"] < size.CONTEXT  # one chat filled nearly to its context for the memory figure
    assert row["highlevel_tok_s"] > 0 and 0 < row["ttft_ms_p50_4"] <= row["ttft_ms_p99_4"]
    assert set(row["step_cost_ratio"]) == {"1", "2", "4", "8"} and min(row["step_cost_ratio"].values()) > 0
    assert row["estimated_bytes"] > row["estimated_after_load_bytes"] > 0
    assert set(row["estimate_error"]) == {"after_load", "kv_full"}
    assert "peer_server_4_tok_s" not in row and "decode_limit_tok_s" not in row  # parts not asked for
    assert capsys.readouterr().out.splitlines()[2].startswith("tiny | Q8_0 | ")


def test_an_unknown_shape_or_quantization_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown shape 'Llama-9B'"):
        shapes.shape_model("Llama-9B", "Q8_0")
    with pytest.raises(ValueError, match="unknown quantization 'Q5_K'"):
        shapes.shape_model("tiny", "Q5_K")
    assert isinstance(shapes.SHAPES["tiny"], LlamaShape)
