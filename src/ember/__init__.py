"""EMBER: fire-evacuation simulator, run records and official episode metrics."""

from .errors import ActionError, EmberError, MetricsInputError, ReplayMismatchError, ScenarioError
from .record.writer import run_episode
from .scenario import load_scenario, scenario_hash
from .sim.simulator import Simulator
from .versions import METRICS_VERSION, OBSERVATION_VERSION, SCHEMA_VERSION, SIMULATOR_VERSION

__all__ = [
    "ActionError",
    "EmberError",
    "METRICS_VERSION",
    "MetricsInputError",
    "OBSERVATION_VERSION",
    "ReplayMismatchError",
    "SCHEMA_VERSION",
    "SIMULATOR_VERSION",
    "ScenarioError",
    "Simulator",
    "load_scenario",
    "run_episode",
    "scenario_hash",
]

from .engine import MetricsStream, episode_metrics, verify_replay  # noqa: E402

__all__ += ["MetricsStream", "episode_metrics", "verify_replay"]
