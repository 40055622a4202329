"""What ranking and statistics read from an ok row (ranking.md §1-2): ``EpisodeOutcome``, checked, and x.

``EpisodeOutcome`` checks and keeps an ok row's safety counts, its total
time to safety and its distance histogram (a compact ``Histogram``);
``exposure_of`` is ranking.md §2's x of a histogram, an exact ``Fraction``.
"""

import array
import bisect
import math
import re
from collections.abc import Mapping
from fractions import Fraction

from ..strict_json import shown
from .values import MAX_INTEGER, Invalid, integer, json_object, member

_DISTANCE_KEY = re.compile(r"[1-9][0-9]*")


def exposure_of(histogram):
    """Σ count / d for a {d: count} histogram as an exact ``Fraction`` (ranking.md §2's x).

    Summed in integers over one common denominator, the least common
    multiple of the distances so far, and reduced once at the end: no
    ``Fraction`` per term, whose construction and reduction dominated the
    ranking of a board of a thousand policies.
    """
    numerator, denominator = 0, 1
    for d, count in histogram.items():
        if count:
            common = math.gcd(denominator, d)
            scale = d // common
            numerator = numerator * scale + count * (denominator // common)
            denominator *= scale
    return Fraction(numerator, denominator)


class Histogram(Mapping):
    """A checked {d: count} distance histogram, read only, in two arrays of 64-bit integers (distances ascending).

    About 16 bytes an entry where a dict of Python ints takes about 45:
    what ranking, statistics and the report keep of every ok row.
    """

    __slots__ = ("_counts", "_distances")

    def __init__(self, histogram):
        ordered = sorted(histogram.items())
        self._distances = array.array("q", [d for d, _ in ordered])
        self._counts = array.array("q", [count for _, count in ordered])

    def __getitem__(self, distance):
        i = bisect.bisect_left(self._distances, distance)
        if i < len(self._distances) and self._distances[i] == distance:
            return self._counts[i]
        raise KeyError(distance)

    def __iter__(self):
        return iter(self._distances)

    def __len__(self):
        return len(self._distances)

    def items(self):
        """(d, count) pairs, distances ascending."""
        return zip(self._distances, self._counts, strict=True)


class EpisodeOutcome:
    """The values ranking and statistics read from one ok row (ranking.md §1-2), checked."""

    __slots__ = ("casualties", "evacuated", "histogram", "population", "stranded", "time_to_safety")

    def __init__(self, metrics):
        safety = json_object(member(metrics, "safety", "$.metrics"), "$.metrics.safety")
        time = json_object(member(metrics, "time", "$.metrics"), "$.metrics.time")
        fire = json_object(member(metrics, "fire_exposure", "$.metrics"), "$.metrics.fire_exposure")
        read = {}
        for field in ("population", "evacuated", "casualties", "stranded"):
            read[field] = integer(member(safety, field, "$.metrics.safety"), f"$.metrics.safety.{field}")
        self.population = integer(read["population"], "$.metrics.safety.population", minimum=1)
        self.evacuated = read["evacuated"]
        self.casualties = read["casualties"]
        self.stranded = read["stranded"]
        if self.evacuated + self.casualties + self.stranded != self.population:
            # metrics.md §4's invariant; without it a rate could exceed 1.
            raise Invalid(
                f"$.metrics.safety: evacuated + casualties + stranded must equal population, got "
                f"{self.evacuated} + {self.casualties} + {self.stranded} != {self.population}"
            )
        self.time_to_safety = integer(
            member(time, "person_time_to_safety_total", "$.metrics.time"), "$.metrics.time.person_time_to_safety_total"
        )
        path = "$.metrics.fire_exposure.distance_histogram"
        histogram = json_object(member(fire, "distance_histogram", "$.metrics.fire_exposure"), path)
        checked = {}
        for key, count in histogram.items():
            if not _DISTANCE_KEY.fullmatch(key):
                raise Invalid(f"{path}: key {shown(key)} is not a distance d >= 1 in decimal without leading zeros")
            if len(key) > 19 or int(key) >= MAX_INTEGER:
                raise Invalid(f"{path}: distance {shown(key)} is out of range (d < 2^63)")
            checked[int(key)] = integer(count, f"{path}.{key}")
        self.histogram = Histogram(checked)

    def exposure(self):
        """x: Σ count / d over the histogram, exact."""
        return exposure_of(self.histogram)

    def counts_key(self):
        """(c, s, p): the order key without x, which is costlier and needed only to break a tie."""
        return (self.casualties, self.stranded, self.time_to_safety)
