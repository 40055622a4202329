"""Version strings of the contract (simulator.md, metrics.md, output.md, bounds.md)."""

SCHEMA_VERSION = "1.0"
SIMULATOR_VERSION = "1.0"
OBSERVATION_VERSION = "1.0"
METRICS_VERSION = "1.0"
RANKING_VERSION = "1.0"
STATISTICS_VERSION = "1.0"
BOUNDS_VERSION = "1.0"


def package_version():
    """The installed ember-eval package's version (campaign.json's ``versions.package``)."""
    from importlib import metadata  # at call time: ``import ember`` never pays for the metadata scan

    try:
        return metadata.version("ember-eval")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"
