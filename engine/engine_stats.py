"""EngineStats from the loaded models: speeds over the last few seconds, memory, each model's own figures."""

from __future__ import annotations

from collections import deque

from engine.models import LoadedModel, ModelPool
from engine.protocol import EngineStats, ModelStats
from engine.remote.engine import RemoteEngine
from engine.scheduler import Scheduler

SPEED_WINDOW_S = 3.0


class StatsKeeper:
    """Turns the schedulers' token logs into speeds; counts every token generated since the engine started."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.total_generated = 0
        self._recent_drafts: deque[tuple[float, str, int, int]] = deque()  # (time, source, drafted, accepted)

    def stats(self, pool: ModelPool, now: float) -> EngineStats:
        """`now` on perf_counter's clock (the token logs'); the models the one loaded last first."""
        models = list(reversed(pool.models))
        per_model = [self._model_stats(model, now, pool.clock()) for model in models]
        per_chat = tuple(pair for model in models for pair in self._chat_speeds(model, now))
        by_source = self._draft_counts(models, now)
        remote = next((m.work for m in models if isinstance(m.work, RemoteEngine)), None)
        busy = sum(s.slots_busy for s in per_model)
        return EngineStats(
            tokens_per_second=sum(s.tokens_per_second for s in per_model),
            chat_tokens_per_second=per_chat,
            slots_busy=busy,
            slots_total=max(busy, sum(s.slots_total for s in per_model)),
            kv_cache_bytes=sum(s.kv_cache_bytes for s in per_model),
            model_bytes=sum(s.model_bytes for s in per_model),
            total_generated_tokens=self.total_generated,
            latency_ms=remote.latency_ms if remote is not None else 0.0,
            drafted_tokens=sum(drafted for _, drafted, _ in by_source),
            accepted_tokens=sum(accepted for _, _, accepted in by_source),
            drafts_by_source=by_source,
            models=tuple(per_model),
            budget_bytes=pool.options.budget_bytes,
        )

    def _model_stats(self, model: LoadedModel, now: float, clock_now: float) -> ModelStats:
        self.take_log(model, now)
        busy = model.busy
        work = model.work
        if isinstance(work, Scheduler):
            slots_busy, slots_total, chats = work.slots_busy(), len(work.slots), work.chat_ids()
        else:
            slots_busy, slots_total, chats = work.slots_busy(), model.info.slots, tuple(work.turns)
        runner = model.runner
        return ModelStats(
            path=model.path, name=model.name,
            tokens_per_second=len(model.recent) / self._window(model, now) if busy else 0.0,
            slots_busy=slots_busy, slots_total=max(slots_busy, slots_total),
            model_bytes=model.info.model_bytes,
            kv_cache_bytes=runner.kv_cache_bytes() if runner is not None else 0,
            prompt_copy_bytes=model.info.prompt_copy_bytes, draft_model_bytes=model.info.draft_model_bytes,
            chats=chats, pinned=model.pinned,
            idle_s=0.0 if busy else max(0.0, clock_now - model.last_used))

    def take_log(self, model: LoadedModel, now: float) -> None:
        log_ = model.work.sampled_log
        self.total_generated += len(log_)
        model.recent.extend(log_)
        log_.clear()
        while model.recent and now - model.recent[0][0] > SPEED_WINDOW_S:
            model.recent.popleft()

    def _window(self, model: LoadedModel, now: float) -> float:
        if not model.recent:
            return 1.0
        return min(SPEED_WINDOW_S, max(now - model.recent[0][0], self.interval_s))

    def _chat_speeds(self, model: LoadedModel, now: float) -> list[tuple[str, float]]:
        if not model.busy:
            return []
        counts: dict[str, int] = {}
        for _, chat_id in model.recent:
            counts[chat_id] = counts.get(chat_id, 0) + 1
        window = self._window(model, now)
        return [(chat, n / window) for chat, n in counts.items()]

    def _draft_counts(self, models: list[LoadedModel], now: float) -> tuple[tuple[str, int, int], ...]:
        """(source, tokens drafted, accepted) over the speed window, per source: the gauge's acceptance."""
        for model in models:
            if isinstance(model.work, Scheduler):
                self._recent_drafts.extend(model.work.draft_log)
                model.work.draft_log.clear()
        while self._recent_drafts and now - self._recent_drafts[0][0] > SPEED_WINDOW_S:
            self._recent_drafts.popleft()
        counts: dict[str, tuple[int, int]] = {}
        for _, source, drafted, accepted in self._recent_drafts:
            before = counts.get(source, (0, 0))
            counts[source] = (before[0] + drafted, before[1] + accepted)
        return tuple((source, drafted, accepted) for source, (drafted, accepted) in sorted(counts.items()))
