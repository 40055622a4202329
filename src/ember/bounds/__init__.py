"""Bounds (bounds.md 1.0): what was possible in an episode, given its fire.

The fire is a pure function of the scenario and the seed, so the most
evacuations and the fewest casualties any sequence of joint actions
reaches are maximum flows in time-expanded networks of the floor
(``network``), solved by OR-Tools (``solver``, the ``bounds`` extra).  The
fire schedule comes from the simulator's own rule 4 (``schedule``);
witnesses are run records of sequences reaching both values, written by
the record writer through the one episode loop (``witness``).
"""

from .episode import BOUNDS_VERSION, EpisodeBounds, bounds_line, episode_bounds
from .schedule import fire_stable_step

__all__ = ["BOUNDS_VERSION", "EpisodeBounds", "bounds_line", "episode_bounds", "fire_stable_step"]
