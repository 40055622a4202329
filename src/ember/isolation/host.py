"""EMBER's python-policy host, run inside the sandbox: ``python -c "from ember.isolation.host import main;
main()" MODULE:NAME`` (``boundary.host_command``; ``python -m ember.isolation.host MODULE:NAME`` works too).

It plays the agent's side of the agent protocol (docs/agent-protocol.md)
for a ``python`` policy: it reads the ``scenario`` message, imports MODULE
(the working directory, the campaign folder's path, first on the module
path), calls NAME with the scenario, and answers each ``observation``
with the policy's actions, one JSON line each, until ``end`` or the end
of its input.  It is EMBER's code on the foreign side of the boundary
(isolation.md §1) and is trusted for nothing: what it sends is checked
like any agent's answer.

Its standard output is the answer channel alone: the real descriptor is
kept on a private copy and descriptor 1 is pointed at standard error, so
whatever the policy prints goes to the episode's log.  When making the
policy or an answer fails, the host says so in one line instead of an
answer, ``{"ember:error": {"phase": ..., "type": ..., "message": ...}}``
(a key no person ID can be), then exits with status 1; EMBER makes the
row's one-line reason from it.  Observations may come with the burning
list as the cells added since the last one (``burning_added``, made by
``ember.frozen.burning_insertions``), merged back here (``frozen.merge_added``).  The policy gets
that list read-only (``ember.frozen.BurningCells``, its cells
``FrozenList`` s), as a public ``Simulator`` hands it out in-process: the
same cell objects step after step with the new ones inserted, so neither
side copies every burning cell a step (the copy was most of the host's
time on a large hall).  A policy that changes it gets the simulator's
``TypeError``.

It imports no part of EMBER beyond Base and Agent (an import contract and
a test hold it to that): never the simulator, the engine, the records, the
results or the campaign.
"""

import importlib
import json
import os
import sys

from ..canonical import one_line, split_module_name
from ..frozen import BurningCells, frozen_list, frozen_lists, merge_added

_SHOWN = 2000
#: The host's own lines (a failure, a verdict) fit the answer bound with nobody active
#: (ember.agent.answer_bound(0), isolation.md §2): a policy's long message is cut, never the line refused.
LINE_BYTES = 4096


def _describe(exc):
    try:
        message = one_line(exc)
    except BaseException:  # noqa: BLE001 (a policy's exception may fail even to print)
        message = "(its message cannot be shown)"
    return type(exc).__name__, message[:_SHOWN]


def fitted(make, kind, message):
    """The line of ``make(kind, message)`` (compact JSON and its newline), the words cut until it holds at
    most ``LINE_BYTES`` bytes before its newline (escapes can make a character 12 bytes)."""
    while True:
        line = json.dumps(make(kind, message), separators=(",", ":")).encode("utf-8")
        if len(line) <= LINE_BYTES or not (kind or message):
            return line + b"\n"
        if len(kind) > 200:
            kind = kind[:200]
        else:
            message = message[: len(message) // 2]


class PolicyHost:
    """The agent side of the protocol for one python policy."""

    def __init__(self, source, answers, messages):
        self.source = source
        self.answers = answers  # binary, the real standard output
        self.messages = messages  # binary, standard input
        self.policy = None
        self.burning = None  # the last observation's burning list (read-only), to merge the next one's additions
        self.lineage = None  # what successive burning lists grown by insertions share (``BurningCells.source``)

    def observation(self, message):
        """The observation of an observation message, its burning list merged back when it came as additions,
        handed to the policy read-only: one ``BurningCells`` a step, sharing its cells with the last one."""
        observation = message["observation"]
        if "burning_added" in message:
            cells = merge_added(self.burning, message["burning_added"])
        else:
            # A whole list: a policy must not take it for the last one grown by insertions.
            self.lineage = object()
            cells = frozen_lists(observation["burning"])
        burning = frozen_list(cells, BurningCells)
        burning.source = self.lineage
        self.burning = observation["burning"] = burning
        return observation

    def send(self, value):
        self.answers.write(json.dumps(value, separators=(",", ":")).encode("utf-8") + b"\n")
        self.answers.flush()

    def fail(self, phase, exc):
        import traceback  # only on a failure: its import is a good share of the host's start

        from ..errors import HOST_ERROR_KEY  # only on a failure too: errors.py is every error of EMBER

        traceback.print_exception(exc, file=sys.stderr)
        kind, message = _describe(exc)
        self.answers.write(
            fitted(
                lambda kind, message: {HOST_ERROR_KEY: {"phase": phase, "type": kind, "message": message}},
                kind,
                message,
            )
        )
        self.answers.flush()
        sys.stderr.flush()
        os._exit(1)  # never the interpreter's exit: it would wait for the policy's threads

    def make(self, scenario):
        module_name, name = split_module_name(self.source)
        try:
            module = importlib.import_module(module_name)
            self.policy = getattr(module, name)(scenario)
        except BaseException as exc:  # noqa: BLE001 (foreign code; SystemExit and KeyboardInterrupt included)
            self.fail("make", exc)

    def answer(self, observation):
        try:
            actions = self.policy(observation)
        except BaseException as exc:  # noqa: BLE001
            self.fail("step", exc)
        try:
            self.send(actions)
        except (TypeError, ValueError) as exc:  # not JSON: no answer an agent could send either
            self.fail("answer", exc)

    def serve(self):
        for line in self.messages:
            message = json.loads(line)
            kind = message.get("type")
            if kind == "scenario":
                self.make(message["scenario"])
            elif kind == "observation":
                self.answer(self.observation(message))
            elif kind == "end":
                break


def check(source, answers):
    """``--check``: one line saying whether MODULE imports and NAME is callable (campaign.md §2), for the
    command to refuse a campaign up front; it is a verdict on the campaign file, never a result."""
    module_name, name = split_module_name(source)
    verdict = {"error": None}
    try:
        factory = getattr(importlib.import_module(module_name), name)
    except AttributeError:
        verdict = {"error": "attribute"}
    except BaseException as exc:  # noqa: BLE001 (foreign code)
        kind, message = _describe(exc)
        verdict = {"error": "import", "type": kind, "message": message}
    else:
        if not callable(factory):
            verdict = {"error": "callable", "type": type(factory).__name__}
    if verdict["error"] == "import":
        line = fitted(
            lambda kind, message: {**verdict, "type": kind, "message": message}, verdict["type"], verdict["message"]
        )
    else:
        line = fitted(
            lambda kind, message: {**verdict, "type": kind} if "type" in verdict else verdict,
            verdict.get("type", ""),
            "",
        )
    answers.write(line)
    answers.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # print() and the policy's own writes to descriptor 1 go to the log
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
    cwd = os.getcwd()
    if sys.path[:1] == [""]:
        sys.path[0] = cwd  # python -c names the working directory "": the same module path as python -m's
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # the campaign folder first on the module path (campaign.md §1)
    if argv[0] == "--check":
        check(argv[1], answers)
    else:
        PolicyHost(argv[0], answers, sys.stdin.buffer).serve()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
