"""The commands of one episode: run, metrics, replay, demo, render, scenarios."""

import contextlib
import hashlib
import json
import os
import shlex

from ..errors import ActionError
from . import arguments
from .outputs import record_source, write_result

# -- run ------------------------------------------------------------------------------------

RUN_EPILOG = (
    "An agent is a program that speaks JSON lines on its standard input and output "
    "(docs/agent-protocol.md); "
    "its standard error passes through. With -o: a new file is written in place as the run goes "
    "(followable with tail -f); if the run fails, the record written so far stays, unterminated. "
    "An existing record is kept until the run succeeds: "
    "the run is written to RECORD.partial (followable), which replaces it at the end or is removed on failure. "
    "A record another 'ember run' is writing is refused. "
    "A symlink is followed; a FIFO or device is written through."
)


def run_arguments(run):
    from ..agent import DEFAULT_STEP_TIMEOUT
    from ..sim.policies import POLICY_NAMES

    run.add_argument("scenario", metavar="SCENARIO", help="scenario file or builtin:NAME")
    chooser = run.add_mutually_exclusive_group()
    chooser.add_argument("--policy", choices=POLICY_NAMES, default="greedy", help="built-in policy (default: greedy)")
    chooser.add_argument(
        "--agent",
        metavar="COMMAND",
        help='run this agent program instead of a built-in policy, e.g. "python3 examples/greedy_agent.py" '
        "(split like a shell command line, not run by a shell)",
    )
    chooser.add_argument(
        "--python",
        metavar="MODULE:NAME",
        type=arguments.python_source,
        help='run a python policy as a campaign\'s python = "MODULE:NAME" runs it: NAME(scenario) makes the '
        "policy, in a policy process started by EMBER's host (MODULE is imported from the current directory)",
    )
    timeout_help = (
        "with --agent or --python: seconds the policy process may take to answer one observation "
        f"(default: {DEFAULT_STEP_TIMEOUT:g})"
    )
    run.add_argument("--step-timeout", type=arguments.step_timeout, metavar="SECONDS", help=timeout_help)
    arguments.add_sandbox(run, "with --agent or --python")
    arguments.add_seed(run, "fire RNG seed, 0 <= N < 2^64 (default: 0); never shown to the policy or agent", default=0)
    compressed = "; a name ending .gz or .zst is written compressed (gzip, zstd), flushed step by step"
    arguments.add_output(run, "write the record here instead of standard output" + compressed, "RECORD")


def cmd_run(args, console):
    from ..agent import DEFAULT_STEP_TIMEOUT, AgentPolicy
    from ..progress import step_counter
    from ..record.writer import run_episode
    from ..scenario import compile_scenario
    from ..sim.policies import make_policy

    foreign = args.agent is not None or args.python is not None
    if args.step_timeout is not None and not foreign:
        return console.fail("--step-timeout applies only with --agent or --python.")
    if args.sandbox is not None and not foreign:
        return console.fail("--sandbox applies only with --agent or --python.")
    scenario = compile_scenario(args.scenario)
    to_file = args.output not in (None, "-")
    timeout = args.step_timeout or DEFAULT_STEP_TIMEOUT
    with contextlib.ExitStack() as stack:
        agent = None
        if args.agent is not None:
            launcher = agent_launcher(args)
            agent = policy = stack.enter_context(AgentPolicy(args.agent, scenario.data, timeout, launch=launcher))
        elif args.python is not None:
            agent = policy = stack.enter_context(python_policy(args.python, args.sandbox, scenario, timeout))
        else:
            policy = make_policy(args.policy, scenario, args.seed)
        if to_file:
            # Count steps on a terminal only when the record itself is not going there.
            policy = stack.enter_context(step_counter(policy, scenario.max_steps, console.progress_stream))
        try:
            final_state = run_episode(scenario, policy, args.seed, args.output if to_file else console.binary())
        except ActionError as exc:
            if agent is None:
                raise
            raise agent.refused(exc) from exc
        if agent is not None:
            agent.finish(final_state)
    return 0


def agent_launcher(args):
    """The launcher of ``ember run --agent``: the sandbox unless ``--sandbox off`` (checked before anything runs).

    Unlike ``evaluate``, ``run`` says nothing of ``off``: the agent's standard error passes through
    unchanged (docs/agent-protocol.md), and the developer asked for it on this very command line.
    """
    from ..isolation.boundary import Launcher, agent_files

    folder = os.getcwd()
    launcher = Launcher(args.sandbox or "required", files=agent_files(args.agent, folder, anywhere=True), cwd=folder)
    launcher.check()
    return launcher


def python_policy(source, sandbox, scenario, timeout):
    """``ember run --python MODULE:NAME``: the python policy driven as a campaign drives one.

    The campaign's launcher (``policy_launcher``: the sandbox unless ``--sandbox off``, MODULE's
    files bound, the current directory as the campaign folder) and its check that MODULE imports
    and NAME is callable, before anything is written; then EMBER's host runs it over the agent
    protocol.  Failures are ``AgentError`` s: one line, exit 2.
    """
    from ..agent import AgentError, AgentPolicy
    from ..campaign.campaign_file import work_timeout
    from ..campaign.launchers import policy_launcher
    from ..isolation.boundary import check_python_source, host_command

    folder = os.getcwd()
    launcher = policy_launcher({"python": source}, folder, sandbox or "required", own_session=True)
    launcher.check()
    problem = check_python_source(source, launcher, work_timeout(timeout))
    if problem is not None:
        raise AgentError(f"--python: {problem}")
    return AgentPolicy(
        host_command(source), scenario.data, timeout, launch=launcher, who="python policy", host_source=source
    )


# -- metrics, replay ------------------------------------------------------------------------


def warn_if_slow_reader(console):
    from ..record.reader import BACKEND_NAME

    if BACKEND_NAME != "yajl2_c":
        # Still correct, but operators should know why a run takes 20x longer.
        console.say(
            f"ember: warning: ijson's C backend yajl2_c is unavailable; reading with {BACKEND_NAME!r} "
            "is about 20x slower."
        )


def one_blas_thread():
    """Keep numpy from starting OpenBLAS's thread pool, in a command that does no linear algebra.

    numpy (the exposure field of grids of 4,096 cells or more) starts the
    pool as it is imported: about 40 ms of CPU on the 2-core test machine,
    for threads nothing uses.  A value the user set is kept; the commands
    that call this start no other process, so nothing inherits it.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def metrics_arguments(metrics):
    arguments.add_scenario_and_record(metrics, "record file, or - for standard input (e.g. a pipe from 'ember run')")
    arguments.add_output(metrics, "write the metrics to OUT instead of standard output", "OUT")
    table_help = "table (plain-text tables, one per metric family, people last)"
    summary_help = (
        "summary (the lines to read first: population, evacuated, casualties by cause, stranded, "
        "person-time to safety, evacuation steps, fire exposure, blocked moves, exit use)"
    )
    arguments.add_format(
        metrics, ("json", "table", "summary"), f"json (default, the official output), {table_help} or {summary_help}"
    )
    metrics.add_argument(
        "--compact", action="store_true", help="with --format json: compact JSON on one line instead of indented"
    )


def cmd_metrics(args, console):
    from ..engine.read import episode_metrics
    from ..progress import reading_progress
    from ..summary import format_metrics_tables, format_summary

    if args.compact and args.format != "json":
        return console.fail("--compact applies only to --format json.")
    one_blas_thread()
    if args.format == "table":
        from ..summary import tables_available

        tables_available()  # before reading: no extra, nothing read, a one-line error
    warn_if_slow_reader(console)
    with reading_progress(record_source(args.record), stream=console.progress_stream) as record:
        result = episode_metrics(args.scenario, record).to_dict()
    if args.format == "table":
        text = format_metrics_tables(result)
    elif args.format == "summary":
        text = format_summary(result) + "\n"
    elif args.compact:
        text = json.dumps(result, sort_keys=False, separators=(",", ":")) + "\n"
    else:
        text = json.dumps(result, indent=2) + "\n"
    # Written only once complete: a reader of the file never sees a partial result.
    write_result(console, args.output, text.encode("utf-8"))
    return 0


def replay_arguments(replay):
    arguments.add_scenario_and_record(replay)


def cmd_replay(args, console):
    from ..engine.replay import verify_replay
    from ..progress import reading_progress

    warn_if_slow_reader(console)
    with reading_progress(record_source(args.record), stream=console.progress_stream) as record:
        verify_replay(args.scenario, record)
    console.say("ember: the record replays byte-identically.")
    return 0


# -- demo -----------------------------------------------------------------------------------

DEMO_RECORD = "ember-demo.record"


def demo_arguments(demo):
    scenario_help = "scenario file or builtin:NAME (default: builtin:office)"
    demo.add_argument("--scenario", metavar="SCENARIO", default="builtin:office", help=scenario_help)
    arguments.add_seed(demo, "fire RNG seed, 0 <= N < 2^64 (default: 0)", default=0)
    arguments.add_output(demo, f"where to write the record (default: {DEMO_RECORD} in the current directory)", "RECORD")


def cmd_demo(args, console):
    from ..engine.read import episode_metrics
    from ..progress import reading_progress, step_counter
    from ..record.writer import run_episode
    from ..scenario import compile_scenario
    from ..sim.policies import make_policy
    from ..summary import format_summary

    if args.output == "-":
        return console.fail("ember demo writes its record to a file; give -o a file name.")
    path = args.output or DEMO_RECORD
    if os.path.exists(path) and not os.path.isfile(path):
        return console.fail(f"{path}: ember demo reads its record back, so -o must name a regular file.")
    one_blas_thread()
    scenario = compile_scenario(args.scenario)
    policy = make_policy("greedy", scenario, args.seed)
    with step_counter(policy, scenario.max_steps, console.progress_stream) as policy:
        run_episode(scenario, policy, args.seed, path)
    with reading_progress(path, stream=console.progress_stream) as record:
        metrics = episode_metrics(scenario, record).to_dict()
    quoted = shlex.quote(args.scenario)
    console.line(f"Ran the greedy policy on {args.scenario} (seed {args.seed}).")
    console.line(f"Record: {os.path.abspath(path)} ({os.path.getsize(path):,} bytes)")
    console.line()
    console.line(format_summary(metrics))
    console.line()
    console.line("Next:")
    console.line(f"  ember metrics {quoted} {shlex.quote(path)} --format table")
    console.line(f"  ember render {quoted} {shlex.quote(path)} -o ember-demo.gif")
    return 0


# -- render ---------------------------------------------------------------------------------


def render_epilog():
    from ..render import ASCII, MAX_GIF_FRAMES, PALETTE

    colours = ", ".join(f"{name} #{r:02x}{g:02x}{b:02x}" for name, (r, g, b) in PALETTE.items())
    chars = ", ".join(f"{char!r} {name}" for name, char in ASCII.items())
    return (
        "The record is validated as 'ember metrics' does (structure and replay) while it streams; "
        "nothing is drawn from a record that fails. "
        f"Colours: {colours}; 'trapped' is an active person with no path to a usable exit. "
        "People are squares inset in their cell, so the exit or fire under them stays visible. "
        "Under the grid, each image names its step ('step 12 of 26') and shows a legend of the colours. "
        f"ASCII: {chars}; a person hides the ground under it. "
        f"A GIF has at most {MAX_GIF_FRAMES} frames (fewer for very large images): "
        "longer episodes are sampled evenly (every 2^k-th step), "
        "and the last step is always shown."
    )


def render_arguments(render):
    arguments.add_scenario_and_record(render)
    target = render.add_mutually_exclusive_group(required=True)
    arguments.add_output(target, "the image to write: FILE.gif (animation) or FILE.png (still)")
    target.add_argument(
        "--ascii", action="store_true", help="print one step as text on standard output instead of writing an image"
    )
    step_help = "the step to draw for a PNG or --ascii, 0 being the initial state (default: the last)"
    render.add_argument("--step", type=arguments.step, metavar="N", help=step_help)
    size_help = "pixels per grid cell (default: 12, less for grids over 80 cells wide or high)"
    render.add_argument("--cell-size", type=arguments.cell_size, metavar="PX", help=size_help)


def renders_ascii(args):
    return args.ascii


def cmd_render(args, console):
    from ..progress import reading_progress
    from ..render import render_ascii, render_image
    from ..scenario import load_scenario

    if args.ascii and args.cell_size is not None:
        return console.fail("--cell-size applies only to images, not to --ascii.")
    scenario = load_scenario(args.scenario)
    with reading_progress(record_source(args.record), stream=console.progress_stream) as record:
        if args.ascii:
            text = render_ascii(scenario, record, args.step)
        else:
            frames = render_image(scenario, record, args.output, args.step, args.cell_size)
    if args.ascii:
        console.write(text + "\n")
    else:
        what = "1 frame" if frames == 1 else f"{frames} frames"
        console.say(f"ember: wrote {args.output} ({what}).")
    return 0


# -- scenarios ------------------------------------------------------------------------------


def scenarios_arguments(scenarios):
    # Without a subcommand: the list, as it always was.
    sub = scenarios.add_subparsers(dest="scenarios_command", metavar="COMMAND", help="show: one scenario's JSON")
    show = sub.add_parser(
        "show",
        help="a built-in scenario's canonical JSON on standard output, its hash on standard error",
        description="Write the built-in scenario NAME as canonical JSON (simulator.md §2) and a newline on "
        "standard output, the file 'ember generate' or a campaign would use; its scenario_hash on standard error.",
    )
    show.add_argument("name", metavar="NAME", help="a built-in scenario: NAME or builtin:NAME (see 'ember scenarios')")


def cmd_scenarios(args, console):
    from ..scenario import BUILTIN_PREFIX, builtin_names, load_scenario

    if args.scenarios_command == "show":
        from ..canonical import canonical_json

        source = args.name if args.name.startswith(BUILTIN_PREFIX) else BUILTIN_PREFIX + args.name
        data = canonical_json(load_scenario(source))
        write_result(console, None, data + b"\n")
        console.say(f"ember: {source}: sha256:{hashlib.sha256(data).hexdigest()}")
        return 0

    width = max(len(name) for name in builtin_names())
    for name in builtin_names():
        sc = load_scenario(f"builtin:{name}")
        grid = sc["grid"]
        console.line(
            f"builtin:{name:<{width}} {grid['rows']}x{grid['cols']} grid, {len(sc['people'])} people, "
            f"{len(sc['exits'])} exits, fire p={sc['fire']['spread_probability']} ({sc['fire']['enter_fire']}), "
            f"max_steps {sc['termination']['max_steps']:,}"
        )
    return 0
