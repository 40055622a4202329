"""The commands of a results directory: evaluate, rank, report, export, verify.

Each reads the directory through ``ember.results`` (one schema, one strict
reader): its ``ResultsError`` names the file and line in the directory and
reaches ``main`` as any ``EmberError`` (one line, exit 2).
"""

import os

from ..results.layout import RANKING_FILE, STATISTICS_FILE, kept_record, scenario_file
from . import arguments
from .exits import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_MISMATCH, EXIT_TERMINATED
from .outputs import write_result


def print_warnings(console, directory, warnings):
    """The warnings of a results directory's files on stderr, each with the directory in its file name."""
    for warning in warnings:
        console.warn(os.path.join(directory, warning))


# -- rank -----------------------------------------------------------------------------------


def rank_arguments(rank):
    arguments.add_results(rank)
    arguments.add_output(rank, "write here instead of standard output")
    rank_formats = f"json (default: {RANKING_FILE}'s canonical bytes), table (plain text) or markdown"
    arguments.add_format(rank, ("json", "table", "markdown"), rank_formats)


def cmd_rank(args, console):
    from ..ranking import format_leaderboard, ranking_bytes, ranking_of
    from ..results import OkRows, read_results

    ok_rows = OkRows()
    results = read_results(args.results, consumers=(ok_rows,))
    ranking = ranking_of(results, ok_rows)
    if args.format == "json":
        data = ranking_bytes(ranking)
    else:
        data = (format_leaderboard(ranking, args.format, distance_of(args.results, results, ok_rows)) + "\n").encode()
    write_board(console, args, results, ok_rows, data)
    return 0


def distance_of(directory, results, ok_rows):
    """Each policy's distance to the possible (bounds.md §5) when ``directory`` has ``bounds.jsonl``, else None."""
    from ..results.bounds import Distances, read_bounds

    bounds = read_bounds(directory, results.campaign)
    return None if bounds is None else Distances(ok_rows, bounds).policy


def write_board(console, args, results, ok_rows, data):
    """Write ``data``, computed from ``results`` and ``ok_rows`` (rank, stats), with what to hear about the rows.

    The directory's warnings first; rows ``ember verify`` cannot check (their
    record not present) are a warning said with them; a board it can check
    whole is said once the result is written.
    """
    from ..results import RecordPresence

    print_warnings(console, args.results, results.warnings)
    presence = RecordPresence(results, ok_rows)
    if not presence.complete():
        console.warn(presence.note())
    write_result(console, args.output, data)
    if presence.complete():
        console.say(f"ember: {presence.note()}")


# -- stats ----------------------------------------------------------------------------------

STATS_EPILOG = (
    f"--format json is {STATISTICS_FILE} (statistics 1.0, docs/statistics.md): the same bytes on every machine for the "
    "same files, B and seed. Needs the stats extra (numpy, scipy, threadpoolctl): pip install 'ember-eval[stats]'; "
    "table and markdown also need tabulate ('ember-eval[cli]'). A progress bar counts the resamples on a terminal."
)


def stats_arguments(stats):
    arguments.add_results(stats)
    arguments.add_output(stats, "write here instead of standard output")
    stats_formats = f"json (default: {STATISTICS_FILE}'s canonical bytes), table (plain text) or markdown"
    arguments.add_format(stats, ("json", "table", "markdown"), stats_formats)
    add_resampling(stats)


def add_resampling(command):
    """--replicates and --seed of the bootstrap (statistics.md §3): ``ember stats`` and ``ember report``."""
    from ..stats import DEFAULT_REPLICATES, DEFAULT_SEED

    replicates_help = f"bootstrap resamples B, 1000 <= B <= 1000000 (default: {DEFAULT_REPLICATES})"
    command.add_argument(
        "--replicates", type=arguments.replicates, default=DEFAULT_REPLICATES, metavar="B", help=replicates_help
    )
    seed_help = f"seed of the resampling stream, 0 <= seed < 2^64 (default: {DEFAULT_SEED})"
    command.add_argument("--seed", type=arguments.resampling_seed, default=DEFAULT_SEED, metavar="S", help=seed_help)


def cmd_stats(args, console):
    from ..progress import items_progress
    from ..ranking import require_tabulate
    from ..stats import require, statistics_bytes, statistics_of_directory
    from ..stats.text import format_statistics

    require()  # a missing extra fails before the files are read
    if args.format != "json":
        require_tabulate()
    with items_progress("resampling", "resamples", console.progress_stream) as on_item:
        statistics, results, ok_rows = statistics_of_directory(
            args.results, args.replicates, args.seed, lambda done: on_item(done, args.replicates)
        )
    if args.format == "json":
        data = statistics_bytes(statistics)
    else:
        distance = distance_of(args.results, results, ok_rows)
        data = (format_statistics(statistics, args.format, distance) + "\n").encode("utf-8")
    write_board(console, args, results, ok_rows, data)
    return 0


# -- report ---------------------------------------------------------------------------------

REPORT_FILE = "report.html"


def report_arguments(report):
    arguments.add_results(report)
    page_help = f"where to write the page (default: {REPORT_FILE} in the current directory; - for standard output)"
    arguments.add_output(report, page_help, "FILE.html", default=REPORT_FILE)
    add_resampling(report)


def cmd_report(args, console):
    from ..report import report_of_directory

    page, results = report_of_directory(args.results, args.replicates, args.seed)
    print_warnings(console, args.results, results.warnings)
    write_result(console, args.output, page.encode("utf-8"))
    if args.output != "-":
        console.say(f"ember: wrote {args.output}.")
    return 0


# -- evaluate -------------------------------------------------------------------------------

EVALUATE_EPILOG = (
    "Exit status: 0 when every episode has a row, 2 for bad input (nothing run, nothing written), "
    "130 after Ctrl-C, 143 after SIGTERM. A progress bar shows on a terminal (needs the 'cli' extra)."
)


def evaluate_arguments(evaluate):
    evaluate.add_argument("campaign", metavar="CAMPAIGN", help="the campaign file (TOML)")
    directory_help = "the results directory (created if missing; an existing one is resumed)"
    arguments.add_output(evaluate, directory_help, "RESULTS_DIR", required=True)
    workers_help = "local worker processes (default: the number of CPUs)"
    evaluate.add_argument("--workers", type=arguments.count(1), metavar="N", help=workers_help)
    scheduler_help = (
        "run the episodes on this Dask distributed scheduler instead (e.g. tcp://host:8786; needs the 'dask' extra)"
    )
    evaluate.add_argument("--scheduler", metavar="ADDRESS", help=scheduler_help)
    retries_help = "times an episode whose worker was lost is tried again (default: 2)"
    evaluate.add_argument("--retries", type=arguments.count(0), default=2, metavar="N", help=retries_help)
    evaluate.add_argument("--retry-failed", action="store_true", help="run again the episodes whose last row is failed")
    keep_help = f"store each run episode's record as RESULTS_DIR/{kept_record('POLICY', 'SCENARIO', 'SEED')}"
    evaluate.add_argument("--keep-records", action="store_true", help=keep_help)
    adopt_help = (
        "resume a results directory made before campaign 1.1, whose agent and python policies have no code: "
        "record today's code for them"
    )
    evaluate.add_argument("--adopt-code", action="store_true", help=adopt_help)
    arguments.add_sandbox(evaluate, "with agent or python policies")


def leaderboard_text(ranking):
    """The leaderboard table of ``ranking``, or None without tabulate (ranking.json is written anyway)."""
    from ..errors import MissingExtraError
    from ..ranking import format_leaderboard

    try:
        return format_leaderboard(ranking, "table")
    except MissingExtraError:
        return None


def cmd_evaluate(args, console):
    from ..campaign import Terminated, evaluate
    from ..progress import episodes_progress
    from ..results import EPISODES_FILE, RANKING_FILE

    try:
        with episodes_progress(console.progress_stream) as on_episode:
            summary = evaluate(
                args.campaign,
                args.output,
                workers=args.workers,
                scheduler=args.scheduler,
                retries=args.retries,
                retry_failed=args.retry_failed,
                keep_records=args.keep_records,
                progress=on_episode,
                warn=console.warn,
                sandbox=args.sandbox,
                adopt_code=args.adopt_code,
                say=console.say,
            )
    except Terminated:
        console.say(f"ember: terminated; every finished episode is in {EPISODES_FILE}, run again to resume.")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        console.say(f"ember: interrupted; every finished episode is in {EPISODES_FILE}, run again to resume.")
        return EXIT_INTERRUPTED
    print_warnings(console, args.output, summary.warnings)
    leaderboard = leaderboard_text(summary.ranking)
    console.say(f"ember: {summary.line()}")
    for policy, count, reason, log in summary.failures:
        details = f" (details in {os.path.join(args.output, log)})" if log is not None else ""
        console.say(f"ember: policy {policy}: {count} failed; the first: {reason}{details}")
    if leaderboard is None:
        console.say(
            f"ember: {RANKING_FILE} is written; the leaderboard table needs tabulate: pip install 'ember-eval[cli]'."
        )
    else:
        console.write(leaderboard.rstrip("\n") + "\n")
    return 0 if summary.missing == 0 else EXIT_INCOMPLETE


# -- export ---------------------------------------------------------------------------------


def export_arguments(export):
    arguments.add_results(export, "a results directory of 'ember evaluate'")
    arguments.add_output(export, "write the CSV here instead of standard output")


def cmd_export(args, console):
    from ..results.export import export_chunks

    write_result(console, args.output, export_chunks(args.results, warn=console.warn))
    return 0


# -- verify ---------------------------------------------------------------------------------

VERIFY_EPILOG = (
    f"RESULTS_DIR/{RANKING_FILE} and {STATISTICS_FILE}, when there, are recomputed from the rows (the statistics "
    "with the file's own replicates and seed; needs the stats extra) and must be the same bytes. "
    "Exit status: 0 when every counting ok row is verified and every recomputed file identical (with "
    "--allow-unverifiable: when nothing mismatches or differs), 1 otherwise, 2 for bad input. The scenario comes "
    f"from RESULTS_DIR/{scenario_file('ID')}, else a builtin: source, else the source path relative to the "
    "--campaign file's folder; a submitted record is found relative to that folder, or without --campaign to "
    "RESULTS_DIR. A progress bar shows on a terminal (the 'cli' extra)."
)


def verify_arguments(verify):
    arguments.add_results(verify)
    campaign_help = (
        "the campaign file RESULTS_DIR was run from: submitted records and scenario files are found relative to "
        "its folder"
    )
    verify.add_argument("--campaign", metavar="FILE", help=campaign_help)
    strictness = verify.add_mutually_exclusive_group()
    require_help = "fail (exit 1) when a row cannot be checked (no record, no scenario, no --campaign): the default"
    strictness.add_argument("--require-all", action="store_true", help=require_help)
    allow_help = "pass (exit 0) with rows that cannot be checked, as long as nothing mismatches"
    strictness.add_argument("--allow-unverifiable", action="store_true", help=allow_help)
    log_help = "also check this audit log of a service board: its hash chain, and that the rows are its ranked rows"
    verify.add_argument("--log", metavar="LOG", help=log_help)
    key_help = (
        "with --log: the service's public key (base64, or @FILE holding it): the export's log.head.json must be "
        "signed by it and name the chain's last entry (needs the 'service' extra)"
    )
    verify.add_argument("--public-key", metavar="K", help=key_help)
    service_help = (
        "with --log: the service (https://HOST; http:// only to a loopback address): its public key and live "
        "head, and its log must hold the export's entries unchanged"
    )
    verify.add_argument("--service", metavar="URL", help=service_help)


def _anchor(args):
    """(the public key's 32 bytes, the live service or None) of --public-key/--service, checked before any work;
    None when neither is given."""
    if args.public_key is None and args.service is None:
        return None
    from ..errors import ServiceError

    if args.log is None:
        raise ServiceError("ember verify: --public-key and --service check a log's head: give --log LOG too")
    from ..service import anchor

    anchor.require()
    key = None if args.public_key is None else anchor.parse_public_key(args.public_key)
    live = None
    if args.service is not None:
        live = anchor.LiveService(args.service)
        served = live.public_key()
        if key is not None and served != key:
            theirs = anchor.key_text(served)
            raise ServiceError(f"--service {args.service}: its public key is {theirs}, not the --public-key given")
        key = served
    return key, live


def _campaign_json(path):
    """The campaign.json a run of the campaign file at ``path`` would write (its scenarios hashed, its policies'
    links checked and code hashed): what ``verify --campaign`` compares the directory with."""
    from ..campaign import load_campaign
    from ..campaign.driver import resolve

    return resolve(load_campaign(path))


def cmd_verify(args, console):
    from ..progress import items_progress
    from ..results.verify import report_lines, verify_results
    from ..stats.recomputed import recomputed_files

    anchored = _anchor(args)
    with items_progress("verifying rows", "rows", stream=console.progress_stream) as on_row:
        report = verify_results(
            args.results, args.campaign, on_row=on_row, recomputed=recomputed_files(), load_campaign=_campaign_json
        )
    print_warnings(console, args.results, report.warnings)
    for line in report_lines(args.results, report):
        console.line(line)
    passed = report.passed(args.allow_unverifiable)
    if args.log is not None:
        from ..results.log import check_log

        problems = check_log(args.results, args.log)
        notes = []
        if anchored is not None and not problems:
            from ..service.anchor import check_export_head

            found = check_export_head(args.results, args.log, *anchored)
            problems, notes = found.problems, found.notes
        for line in problems + notes:
            console.line(line)
        console.line(f"ember verify: the log {'fails' if problems else 'holds'}: {args.log}")
        passed = passed and not problems
    return 0 if passed else EXIT_MISMATCH
