"""The ``ember`` command line (output.md): run, metrics, replay, demo, render, scenarios."""

import argparse
import contextlib
import json
import math
import os
import shlex
import sys

from . import __doc__ as PACKAGE_DOC
from .errors import ActionError, EmberError
from .versions import METRICS_VERSION, SIMULATOR_VERSION

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def _one_line(message):
    return " ".join(str(message).split())


def _fail(message):
    print(f"ember: {_one_line(message)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _record_source(name):
    return sys.stdin.buffer if name == "-" else name


def cmd_run(args):
    from .agent import DEFAULT_STEP_TIMEOUT, AgentPolicy
    from .progress import step_counter
    from .record.writer import run_episode
    from .scenario import compile_scenario
    from .sim.policies import make_policy

    if args.step_timeout is not None and args.agent is None:
        return _fail("--step-timeout applies only with --agent.")
    scenario = compile_scenario(args.scenario)
    to_file = args.output not in (None, "-")
    with contextlib.ExitStack() as stack:
        agent = None
        if args.agent is None:
            policy = make_policy(args.policy, scenario, args.seed)
        else:
            timeout = args.step_timeout or DEFAULT_STEP_TIMEOUT
            agent = policy = stack.enter_context(AgentPolicy(args.agent, scenario.data, timeout))
        if to_file:
            # Count steps on a terminal only when the record itself is not going there.
            policy = stack.enter_context(step_counter(policy, scenario.max_steps))
        try:
            final_state = run_episode(scenario, policy, args.seed, args.output if to_file else sys.stdout.buffer)
        except ActionError as exc:
            if agent is None:
                raise
            raise agent.refused(exc) from exc
        if agent is not None:
            agent.finish(final_state)
    return 0


def _warn_if_slow_reader():
    from .record.reader import BACKEND_NAME

    if BACKEND_NAME != "yajl2_c":
        # Still correct, but operators should know why a run takes 20x longer.
        print(f"ember: warning: ijson's C backend yajl2_c is unavailable; reading with {BACKEND_NAME!r} is about 20x slower.", file=sys.stderr)


def cmd_metrics(args):
    from .engine import episode_metrics
    from .progress import reading_progress
    from .summary import format_metrics_tables

    if args.compact and args.format != "json":
        return _fail("--compact applies only to --format json.")
    if args.format == "table":
        from .summary import tables_available

        tables_available()  # before reading: no extra, nothing read, a one-line error
    _warn_if_slow_reader()
    with reading_progress(_record_source(args.record)) as record:
        result = episode_metrics(args.scenario, record).to_dict()
    if args.format == "table":
        text = format_metrics_tables(result)
    elif args.compact:
        text = json.dumps(result, sort_keys=False, separators=(",", ":")) + "\n"
    else:
        text = json.dumps(result, indent=2) + "\n"
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        from .files import write_atomically

        def save(tmp):
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)

        # Written only once complete: a reader of the file never sees a partial result.
        write_atomically(args.output, save)
    return 0


def cmd_replay(args):
    from .engine import verify_replay
    from .progress import reading_progress

    _warn_if_slow_reader()
    with reading_progress(_record_source(args.record)) as record:
        verify_replay(args.scenario, record)
    print("ember: the record replays byte-identically.", file=sys.stderr)
    return 0


DEMO_RECORD = "ember-demo.record"


def cmd_demo(args):
    from .engine import episode_metrics
    from .progress import reading_progress, step_counter
    from .record.writer import run_episode
    from .scenario import compile_scenario
    from .sim.policies import make_policy
    from .summary import format_summary

    if args.output == "-":
        return _fail("ember demo writes its record to a file; give -o a file name.")
    scenario = compile_scenario(args.scenario)
    path = args.output or DEMO_RECORD
    with step_counter(make_policy("greedy", scenario, args.seed), scenario.max_steps) as policy:
        run_episode(scenario, policy, args.seed, path)
    with reading_progress(path) as record:
        metrics = episode_metrics(scenario, record).to_dict()
    quoted = shlex.quote(args.scenario)
    print(f"Ran the greedy policy on {args.scenario} (seed {args.seed}).")
    print(f"Record: {os.path.abspath(path)} ({os.path.getsize(path):,} bytes)")
    print()
    print(format_summary(metrics))
    print()
    print("Next:")
    print(f"  ember metrics {quoted} {shlex.quote(path)} --format table")
    print(f"  ember render {quoted} {shlex.quote(path)} -o ember-demo.gif")
    return 0


def cmd_render(args):
    from .progress import reading_progress
    from .render import render_ascii, render_image
    from .scenario import load_scenario

    if args.ascii and args.cell_size is not None:
        return _fail("--cell-size applies only to images, not to --ascii.")
    scenario = load_scenario(args.scenario)
    with reading_progress(_record_source(args.record)) as record:
        if args.ascii:
            text = render_ascii(scenario, record, args.step)
        else:
            frames = render_image(scenario, record, args.output, args.step, args.cell_size)
    if args.ascii:
        sys.stdout.write(text + "\n")
    else:
        what = "1 frame" if frames == 1 else f"{frames} frames"
        print(f"ember: wrote {args.output} ({what}).", file=sys.stderr)
    return 0


def cmd_scenarios(args):
    from .scenario import builtin_names, load_scenario

    for name in builtin_names():
        sc = load_scenario(f"builtin:{name}")
        grid = sc["grid"]
        print(
            f"builtin:{name:<14} {grid['rows']}x{grid['cols']} grid, {len(sc['people'])} people, "
            f"{len(sc['exits'])} exits, fire p={sc['fire']['spread_probability']} ({sc['fire']['enter_fire']}), "
            f"max_steps {sc['termination']['max_steps']:,}"
        )
    return 0


def _seed(text):
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the seed must be a decimal integer, got {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"the seed must satisfy 0 <= seed < 2^64, got {value}")
    return value


def _step_timeout(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the step timeout must be a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"the step timeout must be a positive number of seconds, got {text!r}")
    return value


def _int_in(text, low, high):
    """``text`` as a decimal integer with low <= value <= high, else None."""
    try:
        value = int(text, 10)
    except ValueError:
        return None
    return value if low <= value <= high else None


def _step(text):
    value = _int_in(text, 0, math.inf)
    if value is None:
        raise argparse.ArgumentTypeError(f"the step must be an integer >= 0, got {text!r}")
    return value


def _cell_size(text):
    from .render import MAX_CELL_SIZE

    value = _int_in(text, 1, MAX_CELL_SIZE)
    if value is None:
        raise argparse.ArgumentTypeError(f"the cell size must be an integer from 1 to {MAX_CELL_SIZE} pixels, got {text!r}")
    return value


def _render_epilog():
    from .render import ASCII, MAX_GIF_FRAMES, PALETTE

    colours = ", ".join(f"{name} #{r:02x}{g:02x}{b:02x}" for name, (r, g, b) in PALETTE.items())
    chars = ", ".join(f"{char!r} {name}" for name, char in ASCII.items())
    return (
        "The record is validated as 'ember metrics' does (structure and replay) while it streams; "
        "nothing is drawn from a record that fails. "
        f"Colours: {colours}; 'trapped' is an active person with no path to a usable exit. "
        "People are squares inset in their cell, so the exit or fire under them stays visible. "
        f"ASCII: {chars}; a person hides the ground under it. "
        f"A GIF has at most {MAX_GIF_FRAMES} frames (fewer for very large images): longer episodes are sampled evenly (every 2^k-th step), "
        "and the last step is always shown; identical consecutive frames are merged."
    )


class _Parser(argparse.ArgumentParser):
    """Usage errors follow the error contract too: one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"ember: {_one_line(message)} (see '{self.prog} --help').\n")


def _progress_note():
    from .progress import PROGRESS_MIN_BYTES

    return f"When standard error is a terminal and RECORD is a file of {PROGRESS_MIN_BYTES // 2**20} MiB or more, a progress bar shows the bytes read."


def build_parser():
    from .agent import DEFAULT_STEP_TIMEOUT

    parser = _Parser(
        prog="ember",
        description=f"{PACKAGE_DOC.strip()} Simulator {SIMULATOR_VERSION}, metrics {METRICS_VERSION}.",
        epilog="SCENARIO is a path to a scenario JSON file or builtin:NAME (see 'ember scenarios').",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="run a policy or an agent on a scenario and stream the record",
        description="Run one episode and write its canonical record, one line per step, flushed as the episode runs.",
        epilog="An agent is a program that speaks JSON lines on its standard input and output (docs/agent-protocol.md); "
        "its standard error passes through. If it fails, the record written so far stays, unterminated.",
    )
    run.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    chooser = run.add_mutually_exclusive_group()
    chooser.add_argument("--policy", choices=("stay", "random", "greedy"), default="greedy", help="built-in policy (default: greedy)")
    chooser.add_argument("--agent", metavar="COMMAND", help="run this agent program instead of a built-in policy, e.g. \"python3 examples/greedy_agent.py\" (split like a shell command line, not run by a shell)")
    run.add_argument("--step-timeout", type=_step_timeout, metavar="SECONDS", help=f"with --agent: seconds the agent may take to answer one observation (default: {DEFAULT_STEP_TIMEOUT:g})")
    run.add_argument("--seed", type=_seed, default=0, help="fire RNG seed, 0 <= N < 2^64 (default: 0); never shown to the policy or agent")
    run.add_argument(
        "-o",
        "--output",
        metavar="RECORD",
        help="write the record here instead of standard output; a name ending .gz or .zst is written compressed "
        "(gzip, zstd), flushed step by step",
    )
    run.set_defaults(handler=cmd_run)

    metrics = sub.add_parser("metrics", help="validate, replay and measure a record", description="Compute the official per-episode metrics of a record, after validating and replaying it. Bad input: one line on stderr, exit status 2, nothing on stdout.", epilog=_progress_note())
    metrics.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    metrics.add_argument("record", metavar="RECORD", help="record file, or - for standard input (e.g. a pipe from 'ember run')")
    metrics.add_argument("-o", "--output", metavar="OUT", help="write the metrics to OUT instead of standard output")
    metrics.add_argument("--format", choices=("json", "table"), default="json", help="json (default, the official output) or table (plain-text tables, one per metric family, people last)")
    metrics.add_argument("--compact", action="store_true", help="with --format json: compact JSON on one line instead of indented")
    metrics.set_defaults(handler=cmd_metrics)

    replay = sub.add_parser("replay", help="check that a record replays byte-identically", description="Replay a record's actions with its seed; exit 0 when the replay is byte-identical, else 2 with the first difference on stderr.", epilog=_progress_note())
    replay.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    replay.add_argument("record", metavar="RECORD", help="record file, or - for standard input")
    replay.set_defaults(handler=cmd_replay)

    demo = sub.add_parser("demo", help="run the greedy policy on a built-in scenario and summarise it", description="Run the greedy policy, write the record, compute its metrics and print a short summary: who got out, how fast, how often moves were blocked, which exits were used.")
    demo.add_argument("--scenario", metavar="SCENARIO", default="builtin:office", help="scenario file or builtin:NAME (default: builtin:office)")
    demo.add_argument("--seed", type=_seed, default=0, help="fire RNG seed, 0 <= N < 2^64 (default: 0)")
    demo.add_argument("-o", "--output", metavar="RECORD", help=f"where to write the record (default: {DEMO_RECORD} in the current directory)")
    demo.set_defaults(handler=cmd_demo)

    render = sub.add_parser("render", help="draw a record as a GIF, a PNG or ASCII text", description="Draw an episode: an animated GIF of every step, a PNG still of one step, or (--ascii, no Pillow needed) the grid of one step as text on standard output. Images need Pillow: pip install 'ember-eval[viz]'.", epilog=_render_epilog())
    render.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    render.add_argument("record", metavar="RECORD", help="record file, or - for standard input")
    target = render.add_mutually_exclusive_group(required=True)
    target.add_argument("-o", "--output", metavar="FILE", help="the image to write: FILE.gif (animation) or FILE.png (still)")
    target.add_argument("--ascii", action="store_true", help="print one step as text on standard output instead of writing an image")
    render.add_argument("--step", type=_step, metavar="N", help="the step to draw for a PNG or --ascii, 0 being the initial state (default: the last)")
    render.add_argument("--cell-size", type=_cell_size, metavar="PX", help="pixels per grid cell (default: 12, less for grids over 80 cells wide or high)")
    render.set_defaults(handler=cmd_render)

    scenarios = sub.add_parser("scenarios", help="list the built-in scenarios", description="List the scenarios shipped with EMBER, addressed as builtin:NAME.")
    scenarios.set_defaults(handler=cmd_scenarios)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except EmberError as exc:
        return _fail(exc)
    except BrokenPipeError:
        # The reader went away (e.g. '| head'): stop quietly, as Unix tools do.
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("ember: interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")


if __name__ == "__main__":
    sys.exit(main())
