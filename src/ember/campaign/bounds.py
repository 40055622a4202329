"""The bounds of a campaign's episodes (bounds.md §5): ``bounds.jsonl`` from Bounds' lines in K's order.

``ember evaluate --bounds`` runs a ``BoundsTask`` per episode key that has
no line yet, on the campaign's own runner (local workers or Dask) beside
its episodes; ``run_task`` runs it like an episode and returns its line.
"""

import json

from ..results.layout import BOUNDS_FILE


def bounds_file_bytes(directory, campaign=None):
    """The bytes ``bounds.jsonl`` holds for the results ``directory``'s K."""
    from ..bounds import bounds_line  # numpy and the networks, only when bounds are asked for
    from ..results.bounds_file import campaign_episodes  # the reading side: a worker never needs it

    return b"".join(bounds_line(scenario, seed) for scenario, seed in campaign_episodes(directory, campaign))


def recomputed_bounds_file():
    """The ``RecomputedFile`` of ``ember verify`` for ``bounds.jsonl``."""
    # Imported here, for ember verify: ``ember evaluate`` and its workers, which import this
    # module for ``BoundsTask``, never verify and would load the whole reading side for nothing.
    from ..results.verify import RecomputedFile

    return RecomputedFile(
        BOUNDS_FILE, lambda results, ok_rows, data: bounds_file_bytes(results.directory, results.campaign)
    )


class BoundsTask:
    """The bounds of one episode key (a scenario's data and a seed): a task for a campaign's workers."""

    __slots__ = ("scenario", "seed")

    def __init__(self, scenario, seed):
        self.scenario, self.seed = scenario, seed

    def __getstate__(self):
        return (self.scenario, self.seed)

    def __setstate__(self, state):
        self.scenario, self.seed = state

    def run(self):
        """The episode's line of ``bounds.jsonl``."""
        from ..bounds import bounds_line

        return bounds_line(self.scenario, self.seed)

    def describe(self):
        return f"the bounds of seed {self.seed} of scenario {self.scenario.get('scenario_id')!r}"


def line_key(line):
    """(scenario_hash, seed) of a line of ``bounds.jsonl``."""
    value = json.loads(line)
    return value["scenario_hash"], value["seed"]


def kept_lines(path):
    """The lines of an existing ``bounds.jsonl`` by (scenario_hash, seed); none when it is missing or is not
    EMBER's (its keys are then computed again)."""
    try:
        with open(path, "rb") as handle:
            return {line_key(line): line for line in handle.read().splitlines(keepends=True)}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
