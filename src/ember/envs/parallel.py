"""A PettingZoo ``ParallelEnv``: one agent per person, each seeing a window around itself (docs/envs.md)."""

from typing import ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from ..errors import ActionError, EnvConfigError
from ..scenario import compile_scenario
from ..sim.simulator import ACTIONS
from .core import EpisodeRunner, GridState, RecordPath, Rewards, action_names, episode_seed

WINDOW_CHANNELS = ("blocked", "exit", "burning", "people")
#: The largest window: 4 x 255 x 255 bytes (254 KiB) per agent and step; a larger one is mostly padding.
MAX_WINDOW = 255


class EvacuationParallelEnv(EpisodeRunner, ParallelEnv):
    """Agents are the person IDs; an agent leaves ``agents`` at the step that resolves it.

    An agent's observation is an int8 array ``(4, window, window)`` centred
    on its cell: channel 0 a wall or outside the grid, 1 an exit, 2 burning,
    3 another active person.  ``state()`` is the whole grid, ``(4, rows,
    cols)``: walls, exits, burning, active people.
    """

    metadata: ClassVar[dict] = {"name": "ember_evacuation_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(
        self,
        scenario="builtin:office",
        record=None,
        window=5,
        evacuation_reward=1.0,
        casualty_reward=-1.0,
        step_reward=0.0,
    ):
        if type(window) is not int or window < 1 or window % 2 == 0:
            raise EnvConfigError(
                f"window: expected an odd integer >= 1 (the side of the square around each agent), got {window!r}."
            )
        if window > MAX_WINDOW:
            raise EnvConfigError(
                f"window: expected an odd integer from 1 to {MAX_WINDOW} (each agent's observation holds "
                f"4 x window x window bytes at every step), got {window!r}."
            )
        self.compiled = compile_scenario(scenario)
        self.record = None if record is None else RecordPath(record)
        self.rewards = Rewards(evacuation_reward, casualty_reward, step_reward)
        self.window = window
        self.render_mode = None
        self.grid = GridState(self.compiled)
        self.possible_agents = list(self.compiled.person_ids)
        self.agents = []
        rows, cols = self.grid.rows, self.grid.cols
        self._observation_space = spaces.Box(0, 1, (len(WINDOW_CHANNELS), window, window), np.int8)
        self._action_space = spaces.Discrete(len(ACTIONS))
        self.state_space = spaces.Box(0, 1, (4, rows, cols), np.int8)
        # The static channels, padded by the window's radius (outside the grid counts as blocked).
        radius = window // 2
        self._padded = np.zeros((len(WINDOW_CHANNELS), rows + 2 * radius, cols + 2 * radius), dtype=np.int8)
        self._padded[0] = 1
        self._padded[0, radius : radius + rows, radius : radius + cols] = self.grid.walls
        self._padded[1, radius : radius + rows, radius : radius + cols] = self.grid.exits
        self._np_random = None
        self.episode = None
        self.episodes_started = 0

    # Every agent shares one space object (the checkers want the same object on every call).
    def observation_space(self, agent):
        return self._observation_space

    def action_space(self, agent):
        return self._action_space

    def reset(self, seed=None, options=None):
        """Start an episode; its seed is ``seed``, or drawn from the environment's generator when None."""
        if seed is not None:
            episode_seed(seed, None)
            self._np_random, _ = seeding.np_random(seed)
        elif self._np_random is None:
            self._np_random, _ = seeding.np_random()
        seed = episode_seed(seed, self._np_random)
        self._start_episode(seed)
        self.agents = list(self.possible_agents)
        self._refresh()
        observations = {agent: self._window(agent) for agent in self.agents}
        infos = {agent: self._info(agent) for agent in self.agents}
        return observations, infos

    def step(self, actions):
        """Actions for every agent in ``agents``; actions of agents not in it are ignored."""
        if self.episode is None:
            raise ActionError("step before reset: call reset() first.")
        t = self.grid.step_number + 1
        if self.episode.terminated:
            raise ActionError(f"step {t}: the episode terminated at step {t - 1}; call reset().")
        if not isinstance(actions, dict):
            raise ActionError(f"step {t}: expected a dict {{agent: action}}, got {type(actions).__name__}.")
        missing = [agent for agent in self.agents if agent not in actions]
        if missing:
            raise ActionError(f"step {t}: no action for active agent {missing[0]!r}.")
        index = self.compiled.person_index
        acting = list(self.agents)
        codes = {index[agent]: actions[agent] for agent in acting}
        step = self.episode.step(action_names(codes, [index[a] for a in acting], self.possible_agents, t))
        self.grid.update(step)
        self._refresh()
        rewards = self.rewards.per_person(step)
        resolved = {e["person_id"] for e in step["evacuations"]} | {c["person_id"] for c in step["casualties"]}
        truncated = step["snapshot"]["termination_reason"] == "max_steps"
        observations = {agent: self._window(agent) for agent in acting}
        terminations = {agent: agent in resolved for agent in acting}
        truncations = {agent: truncated and agent not in resolved for agent in acting}
        infos = {agent: self._info(agent) for agent in acting}
        self.agents = [] if truncated else [agent for agent in acting if agent not in resolved]
        return observations, rewards, terminations, truncations, infos

    def state(self):
        return np.stack([self.grid.walls, self.grid.exits, self.grid.burning, self.grid.people_layer()])

    def official_observation(self):
        """The official observation (simulator.md §4) of the current state, as policies in campaigns get it."""
        if self.episode is None:
            raise ActionError("official_observation before reset: call reset() first.")
        return self.episode.observe()

    def render(self):
        return None

    def close(self):
        if self.episode is not None:
            self.episode.close()

    def _refresh(self):
        radius = self.window // 2
        rows, cols = self.grid.rows, self.grid.cols
        self._padded[2, radius : radius + rows, radius : radius + cols] = self.grid.burning
        self._padded[3, radius : radius + rows, radius : radius + cols] = self.grid.people_layer()

    def _window(self, agent):
        row, col = self.grid.position[self.compiled.person_index[agent]]
        view = self._padded[:, row : row + self.window, col : col + self.window].copy()
        view[3, self.window // 2, self.window // 2] = 0  # the agent itself is not "another person"
        return view

    def _info(self, agent):
        i = self.compiled.person_index[agent]
        return {
            "position": self.grid.position[i].tolist(),
            "status": ("active", "evacuated", "casualty")[self.grid.status[i]],
            "trapped": bool(self.grid.trapped[i]),
        }
