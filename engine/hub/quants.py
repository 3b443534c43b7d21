"""Quantization types read from GGUF file names, and how much precision each keeps.

Names follow llama.cpp's file types (Q4_K_M, IQ4_XS, Q8_0, F16 ...); uploaders
put them in the file name, usually just before ".gguf" or the split suffix.
Bits per weight are llama.cpp's own figures for a 7B model (its quantize tool's
table); they order the files, they do not size them (the file size does that).
"""

from __future__ import annotations

import re

_QUANT = re.compile(r"(?:^|[-._ ])((?:UD-)?(?:I?Q[1-8](?:_[0-9A-Z]+)*|TQ[12]_0|MXFP4(?:_MOE)?|BF16|F16|FP16|F32|FP32))"
                    r"(?=$|[-._ ])", re.IGNORECASE)
BITS_PER_WEIGHT = {
    "F32": 32.0, "BF16": 16.0, "F16": 16.0,
    "Q8_0": 8.5, "Q6_K": 6.56, "Q5_K_M": 5.69, "Q5_K_S": 5.54, "Q5_1": 6.0, "Q5_0": 5.5,
    "Q4_K_M": 4.89, "Q4_K_S": 4.58, "Q4_1": 5.0, "Q4_0": 4.5, "IQ4_NL": 4.5, "IQ4_XS": 4.25, "MXFP4": 4.25,
    "Q3_K_L": 4.27, "Q3_K_M": 3.91, "Q3_K_S": 3.5, "IQ3_M": 3.66, "IQ3_S": 3.44, "IQ3_XS": 3.3, "IQ3_XXS": 3.06,
    "Q2_K": 3.35, "Q2_K_S": 2.96, "IQ2_M": 2.7, "IQ2_S": 2.5, "IQ2_XS": 2.31, "IQ2_XXS": 2.06,
    "IQ1_M": 1.75, "IQ1_S": 1.56, "TQ2_0": 2.06, "TQ1_0": 1.69,
}
# K-quants of one size beat the older formats of about the same size (llama.cpp's perplexity tables)
QUALITY_ORDER = ["BF16", "F16", "F32", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K_S",
                 "IQ4_NL", "IQ4_XS", "MXFP4", "Q4_1", "Q4_0", "Q3_K_L", "Q3_K_M", "IQ3_M", "IQ3_S", "Q3_K_S",
                 "IQ3_XS", "IQ3_XXS", "Q2_K", "Q2_K_S", "IQ2_M", "IQ2_S", "IQ2_XS", "IQ2_XXS", "TQ2_0", "IQ1_M",
                 "TQ1_0", "IQ1_S"]


def quant_from_name(filename: str) -> str:
    """'Qwen2.5-7B-Instruct-Q4_K_M-00001-of-00002.gguf' -> 'Q4_K_M'; '' when the name does not say."""
    stem = filename.rsplit("/", 1)[-1]
    stem = re.sub(r"-\d{5}-of-\d{5}\.gguf$|\.gguf$", "", stem, flags=re.IGNORECASE)
    found = _QUANT.findall(stem)
    if not found:
        return ""
    name = found[-1].upper()  # the last match: "Q4_K_M" in "Model-Q8-chat-Q4_K_M" names the file type
    return {"FP16": "F16", "FP32": "F32"}.get(name, name)


def base_quant(quant: str) -> str:
    """'UD-Q4_K_XL' -> 'Q4_K_XL'; unsloth's dynamic quants are named after the type they start from."""
    return quant.upper().removeprefix("UD-")


def bits_per_weight(quant: str) -> float | None:
    name = base_quant(quant)
    if name in BITS_PER_WEIGHT:
        return BITS_PER_WEIGHT[name]
    match = re.match(r"I?Q(\d)", name)
    return float(match.group(1)) + 0.5 if match else None


def precision_rank(quant: str, size_bytes: int = 0) -> tuple[float, int]:
    """Sort key, most precise first: llama.cpp's quality order; a name not in it goes where its bits put it."""
    name = base_quant(quant)
    if name in QUALITY_ORDER:
        return (QUALITY_ORDER.index(name), -size_bytes)
    bits = bits_per_weight(name) or 0.0
    below = next((i for i, known in enumerate(QUALITY_ORDER) if BITS_PER_WEIGHT[known] <= bits), len(QUALITY_ORDER))
    return (below - 0.5, -size_bytes)


def precision_label(quant: str) -> str:
    """'full precision (F16)', '8-bit (Q8_0)', '4-bit (Q4_K_M)'."""
    name = base_quant(quant)
    if name in ("F32", "F16", "BF16", "NONE"):
        return f"full precision ({quant})" if name != "NONE" else "full precision"
    if name in ("INT8",):
        return "8-bit (bitsandbytes int8)"
    if name in ("NF4", "FP4"):
        return f"4-bit (bitsandbytes {name.lower()})"
    bits = re.match(r"I?Q(\d)|TQ(\d)|MXFP(\d)", name)
    digits = next((group for group in bits.groups() if group), None) if bits else None
    return f"{digits}-bit ({quant})" if digits else quant or "unknown quantization"
