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
# How many walks per schema. A fault in the masks that spoils a share p of all walks goes unseen in all
# 10 x SAMPLES of them with probability (1 - p) ** 80: 1.6% for one walk in 20, 0.02% for one in 10; one
# that spoils a third of a single schema's walks, (2/3) ** 8 = 4%. A fault that spoils every walk (a
# slot's mask given to another, the bits read in the wrong order, a token not consumed) shows in the
# first answer. 80 answers take about 25 s on the default model here; 200 took 60 s for little more.
SAMPLES = 8
# Chats at once: 20 is the quickest way through 80 answers on 2 cores (8 slots took 33 s, 40 took 39 s),
# and with the schemas submitted in turn every step holds several schemas side by side.
SLOTS = 20


def schema_constraint(name: str) -> Constraint:
    import json

    return Constraint("json_schema", json.dumps(SCHEMAS[name]))


def sample_answers(runner: Runner, question: Callable[[str], str], samples: int = SAMPLES
                   ) -> dict[str, list[TurnFinished]]:
    """`samples` answers per schema, each chat with its own seed, as many at once as the runner has slots.

    The schemas take turns (seed 0 of each, then seed 1 of each, ...), so every batch holds different
    schemas side by side: a mask that went to the wrong slot would land on another schema's answer."""
    for slot in range(runner.slots):
        runner.clear_slot(slot)
    scheduler = Scheduler(runner)
    prompts = {name: runner.tokenize(runner.render_chat([ChatMessage("user", question(name))])) for name in SCHEMAS}
    for seed in range(samples):
        for name, tokens in prompts.items():
            params = replace(HOT, seed=seed, constraint=schema_constraint(name))
            assert not scheduler.submit(f"{name}/{seed}", tokens, params)
    answers: dict[str, list[TurnFinished]] = {name: [] for name in SCHEMAS}
    while scheduler.has_work():
        for event in scheduler.step():
            if isinstance(event, TurnFinished):
                answers[event.chat_id.split("/")[0]].append(event)
    return answers
