"""The Runner protocol: what the scheduler needs from a backend.

A runner owns one loaded model and a KV cache with `slots` independent
sequences. The scheduler decides what runs; the runner executes one step as
ONE batched forward pass and samples where asked. A step may carry drafts
(guessed next tokens, engine/speculative.py): the runner checks them in that
same pass with the slot's own sampler, and says how many held.

A slot may carry a constraint (engine/constraints): from begin_turn's params.constraint, or
installed mid-turn by set_constraint. The runner masks that slot's rows only (draft rows too,
each after the draft before it), inside the same pass as every other chat, and reports the
log-probabilities of the tokens it returns where params.logprobs asks (step_logprobs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, cast

from engine.parsing.formats import OutputFormat
from engine.protocol import ChatMessage, Constraint, ModelInfo, SamplingParams, TokenLogprob, ToolSpec

Progress = Callable[[float, str], None]  # loading: fraction done (0..1), what is being done
PENALTY_LAST_N = 64  # tokens the repeat penalty looks back over: llama.cpp's default, on both backends


@dataclass
class SlotWork:
    """One sequence's share of a step."""

    slot: int
    tokens: list[int]  # fed this step (a prompt chunk, or the last sampled token)
    start_pos: int  # position of tokens[0] in the slot's sequence
    sample: bool  # sample a token after the last one (logits only where needed)
    # Guessed tokens after `tokens`, fed in the same pass (only where `sample`). The runner samples
    # after the last of `tokens` and after each draft token in turn, with the slot's sampler as if
    # generating one token per step, and stops at the first sample that differs from the draft.
    draft: list[int] = field(default_factory=list)
    forced: bool = False  # the draft is what the slot's constraint forces (Runner.forced_tokens), not a guess

    @property
    def fed(self) -> list[int]:
        """Every token this step puts into the slot's cache, drafts included."""
        return self.tokens + self.draft if self.draft else self.tokens


class Detokenizer(Protocol):
    def add(self, token: int) -> str:
        """Text made complete by this token (never half a character)."""

    def flush(self) -> str:
        """Whatever is still held back at the end of a turn."""


class Drafter(Protocol):
    """A draft model beside the runner's model (runners/llamacpp/draft_model.py): guesses for several slots at
    once, one batched pass of the draft model per guessed position."""

    size_ratio: float  # its weights over the model's: what a drafted token costs before any is timed
    seconds_per_token: float | None  # measured per drafted token; None until a draft was made

    def draft(self, wants: Sequence[tuple[int, Sequence[int], int]], is_end: Callable[[int], bool]) -> list[list[int]]:
        """For each (slot, the slot's chat's tokens so far, most tokens wanted): its guessed next tokens."""

    def read(self, slot: int, tokens: Sequence[int]) -> None:
        """The slot's chat's tokens so far, read while the model reads them (a prompt), not at its first draft."""


class Runner(Protocol):
    info: ModelInfo
    slots: int
    context_length: int  # positions one slot may hold
    batch_tokens: int  # most tokens one forward pass takes
    end_markers: tuple[str, ...]  # text that ends an answer besides end-of-generation tokens
    can_draft: bool  # forward verifies SlotWork.draft, and remove_from can drop a rejected tail
    # A step whose chats feed different numbers of tokens runs as one pass per distinct number (llama.cpp
    # with one cache stream per chat), so a one-token guess beside other chats costs a whole pass.
    splits_uneven_steps: bool
    output_format: OutputFormat  # how its output marks reasoning and tool calls (engine/parsing)

    def render_chat(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (),
                    options: Sequence[tuple[str, str]] = ()) -> str:
        """The conversation in the model's own template, ready for the answer; `tools` and the
        template variables `options` (enable_thinking ...) go to the template."""

    def tokenize(self, text: str) -> list[int]:
        """Token ids of a rendered prompt (BOS added if the model wants one)."""

    def detokenizer(self) -> Detokenizer: ...

    def is_end_of_generation(self, token: int) -> bool:
        """The model's own end tokens, and the end markers that are single tokens of its vocabulary."""

    def begin_turn(self, slot: int, params: SamplingParams) -> None:
        """A fresh sampler for this slot's new turn, kept to params.constraint where it has one.

        Raises engine.constraints.ConstraintError (the slot unchanged) where the constraint cannot
        be used with this model's vocabulary."""

    def set_constraint(self, slot: int, constraint: Constraint | None) -> None:
        """From the slot's next sample on, its tokens must match `constraint` (None: free again).

        For a grammar that starts mid-answer (a tool call the model just opened). A finished
        constraint allows only end-of-generation. Raises ConstraintError as begin_turn does."""

    def forced_tokens(self, slot: int, limit: int) -> list[int]:
        """Up to `limit` tokens the slot's constraint leaves no choice about next (engine/constraints/forced.py):
        fed as its next step's draft, each is what that row samples."""

    def constraints_ready(self, wait: float = 0.0) -> bool:
        """True when begin_turn / set_constraint can take a constraint without a pause. The first call
        starts building what constraints need (llguidance's view of the vocabulary: seconds) on a worker
        thread; until it is built the scheduler holds constrained turns back and steps the others.
        `wait`: seconds to wait for it (when nothing else can step)."""

    def prepare_constraints(self) -> None:
        """A turn may need a constraint mid-answer (tools offered, an answer's grammar after the thinking):
        start that build now where it costs the passes nothing (a core they leave spare, or a GPU running
        them), so the answer does not stop at its first call. With every core in the passes it waits for
        the grammar to be due: beside the prompt's read it made the first token later (docs/benchmarks.md)."""

    def step_logprobs(self, slot: int) -> list[TokenLogprob]:
        """The log-probabilities of the tokens `slot` got from the last forward, one per token, taken
        from the model's row before any constraint's mask; empty unless params.logprobs is set."""

    def remove_from(self, slot: int, position: int) -> bool:
        """Drop the slot's cached positions >= position; False if impossible."""

    def clear_slot(self, slot: int) -> None: ...

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        """Give `target` (cleared first) the first `length` cached positions of `source`.

        Chats that open with the same system prompt then compute it once.
        False where the backend cannot share a prefix between slots; `target` is then untouched.
        """

    def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]:
        """Run one batched pass; return, for each slot asked to sample, its new tokens.

        Those are the draft tokens that matched the slot's samples, then the first sample that did
        not (or the one after the whole draft): 1 to len(draft) + 1 tokens. All of `fed` is left in
        the cache; the caller drops the rejected tail with remove_from.
        """

    def kv_cache_bytes(self) -> int: ...

    def close(self) -> None: ...


class PictureEncoding(Protocol):
    """Pictures encoded beside the steps (the llama.cpp runner's `pictures` where its projector is on the CPU)."""

    def readable_until(self, tokens: Sequence[int]) -> int:
        """How many of a prompt's `tokens` still to read can be read now: up to a picture still being encoded."""

    def wait_encoding(self, timeout: float) -> None:
        """Until a picture's encode ends, or `timeout` seconds."""


def picture_encoding_of(runner: object) -> PictureEncoding | None:
    """Where a runner encodes pictures beside its steps: its `pictures`; None where it has none to wait for."""
    pictures = getattr(runner, "pictures", None)
    return cast(PictureEncoding, pictures) if hasattr(pictures, "readable_until") else None


def drafter_of(runner: object) -> Drafter | None:
    """The draft model loaded beside a runner's model (ModelConfig.draft_model): the llama.cpp runner's
    `drafter`; None where there is none or the backend takes none."""
    return cast("Drafter | None", getattr(runner, "drafter", None))


class RunnerError(Exception):
    """A failure a person can read: which file, what went wrong, what to try."""


class LoadCancelled(Exception):
    """Loading was cancelled by the user."""


class CacheFull(RunnerError):
    """The KV cache has no room for this step's tokens (llama_decode returned 1)."""
