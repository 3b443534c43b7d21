"""Messages that cross the engine thread boundary: frozen dataclasses only.

Commands go in through `EngineLoop.send`; events come out through the one
callable the loop was given. Never mutate a message after sending it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

Backend = Literal["llamacpp", "hf", "remote"]
# interrupted: a remote stream broke off (the connection dropped, no [DONE]); the partial text is kept
# tool_calls: the answer ended in one or more tool calls (TurnFinished.tool_calls) for the chat's owner to run
FinishReason = Literal[
    "stop", "length", "cancelled", "context_full", "error", "closed", "interrupted", "tool_calls"
]
Speculative = Literal["off", "auto"]
Role = Literal["system", "user", "assistant", "tool"]
ConstraintKind = Literal["json_schema", "json_object", "regex", "lark", "gbnf"]


@dataclass(frozen=True)
class ToolCall:
    """One call the model made: `arguments` is the JSON text of the arguments object."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call; `parameters` is its JSON Schema as JSON text (frozen, hashable)."""

    name: str
    description: str = ""
    parameters: str = '{"type": "object", "properties": {}}'


IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp")  # what the window and the API accept


@dataclass(frozen=True)
class ImagePart:
    """A picture in a message, as the file's own bytes (PNG, JPEG or WebP): only a model that can see
    ("vision" in ModelInfo.capabilities) takes a message that has one."""

    data: bytes = field(repr=False)
    mime: str = "image/png"


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation.

    An assistant message may carry the thinking that came before its answer (`reasoning`) and the
    tool calls it made; a tool message answers the call named by `tool_call_id`.
    """

    role: Role
    content: str
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""  # a tool message: the tool's name (templates that want it)
    images: tuple[ImagePart, ...] = ()  # shown to the model before the text


@dataclass(frozen=True)
class Constraint:
    """What a sequence's output must match; the sampler sees only tokens that keep it matchable.

    `source`: the JSON Schema as JSON text (json_schema), "" (json_object), the pattern (regex),
    or the grammar (lark: llguidance's Lark dialect; gbnf: llama.cpp's).
    """

    kind: ConstraintKind
    source: str = ""


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    frequency_penalty: float = 0.0  # OpenAI's: minus this much per earlier use of a token (last 64 tokens)
    presence_penalty: float = 0.0  # minus this much once for a token used at all (last 64 tokens)
    seed: int | None = None
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False  # the benchmark wants every request to run to max_new_tokens
    # Prompt-lookup drafts (engine/speculative.py): the same answer, sooner where it repeats its context.
    speculative: Speculative = "auto"  # measured: edits sooner, chat as fast (docs/benchmarks.md)
    constraint: Constraint | None = None  # the whole answer must match it (engine/constraints)
    logprobs: int | None = None  # None: none; 0: the chosen token's; N (<= 20): and the N likeliest
    reasoning_budget: int | None = None  # thinking tokens before the engine closes the thinking itself

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


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
    # What the model's chat template can do, found from the template (never from the model's name):
    # "tools" (it renders tools and the model writes calls in a known format), "reasoning" (it thinks
    # before answering), "thinking_switch" (thinking can be turned off: the template's enable_thinking, or the
    # empty thought its authors document where the prompt opens the thinking),
    # "reasoning_effort" (low / medium / high), "vision" (it takes ChatMessage.images). The API's /v1/models and the chat panel show these.
    capabilities: tuple[str, ...] = ()
    metadata_name: str = ""  # the name the file itself gives (GGUF general.name), for Model details


# ---------------------------------------------------------------- commands


@dataclass(frozen=True)
class LoadModel:
    """Load a model beside those already loaded (several models at once), or reload one.

    A model is known by its path (ModelConfig.path as given, the key of Submit.model, ModelLoaded.info.path).
    Loading a path that is loaded already replaces that model (its turns end: "the model was changed");
    other models stay. Room is made inside the memory budget by unloading the least recently used idle
    model that is not pinned; a load that cannot fit is refused (ModelLoadFailed) with the figures.
    `keep_alive_s`: how long the model stays loaded once idle; None takes the engine's default
    (EngineOptions), a negative value pins it (never unloaded for idleness or room), 0 unloads it as soon
    as its next turn ends.
    """

    config: ModelConfig
    keep_alive_s: float | None = None


@dataclass(frozen=True)
class UnloadModel:
    """Unload a model now (its turns end with a message); ModelUnloaded answers."""

    path: str


@dataclass(frozen=True)
class EngineOptions:
    """How the engine keeps several models: the memory they may use together and how long idle ones stay."""

    budget_bytes: int = 0  # 0: no budget (every load is tried)
    default_keep_alive_s: float = 15 * 60.0  # negative: forever
    max_loaded: int = 0  # 0: no cap on how many stay loaded (hearth-serve --max-loaded)


@dataclass(frozen=True)
class Submit:
    """Start one assistant turn for a chat: the whole conversation so far.

    `prompt`, when given, is fed as it is instead of the messages in the chat
    template: a plain completion, what base models need.
    """

    chat_id: str
    messages: tuple[ChatMessage, ...]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    prompt: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    # "auto" (the model decides), "none", "required" (at least one call), or a tool's name (that call)
    tool_choice: str = "auto"
    parallel_tool_calls: bool = True
    # Extra variables for the chat template, as (name, JSON text) pairs: ("enable_thinking", "false"),
    # ("reasoning_effort", '"low"'), the API's chat_template_kwargs.
    template_options: tuple[tuple[str, str], ...] = ()
    # Which loaded model answers: its path (or its name, as /v1/models lists it); empty: the model loaded
    # last. A model being loaded: the turn waits for it (and ends with the load's error if it fails); with
    # nothing loaded yet, an empty name waits for the load under way. A model neither loaded nor being loaded
    # ends the turn with an error that says so.
    model: str = ""
    # This request's keep-alive for that model (the API's keep_alive / ttl), as LoadModel.keep_alive_s.
    keep_alive_s: float | None = None


@dataclass(frozen=True)
class Embed:
    """Turn texts into vectors with the loaded model (the API's /v1/embeddings); Embedded answers.

    `chat_id` is the request's own id: the answer is routed to its client as a chat's events are."""

    chat_id: str
    texts: tuple[str, ...]
    model: str = ""  # as Submit.model


@dataclass(frozen=True)
class Cancel:
    chat_id: str


@dataclass(frozen=True)
class CloseChat:
    """The tab is gone: cancel its turn and forget its cache."""

    chat_id: str


@dataclass(frozen=True)
class Shutdown:
    pass


Command = Union[LoadModel, UnloadModel, EngineOptions, Submit, Embed, Cancel, CloseChat, Shutdown]

# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class ModelLoading:
    path: str
    fraction: float  # 0..1
    message: str = ""


@dataclass(frozen=True)
class ModelLoaded:
    info: ModelInfo


@dataclass(frozen=True)
class ModelUnloaded:
    """A model left memory: "idle" (its keep-alive ran out), "room" (another load needed the memory),
    "request" (UnloadModel, keep_alive 0), "replaced" (loaded again with other settings)."""

    path: str
    reason: Literal["idle", "room", "request", "replaced"]
    message: str = ""  # for a person, e.g. "Unloaded SmolLM2 (idle for 15 min) to free 1.2 GiB"


@dataclass(frozen=True)
class ModelLoadFailed:
    path: str
    message: str  # for a person: which file, what went wrong, what to try
    previous_kept: bool = False  # the model loaded before is still in use


@dataclass(frozen=True)
class TurnQueued:
    """The engine took the turn: its prompt fits and waits for a slot (TurnStarted follows)."""

    chat_id: str
    prompt_tokens: int


@dataclass(frozen=True)
class TurnStarted:
    chat_id: str
    prompt_tokens: int
    reused_tokens: int  # prompt tokens found in the slot's KV cache


@dataclass(frozen=True)
class Token:
    chat_id: str
    text: str  # whole UTF-8 characters, stop strings already held back


@dataclass(frozen=True)
class ReasoningText:
    """A reasoning model's thinking (a remote server's `reasoning_content` / `reasoning`), kept apart from the answer."""

    chat_id: str
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """The model opened tool call number `index` of this turn: its id and whole name are known."""

    chat_id: str
    index: int
    call_id: str
    name: str


@dataclass(frozen=True)
class ToolCallArguments:
    """The next fragment of tool call `index`'s arguments (JSON text; the fragments join to it)."""

    chat_id: str
    index: int
    text: str


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token's log-probability, and the likeliest alternatives where asked."""

    token: str
    logprob: float
    token_bytes: tuple[int, ...] = ()
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Logprobs:
    """The log-probabilities of tokens just generated, in order (SamplingParams.logprobs)."""

    chat_id: str
    entries: tuple[TokenLogprob, ...]


@dataclass(frozen=True)
class TurnStats:
    prompt_tokens: int
    reused_tokens: int
    generated_tokens: int
    time_to_first_token_s: float
    decode_tokens_per_second: float
    total_s: float
    drafted_tokens: int = 0  # prompt-lookup guesses checked
    accepted_tokens: int = 0  # of them, the ones the model agreed with (tokens it got for free)
    reasoning_tokens: int = 0  # of generated_tokens, those spent thinking
    reasoning_s: float = 0.0  # time from the first thinking token to the end of the thinking

    @property
    def acceptance(self) -> float | None:
        """Share of drafted tokens accepted; None when nothing was drafted."""
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else None


@dataclass(frozen=True)
class TurnFinished:
    chat_id: str
    reason: FinishReason
    stats: TurnStats
    text: str = ""  # the whole answer of this turn
    message: str = ""  # for a person, when reason is context_full or error
    reasoning: str = ""  # the whole thinking of this turn, if the model showed any
    tool_calls: tuple[ToolCall, ...] = ()  # the calls the answer made (reason "tool_calls")
    stop_string: str = ""  # the one of SamplingParams.stop the answer reached, where it ended on one


@dataclass(frozen=True)
class Embedded:
    """The answer to Embed: one unit-length vector per text and its token count, or why there are none."""

    chat_id: str
    vectors: tuple[tuple[float, ...], ...] = ()
    token_counts: tuple[int, ...] = ()
    message: str = ""  # not empty: no vectors, and this says why (the backend cannot, a text is too long)


@dataclass(frozen=True)
class ChatError:
    """Something went wrong for one chat only; the others go on."""

    chat_id: str
    message: str


@dataclass(frozen=True)
class ModelStats:
    """One loaded model in EngineStats: what the gauge shows per model."""

    path: str
    name: str
    tokens_per_second: float
    slots_busy: int
    slots_total: int
    model_bytes: int
    kv_cache_bytes: int
    prompt_copy_bytes: int = 0
    chats: tuple[str, ...] = ()  # the chats it is serving now
    pinned: bool = False
    idle_s: float = 0.0  # since its last turn ended (0 while it serves one)
    loading: float | None = None  # 0..1 while it is being loaded, else None


@dataclass(frozen=True)
class EngineStats:
    """Totals over every loaded model (the first fields) and each model's own figures (`models`)."""

    tokens_per_second: float  # all chats, over the last few seconds
    chat_tokens_per_second: tuple[tuple[str, float], ...]
    slots_busy: int
    slots_total: int
    kv_cache_bytes: int
    model_bytes: int
    total_generated_tokens: int
    latency_ms: float = 0.0  # remote: the server's last time to answer a request (headers), measured here
    drafted_tokens: int = 0  # over the same last few seconds as the speeds
    accepted_tokens: int = 0
    models: tuple[ModelStats, ...] = ()  # every loaded model, the one loaded last first
    budget_bytes: int = 0  # EngineOptions.budget_bytes in effect (0: none)

    @property
    def acceptance(self) -> float | None:
        """Share of the recently drafted tokens the model accepted; None when nothing was drafted."""
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else None


@dataclass(frozen=True)
class EngineError:
    """The engine itself failed; the window offers a restart."""

    message: str


Event = Union[
    ModelLoading,
    ModelLoaded,
    ModelLoadFailed,
    ModelUnloaded,
    TurnQueued,
    TurnStarted,
    Token,
    ReasoningText,
    ToolCallStarted,
    ToolCallArguments,
    Logprobs,
    TurnFinished,
    Embedded,
    ChatError,
    EngineStats,
    EngineError,
]
