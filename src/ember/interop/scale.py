"""The physical scale of a grid episode: metres per cell, seconds per step.

EMBER's grid and steps have no units; pedestrian-dynamics tools need
metres and seconds.  The defaults are those of the floor-field cellular
automaton (Burstedde, Klauck, Schadschneider and Zittartz, 2001): a cell
of 0.4 m x 0.4 m, the space one person occupies in a dense crowd, and a
step of 0.3 s, so that one cell a step is about 1.3 m/s, a free walking
speed.  Both are kept exact (``Fraction``) and turned into floats once,
where a coordinate or the frame rate is written.
"""

import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from ..errors import InteropError

DEFAULT_CELL_SIZE = "0.4"
DEFAULT_STEP_SECONDS = "0.3"

#: Accepted ranges.  Below 1 mm a cell centre would lie within PedPy's
#: 1e-5 m "ends on the line" tolerance of an exit's measurement line; the
#: upper bounds keep every coordinate and the frame rate far inside a float.
CELL_SIZE_RANGE = (Fraction(1, 1000), Fraction(1000))
STEP_SECONDS_RANGE = (Fraction(1, 1000), Fraction(3600))


def exact_quantity(value, name, low, high, unit):
    """``value`` (a number or its decimal text) as an exact ``Fraction`` in [low, high].

    A float counts as the decimal it prints as (``0.4`` is 2/5, not the
    binary fraction nearest to it).  Anything else raises ``InteropError``
    naming ``name``.
    """
    amount = _exact(value, name, unit)
    if not low <= amount <= high:
        raise InteropError(
            f"{name} must be from {decimal_text(low)} to {decimal_text(high)} {unit}, got {_shown(value)} {unit}."
        )
    return amount


def _exact(value, name, unit):
    expected = f"{name} must be a positive, finite number of {unit}"
    if isinstance(value, bool):
        raise InteropError(f"{expected}, got {value!r}.")
    if isinstance(value, (int, Fraction)):
        amount = Fraction(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InteropError(f"{expected}, got {value!r}.")
        amount = Fraction(repr(value))
    elif isinstance(value, (Decimal, str)):
        try:
            number = Decimal(value)
        except InvalidOperation:
            raise InteropError(f"{expected}, got {value!r}.") from None
        if not number.is_finite():
            raise InteropError(f"{expected}, got {value!r}.")
        amount = Fraction(number)
    else:
        raise InteropError(f"{expected}, got a {type(value).__name__}.")
    if amount <= 0:
        raise InteropError(f"{expected}, got {_shown(value)}.")
    return amount


def _shown(value):
    return value.strip() if isinstance(value, str) else str(value)


def decimal_text(amount):
    """``amount`` as exact decimal digits (``0.4``, ``12``) when it has them, else ``N/D``."""
    denominator, twos, fives = amount.denominator, 0, 0
    while denominator % 2 == 0:
        denominator, twos = denominator // 2, twos + 1
    while denominator % 5 == 0:
        denominator, fives = denominator // 5, fives + 1
    if denominator != 1:
        return f"{amount.numerator}/{amount.denominator}"
    places = max(twos, fives)  # the fewest: the last digit is not 0
    digits = str(abs(amount.numerator) * 10**places // amount.denominator).rjust(places + 1, "0")
    sign = "-" if amount < 0 else ""
    return sign + (f"{digits[:-places]}.{digits[-places:]}" if places else digits)


def cell_size_metres(value, name="cell_size"):
    return exact_quantity(value, name, *CELL_SIZE_RANGE, "metres")


def step_duration_seconds(value, name="step_seconds"):
    return exact_quantity(value, name, *STEP_SECONDS_RANGE, "seconds")


class Scale:
    """Metres per cell and seconds per step, exact; ``frame_rate`` is frames (steps) per second."""

    def __init__(self, cell_size=DEFAULT_CELL_SIZE, step_seconds=DEFAULT_STEP_SECONDS):
        self.cell_size = cell_size_metres(cell_size)
        self.step_seconds = step_duration_seconds(step_seconds)
        self.frame_rate = 1 / self.step_seconds

    def describe(self):
        """``0.4 m cells, 0.3 s steps``: the exact numbers given."""
        return f"{decimal_text(self.cell_size)} m cells, {decimal_text(self.step_seconds)} s steps"
