"""Sizes and counts written for people, the same way in the engine and in the window."""

from __future__ import annotations


def format_bytes(count: int | float) -> str:
    """Binary units, about three digits: 512 B, 9.8 KiB, 98 MiB, 360 MiB, 1.5 GiB."""
    value = float(count)
    if abs(value) < 1024:
        return f"{value:.0f} B"
    for unit in ("KiB", "MiB"):
        value /= 1024
        if abs(value) < 1024:
            return f"{value:.1f} {unit}" if abs(value) < 10 else f"{value:.0f} {unit}"
    return f"{value / 1024:.1f} GiB"


def format_count(count: int) -> str:
    """Parameters and such: 134.5M, 1.5B."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= size:
            return f"{count / size:.1f}{unit}"
    return str(count)
