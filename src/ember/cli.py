"""The ``ember`` command line (output.md): run, metrics, replay, scenarios."""

import argparse
import json
import os
import sys

from . import __doc__ as PACKAGE_DOC
from .errors import EmberError
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
    from .record.writer import run_episode
    from .scenario import load_scenario

    scenario = load_scenario(args.scenario)
    if args.output in (None, "-"):
        run_episode(scenario, args.policy, args.seed, sys.stdout.buffer)
    else:
        run_episode(scenario, args.policy, args.seed, args.output)
    return 0


def cmd_metrics(args):
    from .engine import episode_metrics

    result = episode_metrics(args.scenario, _record_source(args.record)).to_dict()
    if args.compact:
        text = json.dumps(result, sort_keys=False, separators=(",", ":"))
    else:
        text = json.dumps(result, indent=2)
    if args.output in (None, "-"):
        sys.stdout.write(text + "\n")
    else:
        # Written only once complete: a reader of the file never sees a partial result.
        tmp = f"{args.output}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        os.replace(tmp, args.output)
    return 0


def cmd_replay(args):
    from .engine import verify_replay

    verify_replay(args.scenario, _record_source(args.record))
    print("ember: the record replays byte-identically.", file=sys.stderr)
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


def build_parser():
    parser = argparse.ArgumentParser(
        prog="ember",
        description=f"{PACKAGE_DOC.strip()} Simulator {SIMULATOR_VERSION}, metrics {METRICS_VERSION}.",
        epilog="SCENARIO is a path to a scenario JSON file or builtin:NAME (see 'ember scenarios').",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser("run", help="run a policy on a scenario and stream the record", description="Run one episode and write its canonical record, one line per step, flushed as the episode runs.")
    run.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    run.add_argument("--policy", choices=("stay", "random", "greedy"), default="greedy", help="built-in policy (default: greedy)")
    run.add_argument("--seed", type=_seed, default=0, help="fire RNG seed, 0 <= N < 2^64 (default: 0)")
    run.add_argument("-o", "--output", metavar="RECORD", help="write the record here instead of standard output")
    run.set_defaults(handler=cmd_run)

    metrics = sub.add_parser("metrics", help="validate, replay and measure a record", description="Compute the official per-episode metrics of a record, after validating and replaying it. Bad input: one line on stderr, exit status 2, nothing on stdout.")
    metrics.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    metrics.add_argument("record", metavar="RECORD", help="record file, or - for standard input (e.g. a pipe from 'ember run')")
    metrics.add_argument("-o", "--output", metavar="OUT", help="write the metrics JSON to OUT instead of standard output")
    metrics.add_argument("--compact", action="store_true", help="compact JSON on one line instead of indented")
    metrics.set_defaults(handler=cmd_metrics)

    replay = sub.add_parser("replay", help="check that a record replays byte-identically", description="Replay a record's actions with its seed; exit 0 when the replay is byte-identical, else 2 with the first difference on stderr.")
    replay.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    replay.add_argument("record", metavar="RECORD", help="record file, or - for standard input")
    replay.set_defaults(handler=cmd_replay)

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
        try:
            sys.stdout = None
        finally:
            return 1
    except KeyboardInterrupt:
        print("ember: interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as exc:
        return _fail(f"{exc.filename or ''}: {exc.strerror or exc}")


if __name__ == "__main__":
    sys.exit(main())
