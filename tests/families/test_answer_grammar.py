"""Token by token, model-free: the whole turn's grammar on the families' real vocabularies. The thinking
stays free and optional, the answer holds the client's schema or the call, a call may stand beside a
schema, and a call that opens without a marker (Llama 3.1's bare JSON, harmony's commentary) is still
written under its schema."""

from __future__ import annotations

import json

import pytest
from llguidance import LLMatcher

from engine.constraints.grammar import grammar_for
from engine.parsing.answer_grammar import turn_constraints
from engine.parsing.prompt import TurnSetup
from engine.protocol import Constraint, ToolSpec
from tests.families.test_markers import CALLS, WEATHER, tokens_of
from tests.families.vocab_view import FamilyVocabulary, family_vocabulary

SCHEMA = Constraint("json_schema", json.dumps(
    {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}))
ANSWER = '{"answer": 42}'
OTHER = ToolSpec("get_time", "", json.dumps({"type": "object", "properties": {"zone": {"type": "string"}}}))
THOUGHTS = {"qwen3": ["<think>", "\nLet me see.\n", "</think>", "\n\n"],
            "gemma4": ["<|channel>", "thought\nLet me see.", "<channel|>"],
            "gpt_oss": ["<|channel|>", "analysis", "<|message|>", "Let me see.", "<|end|>", "<|start|>", "assistant"],
            "ministral_reasoning": ["[THINK]", "Let me see.", "[/THINK]"]}
FINAL = {"gpt_oss": ["<|channel|>", "final", "<|message|>"]}


def setup_of(family: FamilyVocabulary, choice: str = "auto", tools: tuple[ToolSpec, ...] = (), *,
             in_reasoning: bool = False, thinking_off: bool = False) -> TurnSetup:
    return TurnSetup(family.output, family.output.tools if tools else None, in_reasoning, tools, choice,
                     False, thinking_off)


def accepts(family: FamilyVocabulary, constraint: Constraint | None, pieces: list[str]) -> bool:
    """Whether the constraint lets the model write exactly these pieces (special tokens by their id) and end."""
    assert constraint is not None
    matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    return all(matcher.consume_token(token) for token in tokens_of(family, pieces)) and matcher.is_accepting()


@pytest.mark.parametrize("name", sorted(THOUGHTS))
def test_a_schema_answer_may_follow_a_free_thought_and_is_held_to_the_schema(name: str) -> None:
    family = family_vocabulary(name)
    first, after = turn_constraints(setup_of(family), SCHEMA)
    final = FINAL.get(name, [])
    assert accepts(family, first, [*THOUGHTS[name], *final, ANSWER])
    assert accepts(family, first, [*final, ANSWER]), "thinking is optional"
    assert not accepts(family, first, [*THOUGHTS[name], *final, '{"answer": "no"}'])
    assert not accepts(family, first, [*THOUGHTS[name], *final, "Forty-two."])
    # the engine's own close at the reasoning budget: what follows it is the answer (harmony's header first)
    assert accepts(family, after, [*final, ANSWER]) and not accepts(family, after, [*final, "Forty-two."])


def test_thinking_switched_off_leaves_no_room_to_think() -> None:
    family = family_vocabulary("qwen3")
    first, _ = turn_constraints(setup_of(family, thinking_off=True), SCHEMA)
    assert accepts(family, first, [ANSWER])
    assert not accepts(family, first, [*THOUGHTS["qwen3"], ANSWER])


def test_a_thought_the_prompt_opened_is_free_and_the_schema_starts_after_it() -> None:
    family = family_vocabulary("r1_distill")
    assert family.output.reasoning is not None
    first, after = turn_constraints(setup_of(family, in_reasoning=True), SCHEMA)
    assert first is None, "nothing holds the thinking"
    assert accepts(family, after, [ANSWER]) and not accepts(family, after, ["The answer"])


@pytest.mark.parametrize("name", ["qwen3", "llama3_1", "mistral_nemo", "gpt_oss", "qwen2_5", "qwen3_coder", "gemma4"])
def test_with_tools_and_a_schema_the_answer_is_a_call_or_the_schema(name: str) -> None:
    family = family_vocabulary(name)
    first, _ = turn_constraints(setup_of(family, "auto", (WEATHER, OTHER)), SCHEMA)
    final = FINAL.get(name, [])
    assert accepts(family, first, CALLS[name]), "a call under its schema"
    assert accepts(family, first, [*final, ANSWER]), "or the schema's answer"
    assert not accepts(family, first, [*final, "Sunny."])
    wrong = [piece.replace("get_weather", "get_wether") for piece in CALLS[name]]
    assert not accepts(family, first, wrong), "a call names one of the tools"


@pytest.mark.parametrize("name", ["llama3_1", "gpt_oss"])
def test_a_call_without_a_marker_of_its_own_is_written_under_its_schema_in_auto(name: str) -> None:
    family = family_vocabulary(name)
    first, _ = turn_constraints(setup_of(family, "auto", (WEATHER,)), None)
    final = FINAL.get(name, [])
    assert accepts(family, first, CALLS[name])
    assert accepts(family, first, [*final, "It is sunny in Paris."]), "free text stays free"
    cut = [piece.replace('{"city": "Paris"}', '{"town": "Paris"}') for piece in CALLS[name]]
    assert not accepts(family, first, cut), "the arguments hold the tool's schema"


def test_a_marker_familys_auto_stays_free_until_the_marker() -> None:
    family = family_vocabulary("qwen3")
    assert turn_constraints(setup_of(family, "auto", (WEATHER,)), None) == (None, None)


@pytest.mark.parametrize("name", ["qwen3", "gpt_oss", "ministral_reasoning", "gemma4"])
def test_a_forced_call_may_think_first(name: str) -> None:
    family = family_vocabulary(name)
    first, _ = turn_constraints(setup_of(family, "get_weather", (WEATHER, OTHER)), SCHEMA)
    assert accepts(family, first, [*THOUGHTS[name], *CALLS[name]])
    assert accepts(family, first, CALLS[name])
    assert not accepts(family, first, [*FINAL.get(name, []), ANSWER]), "forced: the schema's answer is no way out"


@pytest.mark.parametrize("name", ["qwen3", "gpt_oss", "gemma4"])
def test_a_forced_call_after_the_budget_closed_the_thought_is_still_the_call(name: str) -> None:
    family = family_vocabulary(name)
    _, after = turn_constraints(setup_of(family, "required", (WEATHER, OTHER)), None)
    # harmony: the engine's close began the next message only, so the call's own header comes next
    assert accepts(family, after, CALLS[name])
    assert not accepts(family, after, [*FINAL.get(name, []), "Sunny."]), "no way out into text"


def test_a_clients_grammar_is_not_composed_and_waits_for_an_opened_thought() -> None:
    family = family_vocabulary("r1_distill")
    grammar = Constraint("lark", 'start: "yes" | "no"')
    assert turn_constraints(setup_of(family, in_reasoning=True), grammar) == (None, grammar)
    assert turn_constraints(setup_of(family), grammar) == (grammar, None)
