"""``main`` builds only the arguments of the command it runs (``build_parser(only=NAME)``).

The whole parser imports what every command's options name (the stats
defaults, the generator's families, the agent's bounds, ...); a run of one
command needs its own options only.  Parametrised over the command table:
for every command, the parser built for it parses its sample invocations
to the same values, and shows the same help and the same usage errors, as
the whole parser; any other start of the command line gets the whole parser.
"""

import contextlib
import io
import subprocess
import sys
from types import SimpleNamespace

import pytest

from ember.cli import COMMANDS, build_parser, command_named

from helpers.command_samples import SAMPLES

NAMES = [row.name for row in COMMANDS]
INPUTS = SimpleNamespace(
    record="in.record",
    results="results",
    campaign="campaign.toml",
    results_copy=lambda: "results-copy",
    service=SimpleNamespace(data="DATA", url="http://127.0.0.1:9", token_file="token", source="source", job="job"),
)


def parsed(parser, argv):
    values = vars(parser.parse_args(argv))
    return {key: value for key, value in values.items() if key != "command_row"}, values["command_row"]


def outcome(parser, argv):
    """What parsing ``argv`` gives: its values, or (exit status, stdout, stderr) when it exits (help, usage errors)."""
    from ember.cli.console import CONSOLE

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                return parsed(parser, argv)
            finally:
                CONSOLE.flush()
    except SystemExit as stop:
        return stop.code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", NAMES)
def test_the_parser_of_one_command_parses_its_samples_as_the_whole_parser(name):
    for out in (None, "out.file"):
        argv = [str(a) for a in SAMPLES[name](INPUTS, out)]
        assert command_named(argv) == name
        assert parsed(build_parser(only=name), argv) == parsed(build_parser(), argv)


@pytest.mark.parametrize("name", NAMES)
def test_the_parser_of_one_command_gives_its_help_and_usage_errors_as_the_whole_parser(name):
    for tail in (["--help"], ["--no-such-option"], []):
        argv = [name, *tail]
        assert outcome(build_parser(only=name), argv) == outcome(build_parser(), argv), argv
    status, shown, _ = outcome(build_parser(only=name), [name, "--help"])
    assert status == 0 and shown.startswith(f"usage: ember {name}")


@pytest.mark.parametrize("argv", [[], ["--help"], ["bogus"], ["--version"], ["-h", "metrics"], [None]])
def test_any_other_start_gets_the_whole_parser(argv):
    assert command_named(argv) is None


def test_ember_metrics_imports_none_of_the_other_commands_option_modules():
    others = ("ember.agent", "ember.stats", "ember.generate", "ember.render")
    code = (
        "import sys\n"
        "from ember.cli import build_parser, command_named\n"
        "argv = ['metrics', 's.json', 'r.record']\n"
        "build_parser(only=command_named(argv)).parse_args(argv)\n"
        f"print(sorted(m for m in {others!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
