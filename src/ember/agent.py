"""Drive an external agent process as an EMBER policy (docs/agent-protocol.md).

``AgentPolicy`` starts the agent, sends it the scenario, and is then called
like any policy (``observation -> {person_id: action}``): each call sends
one observation line and reads one answer line.  ``run_episode`` drives it
unchanged.  A daemon thread writes the messages, and the answers are read
by the caller's thread itself, through ``poll`` with a deadline, never a
blocking read: an agent that neither reads nor writes cannot hang EMBER,
whatever the pipe buffers hold.  (A reader thread handed each answer over
through two queues, three thread switches a step, most of EMBER's own
cost of a step.)
"""

import contextlib
import json
import os
import queue
import re
import select
import shlex
import signal
import subprocess
import threading
import time
import typing

from .canonical import canonical_json
from .errors import HOST_ERROR_KEY, AgentError  # raised here, declared with every error
from .frozen import burning_insertions
from .strict_json import object_without_duplicates

#: An answer's bound when none is given: 'ember run --agent' and a campaign's step_timeout (campaign.md §1).
DEFAULT_STEP_TIMEOUT = 10.0
#: The longest step timeout anyone may ask for (one day): past it a deadline means nothing.
MAX_STEP_TIMEOUT = 86400.0
#: An answer line holds at most ANSWER_BASE_BYTES + ANSWER_PERSON_BYTES x the observation's active people
#: bytes, its newline not counted (isolation.md §2, Answer size); the python host's frames too.  EMBER
#: reads no further: its memory never depends on what the policy sends.
ANSWER_BASE_BYTES = 4096
ANSWER_PERSON_BYTES = 128
#: After the end message (or an error), how long the agent may take to exit
#: on its own before it is terminated, then killed.
EXIT_GRACE = 2.0
KILL_GRACE = 1.0
#: While waiting for an answer, how often to check whether the agent has exited
#: (its output may stay open after it exits: a process it started holds it).
EXIT_POLL = 0.1
#: Once the agent has exited, how long an answer it wrote just before may take to arrive.
EXITED_DRAIN = 0.5
_EOF = b""
_PREVIEW = 60


class PolicyProcess(typing.Protocol):
    """What an ``AgentPolicy``'s ``launch`` returns: a running policy process, Popen-like.

    ``isolation.boundary.PlainProcess`` (no sandbox) and
    ``isolation.sandbox.SandboxedProcess`` (bubblewrap and cgroups) are the
    two; declared here, where it is spoken to, beneath both.  ``close()``
    ends whatever is left of the process (and its tree) once it is done.
    """

    __slots__ = ()

    stdin: typing.BinaryIO
    stdout: typing.BinaryIO
    pid: int
    returncode: "int | None"

    def poll(self):
        """The exit status once it has exited, else None."""

    def wait(self, timeout=None):
        """The exit status, waiting at most ``timeout`` seconds (``subprocess.TimeoutExpired``)."""

    def terminate(self):
        """Ask it to stop."""

    def kill(self):
        """Kill it."""

    def close(self):
        """End what is left of it and release what it held."""


def answer_bound(active):
    """The longest answer line (bytes, its newline not counted) to an observation with ``active`` people."""
    return ANSWER_BASE_BYTES + ANSWER_PERSON_BYTES * active


def read_line(stream, bound):
    """The next line of ``stream`` (a buffered binary reader), reading at most ``bound`` + 1 bytes: a whole
    line of at most ``bound`` bytes and its newline; ``bound`` + 1 bytes without a newline when the line is
    longer (nothing more is read); what came before the end of the stream otherwise."""
    return stream.readline(bound + 1)


class AgentPolicy:
    """A policy callable backed by an agent subprocess speaking JSON lines.

    Use as a context manager so the process is always reaped::

        with AgentPolicy("python3 agent.py", scenario) as agent:
            final = run_episode(scenario, agent, seed, out)
            agent.finish(final)

    For EMBER's python-policy host (``host_source``) the observations go in
    an EMBER-defined frame: the burning list only as the cells added since
    the last observation (``burning_added``, see ``burning_insertions``)
    when it can be, which the host merges back; agents always get the
    protocol's whole observation.
    """

    #: It encodes each observation at once and keeps nothing of it: the simulator may share its lists.
    reads_observations_only = True

    def __init__(
        self,
        command,
        scenario,
        step_timeout=DEFAULT_STEP_TIMEOUT,
        *,
        cwd=None,
        stderr=None,
        own_group=True,
        timeout_name="--step-timeout",
        launch=None,
        who="agent",
        host_source=None,
        episode_timeout=None,
        episode_timeout_name="episode_timeout",
    ):
        self.step_timeout = step_timeout
        self.step = 0  # the step of the last observation sent
        self.timeout_name = timeout_name  # where the timeout was set, for the message
        # Who answers, for the messages: "agent", or "python policy" when EMBER's host runs one.
        self.who = who
        # With host_source (a python policy's MODULE:NAME), the host's failure line is understood.
        self.host_source = host_source
        self._burning = None  # the last burning list sent to the host
        # The whole episode's bound (isolation.md §1, Time), from the start of the process.
        self.episode_timeout = episode_timeout
        self.episode_timeout_name = episode_timeout_name
        self._episode_deadline = None if episode_timeout is None else time.monotonic() + episode_timeout
        # With own_group the agent leads a new session, and closing it ends every process of it
        # (its children too). Campaigns pass False: the agent joins the episode process's session,
        # which the campaign ends as a whole. cwd and stderr also serve campaigns.
        self.own_group = own_group and launch is None
        argv = split_command(command)
        if launch is None:
            self._process = _spawn(argv, cwd, stderr, own_group)
        else:
            # launch(argv, stdin, stdout, stderr) -> a PolicyProcess (a sandbox or not, ember.isolation).
            self._process = launch(argv, subprocess.PIPE, subprocess.PIPE, stderr)
        self._bound = answer_bound(0)
        # The answers as read: what came after the last answer's newline waits here for the next call.
        self._unread = b""
        self._output_ended = False  # its end reached, or a line too long read: nothing more is read
        self._output = self._process.stdout.fileno()
        self._poll = select.poll()
        self._poll.register(self._output, select.POLLIN)
        self._outbox = queue.Queue()
        self._threads = [threading.Thread(target=self._write_messages, name="ember-agent-writer", daemon=True)]
        for thread in self._threads:
            thread.start()
        # Never the seed (simulator.md §4): the agent must not predict the fire.
        self._send({"type": "scenario", "scenario": scenario})

    # -- the policy -----------------------------------------------------------

    def __call__(self, observation):
        self.step = observation["step"]
        self._bound = answer_bound(len(observation["people"]))
        if self.host_source is None:
            self._send({"type": "observation", "observation": observation})
        else:
            self._send(self._host_frame(observation))
        return self._decode(self._receive())

    def _host_frame(self, observation):
        burning, previous = observation["burning"], self._burning
        self._burning = burning
        added = None if previous is None else burning_insertions(previous, burning)
        if added is None:
            return {"type": "observation", "observation": observation}
        rest = {key: value for key, value in observation.items() if key != "burning"}
        return {"type": "observation", "observation": rest, "burning_added": added}

    def finish(self, final_state, grace=EXIT_GRACE):
        """Send the end message, close the agent's input and give it ``grace`` seconds to exit."""
        self._send({"type": "end", "final_state": final_state})
        self.close(grace)
        if self._exceeded_memory():
            raise AgentError(self._memory_message())

    @property
    def returncode(self):
        """The agent's exit status once it has been reaped, else None."""
        return self._process.returncode

    def refused(self, exc):
        """The AgentError for an ``ActionError`` the simulator raised on the agent's answer."""
        # The simulator's message starts with "step N: " already; say it once.
        detail = re.sub(r"^step \d+: ", "", str(exc))
        verb = "returned" if self.host_source is not None else "sent"
        return AgentError(f"step {self.step}: the {self.who} {verb} illegal actions: {detail}")

    # -- lifetime -------------------------------------------------------------

    def close(self, grace=EXIT_GRACE):
        """Close the agent's input, give it ``grace`` seconds, then terminate, then kill it."""
        self._outbox.put(None)  # the writer closes stdin once the queued messages are out
        process = self._process
        for stop, wait in ((None, grace), (process.terminate, KILL_GRACE), (process.kill, None)):
            if process.poll() is not None:
                break
            if stop is not None:
                with contextlib.suppress(OSError):  # it exited in between
                    stop()
            try:
                process.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        if self.own_group:
            # The agent has exited (or been killed): what it started must not outlive it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        for thread in self._threads:
            # A grandchild holding the pipes open must not hang EMBER either.
            thread.join(KILL_GRACE)
        release = getattr(process, "close", None)
        if release is not None:
            release()  # a sandbox: what is left of its tree ended, its cgroups removed

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # On an error the agent is not waited for: it may be the one at fault.
        self.close(grace=EXIT_GRACE if exc_type is None else 0.2)
        return False

    # -- I/O threads ----------------------------------------------------------

    def _take_line(self):
        """The next answer line if the bytes read hold one (``read_line``'s: at most ``_bound`` + 1 bytes),
        what came before the end of the output once it has ended, else None."""
        unread, bound = self._unread, self._bound
        end = unread.find(b"\n", 0, bound + 1)
        if end >= 0:
            self._unread = unread[end + 1 :]
            return unread[: end + 1]
        if len(unread) > bound:
            self._output_ended = True  # a line too long to take: nothing more is read
            self._unread = b""
            return unread[: bound + 1]
        if self._output_ended:
            self._unread = b""
            return unread
        return None

    def _read_for(self, timeout):
        """The next answer line, waiting at most ``timeout`` seconds for it (None when it has not come).

        At most the bound's bytes are read (EMBER's memory never depends on what the agent sends), and
        never past the output's end."""
        deadline = time.monotonic() + timeout
        while True:
            line = self._take_line()
            if line is not None:
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._poll.poll(remaining * 1000):
                return None
            try:
                chunk = os.read(self._output, self._bound + 1 - len(self._unread))
            except BlockingIOError:
                continue
            except OSError:
                chunk = _EOF
            if not chunk:
                self._output_ended = True
            self._unread += chunk

    def _write_messages(self):
        stream = self._process.stdin
        try:
            while True:
                data = self._outbox.get()
                if data is None:
                    break
                stream.write(data)
                stream.flush()
        except (OSError, ValueError):
            pass  # the agent stopped reading (it exited): the reader reports it
        with contextlib.suppress(OSError, ValueError):
            stream.close()

    def _send(self, message):
        self._outbox.put(canonical_json(message) + b"\n")

    # -- answers --------------------------------------------------------------

    def _exceeded_memory(self):
        killed = getattr(self._process, "oom_killed", None)
        return killed is not None and killed()

    def _memory_message(self):
        return f"the policy exceeded its memory limit of {self._process.memory_mb} MiB"

    def _receive(self):
        line = self._next_line()
        if line == _EOF:
            gone = self._gone()
            if self._exceeded_memory():
                raise AgentError(self._memory_message())
            raise AgentError(f"step {self.step}: {gone} before answering the observation.")
        if len(line) > self._bound and not line.endswith(b"\n"):
            raise AgentError(f"step {self.step}: the answer is longer than {self._bound:,} bytes.")
        if not line.endswith(b"\n"):
            raise AgentError(f"step {self.step}: {self._gone()} in the middle of its answer line {_preview(line)}.")
        return line

    def _next_line(self):
        """The next answer line, waiting at most ``step_timeout``.

        An agent that has exited is reported as such even when its output is
        still open (a child it started holds it): it will never answer.
        """
        deadline = time.monotonic() + self.step_timeout
        episode_first = self._episode_deadline is not None and self._episode_deadline < deadline
        if episode_first:
            deadline = self._episode_deadline
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 and episode_first:
                raise AgentError(
                    f"step {self.step}: the episode did not end within {self.episode_timeout:g} s "
                    f"({self.episode_timeout_name})."
                )
            if remaining <= 0:
                raise AgentError(
                    f"step {self.step}: the {self.who} did not answer within {self.step_timeout:g} s "
                    f"({self.timeout_name})."
                )
            line = self._read_for(min(remaining, EXIT_POLL))
            if line is not None:
                return line
            if self._process.poll() is not None:
                line = self._read_for(EXITED_DRAIN)
                if line is not None:
                    return line
                if self._exceeded_memory():
                    raise AgentError(self._memory_message())
                raise AgentError(
                    f"step {self.step}: {self._gone()} before answering the observation "
                    "(a process it started still holds its standard output open)."
                )

    def _gone(self):
        """How the agent's output ended, as a sentence fragment."""
        try:
            status = self._process.wait(KILL_GRACE)
        except subprocess.TimeoutExpired:
            return f"the {self.who} closed its standard output"
        if status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            return f"the {self.who} was killed by {name}"
        return f"the {self.who} exited with status {status}"

    def _decode(self, line):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AgentError(
                f"step {self.step}: the {self.who} sent a line that is not UTF-8 (byte 0x{line[exc.start]:02x} "
                f"at offset {exc.start}): {_preview(line)}."
            ) from None
        try:
            # Decoded here: json.loads of bytes guesses UTF-16/32 from NUL bytes, which is never the protocol's.
            value = json.loads(text, object_pairs_hook=object_without_duplicates)
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, RecursionError):
                reason = "nested too deeply"
            else:  # a JSONDecodeError's msg has no line/column: an answer is one line anyway
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise AgentError(
                f"step {self.step}: the {self.who} sent a line that is not JSON ({reason}): {_preview(line)}."
            ) from None
        if not isinstance(value, dict):
            raise AgentError(
                f"step {self.step}: the {self.who} sent {_json_type(value)}, "
                f"not a JSON object {{person_id: action}}: {_preview(line)}."
            )
        if self.host_source is not None and HOST_ERROR_KEY in value:
            raise AgentError(self._host_failure(value))
        return value

    def _host_failure(self, value):
        """The row's reason from the python-policy host's failure line (its words, in EMBER's sentence)."""
        report = value.get(HOST_ERROR_KEY)
        if len(value) != 1 or not isinstance(report, dict):
            return f"step {self.step}: the python policy's host sent a malformed failure line."
        phase, kind, message = (report.get(key) for key in ("phase", "type", "message"))
        if not all(isinstance(part, str) for part in (phase, kind, message)):
            return f"step {self.step}: the python policy's host sent a malformed failure line."
        said = f"{kind}: {message}"
        if phase == "make":
            return f"the python policy {self.host_source} could not be made: {said}"
        if phase == "answer":
            return f"step {self.step}: the python policy returned an answer that is not JSON: {said}"
        return f"step {self.step}: the python policy raised {said}"


def split_command(command):
    """An agent command's words: a list as it is, a string split like a POSIX shell line (never run by one)."""
    if not isinstance(command, str):
        argv = [str(word) for word in command]
    else:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise AgentError(f"cannot parse the agent command {command!r}: {exc}.") from None
    if not argv:
        raise AgentError("the agent command is empty.")
    return argv


def _spawn(argv, cwd=None, stderr=None, own_group=True):
    try:
        # stderr is inherited unless given: the agent's diagnostics reach EMBER's stderr as they are.
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            start_new_session=own_group,
        )
    except OSError as exc:
        raise AgentError(f"cannot start the agent {argv[0]!r}: {exc.strerror or exc}.") from None


def _json_type(value):
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return {list: "an array", str: "a string", int: "a number", float: "a number"}.get(type(value), "a value")


def _preview(line):
    text = line.decode("utf-8", "replace").rstrip("\n")
    return repr(text if len(text) <= _PREVIEW else text[:_PREVIEW] + "...")
