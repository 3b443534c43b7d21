"""The verdict in the seed's terms: use it, check it, or step up to 8-bit / don't quantize.

The thresholds sit next to each figure in the verdict's text, so a reader can
see how close a call was. They are calibrated on llama.cpp's published table
(Llama 3 8B, Wikitext-2): Q8_0 mean KLD 0.0014 / same top 97.7%, Q6_K 0.0055 /
96.0%, Q4_K_M 0.031 / 91.9%, Q2_K 0.445 / 71.1%: Q4_K_M is "fine", Q2_K is not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Level = Literal["fine", "check", "not good enough"]


@dataclass(frozen=True)
class Limits:
    mean_kld: float
    same_top_p: float
    json_lost: int  # JSON answers the reference got right and the candidate broke
    hard_dropped: float  # share of the hard questions the reference got right


FINE = Limits(mean_kld=0.05, same_top_p=0.90, json_lost=0, hard_dropped=0.10)
CHECK = Limits(mean_kld=0.15, same_top_p=0.80, json_lost=1, hard_dropped=0.25)


@dataclass(frozen=True)
class Evidence:
    quant: str
    mean_kld: float
    same_top_p: float
    json_questions: int
    json_reference_ok: int
    json_lost: int
    hard_reference_right: int
    hard_dropped: int


@dataclass(frozen=True)
class Verdict:
    level: Level
    text: str


@dataclass(frozen=True)
class _Finding:
    grade: int  # 0 within "fine", 1 within "check", 2 beyond both
    text: str  # the figure with the limit it was held against


LEVELS: tuple[Level, ...] = ("fine", "check", "not good enough")
OPENINGS = {"fine": "fine to use", "check": "usable, but try your own hard cases first", "not good enough": "not good enough"}


def judge(evidence: Evidence) -> Verdict:
    """The worst finding decides; it comes first in the text, each figure beside its limit."""
    findings = sorted(_findings(evidence), key=lambda finding: -finding.grade)
    level = LEVELS[findings[0].grade]
    text = f"{OPENINGS[level]}: " + ", ".join(finding.text for finding in findings)
    if level == "not good enough":
        text += f": {step_up(evidence.quant)}"
    return Verdict(level, text)


def _findings(e: Evidence) -> list[_Finding]:
    top_grade, top_limit = _graded(e.same_top_p, FINE.same_top_p, CHECK.same_top_p, percent=True, higher_is_better=True)
    kld_grade, kld_limit = _graded(e.mean_kld, FINE.mean_kld, CHECK.mean_kld, percent=False, higher_is_better=False)
    found = [
        _Finding(top_grade, f"keeps {e.same_top_p:.0%} of top tokens ({top_limit})"),
        _Finding(kld_grade, f"mean KLD {e.mean_kld:.4f} ({kld_limit})"),
        _hard(e),
    ]
    if e.json_questions:
        found.append(_json(e))
    return found


def _graded(value: float, fine: float, check: float, percent: bool, higher_is_better: bool) -> tuple[int, str]:
    good, bad = (">=", "<") if higher_is_better else ("<=", ">")
    fine_text, check_text = (f"{fine:.0%}", f"{check:.0%}") if percent else (f"{fine:g}", f"{check:g}")
    sign = 1 if higher_is_better else -1
    if sign * value >= sign * fine:
        return 0, f"{good} {fine_text}"
    if sign * value >= sign * check:
        return 1, f"{bad} {fine_text}, {good} {check_text}"
    return 2, f"{bad} {check_text}"


def _json(e: Evidence) -> _Finding:
    if not e.json_reference_ok:
        return _Finding(0, f"the reference answered none of the {e.json_questions} JSON questions in valid JSON")
    if e.json_lost <= FINE.json_lost:
        return _Finding(0, f"all {e.json_reference_ok} valid JSON answers of the reference still parse")
    lost = f"{e.json_lost} of the reference's {e.json_reference_ok} valid JSON answers no longer parse"
    if e.json_lost <= CHECK.json_lost:
        return _Finding(1, f"{lost} (fine: none, usable: {CHECK.json_lost})")
    return _Finding(2, f"{lost} (> {CHECK.json_lost})")


def _hard(e: Evidence) -> _Finding:
    if not e.hard_reference_right:
        return _Finding(0, "the reference got no hard question right, so none could be dropped")
    share = e.hard_dropped / e.hard_reference_right
    grade, limit = _graded(share, FINE.hard_dropped, CHECK.hard_dropped, percent=True, higher_is_better=False)
    return _Finding(grade, f"hard reasoning dropped {e.hard_dropped} of {e.hard_reference_right} ({limit})")


def bits(quant: str) -> int:
    """Roughly how many bits a weight keeps: 16 for F16/BF16, 8 for Q8_0/int8, 4 for Q4_K_M/nf4."""
    label = quant.upper()
    if label.startswith(("F32", "FP32")):
        return 32
    if label.startswith(("F16", "BF16", "FP16")):
        return 16
    if label.startswith("INT8"):
        return 8
    if label.startswith(("NF4", "FP4")):
        return 4
    found = re.match(r"I?Q(\d)", label)
    return int(found.group(1)) if found else 16


def step_up(quant: str) -> str:
    weight_bits = bits(quant)
    if weight_bits < 8:
        return "try 8-bit (Q8_0, or int8 with transformers)"
    return "don't quantize: keep the reference precision"
