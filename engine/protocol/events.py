"""What comes out through the loop's one callable: loading, each turn's tokens and calls, its end, statistics, errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from engine.protocol.messages import ToolCall
from engine.protocol.model import ModelInfo

# interrupted: a remote stream broke off (the connection dropped, no [DONE]); the partial text is kept
# tool_calls: the answer ended in one or more tool calls (TurnFinished.tool_calls) for the chat's owner to run
FinishReason = Literal[
    "stop", "length", "cancelled", "context_full", "error", "closed", "interrupted", "tool_calls"
]


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
    drafted_tokens: int = 0  # guessed tokens checked (prompt lookup, the shared pool, a draft model)
    accepted_tokens: int = 0  # of them, the ones the model agreed with (tokens it got for free)
    drafts_by_source: tuple[tuple[str, int, int], ...] = ()  # (source, drafted, accepted): "lookup", "pool", "draft"
    reasoning_tokens: int = 0  # of generated_tokens, those spent thinking
    forced_tokens: int = 0  # of generated_tokens, those a constraint forced, read in one pass each run (no sample)
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
    draft_model_bytes: int = 0  # a draft model loaded beside it (ModelInfo.draft_model_bytes)
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
    drafts_by_source: tuple[tuple[str, int, int], ...] = ()  # (source, drafted, accepted): "lookup", "pool"
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
