"""The scripted stand-in for EngineBridge the widget tests drive (it lives in app/misc: the GUI probe uses it too)."""

from app.misc.scripted_bridge import NO_STATS, ScriptedBridge, model_info

__all__ = ["NO_STATS", "ScriptedBridge", "model_info"]
