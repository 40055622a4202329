"""The bounds of a campaign's episodes (bounds.md §5): ``bounds.jsonl`` from Bounds' lines in K's order."""

from ..results.bounds_file import campaign_episodes
from ..results.layout import BOUNDS_FILE
from ..results.verify import RecomputedFile


def bounds_file_bytes(directory, campaign=None):
    """The bytes ``bounds.jsonl`` holds for the results ``directory``'s K."""
    from ..bounds import bounds_line  # numpy and the networks, only when bounds are asked for

    return b"".join(bounds_line(scenario, seed) for scenario, seed in campaign_episodes(directory, campaign))


def recomputed_bounds_file():
    """The ``RecomputedFile`` of ``ember verify`` for ``bounds.jsonl``."""
    return RecomputedFile(
        BOUNDS_FILE, lambda results, ok_rows, data: bounds_file_bytes(results.directory, results.campaign)
    )
