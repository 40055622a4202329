"""Stage 1: the record's header belongs to this scenario and these versions."""

from ..versions import OBSERVATION_VERSION, SCHEMA_VERSION, SIMULATOR_VERSION
from .shape import check_header, fail

SUPPORTED_SCHEMA_VERSIONS = (SCHEMA_VERSION,)


def check_compatibility(header, scenario):
    check_header(header)
    expected = (
        ("simulator_version", SIMULATOR_VERSION, "the simulator version"),
        ("observation_version", OBSERVATION_VERSION, "the observation version"),
    )
    for key, want, what in expected:
        if header[key] != want:
            fail(f"$.header.{key}", f"expected {want!r} ({what}), got {header[key]!r}.")
    if header["schema_version"] not in SUPPORTED_SCHEMA_VERSIONS:
        fail(
            "$.header.schema_version",
            f"schema version {header['schema_version']!r} is not supported; "
            f"expected one of {list(SUPPORTED_SCHEMA_VERSIONS)}.",
        )
    if header["schema_version"] != scenario.data["schema_version"]:
        fail(
            "$.header.schema_version",
            f"expected the scenario's schema version {scenario.data['schema_version']!r}, "
            f"got {header['schema_version']!r}.",
        )
    if header["scenario_id"] != scenario.scenario_id:
        fail(
            "$.header.scenario_id",
            f"expected the scenario's ID {scenario.scenario_id!r}, got {header['scenario_id']!r}: "
            "the record is from another scenario.",
        )
    if header["scenario_hash"] != scenario.hash:
        fail(
            "$.header.scenario_hash",
            f"expected the scenario content hash {scenario.hash}, got {header['scenario_hash']!r}: "
            "the record is from another version of the scenario.",
        )
