"""Driving a real runner through the real scheduler for the constraint tests: many sampled answers at once."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from engine.protocol import ChatMessage, Constraint, SamplingParams, TurnFinished
from engine.runners.base import Runner
from engine.scheduler import Scheduler
from tests.engine.constraints.schemas import SCHEMAS

# Temperature 1.0 with the app's other defaults: a random walk through what each schema allows.
HOT = SamplingParams(temperature=1.0, max_new_tokens=160)
SAMPLES = 20


def schema_constraint(name: str) -> Constraint:
    import json

    return Constraint("json_schema", json.dumps(SCHEMAS[name]))


def sample_answers(runner: Runner, question: Callable[[str], str], samples: int = SAMPLES
                   ) -> dict[str, list[TurnFinished]]:
    """`samples` answers per schema, each chat with its own seed, as many at once as the runner has slots."""
    for slot in range(runner.slots):
        runner.clear_slot(slot)
    scheduler = Scheduler(runner)
    for name in SCHEMAS:
        tokens = runner.tokenize(runner.render_chat([ChatMessage("user", question(name))]))
        for seed in range(samples):
            params = replace(HOT, seed=seed, constraint=schema_constraint(name))
            assert not scheduler.submit(f"{name}/{seed}", tokens, params)
    answers: dict[str, list[TurnFinished]] = {name: [] for name in SCHEMAS}
    while scheduler.has_work():
        for event in scheduler.step():
            if isinstance(event, TurnFinished):
                answers[event.chat_id.split("/")[0]].append(event)
    return answers
