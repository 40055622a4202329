"""Version strings of the contract (simulator.md, metrics.md, output.md, bounds.md)."""

SCHEMA_VERSION = "1.0"
SIMULATOR_VERSION = "1.0"
OBSERVATION_VERSION = "1.0"
METRICS_VERSION = "1.0"
RANKING_VERSION = "1.0"
STATISTICS_VERSION = "1.0"
BOUNDS_VERSION = "1.0"
