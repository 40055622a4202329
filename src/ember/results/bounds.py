"""``bounds.jsonl`` of a results directory read back (bounds.md §4-§5), and the distance to the possible.

The file holds one bounds object per key of K, scenarios in campaign.json's
order and seeds ascending.  ``read_bounds`` checks every line against the
campaign it sits beside (its fields, its version, its key and population)
and gives each key's ``EpisodeBounds``; ``Distance`` sums a group of ok
rows against them: avoidable casualties (Σ casualties − Σ casualties_min)
and evacuated of possible (Σ evacuated / Σ evacuated_max).  An episode whose
bounds are null is left out of the four sums and counted as "no bound".
Nothing here changes ``ranking.json`` or ``statistics.json``.
"""

import os

from ..canonical import canonical_json_reference
from ..errors import ResultsError
from .layout import BOUNDS_FILE
from .reader import open_regular
from .schema import shown, strict_json

BOUNDS_VERSION = "1.0"
#: The keys of one line (bounds.md §4), in the order canonical JSON writes them.
BOUNDS_KEYS = (
    "bounds_version", "casualties_min", "evacuated_max", "fire_stable_step", "limit", "population", "scenario_hash",
    "scenario_id", "seed",
)  # fmt: skip
_NO_BOUND = "—"


class EpisodeBounds:
    """One key's optima: ``evacuated_max`` and ``casualties_min`` (both None when the limit of §3 applied)."""

    __slots__ = ("casualties_min", "evacuated_max", "population")

    def __init__(self, population, evacuated_max, casualties_min):
        self.population = population
        self.evacuated_max = evacuated_max
        self.casualties_min = casualties_min


def key_order(campaign):
    """K in ``bounds.jsonl``'s order: (scenario_id, scenario_hash, seed), scenarios in order, seeds ascending."""
    for scenario_hash, (scenario_id, seeds) in campaign.scenarios.items():
        for seed in sorted(seeds):
            yield scenario_id, scenario_hash, seed


def read_bounds(directory, campaign):
    """``directory``'s ``bounds.jsonl`` checked against ``campaign`` (a ``CampaignJson``), or None when absent.

    Returns a dict (scenario_hash, seed) -> ``EpisodeBounds``.  A line that is
    not a bounds 1.0 object of the next key, in canonical bytes, is a
    ``ResultsError`` naming ``bounds.jsonl`` and the line.
    """
    path = os.path.join(directory, BOUNDS_FILE)
    if not os.path.lexists(path):
        return None
    with open_regular(path, BOUNDS_FILE, directory) as handle:
        data = handle.read()
    return bounds_of_bytes(data, campaign, directory)


def bounds_of_bytes(data, campaign, directory=None):
    """``bounds.jsonl``'s bytes checked against ``campaign``: see ``read_bounds``."""
    lines = data.split(b"\n")
    if lines[-1] != b"":
        raise ResultsError(BOUNDS_FILE, len(lines), "the last line has no newline", directory)
    lines.pop()
    expected = list(key_order(campaign))
    found = {}
    for number, (line, key) in enumerate(zip(lines, expected), start=1):
        found[key[1], key[2]] = _line(line, key, number, directory)
    if len(lines) != len(expected):
        place = min(len(lines), len(expected)) + 1
        raise ResultsError(
            BOUNDS_FILE,
            place,
            f"expected {len(expected)} lines (one per key of the campaign), got {len(lines)}",
            directory,
        )
    return found


def _line(line, key, number, directory):
    def fail(reason):
        return ResultsError(BOUNDS_FILE, number, reason, directory)

    scenario_id, scenario_hash, seed = key
    try:
        value = strict_json(line)
    except ValueError as exc:
        raise fail(f"not JSON: {exc}") from None
    if type(value) is not dict:
        raise fail(f"expected a bounds object, got {shown(value)}")
    if sorted(value) != list(BOUNDS_KEYS):
        raise fail(f"a bounds line has exactly the keys {', '.join(BOUNDS_KEYS)}, got {', '.join(sorted(value))}")
    if value["bounds_version"] != BOUNDS_VERSION:
        raise fail(f"$.bounds_version: this is bounds version {BOUNDS_VERSION}, got {shown(value['bounds_version'])}")
    for field, expected in (("scenario_id", scenario_id), ("scenario_hash", scenario_hash), ("seed", seed)):
        if value[field] != expected or type(value[field]) is not type(expected):
            raise fail(
                f"$.{field}: expected {shown(expected)} (keys in campaign.json's order), got {shown(value[field])}"
            )
    population = value["population"]
    if type(population) is not int or population < 1:
        raise fail(f"$.population: expected an integer >= 1, got {shown(population)}")
    evacuated_max, casualties_min = value["evacuated_max"], value["casualties_min"]
    for field, number_value in (("evacuated_max", evacuated_max), ("casualties_min", casualties_min)):
        if number_value is not None and (type(number_value) is not int or not 0 <= number_value <= population):
            raise fail(f"$.{field}: expected null or an integer from 0 to {population}, got {shown(number_value)}")
    if (evacuated_max is None) != (casualties_min is None) or (evacuated_max is None) == (value["limit"] is None):
        raise fail("$.limit: both values are null with a limit, or both integers with a null limit (bounds.md §4)")
    if canonical_json_reference(value) != line:
        raise fail("not in canonical form (simulator.md §1)")
    return EpisodeBounds(population, evacuated_max, casualties_min)


class Distance:
    """The distance to the possible of a group of ok rows (one policy, or one policy on one scenario)."""

    __slots__ = ("casualties", "casualties_min", "counted", "evacuated", "evacuated_max", "no_bound")

    def __init__(self):
        self.casualties = self.casualties_min = self.evacuated = self.evacuated_max = 0
        self.counted = self.no_bound = 0

    def add(self, outcome, bounds):
        """Count one ok row's ``EpisodeOutcome`` against its key's ``EpisodeBounds``."""
        if bounds.evacuated_max is None:
            self.no_bound += 1
            return
        self.counted += 1
        self.casualties += outcome.casualties
        self.casualties_min += bounds.casualties_min
        self.evacuated += outcome.evacuated
        self.evacuated_max += bounds.evacuated_max

    @property
    def avoidable_casualties(self):
        """Σ casualties − Σ casualties_min over the rows with bounds."""
        return self.casualties - self.casualties_min

    def evacuated_text(self):
        """``E/M (p%)``, p rounded half up to one decimal in exact arithmetic; ``—`` when M = 0."""
        if self.evacuated_max == 0:
            return _NO_BOUND
        tenths = (2000 * self.evacuated + self.evacuated_max) // (2 * self.evacuated_max)
        return f"{self.evacuated}/{self.evacuated_max} ({tenths // 10}.{tenths % 10}%)"

    def avoidable_text(self):
        """The avoidable casualties, or ``—`` when no row had a bound."""
        return str(self.avoidable_casualties) if self.counted else _NO_BOUND

    def note(self):
        """``", N without a bound"`` when some rows had null bounds, else ``""``."""
        return f", {self.no_bound} without a bound" if self.no_bound else ""


class Distances:
    """The distances of a results directory's ok rows: ``policy`` {policy: Distance} and ``scenario``
    {(policy, scenario_id): Distance}, in the order of their first ok row."""

    def __init__(self, ok_rows, bounds):
        self.policy, self.scenario = {}, {}
        for row in ok_rows.rows():
            episode_bounds = bounds[row.key]
            for table, group in ((self.policy, row.policy), (self.scenario, (row.policy, row.scenario_id))):
                distance = table.get(group)
                if distance is None:
                    distance = table[group] = Distance()
                distance.add(row.episode, episode_bounds)

    @property
    def no_bound(self):
        """The ok rows whose key has no bound (bounds.md §3's limit)."""
        return sum(distance.no_bound for distance in self.policy.values())
