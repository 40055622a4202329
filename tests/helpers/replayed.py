"""Replayed steps: a type-strict comparison, the engine's replayed-step flags and an episode with a trapped person."""

from ember.engine.core import EpisodeEngine

from helpers.records import parts, record_bytes, scripted
from helpers.scenarios import picture_scenario


def same_typed(a, b):
    """Equal values with equal types all the way down (1, 1.0 and True differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_typed(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_typed(x, y) for x, y in zip(a, b))
    return a == b


def replayed_flags(monkeypatch):
    """Record, per transition the engine feeds, whether it was a replayed one."""
    flags = []
    original = EpisodeEngine.update

    def update(self, tr):
        flags.append(tr.replayed)
        return original(self, tr)

    monkeypatch.setattr(EpisodeEngine, "update", update)
    return flags


# Fire (p = 1) cuts A off from exit 1 at step 1: A is trapped from then on.
CUT_OFF = picture_scenario(["1.......A", "..*......"], p="1/1", max_steps=4)
CUT_OFF_RECORD = parts(record_bytes(CUT_OFF, scripted([])))
