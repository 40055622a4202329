"""``bounds.jsonl`` (bounds.md §5): the episodes it covers, in K's order, and how it is written.

The lines themselves come from Bounds (``ember.bounds``), which sits below
this part's callers: ``ember bounds RESULTS_DIR``, ``ember evaluate
--bounds`` and ``ember verify`` hand them in.
"""

import os

from ..errors import ResultsError, ScenarioError
from ..scenario import BUILTIN_PREFIX, compile_scenario
from .layout import BOUNDS_FILE, scenario_file
from .reader import check_campaign, open_regular, read_campaign_value
from .schema import MAX_CAMPAIGN_BYTES
from .writer import ResultsWriter, write_file


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
