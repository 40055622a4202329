"""Argument types and the options several commands share, in the words of each command."""

import argparse
import math
import re

from ..canonical import split_module_name

_ASCII_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def count(low):
    """An argument type: a decimal integer >= ``low``."""

    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    return parse


def identifier(text):
    from ..scenario import ID_PATTERN

    if not ID_PATTERN.fullmatch(text):
        raise argparse.ArgumentTypeError(f"an ID matches [A-Za-z0-9][A-Za-z0-9._-]{{0,63}}, got {text!r}")
    return text


def seed(text):
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the seed must be a decimal integer, got {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"the seed must satisfy 0 <= seed < 2^64, got {value}")
    return value


def _ascii_decimal(text, low, high, expected):
    """``text`` as an integer low <= n <= high written 0|[1-9][0-9]* (ASCII, no sign, no leading zero); anything
    else is refused, saying it ``expected`` such a number."""
    if _ASCII_DECIMAL.fullmatch(text):
        value = int(text)
        if low <= value <= high:
            return value
    raise argparse.ArgumentTypeError(f"expected {expected} in decimal digits (0|[1-9][0-9]*), got {text!r}")


def replicates(text):
    """``ember stats --replicates``: statistics.md §3's B, 1000 <= B <= 1000000, in ASCII decimal."""
    return _ascii_decimal(text, 1000, 1_000_000, "an integer 1000 <= B <= 1000000")


def decimal_seed(text):
    """An episode's seed written as bounds.md §4 asks: 0 <= seed < 2^64 in ASCII decimal (0|[1-9][0-9]*)."""
    return _ascii_decimal(text, 0, 2**64 - 1, "a seed 0 <= seed < 2^64")


def resampling_seed(text):
    """``ember stats --seed``: statistics.md §3's σ, 0 <= σ < 2^64, in ASCII decimal."""
    return _ascii_decimal(text, 0, 2**64 - 1, "an integer 0 <= seed < 2^64")


def python_source(text):
    """``--python MODULE:NAME``, split as a campaign's ``python`` key is (campaign.md §2)."""
    module, name = split_module_name(text)
    if not module or not name:
        raise argparse.ArgumentTypeError(f"expected MODULE:NAME, got {text!r}")
    return text


def step_timeout(text):
    from ..agent import MAX_STEP_TIMEOUT  # the agent's bound, shared with campaigns' step_timeout

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the step timeout must be a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"the step timeout must be a positive number of seconds, got {text!r}")
    if value > MAX_STEP_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"the step timeout must be at most {MAX_STEP_TIMEOUT:g} seconds (one day), got {text!r}"
        )
    return value


def int_in(text, low, high):
    """``text`` as a decimal integer with low <= value <= high, else None."""
    try:
        value = int(text, 10)
    except ValueError:
        return None
    return value if low <= value <= high else None


def step(text):
    value = int_in(text, 0, math.inf)
    if value is None:
        raise argparse.ArgumentTypeError(f"the step must be an integer >= 0, got {text!r}")
    return value


def cell_size(text):
    from ..render import MAX_CELL_SIZE

    value = int_in(text, 1, MAX_CELL_SIZE)
    if value is None:
        raise argparse.ArgumentTypeError(
            f"the cell size must be an integer from 1 to {MAX_CELL_SIZE} pixels, got {text!r}"
        )
    return value


def add_scenario_and_record(command, record_help="record file, or - for standard input"):
    """The two positional arguments of a command that reads a record."""
    command.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    command.add_argument("record", metavar="RECORD", help=record_help)


def output_path(text):
    """An output path: anything but the empty string, which names no file (refused before anything is read)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name, got '' (an empty path names no file)")
    return text


def add_output(command, help, metavar="FILE", **more):
    """The -o/--output option, in the words of the command."""
    command.add_argument("-o", "--output", metavar=metavar, help=help, type=output_path, **more)


def add_format(command, choices, help):
    command.add_argument("--format", choices=choices, default="json", help=help)


def add_results(command, help="a results directory written by 'ember evaluate -o'"):
    command.add_argument("results", metavar="RESULTS_DIR", help=help)


def add_seed(command, help, **more):
    command.add_argument("--seed", type=seed, help=help, **more)


def progress_note():
    from ..progress import PROGRESS_MIN_BYTES

    return (
        f"When standard error is a terminal and RECORD is a file of {PROGRESS_MIN_BYTES // 2**20} MiB or more, "
        "a progress bar shows the bytes read."
    )


# -- when a command writes its result on standard output (the table's ``writes_stdout``) --


def always(args):
    return True


def never(args):
    return False


def without_output_file(args):
    """No -o, or -o -: the result goes to standard output."""
    return args.output in (None, "-")


def with_output_dash(args):
    """Only -o -: the result goes to a file by default."""
    return args.output == "-"


def add_sandbox(parser, scope):
    """``--sandbox required|off`` (isolation.md §2): ``required`` is the default wherever foreign code runs."""
    parser.add_argument(
        "--sandbox",
        choices=("required", "off"),
        help=f"{scope}: run the policy processes in the sandbox (required, the default: exit 2 if this machine "
        "cannot make it) or with your own rights (off, for your own code); docs/isolation.md",
    )
