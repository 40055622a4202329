"""What ``ember verify`` recomputes of a results directory besides its rows (isolation.md §3, campaign.md §6).

``ranking.json`` and ``statistics.json``, when present, must be the bytes
``ember rank`` and ``ember stats`` give for the same two files; the
statistics with the file's own ``replicates`` and ``seed``.  The rows'
verification (``ember.results.verify``) cannot compute them itself: the
results layer sits below Ranking and Statistics.  This part sits above
both, so it is here that the two are named, and the verifier is given
them as ``RecomputedFile``s.  Imported only by the commands that verify
(not by ``ember.stats``), as it pulls in the engine through the verifier.
"""

from ..errors import ResultsError, StatisticsParameterError
from ..ranking import ranking_bytes, ranking_of
from ..results import RANKING_FILE, STATISTICS_FILE
from ..results.verify import RecomputedFile
from ..strict_json import strict_json
from .compute import check_replicates, check_seed, require, statistics_bytes, statistics_of


def ranking_file(results, ok_rows, data):
    """``ranking.json``'s bytes for checked ``Results`` and ``OkRows`` (``data``, the file's bytes, is not needed)."""
    return ranking_bytes(ranking_of(results, ok_rows))


def statistics_file(results, ok_rows, data):
    """``statistics.json``'s bytes for checked ``Results`` and ``OkRows``, with the B and seed ``data`` names."""
    require()  # without the extra the file is unverifiable, whatever it holds
    try:
        value = strict_json(data)
    except ValueError as exc:
        raise ResultsError(STATISTICS_FILE, None, f"not JSON: {exc}", results.directory) from None
    if not isinstance(value, dict):
        raise ResultsError(STATISTICS_FILE, None, "expected a JSON object", results.directory)
    try:
        replicates = check_replicates(value.get("replicates"))
        seed = check_seed(value.get("seed"))
    except StatisticsParameterError as exc:
        raise ResultsError(STATISTICS_FILE, None, f"$.{exc}", results.directory) from None
    return statistics_bytes(statistics_of(results, ok_rows, replicates, seed))


def recomputed_files():
    """The ``RecomputedFile``s of ``ember verify``: ranking.json, then statistics.json."""
    return (RecomputedFile(RANKING_FILE, ranking_file), RecomputedFile(STATISTICS_FILE, statistics_file))


__all__ = ["ranking_file", "recomputed_files", "statistics_file"]
