"""Constrained decoding: a sequence's samples kept to a JSON Schema, a regex or a grammar (llguidance).

`grammar.py` turns a protocol.Constraint into a checked llguidance grammar (no tokenizer needed: the
API checks a request with it), `slots.py` keeps each slot's matcher and computes a step's token masks
on a thread of their own while the forward pass runs. Qt-free, model-free: the runners bring the
tokenizer.
"""

from engine.constraints.grammar import ConstraintError, check, grammar_for

__all__ = ["ConstraintError", "check", "grammar_for"]
