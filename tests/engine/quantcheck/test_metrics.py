"""The quantization check's arithmetic and inputs, by hand: KLD, percentiles, chunks, storage, answers."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from engine.quantcheck import answers as qa
from engine.quantcheck.errors import InputError, TokenizerMismatch
from engine.quantcheck.inputs import builtin_questions, builtin_text, read_questions
from engine.quantcheck.report import write_atomically
from engine.quantcheck.metrics import (
    Agreement, chunk_tokens, kl_divergence, log_softmax, percentile, reference_rows, scored_range,
)
from engine.quantcheck.store import ReferenceStore
from engine.quantcheck.verdict import Evidence, bits, judge
from engine.quantcheck.vocabulary import Vocabulary, refuse_unless_same

REF_LOGITS = [2.0, 1.0, 0.1]
CAND_LOGITS = [1.5, 1.2, 0.3]


def _softmax_by_hand(logits: list[float]) -> list[float]:
    exps = [math.exp(x) for x in logits]
    return [e / sum(exps) for e in exps]


def test_kld_of_a_three_token_toy_equals_the_sum_done_by_hand() -> None:
    p, q = _softmax_by_hand(REF_LOGITS), _softmax_by_hand(CAND_LOGITS)
    by_hand = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))
    # written out: .6590 ln(.6590/.4897) + .2424 ln(.2424/.3628) + .0986 ln(.0986/.1475)
    assert by_hand == pytest.approx(0.05821, abs=1e-5)
    module = kl_divergence(log_softmax(np.array([REF_LOGITS])), log_softmax(np.array([CAND_LOGITS])))
    assert module[0] == pytest.approx(by_hand, rel=1e-12)
    reverse = kl_divergence(log_softmax(np.array([CAND_LOGITS])), log_softmax(np.array([REF_LOGITS])))
    assert reverse[0] != pytest.approx(by_hand, rel=1e-3), "KL is not symmetric: the reference must come first"


def test_the_stored_float16_path_gives_the_same_kld_ppl_and_same_top() -> None:
    targets = np.array([0, 2])
    ref = np.array([REF_LOGITS, [0.0, 0.5, 3.0]], dtype=np.float32)
    cand = np.array([CAND_LOGITS, [0.0, 3.1, 3.0]], dtype=np.float32)
    agreement = Agreement()
    agreement.add(reference_rows(ref, targets), cand, targets)
    summary = agreement.summary()
    p, q = _softmax_by_hand(REF_LOGITS), _softmax_by_hand(CAND_LOGITS)
    p2, q2 = _softmax_by_hand([0.0, 0.5, 3.0]), _softmax_by_hand([0.0, 3.1, 3.0])
    kld = [sum(a * math.log(a / b) for a, b in zip(p, q)), sum(a * math.log(a / b) for a, b in zip(p2, q2))]
    assert summary.mean_kld == pytest.approx(sum(kld) / 2, rel=1e-3)
    assert summary.same_top_p == 0.5  # row 1: both rank token 0 first; row 2: token 2 vs token 1
    assert summary.ppl == pytest.approx(math.exp(-(math.log(q[0]) + math.log(q2[2])) / 2), rel=1e-6)  # float32 logits
    assert summary.ppl_reference == pytest.approx(math.exp(-(math.log(p[0]) + math.log(p2[2])) / 2), rel=1e-6)
    assert summary.delta_ppl == pytest.approx(summary.ppl - summary.ppl_reference)


def test_a_model_against_itself_has_zero_kld_despite_float16_storage() -> None:
    rng = np.random.default_rng(0)
    logits = (rng.standard_normal((40, 5000)) * 4).astype(np.float32)
    targets = rng.integers(0, 5000, 40)
    agreement = Agreement()
    agreement.add(reference_rows(logits, targets), logits, targets)
    summary = agreement.summary()
    assert abs(summary.mean_kld) < 1e-12 and abs(summary.p99_kld) < 1e-12
    assert summary.same_top_p == 1.0 and summary.delta_ppl == pytest.approx(0.0, abs=1e-9)
    uncorrected = kl_divergence(log_softmax(logits).astype(np.float16), log_softmax(logits))
    assert np.abs(uncorrected).max() > 1e-6, "float16 alone would not give 0: the rounding term matters"


def test_percentile_interpolates_as_llama_perplexity_does() -> None:
    values = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    assert percentile(values, 0.99) == pytest.approx(4.96)  # 0.99 * 4 = 3.96: 4 + 0.96 * (5 - 4)
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 0.0) == 1.0 and percentile(values, 1.0) == 5.0


def test_chunks_are_whole_and_only_their_second_half_is_scored() -> None:
    tokens = list(range(100, 1100))
    chunks = chunk_tokens(tokens, 256, bos=1)
    assert len(chunks) == 3  # 1,000 tokens: three whole chunks, the rest dropped
    assert [c[0] for c in chunks] == [1, 1, 1] and chunks[1][1:3] == [357, 358]
    assert chunk_tokens(tokens, 256, bos=None)[1][0] == 356
    assert len(chunk_tokens(tokens, 256, bos=None, limit=2)) == 2
    assert scored_range(512) == (256, 511)  # 255 positions, each predicting the next token


def test_the_store_reads_back_what_it_wrote_and_leaves_no_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    chunks = [rng.standard_normal((7, 64)).astype(np.float32) for _ in range(3)]
    with ReferenceStore(64, tmp_path) as store:
        for logits in chunks:
            store.append(reference_rows(logits, np.zeros(7, dtype=np.int64)))
        assert list(tmp_path.iterdir()) == [store.folder]
        back = store.chunk(1)
        assert np.array_equal(back.logprobs, log_softmax(chunks[1]).astype(np.float16))
        assert np.array_equal(back.top, chunks[1].argmax(axis=1))
        nll = np.concatenate([-log_softmax(c)[:, 0] for c in chunks])
        assert store.perplexity() == pytest.approx(math.exp(nll.mean()))
    assert list(tmp_path.iterdir()) == []


def test_vocabularies_that_differ_are_refused_with_what_differs() -> None:
    reference = Vocabulary((b"a", b"b", b"c"), (("bos", 0),))
    refuse_unless_same(reference, Vocabulary((b"a", b"b", b"c"), (("bos", 0),)), "ref.gguf", "same.gguf")
    with pytest.raises(TokenizerMismatch, match=r"vocabulary of 2 tokens, the reference's has 3"):
        refuse_unless_same(reference, Vocabulary((b"a", b"b")), "ref.gguf", "small.gguf")
    with pytest.raises(TokenizerMismatch, match=r"1 of its 3 tokens are other texts \(token 1 is 'x' there, 'b'"):
        refuse_unless_same(reference, Vocabulary((b"a", b"x", b"c"), (("bos", 0),)), "ref.gguf", "other.gguf")
    with pytest.raises(TokenizerMismatch, match="other special tokens"):
        refuse_unless_same(reference, Vocabulary((b"a", b"b", b"c"), (("bos", 2),)), "ref.gguf", "bos.gguf")


def test_the_builtin_inputs_are_what_the_issue_asks_for() -> None:
    questions = builtin_questions()
    kinds = [q.kind for q in questions]
    assert len(questions) == 30 and kinds.count("json") == 5
    assert {"fact", "arithmetic", "reasoning", "instruction"} <= set(kinds)
    assert len(builtin_text().split()) > 3000  # a few thousand tokens


def test_a_users_questions_one_a_line_or_jsonl(tmp_path: Path) -> None:
    plain = tmp_path / "q.txt"
    plain.write_text("\n".join(f"Question {i}?" for i in range(19)) + "\nAnswer in JSON: a list.\n", encoding="utf-8")
    questions = read_questions(plain)
    assert len(questions) == 20 and questions[-1].wants_json and not questions[0].wants_json
    lines = tmp_path / "q.jsonl"
    lines.write_text('{"prompt": "2+2?", "kind": "arithmetic", "expected": "4"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="has 1 questions; give 20 to 50"):
        read_questions(lines)
    only = read_questions(lines, check_count=False)[0]
    assert only.hard and only.expected == ("4",)
    lines.write_text('{"prompt": "x", "kind": "poetry"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="line 1: kind 'poetry' is not one of"):
        read_questions(lines, check_count=False)


def test_answers_compared_json_parsed_and_right_answers_found() -> None:
    assert qa.same_start(list(range(70)), list(range(64)) + [0] * 6)
    assert not qa.same_start([1, 2, 3], [1, 2, 4])
    assert qa.similarity([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0 and qa.similarity([1, 2, 3, 4], [1, 2, 9, 9]) == 0.5
    assert qa.parses_as_json('```json\n{"capital": "Tokyo"}\n```') and qa.parses_as_json("[2, 3, 5, 7, 11]")
    assert not qa.parses_as_json('Sure! {"capital": "Tokyo"}') and not qa.parses_as_json('{"a": 1')
    question = builtin_questions()[7]  # "What is 7 plus 5?"
    assert qa.is_right("7 plus 5 is 12.", question) and not qa.is_right("It is 112.", question)


def test_the_verdict_names_its_thresholds_and_steps_up_in_the_seeds_terms() -> None:
    good = Evidence("Q4_K_M", 0.031, 0.919, 5, 5, 0, 10, 0)
    assert judge(good).level == "fine"
    assert "keeps 92% of top tokens (>= 90%)" in judge(good).text and "(<= 0.05)" in judge(good).text
    bad4 = judge(Evidence("Q4_0", 0.25, 0.70, 5, 5, 2, 10, 4))
    assert bad4.level == "not good enough" and "hard reasoning dropped 4 of 10" in bad4.text
    assert bad4.text.endswith("try 8-bit (Q8_0, or int8 with transformers)")
    assert judge(Evidence("int8", 0.25, 0.70, 0, 0, 0, 0, 0)).text.endswith("don't quantize: keep the reference precision")
    assert judge(Evidence("nf4", 0.10, 0.85, 5, 5, 1, 10, 2)).level == "check"
    close_but_dropped = judge(Evidence("Q8_0", 0.0087, 0.95, 5, 2, 0, 6, 3)).text
    assert close_but_dropped.startswith("not good enough: hard reasoning dropped 3 of 6 (> 25%), keeps 95% of top")
    assert [bits(q) for q in ("Q8_0", "Q4_K_M", "nf4, compute bf16", "int8", "BF16", "Q2_K - Medium")] == [8, 4, 4, 8, 16, 2]


def test_a_report_is_written_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out" / "report.json"
    write_atomically(target, '{"ok": 1}')
    assert json.loads(target.read_text(encoding="utf-8")) == {"ok": 1}

    def interrupted(source: str, destination: str) -> None:
        raise KeyboardInterrupt  # Ctrl+C between writing and renaming

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, '{"ok": 2}')
    assert json.loads(target.read_text(encoding="utf-8")) == {"ok": 1}, "the old file stays intact"
    assert [p.name for p in target.parent.iterdir()] == ["report.json"], "no temporary file is left"
