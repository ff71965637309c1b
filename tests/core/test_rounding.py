"""core.rounding.rounded: round() of a column of floats, the same to the bit, without a call per value."""

from __future__ import annotations

import math
import random
import struct

from core.rounding import rounded


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def test_rounded_is_round_to_the_bit() -> None:
    rng = random.Random(43)
    values = [rng.random() * rng.choice([1e-9, 1e-6, 1e-3, 1.0, 3.0, 1e3]) * rng.choice([1, -1]) for _ in range(20000)]
    # Halfway and nearly halfway at the sixth decimal, where the product by 10^6 may round either way.
    values += [(n + 0.5) / 1e6 for n in range(-2000, 2000)]
    values += [math.nextafter((n + 0.5) / 1e6, direction) for n in range(-500, 500) for direction in (-1.0, 1.0)]
    values += [0.0, -0.0, 1e-7, -1e-7, 2.0**40, 1e300, -1e300, math.inf, -math.inf]
    for digits in (3, 6):
        expected = [round(value, digits) for value in values]
        assert [_bits(v) for v in rounded(values, digits)] == [_bits(v) for v in expected]


def test_rounded_keeps_nan() -> None:
    assert math.isnan(rounded([math.nan], 6)[0])


def test_whole_numbers_are_rounded_without_a_call_per_value(monkeypatch) -> None:
    """A trace's score parts carry row ids (`passage`: 5629.0), whose product by 10^6 is past the fast
    path's range: they are their own rounding, and need no call of round() each."""
    import core.rounding as module

    calls: list[float] = []

    def counted(value: float, digits: int) -> float:
        calls.append(value)
        return round(value, digits)

    monkeypatch.setattr(module, "round", counted, raising=False)
    values = [5629.0, -5258.0, 2.0**52, 0.0, -0.0, 1.0, 3.5e9 + 0.5, 2.0**60]
    expected = [round(value, 6) for value in values]
    assert [_bits(v) for v in rounded(values, 6)] == [_bits(v) for v in expected]
    assert calls == [3.5e9 + 0.5, 2.0**60]
    assert [_bits(v) for v in rounded([5629.0, 1234.5], -2)] == [_bits(round(5629.0, -2)), _bits(round(1234.5, -2))]
