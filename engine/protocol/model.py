"""What is loaded: the model's configuration asked for, and what the engine reports loaded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Backend = Literal["llamacpp", "hf", "remote"]


@dataclass(frozen=True)
class ModelConfig:
    """Everything needed to load a model; the settings dialog builds one."""

    path: str
    backend: Backend = "llamacpp"
    context_length: int = 4096  # per chat; llama.cpp gets context_length * slots cells
    slots: int = 4  # chats served in parallel
    batch_tokens: int = 512  # token budget of one step (llama.cpp n_batch)
    threads: int | None = None  # None: the library's choice
    # llama.cpp
    gpu_layers: int = -1  # -1 all, 0 none, N layers
    flash_attention: Literal["auto", "on", "off"] = "auto"
    kv_cache_type: Literal["f16", "q8_0", "q4_0"] = "f16"
    # long prompts read with an F32 copy of a quantized file, on the CPU (runners/llamacpp/prompt_copy.py);
    # auto: small models only, where it was measured to pay (engine/tuning.py: a copy of at most 1 GiB)
    prompt_copy: Literal["auto", "on", "off"] = "auto"
    mmproj: str | None = None  # a vision projector GGUF; None: an mmproj-*.gguf in the model's folder, if any
    # a smaller GGUF of the same vocabulary whose guesses the model checks (runners/llamacpp/draft_model.py); None: none
    draft_model: str | None = None
    # transformers
    quantization: Literal["none", "int8", "nf4", "fp4"] = "none"
    double_quant: bool = False
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    device: str = "auto"  # "auto", "cpu", "cuda", "cuda:N"
    gguf_file: str | None = None  # hf backend loading a GGUF file, dequantized
    # decode steps replayed from CUDA graphs over a static cache: auto = on a GPU when faster and correct at load
    fast_decode: Literal["auto", "on", "off"] = "auto"
    # remote: an OpenAI-compatible server answers (path is its base URL)
    remote_model: str = ""  # the id from its GET /v1/models; empty: the first it lists
    api_key: str = field(default="", repr=False)  # never in logs or reprs
    connect_timeout_s: float = 10.0
    first_token_timeout_s: float = 600.0  # a long prompt on a big model may take minutes
    stall_timeout_s: float = 120.0  # silence after the first token: the stream is taken as dropped


@dataclass(frozen=True)
class ModelInfo:
    """What was actually loaded and is in effect (the gauge shows this)."""

    name: str  # the name users know: the file's without .gguf, the folder's or the repo's (catalog.model_files)
    path: str
    backend: Backend
    device: str  # "cpu", "cuda:0 (NVIDIA H200)" ...
    quantization: str  # "Q4_1", "nf4", "bf16" ...
    attention: str  # "flash attention on", "SDPA (math)" ...
    context_length: int
    slots: int
    model_bytes: int
    kv_cache_bytes: int
    gpu_offload: bool  # weights actually on a GPU
    trained_context_length: int = 0
    n_params: int = 0
    has_chat_template: bool = True
    notes: tuple[str, ...] = ()  # warnings a user should see, e.g. layers left on the CPU
    decode: str = ""  # how decode steps run where the backend has a choice: "CUDA graphs, batches of 1/2/4" ...
    prompt_reading: str = ""  # how long prompts are read where the backend has a choice: "F32 copy (515 MiB)" ...
    prompt_copy_bytes: int = 0  # the copy's weights and cache, in RAM besides model_bytes and kv_cache_bytes
    draft_model: str = ""  # the draft model's name where one is loaded beside it (ModelConfig.draft_model)
    draft_model_bytes: int = 0  # its weights and cache, besides model_bytes and kv_cache_bytes
    # What the model's chat template can do, found from the template (never from the model's name):
    # "tools" (it renders tools and the model writes calls in a known format), "reasoning" (it thinks
    # before answering), "thinking_switch" (thinking can be turned off: the template's enable_thinking, or the
    # empty thought its authors document where the prompt opens the thinking),
    # "reasoning_effort" (low / medium / high), "vision" (it takes ChatMessage.images). The API's /v1/models and the chat panel show these.
    capabilities: tuple[str, ...] = ()
    metadata_name: str = ""  # the name the file itself gives (GGUF general.name), for Model details
    # The memory estimate it was loaded with, on its device (engine/catalog/memory.py): right after load,
    # and with every chat full; 0 where there is none (a remote server, a file the estimate cannot read)
    estimated_after_load_bytes: int = 0
    estimated_full_bytes: int = 0
