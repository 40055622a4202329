"""``Command``: one row of a command table (``table.COMMANDS``, ``service``'s own rows)."""

from collections.abc import Callable
from typing import NamedTuple


class Command(NamedTuple):
    """One ``ember`` command.

    ``arguments(parser)`` adds its arguments to its subparser;
    ``handler(args, console)`` runs it and returns the exit status;
    ``writes_stdout(args)`` says whether this invocation puts its result on
    standard output (refused up front when stdout is closed); ``output`` is
    the option that names an output path (``"-o"``), or None;
    ``more_outputs`` the command's other output-path options, written
    together with ``output`` (``files.output_files``: all or none).
    ``epilog`` is text, or a function returning it (for text computed from
    a module that only this command needs).
    """

    name: str
    help: str
    description: str
    arguments: Callable
    handler: Callable
    writes_stdout: Callable
    output: str | None = "-o"
    epilog: str | Callable | None = None
    more_outputs: tuple = ()
