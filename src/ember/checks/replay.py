"""Stage 3: replay the record's actions and demand identical canonical bytes.

Kept apart from the read-only checks: this is the one check that drives the
simulator.  ``Replayer`` compares part by part and returns the first
mismatch; ``ReplayCheck`` is its accumulator form inside the engine, which
remembers the first divergence and stops replaying there while the
structural checks go on (the precedence rule of simulator.md §7).

The replay owns "try this line" of the canonical-line fast path
(simulator.md §5): ``Replayer.try_line`` slices a step line's actions,
steps the simulator and compares canonical bytes; a step it took but could
not match is kept as pending, for the strict comparison of the same step.
``ReplayedStep`` is also how ``ember.engine.run.measure_run`` hands the
simulator's own steps to the engine.
"""

from ..accumulator import Accumulator
from ..canonical import STEP_LINE_START, canonical_json, parse_json
from ..errors import ActionError, ReplayMismatchError, SeedError
from ..sim.simulator import Simulator

# A canonical step line starts with its actions object, which nests
# nothing: its first "}" closes it.
_ACTIONS_START = len(STEP_LINE_START) - 1
# Where a step's canonical bytes hold its snapshot's burning list, when that list is None.
_NO_BURNING = b'"snapshot":{"burning":null'


def _kind(value):
    # JSON types: Python's True == 1 must not hide a difference.
    return "bool" if isinstance(value, bool) else type(value).__name__


def first_difference(recorded, replayed, path):
    """Path of the first differing field in canonical (sorted-key) order, or None."""
    if _kind(recorded) != _kind(replayed):
        return path
    if isinstance(recorded, dict):
        for key in sorted(set(recorded) | set(replayed)):
            if key not in recorded or key not in replayed:
                return f"{path}.{key}"
            found = first_difference(recorded[key], replayed[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list):
        for j, (a, b) in enumerate(zip(recorded, replayed)):
            found = first_difference(a, b, f"{path}[{j}]")
            if found:
                return found
        return None if len(recorded) == len(replayed) else f"{path}[{min(len(recorded), len(replayed))}]"
    return None if recorded == replayed else path


def _lookup(value, path, root):
    """The value at ``path`` (a suffix of ``root``'s path), for messages."""
    import re

    for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path[len(root) :]):
        try:
            value = value[name] if name else value[int(index)]
        except (KeyError, IndexError, TypeError):
            return "nothing"
    text = canonical_json(value).decode()
    return text if len(text) <= 120 else text[:117] + "..."


class ReplayedStep:
    """A step the replaying simulator has taken, with the state it left (person indexes, flat cells).

    ``final_state`` is the episode's final state once this step has ended it, else None.
    """

    __slots__ = ("step", "status", "position", "active", "final_state")

    def __init__(self, sim, step):
        self.step = step
        self.status = list(sim.status)
        self.position = list(sim.position)
        self.active = sim.active  # the simulator replaces this list, never changes it
        self.final_state = sim.final_state


class Replayer:
    """A simulator fed the record's actions, compared part by part.

    ``burning_lists=False``: the steps ``try_line`` takes hold None for their
    snapshot's ``"burning"`` (see ``Simulator``), for callers that never look
    at that list (the metrics, ``verify_replay``); every step compared in
    full (``step``, a pending one) holds its list.
    """

    def __init__(self, scenario, header, burning_lists=True):
        self.sim = None
        self.pending = None  # a step try_line took but could not match: the strict comparison's replay
        try:
            # The replay's steps are only compared and measured, never modified: lists may be shared.
            seed = header.get("seed") if isinstance(header, dict) else None
            self.sim = Simulator(scenario, seed, shared_lists=True, burning_lists=burning_lists)
        except SeedError as exc:
            self.error = ReplayMismatchError(
                f"step 0: $.header.seed: the simulator cannot start: {exc}", 0, "$.header.seed"
            )
            return
        self.error = self.compare(header, self.sim.header, "$.header", 0)

    def compare(self, recorded, replayed, path, step):
        if canonical_json(recorded) == canonical_json(replayed):
            return None
        where = first_difference(recorded, replayed, path) or path
        what = "step" if step else "part"
        return ReplayMismatchError(
            f"step {step}: {where}: the record has {_lookup(recorded, where, path)}, "
            f"the replay gives {_lookup(replayed, where, path)} (first difference in this {what}).",
            step,
            where,
        )

    def initial_state(self, value):
        return self.compare(value, self.sim.initial_state, "$.initial_state", 0)

    def try_line(self, line):
        """The ``ReplayedStep`` whose canonical bytes are exactly ``line`` (a step line without
        its separator), or None.

        None changes nothing the strict path depends on: either the
        simulator has not moved (unreadable actions, actions it refuses), or
        its step is kept as pending and the strict comparison of that step
        uses it instead of stepping again.
        """
        end = line.find(b"}", _ACTIONS_START)
        try:
            # Only a canonical line can match, so any parser that reads a canonical object as
            # json.loads does will do; orjson's is the fastest.
            actions = parse_json(line[_ACTIONS_START : end + 1])
        except (ValueError, RecursionError):  # deep nesting: the strict reader refuses it by its limits
            return None
        try:
            replayed = self.sim.step(actions)
        except ActionError:
            return None  # the state is unchanged; the strict path will report it
        if not self._is_line(replayed, line):
            self.pending = self._with_burning(replayed)
            return None
        return ReplayedStep(self.sim, replayed)

    def _with_burning(self, replayed):
        """``replayed`` with its snapshot's burning list in place (the simulator's current one)."""
        snapshot = replayed["snapshot"]
        if snapshot["burning"] is None:
            snapshot["burning"] = self.sim.burning_list()
        return replayed

    def _is_line(self, replayed, line):
        """``canonical_json(replayed) == line``, without encoding the burning list afresh.

        The step is encoded with None for its burning list, and the
        simulator keeps the list's canonical bytes row by row as cells
        ignite (``BurningText``): the line must be that encoding with those
        bytes in place of ``null``.  The snapshot's keys are sorted, so
        ``"burning"`` comes first in it, and no string of a step holds a
        quote, so the mark is found once.  The parts are compared in place
        (``startswith`` at an offset, views of the encoding, the list row
        by row): no copy of a line, no join of the list.
        """
        snapshot = replayed["snapshot"]
        if snapshot["burning"] is None:
            encoded = canonical_json(replayed)
        else:
            rest = dict(replayed)
            rest["snapshot"] = dict(snapshot, burning=None)
            encoded = canonical_json(rest)
        at = encoded.find(_NO_BURNING)
        if at < 0:  # not a step of this simulator's making: compare in full
            return canonical_json(replayed) == line
        at += len(_NO_BURNING) - len(b"null")
        burning = self.sim.kept_burning_text()
        end = at + burning.size
        view = memoryview(encoded)
        return (
            len(line) == len(encoded) - len(b"null") + burning.size
            and line.startswith(view[at + len(b"null") :], end)
            and line.startswith(view[:at])
            and burning.occurs_at(line, at)
        )

    def step(self, t, value, path):
        """Compare step ``t`` with the replay (the pending step of ``try_line``, if any)."""
        replayed, self.pending = self.pending, None
        if replayed is None:
            actions = value.get("actions") if isinstance(value, dict) else None
            try:
                replayed = self._with_burning(self.sim.step(actions))
            except ActionError as exc:
                return ReplayMismatchError(
                    f"step {t}: {path}.actions: the simulator rejects the recorded actions: {exc}", t, f"{path}.actions"
                )
        return self.compare(value, replayed, path, t)

    def final_state(self, value, steps):
        if self.sim.final_state is None:
            return ReplayMismatchError(
                f"step {steps}: $.final_state: the replay has not terminated after the record's {steps} steps.",
                steps,
                "$.final_state",
            )
        return self.compare(value, self.sim.final_state, "$.final_state", steps)


class ReplayCheck(Accumulator):
    """Replay in lockstep inside the engine; the first mismatch is kept, not raised."""

    def __init__(self, scenario, header, initial_raw, burning_lists=True):
        self.replayer = Replayer(scenario, header, burning_lists)
        self.mismatch = self.replayer.error or self.replayer.initial_state(initial_raw)

    def try_line(self, line):
        """``Replayer.try_line``, while the replay has not diverged (else None)."""
        if self.mismatch is not None:
            return None
        return self.replayer.try_line(line)

    def update(self, tr):
        if tr.replayed or self.mismatch is not None:
            return  # already byte-identical, or replay has stopped
        self.mismatch = self.replayer.step(tr.t, tr.step, tr.path)

    def finish(self, final_raw, steps):
        if self.mismatch is None:
            self.mismatch = self.replayer.final_state(final_raw, steps)

    def result(self):
        return self.mismatch
