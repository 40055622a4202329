"""``ember bounds``: what was possible in an episode (bounds.md §4)."""

from . import arguments
from .outputs import write_result

BOUNDS_EPILOG = (
    "Each line is one canonical JSON object: evacuated_max (the most evacuations any sequence of joint actions "
    "reaches, knowing the fire), casualties_min (the fewest casualties), fire_stable_step (the step after which "
    "nothing ignites) and limit (why the values are null, when the network would exceed |open| x T = 2^27). "
    "They are maximum flows in time-expanded networks (docs/bounds.md), solved with OR-Tools: "
    "pip install 'ember-eval[bounds]'. --witness DIR (one --seed) also writes DIR/evacuated.record and "
    "DIR/casualties.record, run records reaching the two values, which 'ember replay' and 'ember metrics' check."
)


def bounds_arguments(command):
    from ..results.layout import BOUNDS_FILE, CAMPAIGN_FILE

    command.add_argument(
        "scenario",
        metavar="SCENARIO",
        help=f"scenario file or builtin:NAME; or a results directory, whose {BOUNDS_FILE} is written (every episode "
        f"key of its {CAMPAIGN_FILE}, in order; no --seed)",
    )
    command.add_argument(
        "--seed",
        type=arguments.decimal_seed,
        action="append",
        dest="seeds",
        metavar="N",
        help="an episode's seed, 0 <= N < 2^64 in decimal (repeat for more: one line each, in the order given)",
    )
    arguments.add_output(command, "write the lines to FILE instead of standard output")
    command.add_argument(
        "--witness",
        metavar="DIR",
        type=arguments.output_path,
        help="with exactly one --seed: also write DIR/evacuated.record and DIR/casualties.record",
    )


def writes_stdout(args):
    """The lines go to standard output unless -o names a file or SCENARIO is a results directory."""
    import os

    return args.output in (None, "-") and not os.path.isdir(args.scenario)


def cmd_bounds(args, console):
    import os

    from ..scenario import compile_scenario

    if os.path.isdir(args.scenario):
        return results_bounds(args, console)
    if not args.seeds:
        return console.fail("ember bounds needs at least one --seed N.")
    if args.witness is not None and len(args.seeds) != 1:
        return console.fail(f"--witness takes exactly one --seed, got {len(args.seeds)}.")
    scenario = compile_scenario(args.scenario)
    if args.witness is not None:
        from ..bounds.witness import witness_records
        from ..canonical import canonical_json

        found = witness_records(scenario, args.seeds[0], args.witness)
        lines = [canonical_json(found.as_dict()) + b"\n"]
    else:
        from ..bounds import bounds_line

        lines = [bounds_line(scenario, seed) for seed in args.seeds]
    write_result(console, args.output, lines)
    return 0


def results_bounds(args, console):
    """``ember bounds RESULTS_DIR``: bounds.jsonl, a line per episode key of campaign.json."""
    from ..campaign.bounds import bounds_file_bytes
    from ..results.bounds_file import write_bounds_file
    from ..results.layout import BOUNDS_FILE, CAMPAIGN_FILE

    for given, option in ((args.seeds, "--seed"), (args.witness, "--witness"), (args.output, "-o")):
        if given:
            return console.fail(
                f"{option} does not apply to a results directory ({args.scenario}): its "
                f"{BOUNDS_FILE} covers every episode of its {CAMPAIGN_FILE}."
            )
    write_bounds_file(args.scenario, [bounds_file_bytes(args.scenario)])
    return 0
