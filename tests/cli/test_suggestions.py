"""'Did you mean': unknown commands, subcommands, choices, built-in scenarios and policies (in-process ``main``)."""

import pytest

from ember.cli import main
from ember.sim.policies import make_policy


def ember(capsys, *args):
    """``ember ARGS`` in this process: (exit status, stdout, stderr)."""
    try:
        status = main(list(args))
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(capsys, *args):
    status, out, err = ember(capsys, *args)
    assert (status, out) == (2, "")
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ember: "), lines
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "hint", "help_of"),
    [
        (["rn", "builtin:office"], "'run'", "ember"),
        (["metric"], "'metrics'", "ember"),
        (["scenario"], "'scenarios'", "ember"),
        (["service", "bord"], "'board'", "ember service"),
        (["service", "board", "ad"], "'add'", "ember service board"),
        (["run", "builtin:office", "--policy", "gredy"], "'greedy'", "ember run"),
        (["run", "builtin:office", "--sandbox", "requird"], "'required'", "ember run"),
        (["metrics", "builtin:office", "r", "--format", "tabel"], "'table'", "ember metrics"),
        (["suite", "ember-v1", "--tier", "smal"], "'small'", "ember suite"),
    ],
)
def test_an_unknown_choice_gets_the_closest_one(capsys, argv, hint, help_of):
    line = one_line_error(capsys, *argv)
    assert line.startswith("ember: argument ") and "invalid choice" in line
    assert line.endswith(f"; did you mean {hint}? (see '{help_of} --help')."), line


@pytest.mark.parametrize(
    ("word", "command"),
    [
        ("init", "ember service init"),
        ("serve", "ember service serve"),
        ("reverify", "ember service reverify"),
        ("check-commitment", "ember service check-commitment"),
    ],
)
def test_a_service_command_without_service_names_the_right_command(capsys, word, command):
    line = one_line_error(capsys, word, "DATA")
    expected = f"invalid choice: {word!r} (choose from {CHOICES}); did you mean {command!r}? (see 'ember --help')."
    assert line == f"ember: argument COMMAND: {expected}"


CHOICES = ", ".join(
    repr(name)
    for name in (
        "run", "metrics", "replay", "demo", "render", "trajectories", "bounds", "scenarios", "rank", "stats", "report",
        "evaluate", "export", "verify", "generate", "suite", "service", "submit", "bundle", "jobs",
    )
)  # fmt: skip


def test_a_word_like_no_choice_gets_no_suggestion(capsys):
    line = one_line_error(capsys, "zzzzzzzz")
    assert "did you mean" not in line
    assert line == f"ember: argument COMMAND: invalid choice: 'zzzzzzzz' (choose from {CHOICES}) (see 'ember --help')."


@pytest.mark.parametrize(
    ("name", "suggested"),
    [
        ("offce", "office"),
        ("smallroom", "small-room"),
        ("ember-v1/small-ofice-casualty", "ember-v1/small-office-casualty"),
    ],
)
@pytest.mark.parametrize("command", ["run", "scenarios show", "metrics"])
def test_an_unknown_builtin_scenario_gets_the_closest_name(capsys, tmp_path, name, suggested, command):
    argv = [*command.split(), f"builtin:{name}"] + ([str(tmp_path / "none.record")] if command == "metrics" else [])
    line = one_line_error(capsys, *argv)
    # metrics says which input is bad first ("invalid scenario: "), as it does for any scenario error.
    prefix = "ember: invalid scenario: " if command == "metrics" else "ember: "
    assert line == (
        f"{prefix}$: there is no built-in scenario named {name!r}; did you mean {suggested!r}? "
        "('ember scenarios' lists all)"
    )


def test_a_scenario_name_like_none_lists_the_known_ones(capsys):
    line = one_line_error(capsys, "run", "builtin:zzzzzz")
    assert line.startswith("ember: $: there is no built-in scenario named 'zzzzzz'; known: bottleneck, hall, ")
    assert "did you mean" not in line


def test_make_policy_suggests_the_closest_builtin():
    with pytest.raises(ValueError) as raised:
        make_policy("planer", None, 0)
    expected = "unknown policy 'planer'; expected one of stay, random, greedy, planner; did you mean 'planner'?"
    assert str(raised.value) == expected
    with pytest.raises(ValueError) as raised:
        make_policy("zzz", None, 0)
    assert str(raised.value) == "unknown policy 'zzz'; expected one of stay, random, greedy, planner."
