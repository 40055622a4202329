"""A scenario's seeds held compactly while a run holds its campaign: a ``range`` or an ``array('q')``.

A campaign of 10^6 seeds parsed as a list holds a Python int and a list
slot per seed (about 36 bytes); a run keeps them from the campaign file to
campaign.json's bytes (docs/campaigns.md, "Bounded memory").  Consecutive
seeds (``seeds = { start, count }``, the usual case) become the ``range``
they are (no bytes per seed), any others an ``array('q')`` (8 bytes a seed:
every seed is at most 2^63 - 1).  Both iterate, index, ``len`` and compare
as the list would, in the same order.
"""

import array


def compact_seeds(seeds):
    """``seeds`` (ascending distinct integers, as the campaign file's are parsed) as a ``range`` when they are
    consecutive, else an ``array('q')``; a ``range`` or an array is returned as it is."""
    if isinstance(seeds, (range, array.array)):
        return seeds
    if seeds and seeds[-1] - seeds[0] == len(seeds) - 1 and _ascending(seeds):
        return range(seeds[0], seeds[-1] + 1)
    return array.array("q", seeds)


def _ascending(seeds):
    return all(seeds[k - 1] < seeds[k] for k in range(1, len(seeds)))
