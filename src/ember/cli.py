"""The ``ember`` command line (output.md): run, metrics, replay, demo, render, scenarios, rank, report, verify."""

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
    _say(f"ember: {_one_line(message)}")
    return EXIT_BAD_INPUT


def _say(line):
    """A line on stderr; nothing at all when stderr is closed (print() would fall back to stdout)."""
    if sys.stderr is not None:
        print(line, file=sys.stderr)


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
        _say(
            f"ember: warning: ijson's C backend yajl2_c is unavailable; reading with {BACKEND_NAME!r} "
            "is about 20x slower."
        )


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
        from .files import output_file

        # Written only once complete: a reader of the file never sees a partial result.
        with output_file(args.output) as stream:
            stream.write(text.encode("utf-8"))
    return 0


def cmd_replay(args):
    from .engine import verify_replay
    from .progress import reading_progress

    _warn_if_slow_reader()
    with reading_progress(_record_source(args.record)) as record:
        verify_replay(args.scenario, record)
    _say("ember: the record replays byte-identically.")
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
    path = args.output or DEMO_RECORD
    if os.path.exists(path) and not os.path.isfile(path):
        return _fail(f"{path}: ember demo reads its record back, so -o must name a regular file.")
    scenario = compile_scenario(args.scenario)
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
        _say(f"ember: wrote {args.output} ({what}).")
    return 0


def cmd_scenarios(args):
    from .scenario import builtin_names, load_scenario

    width = max(len(name) for name in builtin_names())
    for name in builtin_names():
        sc = load_scenario(f"builtin:{name}")
        grid = sc["grid"]
        print(
            f"builtin:{name:<{width}} {grid['rows']}x{grid['cols']} grid, {len(sc['people'])} people, "
            f"{len(sc['exits'])} exits, fire p={sc['fire']['spread_probability']} ({sc['fire']['enter_fire']}), "
            f"max_steps {sc['termination']['max_steps']:,}"
        )
    return 0


def _print_warnings(directory, warnings):
    """The warnings of a results directory's files on stderr, each with the directory in its file name."""
    for warning in warnings:
        print(f"ember: warning: {os.path.join(directory, warning)}", file=sys.stderr)


def _write_output(output, data):
    """``data`` (bytes) to standard output, or atomically to ``output`` (never a partial file)."""
    if output in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    from .files import output_file

    with output_file(output) as stream:
        stream.write(data)


def cmd_rank(args):
    from .ranking import format_leaderboard, ranking_bytes, ranking_of
    from .results import read_results, verifiable_note

    results = read_results(args.results)  # a ResultsError names the file (and line) in RESULTS_DIR
    ranking = ranking_of(results)
    if args.format == "json":
        data = ranking_bytes(ranking)
    else:
        data = (format_leaderboard(ranking, args.format) + "\n").encode("utf-8")
    _print_warnings(args.results, results.warnings)
    _say(f"ember: {verifiable_note(results)}")
    _write_output(args.output, data)
    return 0


REPORT_FILE = "report.html"


def cmd_report(args):
    from .report import report_of_directory

    page, results = report_of_directory(args.results)
    _print_warnings(args.results, results.warnings)
    _write_output(args.output, page.encode("utf-8"))
    if args.output != "-":
        print(f"ember: wrote {args.output}.", file=sys.stderr)
    return 0


EXIT_TERMINATED = 143


def _rank_results(results_dir):
    """ranking.json (ranking.md) of a finished results directory, written atomically; the leaderboard text."""
    from .errors import MissingExtraError
    from .ranking import format_leaderboard, ranking_bytes, ranking_of
    from .results import read_results

    results = read_results(results_dir)
    ranking = ranking_of(results)
    _print_warnings(results_dir, results.warnings)
    _write_output(os.path.join(results_dir, "ranking.json"), ranking_bytes(ranking))
    try:
        return format_leaderboard(ranking, "table")
    except MissingExtraError:
        return None


def cmd_evaluate(args):
    from .campaign import Terminated, evaluate

    try:
        summary = evaluate(
            args.campaign,
            args.output,
            workers=args.workers,
            scheduler=args.scheduler,
            retries=args.retries,
            retry_failed=args.retry_failed,
            keep_records=args.keep_records,
        )
    except Terminated:
        print("ember: terminated; every finished episode is in episodes.jsonl, run again to resume.", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("ember: interrupted; every finished episode is in episodes.jsonl, run again to resume.", file=sys.stderr)
        return EXIT_INTERRUPTED
    leaderboard = _rank_results(args.output)
    print(f"ember: {summary.line()}", file=sys.stderr)
    if leaderboard is None:
        print(
            "ember: ranking.json is written; the leaderboard table needs tabulate: pip install 'ember-eval[cli]'.",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(leaderboard.rstrip("\n") + "\n")
    return 0 if summary.missing == 0 else 1


def cmd_export(args):
    from .campaign import export_csv

    text = export_csv(args.results, warn=lambda text: print(f"ember: warning: {text}", file=sys.stderr))
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    from .files import output_file

    with output_file(args.output) as stream:
        stream.write(text.encode("utf-8"))
    return 0


EXIT_MISMATCH = 1


def cmd_verify(args):
    from .progress import items_progress
    from .results.verify import report_lines, verify_results

    with items_progress("verifying rows", "rows") as on_row:
        report = verify_results(args.results, args.campaign, on_row=on_row)
    sys.stdout.write("".join(line + "\n" for line in report_lines(args.results, report)))
    return 0 if report.passed(args.require_all) else EXIT_MISMATCH


def _count(low):
    def parse(text):
        try:
            value = int(text, 10)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    return parse


def cmd_generate(args):
    from .generate import FAMILIES, generate_bytes

    if args.list:
        if args.family is not None or args.seed is not None:
            return _fail("--list takes no FAMILY or --seed.")
        width = max(len(f.name) for f in FAMILIES)
        for family in FAMILIES:
            print(f"{family.name:<{width}}  {family.description}")
        return 0
    if args.family is None:
        return _fail("give a FAMILY (see 'ember generate --list').")
    if args.seed is None:
        return _fail("give the generator seed with --seed N.")
    given = {name: value for name, value in vars(args).items() if name.startswith("param_")}
    given = {name[len("param_") :]: value for name, value in given.items()}
    _write_output(args.output, generate_bytes(args.family, args.seed, args.id, **given))
    return 0


def cmd_suite(args):
    from .generate.suite import campaign_toml

    _write_output(args.output, campaign_toml(args.suite).encode("utf-8"))
    return 0


def _identifier(text):
    from .scenario import ID_PATTERN

    if not ID_PATTERN.fullmatch(text):
        raise argparse.ArgumentTypeError(f"an ID matches [A-Za-z0-9][A-Za-z0-9._-]{{0,63}}, got {text!r}")
    return text


def _generate_parameters(parser):
    """One option per family parameter (the union over families); each family refuses the ones it lacks."""
    from .generate import FAMILIES

    seen = {}
    for family in FAMILIES:
        for parameter in family.parameters:
            seen.setdefault(parameter.name, (parameter, []))[1].append(family.name)
    for name, (parameter, families) in seen.items():
        takers = "all families" if len(families) == len(FAMILIES) else ", ".join(families)
        defaults = {f.name: p.default for f in FAMILIES for p in f.parameters if p.name == name}
        if len(set(defaults.values())) > 1:
            shown = ", ".join(f"{k} {v}" for k, v in defaults.items())
        else:
            shown = next(iter(defaults.values()))
        bounds = f" ({parameter.low}-{parameter.high})" if parameter.kind is int else ""
        parser.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"param_{name}",
            type=parameter.kind,
            default=argparse.SUPPRESS,
            metavar="N" if parameter.kind is int else "TEXT",
            help=f"{parameter.help}{bounds}; {takers}; default: {shown}",
        )


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
        raise argparse.ArgumentTypeError(
            f"the cell size must be an integer from 1 to {MAX_CELL_SIZE} pixels, got {text!r}"
        )
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
        f"A GIF has at most {MAX_GIF_FRAMES} frames (fewer for very large images): "
        "longer episodes are sampled evenly (every 2^k-th step), "
        "and the last step is always shown; identical consecutive frames are merged."
    )


class _Parser(argparse.ArgumentParser):
    """Usage errors follow the error contract too: one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"ember: {_one_line(message)} (see '{self.prog} --help').\n")


def _progress_note():
    from .progress import PROGRESS_MIN_BYTES

    return (
        f"When standard error is a terminal and RECORD is a file of {PROGRESS_MIN_BYTES // 2**20} MiB or more, "
        "a progress bar shows the bytes read."
    )


def _add_scenario_and_record(command, record_help="record file, or - for standard input"):
    """The two positional arguments of a command that reads a record."""
    command.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    command.add_argument("record", metavar="RECORD", help=record_help)


def _command(sub, name, handler, **texts):
    """The parser of subcommand ``name`` (``help``, ``description``, ``epilog``), which runs ``handler``."""
    command = sub.add_parser(name, **texts)
    command.set_defaults(handler=handler)
    return command


def _output_option(command, help, metavar="FILE", **more):
    """The -o/--output option, in the words of the command."""
    command.add_argument("-o", "--output", metavar=metavar, help=help, **more)


def _format_option(command, choices, help):
    command.add_argument("--format", choices=choices, default="json", help=help)


def _results_argument(command, help="a results directory written by 'ember evaluate -o'"):
    command.add_argument("results", metavar="RESULTS_DIR", help=help)


def _seed_option(command, help, **more):
    command.add_argument("--seed", type=_seed, help=help, **more)


def build_parser():
    from .agent import DEFAULT_STEP_TIMEOUT
    from .sim.policies import POLICY_NAMES

    parser = _Parser(
        prog="ember",
        description=f"{PACKAGE_DOC.strip()} Simulator {SIMULATOR_VERSION}, metrics {METRICS_VERSION}.",
        epilog="SCENARIO is a path to a scenario JSON file or builtin:NAME (see 'ember scenarios').",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = _command(
        sub,
        "run",
        cmd_run,
        help="run a policy or an agent on a scenario and stream the record",
        description="Run one episode and write its canonical record, one line per step, flushed as the episode runs.",
        epilog="An agent is a program that speaks JSON lines on its standard input and output "
        "(docs/agent-protocol.md); "
        "its standard error passes through. With -o: a new file is written in place as the run goes "
        "(followable with tail -f); if the run fails, the record written so far stays, unterminated. "
        "An existing record is kept until the run succeeds: "
        "the run is written to RECORD.partial (followable), which replaces it at the end or is removed on failure. "
        "A record another 'ember run' is writing is refused. "
        "A symlink is followed; a FIFO or device is written through.",
    )
    run.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    chooser = run.add_mutually_exclusive_group()
    chooser.add_argument("--policy", choices=POLICY_NAMES, default="greedy", help="built-in policy (default: greedy)")
    chooser.add_argument(
        "--agent",
        metavar="COMMAND",
        help='run this agent program instead of a built-in policy, e.g. "python3 examples/greedy_agent.py" '
        "(split like a shell command line, not run by a shell)",
    )
    timeout_help = (
        f"with --agent: seconds the agent may take to answer one observation (default: {DEFAULT_STEP_TIMEOUT:g})"
    )
    run.add_argument("--step-timeout", type=_step_timeout, metavar="SECONDS", help=timeout_help)
    _seed_option(run, "fire RNG seed, 0 <= N < 2^64 (default: 0); never shown to the policy or agent", default=0)
    compressed = "; a name ending .gz or .zst is written compressed (gzip, zstd), flushed step by step"
    _output_option(run, "write the record here instead of standard output" + compressed, "RECORD")

    metrics = _command(
        sub,
        "metrics",
        cmd_metrics,
        help="validate, replay and measure a record",
        description="Compute the official per-episode metrics of a record, after validating and replaying it. "
        "Bad input: one line on stderr, exit status 2, nothing on stdout.",
        epilog=_progress_note(),
    )
    _add_scenario_and_record(metrics, "record file, or - for standard input (e.g. a pipe from 'ember run')")
    _output_option(metrics, "write the metrics to OUT instead of standard output", "OUT")
    table_help = "table (plain-text tables, one per metric family, people last)"
    _format_option(metrics, ("json", "table"), "json (default, the official output) or " + table_help)
    metrics.add_argument(
        "--compact", action="store_true", help="with --format json: compact JSON on one line instead of indented"
    )

    replay = _command(
        sub,
        "replay",
        cmd_replay,
        help="check that a record replays byte-identically",
        description="Replay a record's actions with its seed; exit 0 when the replay is byte-identical, "
        "else 2 with the first difference on stderr.",
        epilog=_progress_note(),
    )
    _add_scenario_and_record(replay)

    demo = _command(
        sub,
        "demo",
        cmd_demo,
        help="run the greedy policy on a built-in scenario and summarise it",
        description="Run the greedy policy, write the record, compute its metrics and print a short summary: "
        "who got out, how fast, how often moves were blocked, which exits were used.",
    )
    scenario_help = "scenario file or builtin:NAME (default: builtin:office)"
    demo.add_argument("--scenario", metavar="SCENARIO", default="builtin:office", help=scenario_help)
    _seed_option(demo, "fire RNG seed, 0 <= N < 2^64 (default: 0)", default=0)
    _output_option(demo, f"where to write the record (default: {DEMO_RECORD} in the current directory)", "RECORD")

    render = _command(
        sub,
        "render",
        cmd_render,
        help="draw a record as a GIF, a PNG or ASCII text",
        description="Draw an episode: an animated GIF of every step, a PNG still of one step, "
        "or (--ascii, no Pillow needed) the grid of one step as text on standard output. "
        "Images need Pillow: pip install 'ember-eval[viz]'.",
        epilog=_render_epilog(),
    )
    _add_scenario_and_record(render)
    target = render.add_mutually_exclusive_group(required=True)
    _output_option(target, "the image to write: FILE.gif (animation) or FILE.png (still)")
    target.add_argument(
        "--ascii", action="store_true", help="print one step as text on standard output instead of writing an image"
    )
    step_help = "the step to draw for a PNG or --ascii, 0 being the initial state (default: the last)"
    render.add_argument("--step", type=_step, metavar="N", help=step_help)
    size_help = "pixels per grid cell (default: 12, less for grids over 80 cells wide or high)"
    render.add_argument("--cell-size", type=_cell_size, metavar="PX", help=size_help)

    scenarios_help = "list the built-in scenarios"
    scenarios_description = "List the scenarios shipped with EMBER, addressed as builtin:NAME."
    _command(sub, "scenarios", cmd_scenarios, help=scenarios_help, description=scenarios_description)
    rank = _command(
        sub,
        "rank",
        cmd_rank,
        help="rank the policies of a campaign's results directory",
        description="Recompute the leaderboard (ranking 1.0, docs/ranking.md) from RESULTS_DIR/campaign.json and "
        "RESULTS_DIR/episodes.jsonl. Policies are sorted by (casualties, stranded, person-time to safety, exposure): "
        "speed never buys safety. Bad input: one line on stderr naming the file and line, exit status 2.",
        epilog="--format json is byte for byte the ranking.json that 'ember evaluate' writes from the same files. "
        "table and markdown need tabulate: pip install 'ember-eval[cli]'.",
    )
    _results_argument(rank)
    _output_option(rank, "write here instead of standard output")
    rank_formats = "json (default: ranking.json's canonical bytes), table (plain text) or markdown"
    _format_option(rank, ("json", "table", "markdown"), rank_formats)

    report = _command(
        sub,
        "report",
        cmd_report,
        help="write a self-contained HTML report of a campaign's results",
        description="Write one HTML page that opens offline: the leaderboard with its formula, the unranked policies "
        "and why, per-scenario tables, pairwise evidence and plots (evacuation curves, casualties, exit shares, "
        "fire distances), each showing the spread over seeds. Needs matplotlib: pip install 'ember-eval[report]'.",
    )
    _results_argument(report)
    page_help = f"where to write the page (default: {REPORT_FILE} in the current directory; - for standard output)"
    _output_option(report, page_help, "FILE.html", default=REPORT_FILE)

    evaluate = _command(
        sub,
        "evaluate",
        cmd_evaluate,
        help="run a campaign: many policies on many episodes, then rank them",
        description="Evaluate every policy of a campaign file (TOML, docs/campaigns.md) on every scenario x seed, "
        "in local worker processes or on a Dask cluster; rows go to RESULTS_DIR/episodes.jsonl as episodes finish, "
        "then ranking.json is written and the leaderboard printed. Running it again resumes: only episodes without "
        "a row run, and the campaign may add policies, scenarios and seeds.",
        epilog="Exit status: 0 when every episode has a row, 2 for bad input (nothing run, nothing written), "
        "130 after Ctrl-C, 143 after SIGTERM. A progress bar shows on a terminal (needs the 'cli' extra).",
    )
    evaluate.add_argument("campaign", metavar="CAMPAIGN", help="the campaign file (TOML)")
    directory_help = "the results directory (created if missing; an existing one is resumed)"
    _output_option(evaluate, directory_help, "RESULTS_DIR", required=True)
    workers_help = "local worker processes (default: the number of CPUs)"
    evaluate.add_argument("--workers", type=_count(1), metavar="N", help=workers_help)
    scheduler_help = (
        "run the episodes on this Dask distributed scheduler instead (e.g. tcp://host:8786; needs the 'dask' extra)"
    )
    evaluate.add_argument("--scheduler", metavar="ADDRESS", help=scheduler_help)
    retries_help = "times an episode whose worker was lost is tried again (default: 2)"
    evaluate.add_argument("--retries", type=_count(0), default=2, metavar="N", help=retries_help)
    evaluate.add_argument("--retry-failed", action="store_true", help="run again the episodes whose last row is failed")
    keep_help = "store each run episode's record as RESULTS_DIR/records/POLICY/SCENARIO/SEED.record.gz"
    evaluate.add_argument("--keep-records", action="store_true", help=keep_help)

    verify = _command(
        sub,
        "verify",
        cmd_verify,
        help="re-verify a results directory's rows from their records",
        description="Re-authenticate every counting ok row of RESULTS_DIR that names a record (kept with "
        "'ember evaluate --keep-records', or submitted through a records entry): the record's SHA-256, the full "
        "engine (validation, replay, metrics) for the row's scenario and seed, and the metrics, compared "
        "type-strictly with the row's. Prints a line per mismatched or unverifiable row and one summary line.",
        epilog="Exit status: 0 when nothing mismatches (with --require-all: and nothing is unverifiable), 1 "
        "otherwise, 2 for bad input. The scenario comes from RESULTS_DIR/scenarios/ID.json, else a builtin: "
        "source, else the source path relative to the --campaign file's folder.",
    )
    _results_argument(verify)
    campaign_help = (
        "the campaign file RESULTS_DIR was run from: submitted records and scenario files are found relative to "
        "its folder"
    )
    verify.add_argument("--campaign", metavar="FILE", help=campaign_help)
    require_help = "also fail (exit 1) when a row cannot be checked (no record, no scenario, no --campaign)"
    verify.add_argument("--require-all", action="store_true", help=require_help)

    export = _command(
        sub,
        "export",
        cmd_export,
        help="write a results directory's rows as CSV",
        description="One CSV row per counting row (the last row of each policy and episode), "
        "ordered by policy, scenario and seed, with every numeric metric as a dotted column.",
    )
    _results_argument(export, "a results directory of 'ember evaluate'")
    _output_option(export, "write the CSV here instead of standard output")

    generate = _command(
        sub,
        "generate",
        cmd_generate,
        help="generate a scenario from a seeded family",
        description="Write a scenario of a family (see --list) for a generator seed, as canonical JSON. "
        "The same arguments give the same bytes on every machine and Python version; every person can reach "
        "an exit at t = 0, and the fire can cut at least one person's route (docs/generate.md).",
        epilog="Parameters not given take the family's default; a parameter the family does not have is refused.",
    )
    generate.add_argument("family", metavar="FAMILY", nargs="?", help="the family to generate")
    generate.add_argument("--list", action="store_true", help="list the families, one a line, and exit")
    _seed_option(generate, "generator seed, 0 <= N < 2^64 (required)")
    generate.add_argument("--id", type=_identifier, help="the scenario ID (default: FAMILY-SEED)")
    _output_option(generate, "write the scenario here instead of standard output")
    _generate_parameters(generate)

    suite = _command(
        sub,
        "suite",
        cmd_suite,
        help="write the campaign file of a scenario suite",
        description="Write a campaign file (TOML, campaign.md) with every scenario of the suite, its seeds, and the "
        "built-in baselines; add your agent as another [[policies]] entry and run 'ember evaluate' on it. "
        "Needs the 'suite' extra (tomli-w).",
        epilog="Suites: ember-v1 (24 scenarios, builtin:ember-v1/NAME, listed by 'ember scenarios').",
    )
    suite.add_argument("suite", metavar="SUITE", help="the suite, e.g. ember-v1")
    _output_option(suite, "write the campaign file here instead of standard output")
    return parser


def _writes_stdout(args):
    """Whether the command's result goes to standard output."""
    if args.command in ("scenarios", "demo", "verify"):
        return True
    if args.command in ("run", "metrics"):
        return args.output in (None, "-")
    return args.command == "render" and args.ascii


def _fill_closed_standard_fds():
    """Open /dev/null on a closed fd 0, 1 or 2.

    Otherwise the next file opened (a record, an output) would get that
    number, and anything written to "stdout" or "stderr" would land in it.
    Python has already set ``sys.stdout``/``sys.stderr`` to None for a closed
    one, which is how the commands see that it is closed.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def _silence_stdout():
    # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


def _flush_stdout():
    """Flush stdout now, so that a write error is reported like any error, not at exit."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        _silence_stdout()
        raise OSError(exc.errno, exc.strerror or str(exc), "standard output") from exc


def main(argv=None):
    _fill_closed_standard_fds()
    args = build_parser().parse_args(argv)
    if sys.stdout is None and _writes_stdout(args):
        return _fail(f"standard output is closed: 'ember {args.command}' writes its result there; nothing done.")
    try:
        status = args.handler(args)
        _flush_stdout()
        return status
    except EmberError as exc:
        return _fail(exc)
    except BrokenPipeError:
        # The reader went away (e.g. '| head'): stop quietly, as Unix tools do.
        _silence_stdout()
        return 1
    except KeyboardInterrupt:
        _say("ember: interrupted.")
        return EXIT_INTERRUPTED
    except OSError as exc:
        if sys.stdout is not None:
            try:
                sys.stdout.flush()
            except OSError:  # stdout itself failed: what it holds can never be written
                _silence_stdout()
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}")


if __name__ == "__main__":
    sys.exit(main())
