"""Statistics version 1.0 (statistics.md): how sure a campaign's ranking is.

``compute_statistics`` is a pure function of a results directory's two files,
B and σ, like ``ember.ranking.compute_ranking``; ``statistics_bytes`` gives
``statistics.json``'s canonical bytes.  Importing this package costs nothing
extra: numpy, scipy and threadpoolctl (the ``stats`` extra) are imported when statistics
are computed.
"""

from .compute import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MAX_REPLICATES,
    METHOD,
    MIN_REPLICATES,
    BoardStatistics,
    PolicyValues,
    check_replicates,
    check_seed,
    compute_statistics,
    require,
    statistics_bytes,
    statistics_of,
    statistics_of_directory,
)

__all__ = [
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "MAX_REPLICATES",
    "METHOD",
    "MIN_REPLICATES",
    "BoardStatistics",
    "PolicyValues",
    "check_replicates",
    "check_seed",
    "compute_statistics",
    "require",
    "statistics_bytes",
    "statistics_of",
    "statistics_of_directory",
]
