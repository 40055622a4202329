"""What the Gymnasium and PettingZoo environments share: one recorded episode.

A ``RecordedEpisode`` is the one episode loop's stepping form (``sim.loop``) over
the project's ``Simulator``, with, when asked, the project's
``RecordWriter`` as its sink, streaming to a file opened by the one record
opener: the loop feeds the writer exactly as ``run_episode``'s does, so the
file is byte-identical to the record ``run_episode`` writes for the same
seed and actions, compressed alike by its name.  ``GridState`` keeps
numpy arrays of the state from the step dicts.  Nothing here knows of
Gymnasium or PettingZoo; numpy is the `rl` extra's.
"""

import contextlib
import math
import numbers
import os
import string

import numpy as np

from ..errors import ActionError, EnvConfigError
from ..record.writer import writing_record
from ..sim.loop import EpisodeStepper
from ..sim.simulator import ACTIONS, Simulator, check_seed

STATUS_CODES = {"active": 0, "evacuated": 1, "casualty": 2}
RECORD_FIELDS = ("episode", "seed")
DRAWN_SEED_BOUND = 2**63


class RecordPath:
    """A record path, possibly a template with ``{episode}`` and ``{seed}`` fields.

    Without a field every episode goes to the same file, overwritten at
    each reset; with one, each episode gets its own file.
    """

    def __init__(self, record, where="record"):
        if not isinstance(record, (str, os.PathLike)):
            raise EnvConfigError(f"{where}: expected a path (str or os.PathLike) or None, got {type(record).__name__}.")
        self.template = os.fspath(record)
        if isinstance(self.template, bytes):
            raise EnvConfigError(f"{where}: expected a str path, got bytes {self.template!r}.")
        try:
            fields = [name for _, name, spec, conv in string.Formatter().parse(self.template) if name is not None]
        except ValueError as exc:
            raise EnvConfigError(
                f"{where}: bad template {self.template!r} ({exc}); literal braces are written {{{{ and }}}}."
            ) from None
        for name in fields:
            if name not in RECORD_FIELDS:
                raise EnvConfigError(
                    f"{where}: unknown field {{{name}}} in {self.template!r}; expected {{episode}} or {{seed}}."
                )
        # A format spec is only checked when used: try it now, at the extremes of both fields,
        # so that a bad one ({seed:zz}) is refused here rather than by the first reset.
        for value in (0, 2**64 - 1):
            try:
                self.template.format(episode=value, seed=value)
            except (ValueError, TypeError, OverflowError, KeyError, IndexError) as exc:
                raise EnvConfigError(
                    f"{where}: bad template {self.template!r}: {exc} (with {{episode}} and {{seed}} = {value})."
                ) from None

    def for_episode(self, episode, seed):
        return self.template.format(episode=episode, seed=seed)


class RecordedEpisode:
    """One episode of the simulator, stepped from outside, its record streaming to ``path`` when given.

    The stepping form of the one episode loop (``sim.loop.EpisodeStepper``) with
    the project's ``RecordWriter`` as its sink when there is a record, the
    file opened by the one record opener (``record.output``): a ``path``
    ending ``.gz`` or ``.zst`` is written compressed, and the file follows
    the rules of ``ember run -o`` (docs/decisions.md, "Output files").
    """

    def __init__(self, scenario, seed, path=None):
        simulator = Simulator(scenario, seed)
        self.initial_state = simulator.initial_state  # s_0: the simulator sets it once
        self.path = path
        with contextlib.ExitStack() as output:
            sinks = () if path is None else (output.enter_context(writing_record(path)),)
            self.loop = EpisodeStepper(simulator, sinks)
            self.output = output.pop_all()  # open as long as the episode runs

    @property
    def terminated(self):
        return self.loop.terminated

    def observe(self):
        """The official observation (simulator.md §4) of the current state."""
        return self.loop.observe()

    def step(self, actions):
        """Run one step with ``actions`` ({person_id: action} for the active people)."""
        step = self.loop.step(actions)
        if self.loop.terminated:
            self.close()
        return step

    def close(self):
        """Close the record file; an episode left before it terminated leaves a truncated record."""
        self.output.close()


class EpisodeRunner:
    """What both environments do at reset: close the last episode and start the next.

    Mixed into an environment that has ``compiled``, ``record``, ``grid``,
    ``episode``, ``episodes_started`` and ``close()``.
    """

    def _start_episode(self, seed):
        """Start an episode with ``seed``; the path of its record, or None."""
        self.close()
        self.episode = None  # a failed start (say, an unwritable record path) leaves no episode to step
        path = None if self.record is None else self.record.for_episode(self.episodes_started, seed)
        self.episode = RecordedEpisode(self.compiled, seed, path)
        self.episodes_started += 1
        self.grid.start(self.compiled, self.episode.initial_state)
        return path


class Rewards:
    """The default shaping: per person and step, its evacuation, its casualty, its acting at all."""

    def __init__(self, evacuation=1.0, casualty=-1.0, step=0.0):
        for name, value in (("evacuation_reward", evacuation), ("casualty_reward", casualty), ("step_reward", step)):
            if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)) or not math.isfinite(value):
                raise EnvConfigError(f"{name}: expected a finite number, got {value!r}.")
        self.evacuation = float(evacuation)
        self.casualty = float(casualty)
        self.step = float(step)

    def per_person(self, step):
        """{person_id: reward} for everyone who acted in ``step`` (the people active before it)."""
        rewards = {m["person_id"]: self.step for m in step["movements"]}
        for event in step["evacuations"]:
            rewards[event["person_id"]] += self.evacuation
        for event in step["casualties"]:
            rewards[event["person_id"]] += self.casualty
        return rewards

    def total(self, step):
        """The sum of ``per_person``, summed in ID order so both environments agree to the bit."""
        return float(sum(self.per_person(step).values()))


class GridState:
    """numpy arrays of the current state, updated from the record's step dicts.

    Layers are ``(rows, cols)`` int8 arrays: walls, exits, burning, active
    people.  Per person (ID order): status code (0 active, 1 evacuated,
    2 casualty), ``[row, col]`` position and trapped flag.
    """

    def __init__(self, compiled):
        grid = compiled.grid
        self.rows, self.cols = grid.rows, grid.cols
        self.ids = compiled.person_ids
        self.index = compiled.person_index
        self.walls = np.zeros((self.rows, self.cols), dtype=np.int8)
        for cell in grid.walls:
            self.walls[divmod(cell, self.cols)] = 1
        self.exits = np.zeros((self.rows, self.cols), dtype=np.int8)
        for cell in compiled.exit_cells:
            self.exits[divmod(cell, self.cols)] = 1

    def start(self, compiled, initial_state):
        """Back to s_0 (every person active at its scenario position, burning = ignitions)."""
        self.burning = np.zeros((self.rows, self.cols), dtype=np.int8)
        for cell in compiled.ignitions:
            self.burning[divmod(cell, self.cols)] = 1
        self.status = np.zeros(len(self.ids), dtype=np.int64)
        self.position = np.array([divmod(cell, self.cols) for cell in compiled.start_cells], dtype=np.int64)
        self.trapped = np.zeros(len(self.ids), dtype=np.int8)
        self._set_trapped(initial_state["trapped"])
        self.step_number = 0

    def update(self, step):
        """Apply one step dict of the record."""
        index, position = self.index, self.position
        for move in step["movements"]:
            if move["outcome"] == "moved":
                position[index[move["person_id"]]] = move["target"]
        for event in step["evacuations"]:
            self.status[index[event["person_id"]]] = STATUS_CODES["evacuated"]
        for event in step["casualties"]:
            self.status[index[event["person_id"]]] = STATUS_CODES["casualty"]
        for row, col in step["ignitions"]:
            self.burning[row, col] = 1
        self._set_trapped(step["snapshot"]["trapped"])
        self.step_number = step["step"]

    def _set_trapped(self, trapped_ids):
        self.trapped[:] = 0
        for pid in trapped_ids:
            self.trapped[self.index[pid]] = 1

    def active(self):
        """Indexes (ID order) of the active people."""
        return np.flatnonzero(self.status == 0)

    def people_layer(self):
        layer = np.zeros((self.rows, self.cols), dtype=np.int8)
        active = self.position[self.status == 0]
        layer[active[:, 0], active[:, 1]] = 1
        return layer


def episode_seed(seed, rng):
    """The episode's seed: ``seed`` when given (checked), else drawn from the environment's ``rng``.

    Drawn seeds are uniform in [0, 2^63): valid simulator seeds that are
    also valid campaign seeds (TOML integers) and fit numpy's int64, which
    Gymnasium's vector environments use to stack infos.
    """
    if seed is None:
        return int(rng.integers(0, DRAWN_SEED_BOUND, dtype=np.int64))
    return check_seed(seed)


def action_names(codes, active, ids, t):
    """{person_id: action} for the active people from integer codes 0..4 (simulator.md §1 order).

    ``codes`` maps a person index to its code; codes of resolved people are
    never looked at.
    """
    chosen = {}
    for i in active:
        code = codes[i]
        integer = isinstance(code, (int, np.integer)) and not isinstance(code, (bool, np.bool_))
        if not integer or not 0 <= code < len(ACTIONS):
            raise ActionError(
                f"step {t}: person {ids[i]!r} has action {code!r}; expected an integer 0..4 "
                f"({', '.join(f'{k}={a}' for k, a in enumerate(ACTIONS))})."
            )
        chosen[ids[i]] = ACTIONS[int(code)]
    return chosen
