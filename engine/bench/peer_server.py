"""`python -m engine.bench.peer_server ARGS`: `python -m llama_cpp.server ARGS`, loading weights as Hearth's runner does.

Some virtual machines advertise Intel AMX yet fault on its instructions (see
engine/runners/llamacpp/load.py, extra_buffers_usable); llama-cpp-python's own
server would then die of SIGILL on its first request. The peer gets the same
weight layouts as Hearth, so the comparison is of the servers, not of layouts.
"""

from __future__ import annotations

import sys

from engine.runners.llamacpp.load import same_model_params_for_highlevel


def main() -> None:
    from llama_cpp.server.__main__ import main as serve

    sys.argv[0] = "llama_cpp.server"
    model = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv[:-1] else None
    with same_model_params_for_highlevel(model):
        serve()


if __name__ == "__main__":
    main()
