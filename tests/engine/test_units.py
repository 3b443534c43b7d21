"""Sizes and counts as a person reads them."""

from __future__ import annotations

from engine.units import format_bytes, format_count


def test_bytes_in_binary_units_with_about_three_digits() -> None:
    sizes = [0, 512, 1023, 2048, 10_035, 98 * 1024**2, 377_487_360, 1023 * 1024**2, 3 * 1024**3 // 2, 141 * 1024**3]
    assert [format_bytes(size) for size in sizes] == [
        "0 B", "512 B", "1023 B", "2.0 KiB", "9.8 KiB", "98 MiB", "360 MiB", "1023 MiB", "1.5 GiB", "141.0 GiB"
    ]  # fmt: skip


def test_counts_with_a_unit_letter() -> None:
    assert [format_count(n) for n in (999, 1_500, 134_515_008, 1_500_000_000)] == ["999", "1.5K", "134.5M", "1.5B"]
