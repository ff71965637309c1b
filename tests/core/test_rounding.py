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
