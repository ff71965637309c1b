"""round() over a column of floats, the same to the bit, in a few array operations.

round(x, d) is correctly rounded: the double nearest to x's exact value rounded (half to even) to d
decimals, through a decimal string, about 0.4 us a call; the router rounds thousands of scores a
request. Here x * 10^d is rounded to the nearest integer n and n / 10^d divided, both exactly as IEEE
arithmetic rounds (the quotient is the double nearest to n / 10^d, as round's string conversion gives).
The product may differ from x's exact value times 10^d by half a unit in its last place, which can
move it across a half only when it lies that close to one: such values, and those too large or not
finite, go through round() itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Below 2^31, half a unit in the last place of the product is under 2^-22, far inside this margin.
_NEAR_HALF = 1e-6
_LARGEST = 2.0**31
# Every whole number below 2^53 is a double, which round() gives back unchanged.
_EXACT = 2.0**53


def rounded(values: Sequence[float] | np.ndarray, digits: int) -> list[float]:
    """[round(v, digits) for v in values], the same to the bit."""
    x = np.asarray(values, dtype=np.float64)
    scale = 10.0**digits
    with np.errstate(invalid="ignore", over="ignore"):
        product = x * scale
        result = np.rint(product) / scale
        doubtful = ~(np.abs(product) < _LARGEST) | ~(np.abs(product - np.floor(product) - 0.5) > _NEAR_HALF)
        if digits >= 0:
            # A whole number (a row's id among its score parts) is its own rounding, however large its
            # product.
            whole = (x == np.floor(x)) & (np.abs(x) < _EXACT)
            result = np.where(whole, x, result)
            doubtful &= ~whole
    out = result.tolist()
    for i in np.flatnonzero(doubtful).tolist():
        out[i] = round(float(x[i]), digits)
    return out
