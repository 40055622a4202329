"""Checking a ``python`` policy entry (campaign.md §2) without running foreign code in the command.

The module is imported, and NAME looked up, in a fresh interpreter of its
own session (in the command's working directory, as in the workers),
which dies with the command (``PR_SET_PDEATHSIG``), with the campaign
folder first on the module path and the command's module path
after it (as in the workers).  Its standard streams go to /dev/null: a
module that prints at import reaches neither the leaderboard nor the
error output.  The verdict comes back as JSON on a pipe of its own.  A
module that exits, crashes or hangs while it imports is reported as not
importing.  The check is a child subreaper and waits, after its verdict,
to be ended: whatever the import started, a daemon in a session of its own
included, is ended with it (``processes.end_session``).
"""

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time

from . import processes

# Run with ``python -c``: it imports nothing of EMBER, and binds what it needs before the
# foreign import, so a module that replaces os.write or json.dumps cannot fake the verdict.
_PROBE = r"""
import sys
del sys.path[0]  # the working directory: a file there must not stand in for json or ctypes here
import os, json
write, finish, dumps = os.write, os._exit, json.dumps
fd, parent, folder, module_name, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
import time
sleep = time.sleep
try:
    import ctypes, ctypes.util
    prctl = ctypes.CDLL(ctypes.util.find_library("c") or None).prctl
    prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: what the import starts and abandons comes back here
except Exception:
    pass
if os.getppid() != parent:
    finish(1)
sys.path[:] = [folder] + json.loads(sys.argv[6])

def say(**verdict):
    # One line; then wait to be ended, never exit: alive, this process holds what the import started.
    data = dumps(verdict).encode() + b"\n"
    try:
        while data:
            data = data[write(fd, data):]
        while True:
            sleep(3600)
    except BaseException:
        pass
    finish(0)

def text(exc):
    try:
        return " ".join(str(exc).split())
    except BaseException:
        return "(its message cannot be shown)"

try:
    import importlib
    module = importlib.import_module(module_name)
except BaseException as exc:
    say(error="import", type=type(exc).__name__, message=text(exc))
try:
    factory = getattr(module, name)
except BaseException:
    say(error="attribute")
try:
    ok = callable(factory)
except BaseException:
    ok = False
say(error=None if ok else "callable", type=type(factory).__name__)
"""


def check_python_source(module_name, name, folder, timeout):
    """None when ``module_name`` imports and has a callable ``name``; else the reason, as a sentence."""
    read_fd, write_fd = os.pipe()
    try:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and code)
            [sys.executable, "-c", _PROBE, str(write_fd), str(os.getpid()), folder, module_name, name]
            + [json.dumps(sys.path)],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        return f"module {module_name!r} cannot be checked: {exc.strerror or exc}."
    finally:
        os.close(write_fd)
    try:
        data, finished = _verdict(read_fd, process, timeout)
    finally:
        os.close(read_fd)
        processes.end_session(process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(processes.END_SESSION_S)
    if not finished:
        return f"module {module_name!r} did not finish importing within {timeout:g} s."
    try:
        verdict = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        verdict = None
    if not isinstance(verdict, dict):
        return f"module {module_name!r} does not import: {_how_it_ended(process)} before it was imported."
    if verdict.get("error") == "import":
        return f"module {module_name!r} does not import: {verdict.get('type')}: {verdict.get('message')}"
    if verdict.get("error") == "attribute":
        return f"module {module_name!r} has no attribute {name!r}."
    if verdict.get("error") == "callable":
        return f"{module_name}.{name} is not callable (a {verdict.get('type')})."
    return None


def _verdict(fd, process, timeout):
    """(bytes read, True) once the check has sent its line, ended or closed its pipe; (bytes, False) after
    ``timeout``.

    Its end is watched as well as the pipe's: a process the module started may hold the pipe open.
    The check does not exit after its verdict (it waits to be ended with its session), so the line's
    end is what says it is complete.
    """
    data = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ, "verdict")
        exit_fd = None
        with contextlib.suppress(AttributeError, OSError):
            exit_fd = os.pidfd_open(process.pid)
            selector.register(exit_fd, selectors.EVENT_READ, "exit")
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return data, False
                events = selector.select(remaining if exit_fd is not None else min(remaining, 0.05))
                if any(key.data == "exit" for key, _ in events) or (exit_fd is None and process.poll() is not None):
                    return data + _available(fd), True
                if events:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        return data, True
                    data += chunk
                    if b"\n" in chunk:
                        return data, True
        finally:
            if exit_fd is not None:
                os.close(exit_fd)


def _available(fd):
    """What the pipe holds now, without waiting."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    return data


def _how_it_ended(process):
    try:
        status = process.wait(processes.END_SESSION_S)
    except subprocess.TimeoutExpired:
        return "the process importing it stopped answering"
    if status < 0:
        try:
            return f"the process importing it was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"the process importing it was killed by signal {-status}"
    return f"the process importing it exited with status {status}"
