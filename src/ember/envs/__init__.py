"""Reinforcement-learning environments over the EMBER simulator (the ``rl`` extra; docs/envs.md).

``import ember.envs`` registers the Gymnasium environment
``"ember/Evacuation-v0"``; ``parallel_env(...)`` builds the PettingZoo
``ParallelEnv`` (PettingZoo is imported only then).  Both write official
run records with ``record=PATH``.
"""

from ..errors import MissingExtraError

INSTALL_HINT = "pip install 'ember-eval[rl]'"

try:
    import gymnasium
except ImportError as exc:
    raise MissingExtraError(f"ember.envs needs the 'rl' extra ({exc}): {INSTALL_HINT}") from exc

ENV_ID = "ember/Evacuation-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="ember.envs.gym_env:EvacuationEnv")


def parallel_env(scenario="builtin:office", record=None, window=5, **rewards):
    """A PettingZoo ``ParallelEnv`` of ``scenario``: agents are person IDs (docs/envs.md)."""
    try:
        from .parallel import EvacuationParallelEnv
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "pettingzoo":
            raise
        raise MissingExtraError(f"ember.envs.parallel_env needs the 'rl' extra ({exc}): {INSTALL_HINT}") from exc

    return EvacuationParallelEnv(scenario, record=record, window=window, **rewards)


__all__ = ["ENV_ID", "parallel_env"]
