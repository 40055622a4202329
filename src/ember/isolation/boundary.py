"""How a policy process is started (isolation.md §1 and §2, Modes): one launcher for agents and python policies.

``Launcher(mode, ...)`` is what ``ember.agent.AgentPolicy`` calls to start
the process it drives: with ``required`` a sandbox (``sandbox.py``), with
``off`` a plain child process with the operator's rights.  Both give the
process exactly its three standard streams and the same working directory
(the campaign folder); ``off`` leaves out the sandbox alone, and with it
the sandbox's fixed environment: the process gets the operator's, plus the
policy's ``env`` table (a developer's own code, run as they would run it).
"""

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time

from ..agent import AgentError, PolicyProcess, answer_bound, split_command
from ..canonical import split_module_name
from ..errors import SandboxError
from .environment import policy_environment
from .installation import this_interpreter
from .probe import require_sandbox
from .sandbox import Sandbox, SandboxLimits

# Read at import: a local worker imports this module before it forks its episode processes, which then
# inherit the installation's folders instead of reading them once per episode.
this_interpreter()

SANDBOX_MODES = ("required", "off")
HOST_MODULE = "ember.isolation.host"
#: The host is started by ``python -c`` with this, not ``python -m``: ``-m`` runs host.py as ``__main__``,
#: compiled from its source in every sandbox (never from its cached bytecode), and loads runpy and with it
#: importlib.util, contextlib and functools, a quarter of the host's start (docs/isolation.md).
HOST_CODE = f"from {HOST_MODULE} import main; main()"
OFF_WARNING = "--sandbox off: the policies run outside the sandbox, with your rights (isolation.md)."


def host_command(source, python=None):
    """The words that run a python policy ``MODULE:NAME`` through EMBER's host."""
    return [python or sys.executable, "-c", HOST_CODE, source]


def python_files(source, folder):
    """A python policy's own files: the top-level package folder or the module file of MODULE in
    ``folder``; nothing when MODULE comes from the Python installation (bound as a whole)."""
    package = os.path.abspath(os.path.join(folder, split_module_name(source)[0].split(".")[0]))
    if os.path.isdir(package):
        return [package]
    if os.path.isfile(package + ".py"):
        return [package + ".py"]
    return []


def agent_files(command, folder, anywhere=False):
    """An agent's default ``files``: its program and its first argument, each when it is a file under
    ``folder`` (a campaign's), or a file anywhere outside /usr with ``anywhere`` (``ember run --agent``,
    whose command line names them)."""
    words = split_command(command)
    found = []
    folder = os.path.abspath(folder)
    for word in words[:2]:
        path = os.path.abspath(os.path.join(folder, word))
        inside = path.startswith(folder + os.sep) or (anywhere and not path.startswith("/usr/"))
        if inside and os.path.isfile(path) and path not in found:
            found.append(path)
    return found


def _findable(program, env, cwd):
    """True when ``program`` (an agent's first word) names a file to run, as the policy process would look for it."""
    if os.sep in program:
        return os.path.isfile(os.path.join(cwd, program))
    return shutil.which(program, path=env["PATH"]) is not None


class PlainProcess(subprocess.Popen, PolicyProcess):
    """A policy process without the sandbox (``--sandbox off``): ``close`` ends its process group."""

    own_session = False

    def close(self):
        if self.own_session:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)


class Launcher:
    """Starts policy processes for one policy: ``launcher(argv, stdin, stdout, stderr)`` -> a ``PolicyProcess``.

    ``files``: the policy's own files (bound in the sandbox); ``cwd``: the
    campaign folder; ``env``: the policy's ``env`` table; ``own_session``
    (``off``): the process leads a session of its own, ended as a whole by
    ``close`` (``ember run --agent``), else it joins the caller's session
    (an episode process, which a campaign ends as a whole).
    """

    def __init__(self, mode="required", files=(), cwd=None, env=None, limits=None, own_session=True, python=None):
        if mode not in SANDBOX_MODES:
            raise SandboxError(f"--sandbox: expected one of {', '.join(SANDBOX_MODES)}, got {mode!r}")
        self.mode = mode
        self.files = list(files)
        self.cwd = os.path.abspath(cwd or os.getcwd())
        if mode == "required":
            self.environment = policy_environment(env)
        else:
            # The operator's environment, and this process's module path after the campaign folder
            # (a python policy imports as it did in the episode process before the boundary).
            path = os.pathsep.join(entry for entry in sys.path if entry and os.path.isdir(entry))
            self.environment = {**os.environ, "PYTHONPATH": path, **(env or {})}
        self.limits = limits or SandboxLimits()
        self.own_session = own_session
        self.python = python
        self.sandbox = None
        if mode == "required":
            self.sandbox = Sandbox(self.files, self.cwd, env, self.limits, python=python)

    def check(self):
        """Exit-2 material before anything runs: ``SandboxError`` naming what a required sandbox lacks."""
        if self.mode == "required":
            require_sandbox(self.files, self.python)

    def __call__(self, argv, stdin, stdout, stderr) -> PolicyProcess:
        if not _findable(argv[0], self.environment, self.cwd):
            raise AgentError(f"cannot start the agent {argv[0]!r}: No such file or directory.")
        if self.sandbox is not None:
            try:
                return self.sandbox.start(argv, stdin=stdin, stdout=stdout, stderr=stderr)
            except SandboxError as exc:
                raise AgentError(f"cannot start the sandbox: {exc}.") from None
        try:
            process = PlainProcess(
                argv,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                cwd=self.cwd,
                env=self.environment,
                close_fds=True,
                start_new_session=self.own_session,
            )
        except OSError as exc:
            raise AgentError(f"cannot start the agent {argv[0]!r}: {exc.strerror or exc}.") from None
        process.own_session = self.own_session
        return process


def check_python_source(source, launcher, timeout):
    """None when MODULE of ``source`` imports and NAME is callable, checked by the host in a process of
    ``launcher`` (the sandbox with ``required``: importing is running foreign code); else the reason."""
    module_name, name = split_module_name(source)
    # Its standard error goes nowhere: what a module prints at import reaches neither the terminal nor a log.
    argv = [*host_command(source)[:-1], "--check", source]
    process = launcher(argv, subprocess.DEVNULL, subprocess.PIPE, subprocess.DEVNULL)
    try:
        line, finished = _first_line(process.stdout, timeout)
        if not finished:
            return f"module {module_name!r} did not finish importing within {timeout:g} s."
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(1.0)
        status = process.poll()
    finally:
        with contextlib.suppress(OSError):
            process.kill()
        process.close()
    try:
        verdict = json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        verdict = None
    if not isinstance(verdict, dict):
        how = "stopped answering" if status is None else f"exited with status {status}"
        if status is not None and status < 0:
            how = f"was killed by {signal.Signals(-status).name}"
        return f"module {module_name!r} does not import: the process importing it {how} before it was imported."
    if verdict.get("error") == "import":
        return f"module {module_name!r} does not import: {verdict.get('type')}: {verdict.get('message')}"
    if verdict.get("error") == "attribute":
        return f"module {module_name!r} has no attribute {name!r}."
    if verdict.get("error") == "callable":
        return f"{module_name}.{name} is not callable (a {verdict.get('type')})."
    return None


def _first_line(stream, timeout, bound=None):
    """(the first line of ``stream`` or what came before its end, True), or (b"", False) after ``timeout``.

    At most ``bound`` + 1 bytes are read (default: the answer bound with nobody active, which the host's
    own lines keep to): a longer line is cut there, and is no verdict."""
    bound = answer_bound(0) if bound is None else bound
    data, deadline = b"", time.monotonic() + timeout
    fd = stream.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while b"\n" not in data and len(data) <= bound:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                return b"", False
            chunk = os.read(fd, bound + 1 - len(data))
            if not chunk:
                break
            data += chunk
    return data.split(b"\n", 1)[0], True
