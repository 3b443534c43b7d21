"""The quantization check on the transformers backend: the tiny fp32 model against itself through bitsandbytes.

`tiny_model` (tests/engine/conftest.py) is the tiny Llama folder built in code.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

# Skipped where the hf extra is missing, without importing it here: bitsandbytes alone takes ~5 s to
# import (it pulls in torch's compiler), which every run of the model-free tier would pay at collection.
if not all(importlib.util.find_spec(name) for name in ("torch", "transformers", "bitsandbytes")):
    pytest.skip("needs the hf extra (torch, transformers, bitsandbytes)", allow_module_level=True)

from engine.quantcheck.check import CheckSpec, ModelSpec, run_check  # noqa: E402
from engine.quantcheck.errors import TokenizerMismatch  # noqa: E402
from engine.quantcheck.inputs import Question, builtin_text  # noqa: E402

pytestmark = [pytest.mark.hf, pytest.mark.slow]


def _spec(reference: str, candidates: tuple[ModelSpec, ...], questions: tuple[Question, ...] = ()) -> CheckSpec:
    return CheckSpec(ModelSpec(reference, "hf"), candidates, builtin_text(), questions, context_length=128, chunks=3,
                     max_answer_tokens=8)


def test_nf4_departs_further_than_int8_from_fp32(tiny_model: str) -> None:
    candidates = tuple(ModelSpec(tiny_model, "hf", quant) for quant in ("none", "int8", "nf4"))
    questions = (Question("Hello! How are you today?"),)
    report = run_check(_spec(tiny_model, candidates, questions), lambda f, m: None, lambda: False)
    same, int8, nf4 = report.candidates
    assert report.reference.quant == "fp32" and [c.quant for c in (int8, nf4)] == ["int8", "nf4, compute fp32"]
    assert abs(same.agreement.mean_kld) < 1e-9 and same.agreement.same_top_p == 1.0
    assert same.answers_same_fraction == 1.0
    # Measured here: int8 0.0035, NF4 0.33.
    assert 0.0 < int8.agreement.mean_kld and int8.agreement.mean_kld * 10 < nf4.agreement.mean_kld
    assert int8.agreement.same_top_p > nf4.agreement.same_top_p + 0.2
    assert nf4.cost.footprint_bytes < int8.cost.footprint_bytes < report.reference.cost.footprint_bytes
    assert int8.cost.size_bytes == int8.cost.footprint_bytes, "for bitsandbytes the size is what memory holds"


def test_a_folder_with_another_tokenizer_is_refused(tiny_model: str, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(tiny_model, other)
    tokenizer = json.loads((other / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tokenizer["model"]["vocab"]
    first, second = [piece for piece, index in vocab.items() if index in (200, 201)]
    vocab[first], vocab[second] = vocab[second], vocab[first]
    (other / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    with pytest.raises(TokenizerMismatch, match=r"has a different tokenizer.*2 of its \d+ tokens are other texts"):
        run_check(_spec(tiny_model, (ModelSpec(str(other), "hf"),)), lambda f, m: None, lambda: False)
