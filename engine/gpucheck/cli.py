"""The command line of `python -m engine.gpucheck` (`make gpu-check`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from engine.gpucheck import plan

DESCRIPTION = ("The GPU paths in one prepared run: --prepare here (PyPI reachable), then --part llama and "
               "--part hf on the GPU machine (no network), or --dry-run on the CPU.")


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m engine.gpucheck", description=DESCRIPTION)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--prepare", action="store_true", help="gather what the GPU machine lacks into --folder")
    action.add_argument("--dry-run", action="store_true", help="every step on CPU stand-ins: tiny shapes, CPU llama.cpp")
    action.add_argument("--plan", action="store_true", help="print the prepared manifest and whether each run fits")
    parser.add_argument("--part", choices=("llama", "hf", "all"), default="all", help="what to run (default all)")
    parser.add_argument("--out", default=os.environ.get("OUT") or "gpucheck-out",
                        help="folder for the JSON and the log (default $OUT, else ./gpucheck-out)")
    parser.add_argument("--folder", default=plan.FOLDER, help=f"the prepared folder (default {plan.FOLDER})")
    parser.add_argument("--deadline", type=float, help="seconds after which further steps are skipped")
    parser.add_argument("--modes", help="transformers modes to run, comma-separated (default none,nf4,int8)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    folder, checkout = Path(args.folder).absolute(), Path.cwd()
    if args.prepare:
        from engine.gpucheck.prepare import main as prepare

        return prepare(folder, checkout)
    if args.plan:
        problems = plan.check(folder, checkout)
        if (folder / plan.MANIFEST).is_file():
            manifest = plan.Manifest.from_json(json.loads((folder / plan.MANIFEST).read_text(encoding="utf-8")))
            manifest.runs = plan.run_plans(manifest.artifacts, checkout, folder.name)
            print(plan.describe(manifest))
        print("\n".join(problems) or "ready")
        return 1 if problems else 0
    from engine.gpucheck.run import run_part

    deadline = args.deadline or plan.DEADLINE_S.get(args.part, max(plan.DEADLINE_S.values()))
    modes = tuple(m for m in (args.modes or "").split(",") if m) or None
    result = run_part(args.part, Path(args.out), folder, args.dry_run, deadline, modes)
    data = json.loads(result.read_text(encoding="utf-8"))
    print(summary(data))
    print(f"figures: {result}")
    return 0 if all(step["status"] == "ok" for step in data["steps"]) else 1


def summary(data: dict[str, Any]) -> str:
    lines = [f"{'step':<58} {'status':<8} {'s':>7}"]
    for step in data["steps"]:
        lines.append(f"{step['name']:<58} {step['status']:<8} {step['seconds']:7.1f}  {step['error'][:120]}")
    lines.append(f"total {data.get('total_seconds', 0):.0f} s ({'dry run on the CPU' if data['dry_run'] else 'GPU'})")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
