"""The episode process: an agent or python policy episode runs there, watched from outside.

Foreign code never runs in a process EMBER needs.  Each attempt of an
``agent`` or ``python`` entry runs in a fresh *episode process*, started
by the worker (``watch_episode``), which stays EMBER's own and watches it:

- the episode process leads its own session, and dies with the worker
  (``PR_SET_PDEATHSIG``); an agent it starts is in that session; it is a
  child subreaper (what the policy starts and abandons is reparented to
  it, whatever session it chose) and, once its result is sent, it waits
  to be ended instead of exiting;
- it announces each answer on a control pipe (``begin``/``end`` with the
  step number) and sends its result there; the watcher gives each answer
  ``step_timeout`` seconds (the agent's own timer answers first: it has a
  second more), and everything else the episode process does (making the
  python policy, the simulator's steps, the metrics) ``WORK_TIMEOUT_S``,
  or ``step_timeout`` if that is larger.  Past a deadline, or when the
  result is in, the whole session is killed (``processes.end_session``):
  no signal mask, handler, thread or child of the policy can outlast it;
- its standard error (the agent's stderr, what a python policy prints)
  goes through a pipe to a capped log (``logs.py``), never to the
  terminal; its standard output is /dev/null (it is EMBER's own);
- its result is JSON, never a pickle: the watcher trusts nothing it sends.

The episode process is forked from the worker when the worker has one
thread (a local worker: cheap, EMBER already imported), else started
afresh with ``sys.executable`` (a Dask worker, whose threads make fork
unsafe).
"""

import contextlib
import json
import os
import select
import selectors
import signal
import subprocess
import sys
import threading
import time

from ..errors import ResultsIOError, SandboxError
from ..isolation.cgroups import remove_left_by
from ..results.layout import log_file
from . import processes
from .campaign_file import work_timeout
from .episode import EpisodeFailure, KeptRecord
from .episode_process import FRAME, episode_process_main
from .logs import CappedLog
from .watcher_host import WatcherHost

#: The watcher's deadline on an answer is this much later than the policy driver's own timer (``AgentPolicy``).
AGENT_MARGIN_S = 1.0
#: After the session is ended, how long its standard streams may take to reach their end.
DRAIN_S = 1.0
#: The largest result an episode process may send (a huge scenario's metrics stay far below).
MAX_RESULT_BYTES = 1 << 30
#: How often the watcher looks at the episode process when the kernel cannot tell it (no pidfd).
_POLL_S = 0.05

_BOOT = (
    "import json, sys\n"
    "spec = json.loads(sys.stdin.buffer.read())\n"
    "sys.path[:] = spec['sys_path']\n"
    "from ember.campaign.episode_process import episode_process_main\n"
    "episode_process_main(spec, spec['control'], 1, 2)\n"
)


# -- the watcher -------------------------------------------------------------------


def watch_episode(task, host=None):
    """Run an agent or python episode in an episode process: (metrics, kept record or None, SHA-256 or None).

    Raises ``EpisodeFailure`` for the policy's failures (timeouts
    included), ``ResultsIOError`` for the results directory's.  ``host``:
    see ``WatcherHost`` (a Dask worker gets the default: no subreaper, nobody told).
    """
    host = host or WatcherHost()
    entry = task.policy
    kind = "python" if "python" in entry else "agent"
    # One log for both kinds: what a python policy prints goes to its host's standard error (its
    # standard output is the answer channel).
    logs = {"stderr": CappedLog(task.results, log_file(entry["name"], task.scenario_id, task.seed, "stderr"))}
    kept = None
    if task.keep_records:
        kept = KeptRecord(task.results, entry["name"], task.scenario_id, task.seed)
    try:
        outcome = _Watch(task, kind, logs, kept, host).run()
        for log in logs.values():
            log.commit()  # kept whatever the outcome: a failed policy's output is what its author needs
        if "ok" not in outcome:
            raise _raised(outcome)
        metrics, sha = outcome["ok"]
        if kept is not None:
            kept.commit()
        return metrics, (kept.relative if kept is not None else None), sha
    finally:
        for log in logs.values():
            log.discard()
        if kept is not None:
            kept.discard()


def _raised(outcome):
    if "io" in outcome:
        errno, strerror, path = outcome["io"]
        return ResultsIOError(errno, strerror, path)
    return EpisodeFailure(outcome["failed"])


def _can_fork():
    # One thread: nothing can hold a lock the child would inherit (a Dask worker has several).
    return hasattr(os, "fork") and threading.active_count() == 1


class _Watch:
    """One episode process, from its start to the end of its session."""

    def __init__(self, task, kind, logs, kept, host):
        self.task = task
        self.kind = kind
        self.logs = logs
        self.kept = kept
        self.host = host
        self.step_timeout = task.policy["step_timeout"]
        self.work_timeout = work_timeout(self.step_timeout)
        self.where = task.where
        self.phase = "setup"
        self.step = 0
        self.control = bytearray()
        self.result = None
        self.popen = None
        self.status = None
        self.gone = False

    # -- starting ---------------------------------------------------------------------

    def _spec(self, control_fd):
        return {
            "task": self.task.as_dict(),
            "kind": self.kind,
            "parent": os.getpid(),
            "record_tmp": self.kept.tmp if self.kept is not None else None,
            "control": control_fd,
            "sys_path": list(sys.path),
        }

    def _start(self):
        control_r, control_w = os.pipe()
        err_r, err_w = os.pipe()
        out_w = os.open(os.devnull, os.O_WRONLY)  # the episode process is EMBER's: it prints nothing
        streams = {err_r: self.logs["stderr"]}
        spec = self._spec(control_w)  # here: in the child, os.getpid() is its own
        try:
            if _can_fork():
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()  # nothing of ours is written twice by the child
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child; covered through its results
                    episode_process_main(spec, control_w, out_w, err_w)
                self.pid = pid
            else:
                self.popen = subprocess.Popen(  # noqa: S603 (our own interpreter and code)
                    [sys.executable, "-c", _BOOT],
                    stdin=subprocess.PIPE,
                    stdout=out_w,
                    stderr=err_w,
                    pass_fds=(control_w,),
                    start_new_session=True,
                    close_fds=True,
                )
                self.pid = self.popen.pid
            self.host.started(self.pid)
        finally:
            for fd in (control_w, out_w, err_w):
                os.close(fd)
        if self.popen is not None:
            # The task goes on stdin; the new process reads it whole before anything else.
            with contextlib.suppress(BrokenPipeError, OSError):
                self.popen.stdin.write(json.dumps(spec).encode())
            with contextlib.suppress(OSError):
                self.popen.stdin.close()
        return control_r, streams

    # -- watching ---------------------------------------------------------------------

    def run(self):
        control_r, streams = self._start()
        selector = selectors.DefaultSelector()
        exit_fd = None
        try:
            selector.register(control_r, selectors.EVENT_READ, "control")
            for fd in streams:
                selector.register(fd, selectors.EVENT_READ, "log")
            with contextlib.suppress(AttributeError, OSError):  # Linux 5.3+: the kernel says when it exits
                exit_fd = os.pidfd_open(self.pid)
                selector.register(exit_fd, selectors.EVENT_READ, "exit")
            outcome = self._watch(selector, control_r, streams, exit_fd is not None)
            if outcome is None:  # before we end it: did it end by itself (it may take a moment to)?
                self.gone = self._ends_within(exit_fd, DRAIN_S)
        finally:
            processes.end_session(self.pid, adopted=self.host.adopted)
            if self.task.sandbox == "required":
                # The sandbox's cgroups, if the episode process was killed before it removed them.
                with contextlib.suppress(SandboxError):
                    remove_left_by(self.pid)
            self.status = self._reap()
            self.host.ended(self.pid)
            self._drain(selector, streams)
            selector.close()
            for fd in (control_r, exit_fd, *streams):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        if outcome is None:
            outcome = {"failed": self._died()}
        return outcome

    def _deadline(self):
        if self.phase == "answer":
            return self.since + self.step_timeout + AGENT_MARGIN_S
        return self.since + self.work_timeout

    def _watch(self, selector, control_r, streams, has_exit_fd):
        self.since = time.monotonic()
        exited_at = None
        control_open = True
        while True:
            now = time.monotonic()
            if exited_at is not None and (not control_open or now > exited_at + DRAIN_S):
                return self.result
            remaining = self._deadline() - now
            if remaining <= 0 and exited_at is None:
                return {"failed": self._too_slow()}
            wait = remaining if has_exit_fd else min(remaining, _POLL_S)
            if exited_at is not None:
                wait = min(wait, exited_at + DRAIN_S - now)
            for key, _ in selector.select(max(wait, 0)):
                if key.data == "exit":
                    selector.unregister(key.fd)
                    exited_at = time.monotonic()
                    continue
                data = _read(key.fd)
                if key.data == "log":
                    if data:
                        streams[key.fd].write(data)
                    else:
                        selector.unregister(key.fd)
                    continue
                if not data:
                    selector.unregister(key.fd)
                    control_open = False
                    if exited_at is None:
                        exited_at = time.monotonic()  # the process closed our pipe: it is gone, or as good as
                    continue
                if self._control(data):
                    return self.result
            if not has_exit_fd and exited_at is None and self._exited():
                exited_at = time.monotonic()

    def _control(self, data):
        """Take control bytes; True once the result is complete."""
        self.control += data
        while len(self.control) >= FRAME.size:
            kind, number = FRAME.unpack_from(self.control)
            if kind == b"R":
                if number > MAX_RESULT_BYTES:
                    self.result = {"failed": "the episode's process sent a malformed result."}
                    return True
                if len(self.control) < FRAME.size + number:
                    return False
                payload = bytes(self.control[FRAME.size : FRAME.size + number])
                self.result = _result(payload)
                return True
            del self.control[: FRAME.size]
            if kind == b"B":
                self.phase, self.step = "answer", number
            elif kind == b"E":
                self.phase = "work"
            else:
                self.result = {"failed": "the episode's process sent a malformed message."}
                return True
            self.since = time.monotonic()
        return False

    def _ends_within(self, exit_fd, seconds):
        deadline = time.monotonic() + seconds
        while not self._exited():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if exit_fd is not None:
                select.select([exit_fd], [], [], remaining)
            else:
                time.sleep(min(remaining, _POLL_S))
        return True

    def _exited(self):
        if self.popen is not None:
            return self.popen.poll() is not None
        return processes.ended(self.pid)

    # -- ending -----------------------------------------------------------------------

    def _reap(self):
        if self.popen is not None:
            try:
                return self.popen.wait(processes.END_SESSION_S)
            except subprocess.TimeoutExpired:
                return None
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(self.pid, 0)
            return os.waitstatus_to_exitcode(status)
        return None

    def _drain(self, selector, streams):
        """What the ended session wrote last, until its pipes end (bounded: a stray holder may keep one open)."""
        deadline = time.monotonic() + DRAIN_S
        while any(key.data == "log" for key in selector.get_map().values()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            for key, _ in selector.select(remaining):
                if key.data != "log":
                    selector.unregister(key.fd)
                    continue
                data = _read(key.fd)
                if data:
                    streams[key.fd].write(data)
                else:
                    selector.unregister(key.fd)

    def _too_slow(self):
        if self.phase == "answer":
            who = "python policy" if self.kind == "python" else "agent"
            return (
                f"step {self.step}: the {who} did not answer within {self.step_timeout:g} s "
                f"({self.where}.step_timeout)."
            )
        at = f"step {self.step}: " if self.step else ""
        return f"{at}the episode's process made no progress for {self.work_timeout:g} s outside the policy's answers."

    def _died(self):
        who = f"the episode's process (driving the {'python policy' if self.kind == 'python' else 'agent'})"
        status = self.status
        if not self.gone or status is None:
            how = "closed its pipe to EMBER"
        elif status < 0:
            try:
                how = f"was killed by {signal.Signals(-status).name}"
            except ValueError:
                how = f"was killed by signal {-status}"
        else:
            how = f"exited with status {status}"
        at = f"step {self.step}: " if self.step else ""
        return f"{at}{who} {how} before the episode ended."


def _read(fd):
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _result(payload):
    """The episode process's result, checked for shape: {"ok": [metrics, sha]}, {"failed": reason} or {"io": [...]}."""
    try:
        value = json.loads(payload.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        value = None
    if isinstance(value, dict) and len(value) == 1:
        if isinstance(value.get("ok"), list) and len(value["ok"]) == 2 and isinstance(value["ok"][0], dict):
            sha = value["ok"][1]
            if sha is None or isinstance(sha, str):
                return value
        if isinstance(value.get("failed"), str):
            return value
        io = value.get("io")
        if isinstance(io, list) and len(io) == 3 and all(isinstance(x, (int, str)) or x is None for x in io):
            return value
    return {"failed": "the episode's process sent a malformed result."}
