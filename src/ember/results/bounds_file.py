"""``bounds.jsonl`` (bounds.md §4-§5) both ways: the episodes it covers, in K's order, how it is written, and
how it is read back against its campaign.

The lines themselves come from Bounds (``ember.bounds``), which sits below
this part's callers: ``ember bounds RESULTS_DIR``, ``ember evaluate
--bounds`` and ``ember verify`` hand them in.  ``read_bounds`` checks every
line against the campaign it sits beside (its fields, its version, its key
and population) and gives each key's ``KeyBounds``, which the distance to
the possible (``results.distance``) sums.
"""

import os

from ..canonical import canonical_json_reference
from ..errors import ResultsError, ScenarioError
from ..files import write_file
from ..scenario import BUILTIN_PREFIX, compile_scenario
from ..strict_json import shown, strict_json
from ..versions import BOUNDS_VERSION
from .campaign_json import MAX_CAMPAIGN_BYTES
from .layout import BOUNDS_FILE, scenario_file
from .reader import check_campaign, open_regular, read_campaign_value
from .writer import ResultsWriter

#: The keys of one line (bounds.md §4), in the order canonical JSON writes them.
BOUNDS_KEYS = (
    "bounds_version", "casualties_min", "evacuated_max", "fire_stable_step", "limit", "population", "scenario_hash",
    "scenario_id", "seed",
)  # fmt: skip


class KeyBounds:
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

    Returns a dict (scenario_hash, seed) -> ``KeyBounds``.  A line that is
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
    return KeyBounds(population, evacuated_max, casualties_min)


def campaign_scenario(directory, campaign, scenario_hash):
    """The compiled scenario of ``scenario_hash``: ``scenarios/<id>.json`` in the directory, else its
    ``builtin:`` source; it must hash to ``scenario_hash``.  Raises ``ResultsError`` naming the file."""
    scenario_id = campaign.scenarios[scenario_hash][0]
    source = campaign.sources[scenario_hash]
    kept = scenario_file(scenario_id)
    path = os.path.join(directory, kept)
    if os.path.lexists(path):
        with open_regular(path, kept, directory) as handle:
            data = handle.read(MAX_CAMPAIGN_BYTES + 1)
        where = kept
    elif source.startswith(BUILTIN_PREFIX):
        data = where = source
    else:
        raise ResultsError(kept, None, f"missing, and the source {source!r} is not built in", directory)
    try:
        scenario = compile_scenario(data)
    except ScenarioError as exc:
        raise ResultsError(where, None, f"not a valid scenario: {exc}", directory) from None
    if scenario.hash != scenario_hash:
        raise ResultsError(where, None, f"hashes to {scenario.hash}, campaign.json says {scenario_hash}", directory)
    return scenario


def campaign_episodes(directory, campaign=None):
    """K in ``campaign.json``'s order, as (compiled scenario, seed): scenarios in order, seeds ascending."""
    if campaign is None:
        campaign = check_campaign(read_campaign_value(directory), directory)
    for scenario_hash, (_, seeds) in campaign.scenarios.items():
        scenario = campaign_scenario(directory, campaign, scenario_hash)
        for seed in sorted(seeds):
            yield scenario, seed


def write_bounds_file(directory, lines):
    """Write ``bounds.jsonl`` (the ``lines``, bytes each) atomically, holding the results directory's lock."""
    with ResultsWriter(directory) as writer:
        writer.lock()
        write_file(writer.path, BOUNDS_FILE, b"".join(lines))
