"""The episode process's own half: what runs in the process the watcher (``watch.py``) starts.

It sets itself apart (its own session, death with the worker, a child
subreaper, its standard streams on the log pipes and nothing else of the
worker's open), runs the agent or python episode, sends its result on the
control pipe as JSON and waits to be ended.  The frames it writes there
(``FRAME``: a kind byte and a number) are the whole protocol between the
two halves: ``begin``/``end`` of each answer, then ``R`` and the result.
"""

import contextlib
import json
import os
import signal
import struct
import sys
import time

from ..agent import MAX_STEP_TIMEOUT, AgentPolicy
from ..errors import ActionError, AgentError, EmberError, ResultsIOError
from ..isolation.boundary import host_command
from ..scenario import compile_scenario
from . import processes
from .episode import EpisodeFailure, KeptRecord, measure
from .launchers import policy_launcher
from .task import Task

#: A control frame: its kind (``KINDS``, or ``R`` for the result, whose length is the number) and a number.
FRAME = struct.Struct("<cQ")
KINDS = {"begin": b"B", "end": b"E", "result": b"R"}


def episode_process_main(spec, control, out_fd, err_fd):  # pragma: no cover - runs in the episode process
    """The episode process's whole life: set itself apart, run the episode, send the result, exit."""
    outcome = {"failed": "the episode's process failed before it started."}
    try:
        _set_apart(spec, control, out_fd, err_fd)
        outcome = _episode(spec, control)
    except EpisodeFailure as exc:
        outcome = {"failed": str(exc)}
    except ResultsIOError as exc:
        outcome = {"io": [exc.errno, exc.strerror, exc.filename]}
    except EmberError as exc:  # the simulator or engine refused what EMBER itself produced: still one row
        outcome = {"failed": f"{type(exc).__name__}: {exc}"}
    except BaseException as exc:  # noqa: BLE001 (foreign code may have broken anything; say what)
        outcome = {"failed": f"the episode's process failed: {type(exc).__name__}: {exc}"}
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        with contextlib.suppress(BaseException):
            payload = json.dumps(outcome).encode()
            write_all(control, FRAME.pack(b"R", len(payload)) + payload)
        _await_end()


def _await_end():  # pragma: no cover - runs in the episode process
    """Wait to be ended by the watcher (or with it: the parent-death signal), never exit by ourselves.

    Alive, this process holds the orphans of its tree (it is their child subreaper), so the watcher
    finds every one; if it exited, they would go to a process that may not look for them (init).
    """
    with contextlib.suppress(BaseException):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while True:
            time.sleep(3600)
    os._exit(0)  # never the interpreter's exit: it would wait for the policy's threads


def _set_apart(spec, control, out_fd, err_fd):
    if os.getsid(0) != os.getpid():
        os.setsid()
    processes.set_parent_death_signal(signal.SIGKILL)
    processes.become_subreaper()  # what the policy starts and abandons stays ours to end (module doc)
    # No process of the operator's uid but a privileged one may open our /proc/<pid>/fd (the control
    # pipe): what a policy run with --sandbox off by an unprivileged operator cannot reach.
    processes.set_not_dumpable()
    if os.getppid() != spec["parent"]:
        os._exit(1)  # the worker died before we could ask to die with it
    # The worker's handlers are not ours: a signal now does what it does to any program.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    if out_fd != 1:
        os.dup2(out_fd, 1)
    if err_fd != 2:
        os.dup2(err_fd, 2)
    # The policy's print() and sys.stdout go to these descriptors, whatever the worker's
    # sys.stdout was (a worker of a test run may have a capturing object there).
    sys.stdin = sys.__stdin__ = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = open(1, "w", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
    # Whatever else the worker had open is replaced by /dev/null, keeping the numbers: a pipe
    # end held here would keep the worker's death from being seen, and a stale object's close
    # must not hit a file of ours.
    for fd in _open_fds():
        if fd > 2 and fd not in (control, null):
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    os.set_inheritable(control, False)


def _open_fds():
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return []


def _episode(spec, control):
    task = Task.from_dict(spec["task"])

    def beat(kind, step):
        write_all(control, FRAME.pack(KINDS[kind], step))

    entry = task.policy
    scenario = compile_scenario(task.scenario)
    kept = None
    if spec["record_tmp"] is not None:
        kept = KeptRecord(task.results, entry["name"], task.scenario_id, task.seed, tmp=spec["record_tmp"])
    with contextlib.ExitStack() as stack:
        keep = stack.enter_context(kept.writing()) if kept is not None else None
        metrics, sha, _ = run_foreign(task, scenario, keep, beat)
    return {"ok": [metrics, sha]}


# -- the episode: a policy across the boundary -------------------------------------------


class Heartbeat:
    """A policy wrapper telling the watcher when each answer starts and ends (``beat(kind, step)``)."""

    def __init__(self, policy, beat):
        self.policy = policy
        self.beat = beat
        # It passes each observation on at once, as it came: it reads it no more than its policy does.
        self.reads_observations_only = getattr(policy, "reads_observations_only", False) is True

    def __call__(self, observation):
        step = observation["step"]
        self.beat("begin", step)
        actions = self.policy(observation)
        self.beat("end", step)
        return actions


def episode_timeout(entry, scenario):
    """An agent or python policy's bound on a whole episode (isolation.md §1, Time): its ``episode_timeout``,
    else ``step_timeout`` x the horizon, at most a day."""
    if "episode_timeout" in entry:
        return entry["episode_timeout"]
    return min(entry["step_timeout"] * scenario.max_steps, MAX_STEP_TIMEOUT)


def run_foreign(task, scenario, keep, beat):
    """Measure an agent or python policy episode: the policy process started through the boundary.

    An agent is its command; a python policy is EMBER's host running its
    module (``ember.isolation.host``).  Both are driven by ``AgentPolicy``
    over the agent protocol, in the sandbox unless ``task.sandbox`` is
    ``off`` (``launchers.policy_launcher``); each answer is announced through
    ``beat``.  On a failure the policy process is left to the watcher,
    which ends the episode process's whole tree at once.
    """
    entry = task.policy
    if "python" in entry:
        command, who, source = host_command(entry["python"]), "python policy", entry["python"]
    else:
        command, who, source = entry["agent"], "agent", None
    try:
        agent = AgentPolicy(
            command,
            scenario.data,
            entry["step_timeout"],
            timeout_name=f"{task.where}.step_timeout",
            launch=policy_launcher(entry, task.folder, task.sandbox),
            who=who,
            host_source=source,
            episode_timeout=episode_timeout(entry, scenario),
            episode_timeout_name=f"{task.where}.episode_timeout",
        )
        try:
            result = measure(scenario, Heartbeat(agent, beat), task.seed, keep)
        except ActionError as exc:
            raise agent.refused(exc) from exc
        agent.finish(result[2])
    except AgentError as exc:
        raise EpisodeFailure(str(exc)) from None
    return result


def write_all(fd, data):
    """Write all of ``data`` to ``fd`` (a pipe may take it in parts)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
