"""The ``ember`` command line (output.md, campaign.md §3 and §6): a command table, one writer.

The parts:

- ``table.py``: ``COMMANDS``, a plain tuple of ``Command`` rows, one per
  command: its name, help texts, a function adding its arguments to its
  subparser, its handler, when it writes its result on standard output,
  and its output-path option.  The parser (``parser.py``) and the tests
  (tests/cli/test_commands.py) are built from it.
- ``console.py``: ``CONSOLE``, the one writer.  Every byte on standard
  output or standard error goes through it: results, messages, warnings,
  help, usage errors; progress bars get their stream from it.  A failing
  or closed stdout becomes an ``OSError`` named ``standard output``; a
  closed stderr drops messages (they never land on stdout).
- ``exits.py``: the exit statuses.  ``main`` below maps errors to them.
- ``records.py``, ``results.py``, ``generating.py``, ``interop.py``: the handlers, thin:
  parse nothing, call the library, write through the console.

Adding a command is one row and a handler:

1. Write ``cmd_NAME(args, console)`` (returns the exit status; writes only
   through ``console``, results through ``outputs.write_result``, which
   names the failing path or stream) and ``NAME_arguments(parser)`` in a
   module of this package (a new one for a new area).
2. Add a ``Command(...)`` row to ``COMMANDS``: ``writes_stdout`` is one of
   ``arguments.always``/``never``/``without_output_file``/``with_output_dash``
   or a function of the parsed args; ``output="-o"`` if the command has an
   ``-o`` path option (None otherwise), and its other output-path options
   in ``more_outputs`` (parsed with ``arguments.output_path``, written
   with ``files.output_files``: all or none).
3. Add a minimal valid invocation to ``SAMPLES`` in
   tests/helpers/command_samples.py (a test fails until you do): every
   command is then tested with stdout closed, stderr closed, each output
   option on ``/dev/full`` (nothing written at the others) and empty, and
   stdout on ``/dev/full``.

Library code never prints: it returns warnings or takes a ``warn``
callback, and the handler passes ``console.warn``.
"""

import os
import sys

from ..errors import EmberError
from .console import CONSOLE
from .exits import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED
from .parser import build_parser
from .table import COMMANDS, Command

__all__ = ["COMMANDS", "Command", "build_parser", "main"]

COMMAND_NAMES = frozenset(row.name for row in COMMANDS)


def fill_closed_standard_fds():
    """Open /dev/null on a closed fd 0, 1 or 2.

    Otherwise the next file opened (a record, an output) would get that
    number, and anything written to "stdout" or "stderr" would land in it.
    Python has already set ``sys.stdout``/``sys.stderr`` to None for a closed
    one, which is how the console sees that it is closed.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def command_named(argv):
    """The command the list ``argv`` starts with (``ember NAME ...``), else None: any other start (an
    option, an unknown word, nothing) gets the whole parser, so its help and errors are the usual ones."""
    return argv[0] if argv and isinstance(argv[0], str) and argv[0] in COMMAND_NAMES else None


def main(argv=None, console=CONSOLE):
    """Run ``ember ARGV`` (default: ``sys.argv[1:]``); returns the exit status."""
    fill_closed_standard_fds()
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(only=command_named(argv)).parse_args(argv)
        row = args.command_row
        if console.stdout_closed and row.writes_stdout(args):
            return console.fail(f"standard output is closed: 'ember {row.name}' writes its result there; nothing done.")
        status = row.handler(args, console)
        console.flush()
        return status
    except EmberError as exc:
        return console.fail(exc)
    except BrokenPipeError:
        # The reader went away (e.g. '| head'): stop quietly, as Unix tools do.
        console.silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        console.say("ember: interrupted.")
        return EXIT_INTERRUPTED
    except OSError as exc:
        console.flush_quietly()  # what stdout holds goes before the message; a failed stdout is silenced
        where = f"{exc.filename}: " if exc.filename else ""
        return console.fail(f"{where}{exc.strerror or exc}")
