"""The argument parser, built from the command table; its help and errors go through the console."""

import argparse
import sys

from .. import __doc__ as PACKAGE_DOC
from ..canonical import one_line
from ..errors import did_you_mean
from ..versions import METRICS_VERSION, SIMULATOR_VERSION
from .console import CONSOLE
from .exits import EXIT_BAD_INPUT
from .table import COMMANDS


class Parser(argparse.ArgumentParser):
    """Usage errors follow the error contract too (one line on stderr, exit status 2); help is console output."""

    def add_subparsers(self, **kwargs):
        action = super().add_subparsers(**kwargs)
        self.subcommands = action.choices  # name -> parser: what nested_command looks in
        return action

    def _check_value(self, action, value):
        # argparse's one check of a value against its choices (commands, subcommands, --policy, --format...),
        # with the same message, and the closest choice, or the command it names one level down.
        if action.choices is not None and value not in action.choices:
            listed = ", ".join(map(repr, action.choices))
            hint = nested_command(action.choices, value) or did_you_mean(value, action.choices)
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {listed}){hint}")

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"ember: {one_line(message)} (see '{self.prog} --help').\n")

    def print_help(self, file=None):
        if file is None:
            CONSOLE.write(self.format_help())
        else:
            super().print_help(file)

    def print_usage(self, file=None):
        if file is None:
            CONSOLE.write(self.format_usage())
        else:
            super().print_usage(file)

    def exit(self, status=0, message=None):
        if message:
            CONSOLE.write_error(message)
        CONSOLE.flush()  # a --help that cannot be written is an error like any other
        sys.exit(status)


def nested_command(choices, value):
    """``"; did you mean 'ember service init'?"`` when ``value``, not one of the subcommands ``choices``
    (name -> parser), is a subcommand of one of them (``ember init``, ``ember serve``); else ``""``."""
    if not isinstance(choices, dict):
        return ""
    found = [f"{parser.prog} {value}" for parser in choices.values() if value in getattr(parser, "subcommands", {})]
    return f"; did you mean {found[0]!r}?" if found else ""


def build_parser(commands=COMMANDS, only=None):
    """The ``ember`` parser: one subcommand per row of ``commands``; ``args.command_row`` is the row.

    ``only`` (a command's name): only that subcommand gets its arguments,
    description and epilog; the others keep their name and help line, all
    that the top-level parser shows of them.  ``main`` passes the command it
    is given, so a run does not import what the other commands' options
    name (their defaults and choices come from the modules that own them).
    """
    parser = Parser(
        prog="ember",
        description=f"{PACKAGE_DOC.strip()} Simulator {SIMULATOR_VERSION}, metrics {METRICS_VERSION}.",
        epilog="SCENARIO is a path to a scenario JSON file or builtin:NAME (see 'ember scenarios').",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for row in commands:
        if only is not None and row.name != only:
            sub.add_parser(row.name, help=row.help).set_defaults(command_row=row)
            continue
        epilog = row.epilog() if callable(row.epilog) else row.epilog
        command = sub.add_parser(row.name, help=row.help, description=row.description, epilog=epilog)
        row.arguments(command)
        command.set_defaults(command_row=row)
    return parser
