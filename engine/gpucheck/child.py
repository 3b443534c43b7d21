"""`python -m engine.gpucheck.child NAME ARGS_JSON`: one measurement in its own process, figures on stdout."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

from engine.gpucheck.record import RESULT_PREFIX


def steps() -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    from engine.gpucheck import hf_steps, llama_steps

    return {"llama_load": llama_steps.load_check, "llama_models": llama_steps.make_models,
            "llama_engine": llama_steps.engine_case, "hf_model": hf_steps.make_model, "hf_mode": hf_steps.mode_case}


def main(argv: list[str]) -> int:
    name, args = argv[0], json.loads(argv[1])
    figures = steps()[name](args)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
