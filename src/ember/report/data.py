"""The per-episode numbers the report draws, read from the counting rows' metrics.

Ranking checks only the fields it ranks on (ranking.md §1); the report
also reads ``time.evacuation_steps``, ``exits.evacuations_per_exit`` and
``time.episode_steps``.  Those are read defensively: a value that is not
a non-negative integer is left out of the picture rather than trusted.
"""

import bisect


def _natural(value):
    return type(value) is int and value >= 0


def _mapping(metrics, family, field):
    part = metrics.get(family)
    part = part.get(field) if type(part) is dict else None
    return part if type(part) is dict else {}


class EpisodeView:
    """One ok episode as the plots see it."""

    __slots__ = (
        "casualties",
        "evacuated",
        "evacuation_steps",
        "exits",
        "histogram",
        "population",
        "seed",
        "steps",
        "stranded",
    )

    def __init__(self, seed, episode, metrics):
        self.seed = seed
        self.population = episode.population
        self.casualties = episode.casualties
        self.stranded = episode.stranded
        self.evacuated = episode.evacuated
        self.histogram = dict(episode.histogram)
        steps = _mapping(metrics, "time", "evacuation_steps").values()
        self.evacuation_steps = sorted(step for step in steps if _natural(step))
        episode_steps = metrics.get("time", {}).get("episode_steps")
        last = self.evacuation_steps[-1] if self.evacuation_steps else 0
        self.steps = episode_steps if _natural(episode_steps) and episode_steps >= last else last
        self.exits = {
            exit_id: count
            for exit_id, count in _mapping(metrics, "exits", "evacuations_per_exit").items()
            if _natural(count)
        }


def collect(campaign, counting, policies):
    """{scenario_id: {policy: [EpisodeView per seed, in seed order]}} for ``policies`` (all ok on K)."""
    views = {}
    for scenario_hash, (scenario_id, seeds) in campaign.scenarios.items():
        views[scenario_id] = {
            policy: [
                EpisodeView(
                    seed,
                    counting[policy, (scenario_hash, seed)].episode,
                    counting[policy, (scenario_hash, seed)].metrics,
                )
                for seed in seeds
            ]
            for policy in policies
        }
    return views


def evacuation_curve(view, horizon):
    """The share of the episode's people evacuated by each step 0..horizon (a list of floats)."""
    return [bisect.bisect_right(view.evacuation_steps, step) / view.population for step in range(horizon + 1)]
