"""Constants fitted on one machine: what each is, and where and on what it was measured.

They decide speed, never correctness: a machine that differs gets a slower choice,
not a wrong answer. The measurements themselves are in docs/benchmarks.md. What a
user may want to change instead is a setting (ModelConfig, SamplingParams), not here.
"""

from __future__ import annotations

# ---------------------------------------------------------------- the prompt-reading copy (llama.cpp, CPU)

# "auto" takes the F32 copy only where it was measured to pay: the bundled SmolLM2-135M Q4_1 (its copy
# is 538 MB) read a 1,898-token history 2.5x faster (2-core Intel Xeon and 2-core AMD EPYC). Larger
# models were never measured, and their copy (4 bytes a parameter: 4 GB at 1B) costs memory and disk
# that users notice; "on" in Settings still takes it for any size.
PROMPT_COPY_AUTO_MAX_BYTES = 1 << 30
# and never more than this share of the machine's RAM (a 538 MB copy on a 4 GB machine is too much)
PROMPT_COPY_AUTO_SHARE = 1 / 8
# The llama-cpp-python version whose sequence-state bytes (llama-kv-cache.cpp state_write/state_read)
# runners/llamacpp/seqstate.py was written and checked against; pyproject.toml and
# packaging/pip-install-llama.sh install exactly this one. With another, "auto" leaves the copy off.
PROMPT_COPY_LLAMA_CPP_VERSION = "0.3.36"
