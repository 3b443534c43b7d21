"""`python -m engine.quantcheck --reference A --candidate B [...] --json OUT`: the check from a terminal.

Progress goes to stderr, the table to stdout; the JSON is written only when
the whole check succeeded (to a temporary file first, then renamed), so a
cancelled or failed run leaves no half-written report. Exit status: 0 done,
2 a problem with the input (the message says what), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Sequence

from engine.quantcheck.check import CheckSpec, ModelSpec, run_check
from engine.quantcheck.errors import Cancelled, CheckError
from engine.quantcheck.inputs import builtin_questions, builtin_text, read_questions, read_text
from engine.paths import user_path  # paths made absolute once, at the edge
from engine.quantcheck.report import write_atomically


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m engine.quantcheck", description=__doc__.splitlines()[0])
    parser.add_argument("--reference", required=True, help="the full or higher precision model (GGUF file or HF folder)")
    parser.add_argument("--candidate", action="append", default=[], help="a quantized model to check (repeat for more)")
    parser.add_argument("--backend", choices=("llamacpp", "hf"), default="llamacpp")
    parser.add_argument("--quant", action="append", choices=("int8", "nf4", "fp4"), default=[],
                        help="hf: check the reference (or each --candidate) through bitsandbytes in this mode (repeatable)")
    parser.add_argument("--text", help="the reference text (default: a few thousand tokens of public-domain English)")
    parser.add_argument("--questions", help="your own 20-50 questions: one a line, or JSON Lines with \"prompt\"")
    parser.add_argument("--limit", type=int, help="ask only the first N questions")
    parser.add_argument("--chunks", type=int, help="score only the first N chunks of the text (llama-perplexity's --chunks)")
    parser.add_argument("--context", type=int, default=512, help="tokens per chunk (default 512, as llama-perplexity)")
    parser.add_argument("--max-answer-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, help="CPU threads (default: one fewer than the machine has)")
    parser.add_argument("--json", dest="json_out", help="write the report here as JSON")
    return parser.parse_args(argv)


def build_spec(args: argparse.Namespace) -> CheckSpec:
    if args.backend == "llamacpp" and args.quant:
        raise CheckError("--quant is for the hf backend; with llama.cpp each quantization is its own GGUF file (--candidate).")
    if args.backend == "llamacpp" and not args.candidate:
        raise CheckError("Name at least one --candidate GGUF file to compare with the reference.")
    paths = args.candidate or [args.reference]
    quants = args.quant or ["none"]
    candidates = tuple(ModelSpec(user_path(p), args.backend, q) for p in paths for q in quants)
    questions = read_questions(args.questions, check_count=args.limit is None) if args.questions else builtin_questions()
    if args.limit is not None:
        questions = questions[: max(args.limit, 0)]
    return CheckSpec(
        reference=ModelSpec(user_path(args.reference), args.backend), candidates=candidates,
        text=read_text(args.text) if args.text else builtin_text(), questions=questions,
        context_length=args.context, chunks=args.chunks, max_answer_tokens=args.max_answer_tokens, threads=args.threads,
    )


class _ProgressPrinter:
    """One self-overwriting line on a terminal; elsewhere (a log, CI) a line per step, not per percent."""

    def __init__(self) -> None:
        self._terminal = sys.stderr.isatty()
        self._last = ""

    def __call__(self, fraction: float, message: str) -> None:
        if self._terminal:
            print(f"\r[{fraction:4.0%}] {message[:90]:<90}", end="", file=sys.stderr, flush=True)
            return
        step = re.sub(r"\s*\d+%$", "", message)  # "loading weights 42%" is one step, however many percents
        if step != self._last:
            self._last = step
            print(f"[{fraction:4.0%}] {step}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        report = run_check(build_spec(args), _ProgressPrinter(), lambda: False)
    except CheckError as error:
        print(f"\n{error}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Cancelled):
        print("\nInterrupted: nothing was written.", file=sys.stderr)
        return 130
    print(file=sys.stderr)
    print(report.table())
    if args.json_out:
        write_atomically(Path(user_path(args.json_out)), json.dumps(report.to_json(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
