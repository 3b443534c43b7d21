"""`python -m engine.gpucheck`: every GPU path of Hearth checked in one prepared run on a lent GPU machine.

That machine has no network, CUDA's compiler, torch and transformers, but no
llama-cpp-python, bitsandbytes or gguf, and a run may carry 64 MiB. `--prepare`
(prepare.py) gathers what it lacks into `.gpucheck/` and writes the manifest
(plan.py); `--part llama` and `--part hf` (run.py) build and measure there,
each step timed into one JSON and one log (record.py), measurements in child
processes (child.py, llama_steps.py, hf_steps.py, memory_check.py) on
random-weights models of real shapes (engine/randweights/). `--dry-run` runs the same
steps on CPU stand-ins, and `make test` runs it, so the script cannot rot.
"""
