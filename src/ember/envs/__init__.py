"""Reinforcement-learning environments over the EMBER simulator (the ``rl`` extra; docs/envs.md).

``import ember.envs`` registers the Gymnasium environment
``"ember/Evacuation-v0"``; ``parallel_env(...)`` builds the PettingZoo
``ParallelEnv`` (PettingZoo is imported only then).  Both write official
run records with ``record=PATH``.
"""

try:
    import gymnasium
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("ember.envs needs the 'rl' extra: pip install 'ember-eval[rl]'") from exc

ENV_ID = "ember/Evacuation-v0"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point="ember.envs.gym_env:EvacuationEnv")


def parallel_env(scenario="builtin:office", record=None, window=5, **rewards):
    """A PettingZoo ``ParallelEnv`` of ``scenario``: agents are person IDs (docs/envs.md)."""
    from .parallel import EvacuationParallelEnv

    return EvacuationParallelEnv(scenario, record=record, window=window, **rewards)


__all__ = ["ENV_ID", "parallel_env"]
