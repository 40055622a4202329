"""The one writer of the command line: every byte EMBER puts on standard output or standard error.

Handlers receive ``CONSOLE`` (a ``Console``) and write nothing any other
way; so do the argument parser (help, usage errors) and ``main``.  The
streams are looked up at each call (``sys.stdout``/``sys.stderr``), so a
test that redirects them, or Python's ``None`` for a stream that was closed
when the process started, is always honoured.

- Standard output: a write to a closed stdout, or one that fails (a full
  disk, ``/dev/full``, a vanished reader), raises an ``OSError`` whose file
  name is ``standard output``; stdout is then pointed at ``/dev/null`` so
  the interpreter's final flush cannot fail a second time.
- Standard error: a line for a closed or failing stderr is dropped, never
  redirected (``print(file=None)`` would put it on stdout, into a result).
"""

import contextlib
import errno
import os
import sys

from ..canonical import one_line
from .exits import EXIT_BAD_INPUT

STDOUT_NAME = "standard output"


class NotATerminal:
    """A stand-in for a closed stderr given to progress displays: never a terminal, swallows writes."""

    def isatty(self):
        return False

    def write(self, text):
        return len(text)

    def flush(self):
        pass


class BinaryOutput:
    """A binary stream onto the console's standard output (``ember run`` streams its record into it)."""

    def __init__(self, console):
        self.console = console

    def write(self, data):
        self.console.write_bytes(data)
        return len(data)

    def flush(self):
        self.console.flush()


class Console:
    """Standard output and standard error of the ``ember`` command, and what happens when they fail."""

    # -- standard output ---------------------------------------------------------------

    @property
    def stdout_closed(self):
        return sys.stdout is None

    def _stdout(self):
        if sys.stdout is None:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF), STDOUT_NAME)
        return sys.stdout

    def write(self, text):
        """``text`` (str) on standard output."""
        stream = self._stdout()
        try:
            stream.write(text)
        except OSError as exc:
            raise self._failed(exc) from exc

    def line(self, text=""):
        """``text`` and a newline on standard output."""
        self.write(f"{text}\n")

    def write_bytes(self, data):
        """``data`` (bytes) on standard output, through its binary buffer when it has one."""
        stream = self._stdout()
        binary = getattr(stream, "buffer", None)
        try:
            if binary is None:
                stream.write(data.decode("utf-8"))
            else:
                stream.flush()  # text written before stays before
                binary.write(data)
        except OSError as exc:
            raise self._failed(exc) from exc

    def binary(self):
        """A binary stream writing to standard output (``write``, ``flush``)."""
        return BinaryOutput(self)

    def flush(self):
        """Flush standard output now, so that a failure is reported like any error, not at exit."""
        if sys.stdout is None:
            return
        try:
            sys.stdout.flush()
        except OSError as exc:
            raise self._failed(exc) from exc

    def flush_quietly(self):
        """Flush what standard output holds before an error message; a failure only silences it."""
        with contextlib.suppress(OSError):
            self.flush()

    def silence_stdout(self):
        """Point file descriptor 1 at /dev/null: what stdout still holds can never be written."""
        if sys.stdout is None:
            return
        try:
            fd = sys.stdout.fileno()
        except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO)
            return
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)

    def _failed(self, exc):
        """The ``OSError`` of a failed stdout write, named; stdout silenced (BrokenPipeError stays one)."""
        self.silence_stdout()
        return OSError(exc.errno, exc.strerror or str(exc), STDOUT_NAME)

    # -- standard error ------------------------------------------------------------------

    def write_error(self, text):
        """``text`` (str) on standard error; nothing when it is closed or fails (nowhere to report it)."""
        stream = sys.stderr
        if stream is None:
            return
        try:
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):
            pass

    def say(self, line):
        """A line on standard error."""
        self.write_error(f"{line}\n")

    def warn(self, text):
        """``ember: warning: TEXT`` on standard error."""
        self.say(f"ember: warning: {text}")

    def fail(self, message):
        """The one-line error ``ember: MESSAGE`` on standard error; returns the bad-input exit status."""
        self.say(f"ember: {one_line(message)}")
        return EXIT_BAD_INPUT

    @property
    def progress_stream(self):
        """Where progress bars may draw: standard error, or a non-terminal when it is closed."""
        return NotATerminal() if sys.stderr is None else sys.stderr


#: The writer: the only object in EMBER that writes to standard output or standard error.
CONSOLE = Console()
