"""The constrained case of `python -m engine.bench --constrained`: the same prompts free and under a JSON Schema.

Each tab count runs its turns free (to max tokens, as the other cases do), then the same prompts
under SCHEMA, in the same run. As in the speculative case each prompt is read into its chat's
cache by a one-token turn first, so the timed turns compare decoding, the only part a constraint
changes (a constrained answer ends where its JSON closes, sooner than max tokens). valid_fraction:
the share of constrained answers that ended by themselves and validate against the schema.
"""

from __future__ import annotations

import json
from typing import Any

from engine.bench.harness import Bench, Turn, decode_timed
from engine.protocol import ChatMessage, CloseChat, Constraint, SamplingParams, Submit

PERSON = {"type": "object", "additionalProperties": False, "required": ["name", "age", "city", "hobbies"],
          "properties": {"name": {"type": "string", "maxLength": 24}, "age": {"type": "integer", "minimum": 0,
                                                                              "maximum": 120},
                         "city": {"type": "string", "maxLength": 24},
                         "hobbies": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 16}}}}
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["people"],
          "properties": {"people": {"type": "array", "minItems": 2, "maxItems": 2, "items": PERSON}}}
QUESTION = "Describe two people who live in a harbour town, as JSON with their name, age, city and hobbies."


def _request(chat_id: str, tab: int, max_tokens: int, constrained: bool) -> Submit:
    # drafting off in both halves: a random-weight fixture's free text repeats itself and took more prompt-lookup
    # drafts than its JSON did (117 against 91 tokens in 60 steps), which measured drafting, not the schema
    params = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=max_tokens, ignore_eos=not constrained,
                            constraint=Constraint("json_schema", json.dumps(SCHEMA)) if constrained else None,
                            speculative="off")
    # thinking off where the template can switch it: the case measures the schema's cost on the answer
    return Submit(chat_id, (ChatMessage("user", f"{QUESTION} (Tab {tab}.)"),), params,
                  template_options=(("enable_thinking", "false"),))


def _valid(turn: Turn) -> bool:
    from jsonschema import Draft202012Validator

    if turn.finished is None or turn.finished.reason != "stop":
        return False
    try:
        return Draft202012Validator(SCHEMA).is_valid(json.loads(turn.finished.text))
    except json.JSONDecodeError:
        return False


def schema_lengths(bench: Bench, tabs: int, max_tokens: int) -> list[int]:
    """Each tab's constrained answer length, from an untimed pass (greedy: every repeat gives the same)."""
    turns = bench.serve([_request(f"constrained-lengths-{tabs}-{i}", i, max_tokens, True) for i in range(tabs)])
    for i in range(tabs):
        bench.loop.send(CloseChat(f"constrained-lengths-{tabs}-{i}"))
    return [t.finished.stats.generated_tokens if t.finished else max_tokens for t in turns]


def run_constrained(bench: Bench, backend: str, tabs: int, max_tokens: int, lengths: list[int],
                    schema_first: bool = False) -> dict[str, Any]:
    """Aggregate decode tokens/s free and under the schema, and the share of valid constrained answers.

    The free turns stop at the lengths the constrained ones reach (`lengths`, per tab), so both halves
    decode the same number of tokens at the same context lengths and batch sizes, and a turn's fixed
    costs weigh the same in each. Repeats alternate which half runs first (as the speculative case
    does): on this shared VM the free half alone came out between 76 and 106 tok/s at 4 tabs in four
    runs minutes apart."""
    result: dict[str, Any] = {"tabs": tabs, "backend": backend}
    for constrained in ((True, False) if schema_first else (False, True)):
        mode = "schema" if constrained else "free"
        requests = [_request(f"constrained-{mode}-{tabs}-{i}", i, max_tokens if constrained else lengths[i], constrained)
                    for i in range(tabs)]
        elapsed, turns = decode_timed(bench, requests)
        generated = sum(t.finished.stats.generated_tokens for t in turns if t.finished)
        result[f"{mode}_tok_s"] = generated / elapsed
        result[f"{mode}_tokens"] = generated
        if constrained:
            result["valid_fraction"] = sum(map(_valid, turns)) / len(turns)
            # the schema's tokens read as forced drafts, no sample needed (engine/constraints/forced.py)
            result["forced_tokens"] = sum(t.finished.stats.forced_tokens for t in turns if t.finished)
    return result


def constrained_lines(result: dict[str, Any]) -> list[str]:
    # ratio: the median repeat's; forced: the share of the schema's tokens its constraint forced
    lines = [f"{'tabs':>5} {'backend':>9} {'free tok/s':>11} {'schema tok/s':>13} {'ratio':>6} {'valid':>6} {'forced':>7}"]
    for case in result.get("constrained", []):
        ratio = case.get("schema_free_median") or (case["schema_tok_s"] / case["free_tok_s"] if case["free_tok_s"] else 0.0)
        lines.append(f"{case['tabs']:>5} {case['backend']:>9} {case['free_tok_s']:11.1f} {case['schema_tok_s']:13.1f} "
                     f"{ratio:6.2f} {case['valid_fraction']:6.2f} {_share(case):>7}")
    return lines


def _share(case: dict[str, Any]) -> str:
    tokens, forced = case.get("schema_tokens"), case.get("forced_tokens")
    return f"{forced / tokens:.0%}" if tokens and forced is not None else "-"
