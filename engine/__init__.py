"""Hearth's engine: model runners, the scheduler and the engine thread. No Qt here."""

__version__ = "0.1.0"
