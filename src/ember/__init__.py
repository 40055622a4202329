"""EMBER: fire-evacuation simulator, run records and official episode metrics.

The public names are imported when first used (PEP 562), not with the
package: a process that needs one module of EMBER (the python-policy host
of ``ember.isolation``, which must never load the simulator or the engine)
pays for that module alone.
"""

import importlib

_PUBLIC = {
    "ActionError": "errors",
    "EmberError": "errors",
    "MetricsInputError": "errors",
    "ReplayMismatchError": "errors",
    "ScenarioError": "errors",
    "run_episode": "record.writer",
    "load_scenario": "scenario",
    "scenario_hash": "scenario",
    "Simulator": "sim.simulator",
    "METRICS_VERSION": "versions",
    "OBSERVATION_VERSION": "versions",
    "SCHEMA_VERSION": "versions",
    "SIMULATOR_VERSION": "versions",
    "MetricsStream": "engine.read",
    "episode_metrics": "engine.read",
    "verify_replay": "engine.replay",
    "episode_bounds": "bounds",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name):
    module = _PUBLIC.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    # ``import ember`` then ``ember.sim.policies``: a subpackage is loaded on first use.
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
