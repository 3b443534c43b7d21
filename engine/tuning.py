"""Constants fitted on one machine, or chosen: what each decides, and where and on what it was measured.

They decide speed and the memory estimate's calibration, never an answer: a machine
that differs gets a slower choice or a looser estimate, not a wrong token. The
measurements behind them are in docs/benchmarks.md (and the git history of the
README). "Intel VM" is a 2-core Intel Xeon VM (AVX-512, AMX), "AMD VM" a 2-core AMD
EPYC VM (AVX2 only); "the bundled model" is SmolLM2-135M-Instruct Q4_1.

What a user may want to change is a setting, not a constant here: the CPU threads
(model.threads), the prompt-reading copy (model.prompt_copy: auto / on / off) and
speculative decoding (sampling.speculative: auto / on / off).
"""

from __future__ import annotations

# ---------------------------------------------------------------- CPU threads (llama.cpp, runners/llamacpp/params.py)

# Generation leaves this many logical CPUs to the window and the rest of the system while other processes
# are busy: ggml's threads meet at a barrier many times a token, and one that loses its core stalls them all.
# Intel VM beside other work: 1 thread 37-73 tok/s, 2 threads 0.4-8 tok/s.
GENERATION_SPARE_CPUS = 1
# A step that generates takes every core while other processes keep fewer than this many CPUs busy. Intel VM,
# bundled model: quiet, 2 threads generate ~1.5x as fast as 1 (one chat 49-50 against 31-35 tok/s) and check a
# 16-token draft in 130 against 265 ms; beside one busy process the second thread waits at every barrier
# (472 against 257 ms). Half a CPU is the line chosen between the two.
GENERATION_IDLE_BELOW_CPUS = 0.5
# How long a reading of the other processes' CPU use lasts (and how far back it looks); chosen.
LOAD_SAMPLE_SECONDS = 0.5

# ---------------------------------------------------------------- drafts in a step (scheduling/plan.py)

# While a prompt is being read, all drafts together take at most this share of the step's budget that the
# decode tokens leave, so guesses never crowd out a waiting chat. Chosen, not fitted.
DRAFT_SHARE_BESIDE_PROMPTS = 0.25

# ---------------------------------------------------------------- several models (loop.py)

# While another model has chats decoding, a model reads at most this many prompt tokens a step, so its long
# prompt lets the other model's streams step between chunks of this size instead of the whole batch (512).
# Intel VM, 2 cores, bundled Q4_1 reading a 1,900-token history beside its Q4_0 copy streaming
# (`python -m engine.bench --models A,B --tabs 2`, docs/benchmarks.md "Several models"): the stream's gaps
# median / max and the prompt's time, by cap: 512: 1,210 / 1,719 ms, 5.5 s; 256: 729 / 1,190 ms, 6.6 s;
# 128: 458 / 600-716 ms, 6.6-7.4 s; 64: 268 / 1,642 ms, 9.8 s. 128 cuts the gaps by 60% for 20-35% on the
# long prompt (which waits anyway); smaller chunks cost the reader more than they give the stream.
PROMPT_TOKENS_BESIDE_OTHER_MODELS = 128

# ---------------------------------------------------------------- prompt-lookup drafts (speculative.py)

MAX_NGRAM = 3  # longest run of last tokens looked up: llama.cpp's n-gram drafts and transformers' default
# Longest draft, whatever the odds (chosen). Intel VM, bundled model: a step with 16 drafted tokens took
# 214-288 ms against 25-33 ms for one token.
MAX_DRAFT = 16
PRIOR_ACCEPTED, PRIOR_TRIED = 1.0, 2.0  # before anything is known: an even chance per token (chosen)
ACCEPTANCE_MEMORY = 0.8  # weight of the past in a chat's acceptance rate, per draft checked (chosen)
FIRST_PAUSE, MAX_PAUSE = 4, 256  # steps without guesses after a miss; doubles with each further miss (chosen)
# ...and grows fourfold while nothing this turn drafted was ever accepted. A guess made only to learn the odds
# costs a share of a step: a step of 1+1 tokens took 1.44-1.60x one token's time on the Llama-3.2-1B shape in
# Q4_K_M (AMD VM, 2 threads; docs/benchmarks.md, "Speed at the sizes people run"), so the doubling pauses'
# five probes in a 128-token chat answer cost ~2-3% (0.97x/0.94x measured with 0% accepted).
PAUSE_GROWTH_NEVER_ACCEPTED = 4
# Until StepCost has timed this machine's steps, a step feeding n tokens is taken to cost
# PRIOR_STEP_FIXED + PRIOR_STEP_PER_TOKEN * n one-token steps. Fitted by least squares on the AMD VM, 2 threads,
# Q4_K_M (docs/benchmarks.md, "Speed at the sizes people run"): one chat's steps of 1+k tokens (k = 1 / 2 / 4 / 8:
# 1.60 / 2.20 / 2.54 / 4.63x one token at Llama-3.2-1B, 1.48 / 2.03 / 2.06 / 4.20x at 3B) with 4 and 8 tabs
# decoding (13.0 / 25.7 / 26.6 tok/s at 1 / 4 / 8 tabs at 1B: steps of 2.02x and 3.91x): 0.63 + 0.42 n at 1B,
# 0.59 + 0.37 n at 3B. A draft token then costs 0.4 of a generated token's time alone (the bundled model on
# the Intel VM: 0.39-0.5), 0.73 beside 3 other chats, 0.91 beside 15: there a chat drafts only what is
# accepted more than 91% of the time. StepCost replaces this with the running machine's line in a few steps.
PRIOR_STEP_FIXED, PRIOR_STEP_PER_TOKEN = 0.6, 0.4
MIN_COST_RATIO = 0.02  # a GPU's drafts are nearly free, never quite (chosen)
TIMING_MEMORY = 0.95  # weight of the past in StepCost's fit, per step (chosen)
MIN_TIMED_STEPS, MIN_SPREAD = 8.0, 0.25  # fewer steps, or steps of too alike sizes, tell nothing yet (chosen)

# ---------------------------------------------------------------- a draft model (runners/llamacpp/draft_model.py)

# Longest draft of a draft model, whatever the odds: each token is one more round of the draft model, so a
# draft model's draft is shorter than prompt lookup's (llama-server's --draft-max default is 16; chosen).
MAX_MODEL_DRAFT = 8
# After its first token, a chat's draft stops where the draft model's likeliest token has less than this
# probability: llama-server's --draft-p-min default (common/common.h), not fitted here.
DRAFT_MIN_PROBABILITY = 0.75
DRAFT_TIMING_MEMORY = 0.9  # weight of the past in the draft model's seconds per drafted token, per call (chosen)

# ---------------------------------------------------------------- the shared n-gram pool (ngram_pool.py)

# Length of the n-grams the pool keys on: a chat whose own context matches fewer of its last tokens than this
# drafts from the pool. llama.cpp's prompt lookup and transformers' default longest n-gram (chosen, not fitted).
POOL_NGRAM = 3
# Entries kept per model, least recently used dropped first: ~120 bytes each in CPython, so ~8 MB, and about
# the n-grams of 65,000 tokens of chats (a long day's several tabs). Chosen, not fitted.
POOL_MAX_ENTRIES = 1 << 16

# ---------------------------------------------------------------- the prompt-reading copy (runners/llamacpp/prompt_copy.py)

# Shorter chunks stay in the generating context, which reads them as fast: bundled model, a prompt and its
# first token took 97 ms through the copy against 81 without at 8 tokens, 108 against 137 at 16 (2-core VM).
PROMPT_COPY_MIN_TOKENS = 16
# A chunk read in the copy moves the chat's cells there and back (~50 us a cell each way) and
# saves ~5 ms a token: break-even is a chunk of about 1/45 of the chat's cells. Where the chat's cells are not
# in the copy yet, the chunk must be at least this share of them (a margin over 1/45).
PROMPT_COPY_MIN_SHARE_OF_CELLS = 1 / 16
# "auto" takes the F32 copy only where it was measured to pay: the bundled model (its copy is 538 MB) read a
# 1,898-token history 2.5x faster (Intel VM, 2 threads: 380 against 149 tok/s). Larger models were never
# measured, and their copy (4 bytes a parameter: 4 GB at 1B) costs memory and disk that users notice; "on"
# in Settings still takes it for any size.
PROMPT_COPY_AUTO_MAX_BYTES = 1 << 30
PROMPT_COPY_AUTO_SHARE = 1 / 8  # and never more than this share of the machine's RAM (chosen)
# The llama-cpp-python version whose sequence-state bytes (llama-kv-cache.cpp state_write / state_read)
# runners/llamacpp/seqstate.py was written and checked against; pyproject.toml and
# packaging/pip-install-llama.sh install exactly this one. With another, "auto" leaves the copy off.
PROMPT_COPY_LLAMA_CPP_VERSION = "0.3.36"

# ---------------------------------------------------------------- the memory estimate (catalog/memory.py)

# llama.cpp, against process RSS growth on the CPU (bundled model, Intel VM; tests/engine/catalog/test_memory.py):
LLAMA_RUNTIME_BYTES = 16 << 20  # the runtime and vocabulary
ACTIVATION_FLOATS_PER_DIM = 17  # activations of a micro-batch per embedding dimension per token (flash attention)
# transformers, against RSS growth after gc + malloc_trim (bundled model and a tiny random one, fp32, int8, NF4;
# tests/engine/catalog/test_memory_hf.py):
# Code and modules that loading runs for the first time: ~53 MiB in a warm run here, ~20 MiB more in every mode in
# CI's run of the same test on the same kind of machine; between the two, so that either is within 10%.
HF_RUNTIME_BYTES = 58 << 20
HF_QUANT_RUNTIME_BYTES = {"none": 0, "int8": 20 << 20, "nf4": 5 << 20, "fp4": 5 << 20}  # bitsandbytes' state
HF_TOKENIZER_BYTES_PER_TOKEN = {"hf": 307, "gguf": 670}  # a fast tokenizer; one converted from a GGUF's vocabulary
# On a GPU, not measured here: the usual figures
CUDA_CONTEXT_BYTES = 400 << 20  # CUDA context + cuBLAS workspace
HF_GPU_RESERVE_FRACTION = 0.10  # torch's caching allocator holds more than it hands out
TIGHT_FRACTION = 0.70  # a model over this share of the device is "tight": the usual advice, not measured
