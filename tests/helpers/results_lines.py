"""Lines of ``episodes.jsonl`` and campaign.json values for the results layer's in-process tests.

One scenario ``a`` (hash ``H1``) of policy ``p`` by default; ``refused`` reads them and returns the
``ResultsError`` the reader raised.
"""

import pytest

from ember.errors import ResultsError
from ember.results import results_of_bytes

from helpers.ranking_results import campaign_dict, canonical_line, hand_metrics, ok_row

H1 = "sha256:" + "1" * 64
H2 = "sha256:" + "2" * 64


def campaign(seeds=(0, 1), policies=("p",), scenarios=None):
    scenarios = scenarios or [("a", H1, "a.json", seeds)]
    return campaign_dict("c", scenarios, [(p, "builtin", "greedy") for p in policies])


def row(policy="p", seed=0, **changes):
    value = ok_row(policy, hand_metrics("a", H1, seed))
    value.update(changes)
    return value


def refused(campaign_value, *lines):
    """The ``ResultsError`` of reading ``lines`` (rows, or bytes as they are) against ``campaign_value``."""
    data = b"".join(canonical_line(v) if isinstance(v, dict) else v for v in lines)
    with pytest.raises(ResultsError) as caught:
        results_of_bytes(campaign_value, data)
    return caught.value
