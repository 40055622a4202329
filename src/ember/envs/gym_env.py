"""``ember/Evacuation-v0``: one Gymnasium controller for every person (docs/envs.md)."""

from typing import ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from ..errors import ActionError, EnvConfigError
from ..scenario import compile_scenario
from ..sim.simulator import ACTIONS
from .core import EpisodeRunner, GridState, RecordPath, Rewards, action_names, episode_seed

_ANSI_CELLS = {"wall": "#", "exit": "E", "burning": "*", "person": "P", "free": "."}


class EvacuationEnv(EpisodeRunner, gymnasium.Env):
    """A scenario as a Gymnasium environment; every step is a simulator step.

    Action: ``MultiDiscrete([5] * N)``, one code per person in ID order,
    0..4 = stay, north, south, west, east; codes of resolved people are
    ignored.  Observation: a ``Dict`` of the grid layers (walls, exits,
    burning, active people) and per-person arrays (status, position,
    trapped) plus the number of the step about to be taken.
    """

    metadata: ClassVar[dict] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        scenario="builtin:office",
        record=None,
        evacuation_reward=1.0,
        casualty_reward=-1.0,
        step_reward=0.0,
        render_mode=None,
    ):
        self.compiled = compile_scenario(scenario)
        self.record = None if record is None else RecordPath(record)
        self.rewards = Rewards(evacuation_reward, casualty_reward, step_reward)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise EnvConfigError(f"render_mode: expected None or 'ansi', got {render_mode!r}.")
        self.render_mode = render_mode
        self.grid = GridState(self.compiled)
        self.person_ids = list(self.compiled.person_ids)
        rows, cols, n = self.grid.rows, self.grid.cols, len(self.person_ids)
        layer = spaces.Box(0, 1, (rows, cols), np.int8)
        self.action_space = spaces.MultiDiscrete([len(ACTIONS)] * n)
        self.observation_space = spaces.Dict(
            {
                "walls": layer,
                "exits": layer,
                "burning": layer,
                "people": layer,
                "status": spaces.MultiDiscrete([3] * n),
                "position": spaces.Box(0, np.array([[rows - 1, cols - 1]] * n), (n, 2), np.int64),
                "trapped": spaces.MultiBinary(n),
                "step": spaces.Box(1, self.compiled.max_steps, (1,), np.int64),
            }
        )
        self.episode = None
        self.episodes_started = 0

    def reset(self, *, seed=None, options=None):
        """Start an episode; its seed is ``seed``, or drawn from ``self.np_random`` when None."""
        if seed is not None:
            seed = episode_seed(seed, None)  # check before Gymnasium seeds its generator
        super().reset(seed=seed)
        seed = episode_seed(seed, self.np_random)
        path = self._start_episode(seed)
        return self._observation(), {"seed": seed, "record": path}

    def step(self, action):
        if self.episode is None:
            raise ActionError("step before reset: call reset() first.")
        codes = np.asarray(action)
        t = self.grid.step_number + 1
        if codes.shape != (len(self.person_ids),):
            raise ActionError(
                f"step {t}: expected {len(self.person_ids)} action codes (one per person in ID order), "
                f"got shape {codes.shape}."
            )
        if self.episode.terminated:
            raise ActionError(f"step {t}: the episode terminated at step {t - 1}; call reset().")
        step = self.episode.step(action_names(codes.tolist(), self.grid.active(), self.person_ids, t))
        self.grid.update(step)
        reason = step["snapshot"]["termination_reason"]
        info = {
            "step": step["step"],
            "evacuations": [e["person_id"] for e in step["evacuations"]],
            "casualties": [c["person_id"] for c in step["casualties"]],
            "termination_reason": reason,
        }
        return self._observation(), self.rewards.total(step), reason == "all_resolved", reason == "max_steps", info

    def official_observation(self):
        """The official observation (simulator.md §4) of the current state, as policies in campaigns get it."""
        if self.episode is None:
            raise ActionError("official_observation before reset: call reset() first.")
        return self.episode.observe()

    def render(self):
        if self.render_mode != "ansi" or self.episode is None:
            return None
        grid = self.grid
        people = grid.people_layer()
        lines = []
        for r in range(grid.rows):
            line = []
            for c in range(grid.cols):
                kind = (
                    "wall"
                    if grid.walls[r, c]
                    else "person"
                    if people[r, c]
                    else "burning"
                    if grid.burning[r, c]
                    else "exit"
                    if grid.exits[r, c]
                    else "free"
                )
                line.append(_ANSI_CELLS[kind])
            lines.append("".join(line))
        return f"step {grid.step_number}\n" + "\n".join(lines) + "\n"

    def close(self):
        if self.episode is not None:
            self.episode.close()

    def _observation(self):
        grid = self.grid
        return {
            "walls": grid.walls.copy(),
            "exits": grid.exits.copy(),
            "burning": grid.burning.copy(),
            "people": grid.people_layer(),
            "status": grid.status.copy(),
            "position": grid.position.copy(),
            "trapped": grid.trapped.copy(),
            "step": np.array([min(grid.step_number + 1, self.compiled.max_steps)], dtype=np.int64),
        }
