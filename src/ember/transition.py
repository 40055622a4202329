"""Decoded snapshots and the transition handed to every accumulator."""

from .checks.shape import check_snapshot


class State:
    """A snapshot decoded onto person indexes (scenario ID order) and flat cells."""

    __slots__ = ("step", "status", "position", "burning", "trapped", "terminated", "reason", "active", "raw")

    def __init__(self, raw, status, position, active=None):
        """``active``: the active people's indexes in order, when the caller knows them (the
        simulator does); else they are read from ``status``."""
        self.raw = raw
        self.step = raw["step"]
        self.status = status
        self.position = position
        self.burning = raw["burning"]  # the record's list of [row, col], sorted
        self.trapped = raw["trapped"]
        self.terminated = raw["terminated"]
        self.reason = raw["termination_reason"]
        self.active = [i for i, s in enumerate(status) if s == "active"] if active is None else active


def decode_snapshot(raw, path, scenario):
    """Check a snapshot's shape and decode it."""
    status, position, _ = check_snapshot(raw, path, scenario)
    return State(raw, status, position)


class Transition:
    """(s_{t-1}, step_t, s_t) plus what every accumulator would otherwise re-derive.

    ``burning`` is the engine's mask of burning(s_{t-1}); it is updated with
    ``ignited`` only after every accumulator has seen the transition.
    ``movers[j]`` is the person index of ``step["movements"][j]`` (valid
    once the coverage check has passed, which runs first).
    """

    __slots__ = ("t", "path", "prev", "step", "cur", "burning", "ignited", "ignited_set", "movers", "replayed")

    def __init__(self, t, path, prev, step, cur, burning, ignited, replayed=False):
        self.t = t
        self.path = path
        self.prev = prev
        self.step = step
        self.cur = cur
        self.burning = burning
        self.ignited = ignited  # flat cells, in record order
        self.ignited_set = frozenset(ignited)
        self.movers = prev.active
        self.replayed = replayed  # True when the step is the replaying simulator's own
