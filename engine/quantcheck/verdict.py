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


def judge(evidence: Evidence) -> Verdict:
    level: Level = "fine" if _within(evidence, FINE) else "check" if _within(evidence, CHECK) else "not good enough"
    facts = ", ".join([_top_fact(evidence, level), _kld_fact(evidence, level), _json_fact(evidence), _hard_fact(evidence)])
    if level == "fine":
        return Verdict(level, f"fine to use: {facts}")
    if level == "check":
        return Verdict(level, f"usable, but try your own hard cases first: {facts}")
    return Verdict(level, f"not good enough: {facts}: {step_up(evidence.quant)}")


def _within(e: Evidence, limits: Limits) -> bool:
    hard_share = e.hard_dropped / e.hard_reference_right if e.hard_reference_right else 0.0
    return (
        e.mean_kld <= limits.mean_kld
        and e.same_top_p >= limits.same_top_p
        and e.json_lost <= limits.json_lost
        and hard_share <= limits.hard_dropped
    )


def _top_fact(e: Evidence, level: Level) -> str:
    limit = FINE.same_top_p if level == "fine" else CHECK.same_top_p
    sign = ">=" if e.same_top_p >= limit else "<"
    return f"keeps {e.same_top_p:.0%} of top tokens ({sign} {limit:.0%})"


def _kld_fact(e: Evidence, level: Level) -> str:
    limit = FINE.mean_kld if level == "fine" else CHECK.mean_kld
    sign = "<=" if e.mean_kld <= limit else ">"
    return f"mean KLD {e.mean_kld:.4f} ({sign} {limit})"


def _json_fact(e: Evidence) -> str:
    if not e.json_questions:
        return "no JSON questions"
    if not e.json_reference_ok:
        return f"the reference answered none of {e.json_questions} JSON questions in valid JSON"
    if not e.json_lost:
        return f"all {e.json_reference_ok} JSON answers the reference got right still parse"
    return f"{e.json_lost} of {e.json_reference_ok} JSON answers no longer parse"


def _hard_fact(e: Evidence) -> str:
    if not e.hard_reference_right:
        return "the reference got no hard question right, so none could be dropped"
    return f"hard reasoning dropped {e.hard_dropped} of {e.hard_reference_right}"


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
