"""The commands of a results directory: evaluate, rank, report, export."""

import os

from . import arguments
from .exits import EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_TERMINATED
from .outputs import write_result


def read_results(directory):
    """A results directory's parsed campaign.json and episodes.jsonl bytes (campaign.md §4).

    Raises ``RankingInputError`` (relative file names) for a directory that is
    not a results directory or a campaign.json that is not JSON.
    """
    from ..errors import RankingInputError
    from ..ranking import CAMPAIGN_FILE, EPISODES_FILE, read_campaign

    if not os.path.isdir(directory):
        raise RankingInputError(".", None, "no such directory, expected a results directory ('ember evaluate -o')")
    contents = {}
    for name in (CAMPAIGN_FILE, EPISODES_FILE):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            raise RankingInputError(name, None, "missing: not a results directory ('ember evaluate -o' writes it)")
        with open(path, "rb") as handle:
            contents[name] = handle.read()
    return read_campaign(contents[CAMPAIGN_FILE]), contents[EPISODES_FILE]


def from_results(directory, build):
    """``build(campaign, episodes)`` of a results directory: its result and its warnings."""
    campaign, episodes = read_results(directory)
    return build(campaign, episodes)


def print_warnings(console, directory, warnings):
    """The warnings of a results directory's files on stderr, each with the directory in its file name."""
    for warning in warnings:
        console.warn(os.path.join(directory, warning))


def results_error(console, directory, exc):
    """A ``RankingInputError`` message with the results directory in the file name."""
    where = os.path.normpath(os.path.join(directory, exc.file))
    if exc.line is not None:
        where += f":{exc.line}"
    return console.fail(f"{where}: {exc.reason}")


# -- rank -----------------------------------------------------------------------------------


def rank_arguments(rank):
    arguments.add_results(rank)
    arguments.add_output(rank, "write here instead of standard output")
    rank_formats = "json (default: ranking.json's canonical bytes), table (plain text) or markdown"
    arguments.add_format(rank, ("json", "table", "markdown"), rank_formats)


def cmd_rank(args, console):
    from ..errors import RankingInputError
    from ..ranking import compute_ranking, format_leaderboard, ranking_bytes

    try:
        ranking, warnings = from_results(args.results, compute_ranking)
    except RankingInputError as exc:
        return results_error(console, args.results, exc)
    if args.format == "json":
        data = ranking_bytes(ranking)
    else:
        data = (format_leaderboard(ranking, args.format) + "\n").encode("utf-8")
    print_warnings(console, args.results, warnings)
    write_result(console, args.output, data)
    return 0


# -- stats ----------------------------------------------------------------------------------

STATS_EPILOG = (
    "--format json is statistics.json (statistics 1.0, docs/statistics.md): the same bytes on every machine for the "
    "same files, B and seed. Needs numpy and scipy: pip install 'ember-eval[stats]'; table and markdown also need "
    "tabulate ('ember-eval[cli]'). A progress bar counts the resamples on a terminal."
)


def stats_arguments(stats):
    arguments.add_results(stats)
    arguments.add_output(stats, "write here instead of standard output")
    stats_formats = "json (default: statistics.json's canonical bytes), table (plain text) or markdown"
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
    from ..errors import RankingInputError
    from ..progress import count_progress
    from ..ranking import require_tabulate
    from ..stats import compute_statistics, require, statistics_bytes
    from ..stats.text import format_statistics

    require()  # a missing extra fails before the files are read
    if args.format != "json":
        require_tabulate()

    def build(campaign, episodes):
        with count_progress(args.replicates, "resampling", console.progress_stream) as progress:
            return compute_statistics(campaign, episodes, args.replicates, args.seed, progress)

    try:
        statistics, warnings = from_results(args.results, build)
    except RankingInputError as exc:
        return results_error(console, args.results, exc)
    if args.format == "json":
        data = statistics_bytes(statistics)
    else:
        data = (format_statistics(statistics, args.format) + "\n").encode("utf-8")
    print_warnings(console, args.results, warnings)
    write_result(console, args.output, data)
    return 0


# -- report ---------------------------------------------------------------------------------

REPORT_FILE = "report.html"


def report_arguments(report):
    arguments.add_results(report)
    page_help = f"where to write the page (default: {REPORT_FILE} in the current directory; - for standard output)"
    arguments.add_output(report, page_help, "FILE.html", default=REPORT_FILE)
    add_resampling(report)


def cmd_report(args, console):
    from ..errors import RankingInputError
    from ..report import build_report

    try:
        page, warnings = from_results(
            args.results, lambda campaign, episodes: build_report(campaign, episodes, args.replicates, args.seed)
        )
    except RankingInputError as exc:
        return results_error(console, args.results, exc)
    print_warnings(console, args.results, warnings)
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
    keep_help = "store each run episode's record as RESULTS_DIR/records/POLICY/SCENARIO/SEED.record.gz"
    evaluate.add_argument("--keep-records", action="store_true", help=keep_help)


def rank_results(console, results_dir):
    """ranking.json (ranking.md) of a finished results directory, written atomically; the leaderboard text."""
    from ..errors import MissingExtraError
    from ..ranking import compute_ranking, format_leaderboard, ranking_bytes

    ranking, warnings = from_results(results_dir, compute_ranking)
    print_warnings(console, results_dir, warnings)
    write_result(console, os.path.join(results_dir, "ranking.json"), ranking_bytes(ranking))
    try:
        return format_leaderboard(ranking, "table")
    except MissingExtraError:
        return None


def cmd_evaluate(args, console):
    from ..campaign import Terminated, evaluate
    from ..errors import RankingInputError

    try:
        summary = evaluate(
            args.campaign,
            args.output,
            workers=args.workers,
            scheduler=args.scheduler,
            retries=args.retries,
            retry_failed=args.retry_failed,
            keep_records=args.keep_records,
            stream=console.progress_stream,
            warn=console.warn,
        )
    except Terminated:
        console.say("ember: terminated; every finished episode is in episodes.jsonl, run again to resume.")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        console.say("ember: interrupted; every finished episode is in episodes.jsonl, run again to resume.")
        return EXIT_INTERRUPTED
    try:
        leaderboard = rank_results(console, args.output)
    except RankingInputError as exc:
        return results_error(console, args.output, exc)
    console.say(f"ember: {summary.line()}")
    if leaderboard is None:
        console.say(
            "ember: ranking.json is written; the leaderboard table needs tabulate: pip install 'ember-eval[cli]'."
        )
    else:
        console.write(leaderboard.rstrip("\n") + "\n")
    return 0 if summary.missing == 0 else EXIT_INCOMPLETE


# -- export ---------------------------------------------------------------------------------


def export_arguments(export):
    arguments.add_results(export, "a results directory of 'ember evaluate'")
    arguments.add_output(export, "write the CSV here instead of standard output")


def cmd_export(args, console):
    from ..campaign import export_csv

    text = export_csv(args.results, warn=console.warn)
    write_result(console, args.output, text.encode("utf-8"))
    return 0
