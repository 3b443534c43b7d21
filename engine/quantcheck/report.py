"""What a check found: per-question results, per-model costs, and the report in its three forms.

`to_json()` is the documented shape (`--json OUT`, the dialog's JSON export);
`to_saved()` / `from_saved()` keep everything, answers included, for the
dialog to open again; `table()` is what the command line prints and
`markdown()` what the dialog exports. `write_atomically` puts any of them on
disk whole or not at all.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.quantcheck.metrics import TokenAgreement
from engine.quantcheck.verdict import Verdict
from engine.units import format_bytes

SAVED_FORMAT = "hearth-quantcheck"
SAVED_VERSION = 1


@dataclass(frozen=True)
class QuestionResult:
    prompt: str
    kind: str
    reference_answer: str
    answer: str
    same: bool  # the first 64 tokens are identical
    similarity: float  # 0..1 over the whole answers' tokens
    reference_right: bool | None = None  # None: no expected answer given
    right: bool | None = None
    reference_json: bool | None = None  # None: not a JSON question
    json_ok: bool | None = None


@dataclass(frozen=True)
class ModelCost:
    size_bytes: int  # the GGUF file; for bitsandbytes modes the weights' memory footprint
    footprint_bytes: int  # the weights in memory
    memory_bytes: int  # how much this process grew while the model was loaded and used
    tok_s: float  # greedy answers, one chat at a time
    prefill_tok_s: float  # the text chunks
    load_s: float


@dataclass(frozen=True)
class ReferenceResult:
    path: str
    quant: str
    ppl: float
    cost: ModelCost


@dataclass(frozen=True)
class CandidateResult:
    path: str
    quant: str
    agreement: TokenAgreement
    cost: ModelCost
    questions: tuple[QuestionResult, ...]
    verdict: Verdict

    @property
    def answers_same_fraction(self) -> float | None:
        return _share(sum(q.same for q in self.questions), len(self.questions))

    @property
    def answer_similarity(self) -> float:
        """Mean similarity of the answers that are not the same (1.0 when all are)."""
        rest = [q.similarity for q in self.questions if not q.same]
        return sum(rest) / len(rest) if rest else 1.0

    @property
    def json_valid_fraction(self) -> float | None:
        asked = [q for q in self.questions if q.json_ok is not None]
        return _share(sum(bool(q.json_ok) for q in asked), len(asked))


@dataclass(frozen=True)
class Report:
    reference: ReferenceResult
    candidates: tuple[CandidateResult, ...]
    backend: str
    context_length: int
    chunks: int
    positions: int
    seconds: float
    created: str  # ISO 8601, local time

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": {"path": self.reference.path, "size_bytes": self.reference.cost.size_bytes, "ppl": self.reference.ppl},
            "candidates": [_candidate_json(c) for c in self.candidates],
        }

    def to_saved(self) -> dict[str, Any]:
        return {"format": SAVED_FORMAT, "version": SAVED_VERSION, "summary": self.to_json(), "report": asdict(self)}

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> Report:
        if data.get("format") != SAVED_FORMAT or data.get("version") != SAVED_VERSION:
            raise ValueError("not a saved quantization check of this version")
        raw = data["report"]
        reference = dict(raw["reference"], cost=ModelCost(**raw["reference"]["cost"]))
        candidates = tuple(
            CandidateResult(
                path=c["path"], quant=c["quant"], agreement=TokenAgreement(**c["agreement"]),
                cost=ModelCost(**c["cost"]), questions=tuple(QuestionResult(**q) for q in c["questions"]),
                verdict=Verdict(**c["verdict"]),
            )
            for c in raw["candidates"]
        )
        rest = {k: v for k, v in raw.items() if k not in ("reference", "candidates")}
        return cls(reference=ReferenceResult(**reference), candidates=candidates, **rest)

    # ------------------------------------------------------------ for people

    def heading(self) -> str:
        ref = self.reference
        chunks = f"{self.chunks} chunk{'s' if self.chunks != 1 else ''} of {self.context_length} tokens"
        return (
            f"Reference {Path(ref.path).name} ({ref.quant}, {format_bytes(ref.cost.size_bytes)}): PPL {ref.ppl:.3f} over "
            f"{self.positions:,} positions ({chunks}, the second half of each scored), {self._questions_text()}; "
            f"{self.seconds:.0f} s in all"
        )

    def _questions_text(self) -> str:
        asked = len(self.candidates[0].questions) if self.candidates else 0
        return f"{asked} questions at {self.reference.cost.tok_s:.1f} tok/s" if asked else "no questions"

    def rows(self) -> list[list[str]]:
        """The table's cells, a header first: the same for the terminal, Markdown and the dialog."""
        header = ["candidate", "quant", "size", "mean KLD", "p99 KLD", "same top", "PPL", "Δ PPL",
                  "answers same", "JSON valid", "tok/s", "memory", "verdict"]
        return [header] + [_cells(c) for c in self.candidates]

    def table(self) -> str:
        rows = [row[:-1] for row in self.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [self.heading(), ""]
        for number, row in enumerate(rows):
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
            if number:
                lines.append(f"    verdict: {self.candidates[number - 1].verdict.text}")
        return "\n".join(lines)

    def markdown(self) -> str:
        rows = self.rows()
        lines = [f"# Quantization check, {self.created}", "", self.heading(), ""]
        lines.append("| " + " | ".join(rows[0]) + " |")
        lines.append("|" + "---|" * len(rows[0]))
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows[1:]]
        lines += ["", "Mean and p99 KLD are KL(P_reference || P_candidate) over the whole vocabulary; "
                  "same top: how often both rank the same token first (as llama-perplexity reports them)."]
        return "\n".join(lines) + "\n"


def _candidate_json(c: CandidateResult) -> dict[str, Any]:
    a = c.agreement
    return {
        "path": c.path, "quant": c.quant, "size_bytes": c.cost.size_bytes,
        "mean_kld": a.mean_kld, "p99_kld": a.p99_kld, "same_top_p": a.same_top_p,
        "ppl": a.ppl, "delta_ppl": a.delta_ppl,
        "answers_same_fraction": c.answers_same_fraction, "json_valid_fraction": c.json_valid_fraction,
        "tok_s": c.cost.tok_s, "verdict": c.verdict.text,
    }


def _cells(c: CandidateResult) -> list[str]:
    a = c.agreement
    same = sum(q.same for q in c.questions)
    json_asked = [q for q in c.questions if q.json_ok is not None]
    return [
        Path(c.path).name, c.quant, format_bytes(c.cost.size_bytes), f"{a.mean_kld:.4f}", f"{a.p99_kld:.4f}",
        f"{a.same_top_p:.1%}", f"{a.ppl:.3f}", f"{a.delta_ppl:+.3f}",
        _answers_cell(c, same),
        f"{sum(bool(q.json_ok) for q in json_asked)}/{len(json_asked)}" if json_asked else "-",
        f"{c.cost.tok_s:.1f}" if c.questions else "-",
        format_bytes(c.cost.memory_bytes), c.verdict.text,
    ]


def _answers_cell(c: CandidateResult, same: int) -> str:
    if not c.questions:
        return "-"
    rest = f" (rest {c.answer_similarity:.0%} alike)" if same < len(c.questions) else ""
    return f"{same}/{len(c.questions)}{rest}"


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None  # null in JSON: nothing was asked



def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
