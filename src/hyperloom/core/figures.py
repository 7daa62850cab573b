"""How a measured figure is printed: enough significant digits that a small one never reads as zero."""

from __future__ import annotations

import math


def significant(value: float, digits: int = 3) -> str:
    """`value` with at least `digits` significant digits and no exponent: 1234.5 → '1234', 12.34 → '12.3',
    0.0004567 → '0.000457', 0 → '0'."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"
