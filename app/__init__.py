"""Hearth's Qt side: the window, chat tabs, gauges and the bridge to the engine thread."""

__version__ = "0.1.0"
