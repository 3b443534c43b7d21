"""What a drafted token costs on the running machine, in generated tokens' time, from the steps' timings.

Before any step is timed, the line fitted on the VMs of docs/benchmarks.md stands in (engine/tuning.py,
PRIOR_STEP_FIXED and PRIOR_STEP_PER_TOKEN): the busier the step, the more a draft token costs, because a
CPU's cores are already kept busy by the other chats' tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# What each constant decides, and where it was measured or why chosen: engine/tuning.py.
from engine.tuning import (
    MIN_COST_RATIO,
    MIN_SPREAD,
    MIN_TIMED_STEPS,
    PRIOR_STEP_FIXED,
    PRIOR_STEP_PER_TOKEN,
    TIMING_MEMORY,
)


def prior_cost_ratio(decoding: int) -> float:
    """A draft token's cost over a generated token's time in a step of `decoding` chats, before any timing:
    what one more token adds (PRIOR_STEP_PER_TOKEN) over the step's time per chat."""
    count = max(decoding, 1)
    return PRIOR_STEP_PER_TOKEN * count / (PRIOR_STEP_FIXED + PRIOR_STEP_PER_TOKEN * count)


@dataclass
class _LineFit:
    """`seconds = fixed + per_token * tokens` by least squares, older steps fading."""

    weight: float = 0.0
    sum_x: float = 0.0
    sum_y: float = 0.0
    sum_xx: float = 0.0
    sum_xy: float = 0.0
    fit: tuple[float, float] | None = None  # (fixed, per_token) from the last steps of spread sizes

    def observe(self, tokens: int, seconds: float) -> None:
        memory = TIMING_MEMORY
        self.weight = memory * self.weight + 1.0
        self.sum_x = memory * self.sum_x + tokens
        self.sum_y = memory * self.sum_y + seconds
        self.sum_xx = memory * self.sum_xx + tokens * tokens
        self.sum_xy = memory * self.sum_xy + tokens * seconds
        self._refit()

    def _refit(self) -> None:
        """The line through the recent steps, when their sizes are spread enough to tell the parts
        apart. Otherwise the last fit stands: steps of one size are what follows once drafts stop
        paying, and forgetting why they stopped would start them again."""
        if self.weight < MIN_TIMED_STEPS:
            return
        mean_x, mean_y = self.sum_x / self.weight, self.sum_y / self.weight
        spread = self.sum_xx / self.weight - mean_x * mean_x
        if spread >= MIN_SPREAD:
            per_token = (self.sum_xy / self.weight - mean_x * mean_y) / spread
            self.fit = (mean_y - per_token * mean_x, per_token)


@dataclass
class StepCost:
    """A draft token's cost relative to a generated token's time, from the decode steps' timings.

    Step time is fitted as `fixed + per_token * tokens fed`, one line per number of chats
    decoding together: what a token adds depends on how many are already in the step (on a CPU,
    four chats' tokens already keep the cores busy, and a fifth token costs nearly a generated
    one's time; alone, a chat's step mostly waits on the weights and drafts ride along). Drafts of
    different lengths spread the points, so no step has to go without drafts to measure.
    """

    lines: dict[int, _LineFit] = field(default_factory=dict)

    def observe(self, decoding: int, tokens: int, prompt_tokens: int, seconds: float) -> None:
        if prompt_tokens > 0 or decoding <= 0:
            return  # a prompt chunk's cost would drown the drafts'
        self.lines.setdefault(decoding, _LineFit()).observe(tokens, seconds)

    def token_seconds(self, decoding: int) -> float | None:
        """Seconds per generated token of a step of `decoding` one-token chats, from the nearest count's line;
        None until one is fitted."""
        fits = {count: line.fit for count, line in self.lines.items() if line.fit is not None}
        if not fits:
            return None
        fixed, per_token = fits[min(fits, key=lambda count: (abs(count - decoding), -count))]
        step = fixed + per_token * max(decoding, 1)
        return step / max(decoding, 1) if step > 0.0 else None

    def ratio(self, decoding: int) -> float:
        """What one more token adds to a step of `decoding` one-token chats, over the time per generated
        token; until that many chats have been timed together, the nearest count's line says it."""
        fits = {count: line.fit for count, line in self.lines.items() if line.fit is not None}
        if not fits:
            return prior_cost_ratio(decoding)
        fixed, per_token = fits[min(fits, key=lambda count: (abs(count - decoding), -count))]
        step = fixed + per_token * decoding
        if step <= 0.0:
            return prior_cost_ratio(decoding)
        return min(1.0, max(MIN_COST_RATIO, per_token * decoding / step))
