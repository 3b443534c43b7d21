"""`python -m engine.bench`: the measured truth about speed, through the real EngineLoop.

Measures aggregate tokens/s and time to first token for 1, 4, ... tabs at once;
the same 4 requests served one after another (what a one-sequence engine
does); a second turn over a ~2,000-token history with and without the KV
cache; and the backend's own library on the same model and prompt in the same
run, as the baseline (llama-cpp-python's high-level API, or transformers'
generate and generate_batch). `--json FILE` writes every figure.

cli.py parses and prints, measure.py runs the cases, workloads.py holds the
prompts and the cases, harness.py drives the engine, report.py condenses and
formats, llamacpp_baseline.py and hf_baseline.py time the libraries themselves.
`--api` (api.py) puts streaming HTTP clients against hearth-serve and against
llama-cpp-python's own server instead.
"""

from engine.bench.cli import main, parse
from engine.bench.report import percentile

__all__ = ["main", "parse", "percentile"]
