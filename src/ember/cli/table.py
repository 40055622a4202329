"""The command table: one row per ``ember`` command, in the order ``ember --help`` lists them."""

from ..results.layout import CAMPAIGN_FILE, EPISODES_FILE, RANKING_FILE, STATISTICS_FILE
from . import bounds, generating, interop, records, results, service
from .arguments import always, never, progress_note, with_output_dash, without_output_file
from .command import Command

__all__ = ["COMMANDS", "Command"]


COMMANDS = (
    Command(
        "run",
        help="run a policy or an agent on a scenario and stream the record",
        description="Run one episode and write its canonical record, one line per step, flushed as the episode runs.",
        epilog=records.RUN_EPILOG,
        arguments=records.run_arguments,
        handler=records.cmd_run,
        writes_stdout=without_output_file,
    ),
    Command(
        "metrics",
        help="validate, replay and measure a record",
        description="Compute the official per-episode metrics of a record, after validating and replaying it. "
        "Bad input: one line on stderr, exit status 2, nothing on stdout.",
        epilog=progress_note,
        arguments=records.metrics_arguments,
        handler=records.cmd_metrics,
        writes_stdout=without_output_file,
    ),
    Command(
        "replay",
        help="check that a record replays byte-identically",
        description="Replay a record's actions with its seed; exit 0 when the replay is byte-identical, "
        "else 2 with the first difference on stderr.",
        epilog=progress_note,
        arguments=records.replay_arguments,
        handler=records.cmd_replay,
        writes_stdout=never,
        output=None,
    ),
    Command(
        "demo",
        help="run the greedy policy on a built-in scenario and summarise it",
        description="Run the greedy policy, write the record, compute its metrics and print a short summary: "
        "who got out, how fast, how often moves were blocked, which exits were used.",
        arguments=records.demo_arguments,
        handler=records.cmd_demo,
        writes_stdout=always,
    ),
    Command(
        "render",
        help="draw a record as a GIF, a PNG or ASCII text",
        description="Draw an episode: an animated GIF of every step, a PNG still of one step, "
        "or (--ascii, no Pillow needed) the grid of one step as text on standard output. "
        "Images need Pillow: pip install 'ember-eval[viz]'.",
        epilog=records.render_epilog,
        arguments=records.render_arguments,
        handler=records.cmd_render,
        writes_stdout=records.renders_ascii,
    ),
    Command(
        "trajectories",
        help="write a record's trajectories for PedPy, with its geometry",
        description="Write every active person's position at every step in PedPy's plain-text trajectory format "
        "(id frame x y z, metres, pedpy.load_trajectory_from_txt), and with --geometry the floor as PedPy geometry. "
        "Bad input: one line on stderr, exit status 2, nothing written.",
        epilog=interop.TRAJECTORIES_EPILOG,
        arguments=interop.trajectories_arguments,
        handler=interop.cmd_trajectories,
        writes_stdout=without_output_file,
        more_outputs=("--geometry",),
    ),
    Command(
        "bounds",
        help="the most evacuations and fewest casualties possible in an episode",
        description="Compute bounds 1.0 (docs/bounds.md) of SCENARIO for each --seed: the most people any sequence "
        "of joint actions evacuates and the fewest casualties it ends with, knowing the seed's fire. "
        "Bad input: one line on stderr, exit status 2, nothing on stdout.",
        epilog=bounds.BOUNDS_EPILOG,
        arguments=bounds.bounds_arguments,
        handler=bounds.cmd_bounds,
        writes_stdout=bounds.writes_stdout,
    ),
    Command(
        "scenarios",
        help="list the built-in scenarios, or show one's JSON",
        description="List the scenarios shipped with EMBER, addressed as builtin:NAME; "
        "'ember scenarios show NAME' writes one as canonical JSON, its hash on standard error.",
        arguments=records.scenarios_arguments,
        handler=records.cmd_scenarios,
        writes_stdout=always,
        output=None,
    ),
    Command(
        "rank",
        help="rank the policies of a campaign's results directory",
        description=f"Recompute the leaderboard (ranking 1.0, docs/ranking.md) from RESULTS_DIR/{CAMPAIGN_FILE} and "
        f"RESULTS_DIR/{EPISODES_FILE}. Policies are sorted by (casualties, stranded, person-time to safety, exposure): "
        "speed never buys safety. Bad input: one line on stderr naming the file and line, exit status 2.",
        epilog=f"--format json is byte for byte the {RANKING_FILE} that 'ember evaluate' writes from the same files. "
        "table and markdown need tabulate: pip install 'ember-eval[cli]'.",
        arguments=results.rank_arguments,
        handler=results.cmd_rank,
        writes_stdout=without_output_file,
    ),
    Command(
        "stats",
        help="how sure the ranking is: bootstrap intervals, groups and pairs",
        description="Compute statistics 1.0 (docs/statistics.md) of RESULTS_DIR: a stratified paired bootstrap over "
        "episode keys (scenarios as strata) gives each ranked policy 95% intervals of its totals and rank, its group "
        "of policies not separable from the one above, and each adjacent pair its order shares and exact sign test; "
        "Clopper-Pearson intervals bound the share of episodes with casualties. The ranking itself never changes. "
        "Bad input (the files, --replicates, --seed): one line on stderr, exit status 2, nothing written.",
        epilog=results.STATS_EPILOG,
        arguments=results.stats_arguments,
        handler=results.cmd_stats,
        writes_stdout=without_output_file,
    ),
    Command(
        "report",
        help="write a self-contained HTML report of a campaign's results",
        description="Write one HTML page that opens offline: the leaderboard with its formula, the unranked policies "
        "and why, per-scenario tables, pairwise evidence and plots (evacuation curves, casualties, exit shares, "
        "fire distances), each showing the spread over seeds, and the statistics of 'ember stats' (rank intervals, "
        "groups, interval bars, adjacent pairs, few-seed warnings). Needs matplotlib and the stats extra: "
        "pip install 'ember-eval[report]'.",
        arguments=results.report_arguments,
        handler=results.cmd_report,
        writes_stdout=with_output_dash,
    ),
    Command(
        "evaluate",
        help="run a campaign: many policies on many episodes, then rank them",
        description="Evaluate every policy of a campaign file (TOML, docs/campaigns.md) on every scenario x seed, "
        f"in local worker processes or on a Dask cluster; rows go to RESULTS_DIR/{EPISODES_FILE} as episodes finish, "
        f"then {RANKING_FILE} is written and the leaderboard printed. Running it again resumes: only episodes without "
        "a row run, and the campaign may add policies, scenarios and seeds.",
        epilog=results.EVALUATE_EPILOG,
        arguments=results.evaluate_arguments,
        handler=results.cmd_evaluate,
        writes_stdout=always,  # the leaderboard: refused before running when stdout is closed
    ),
    Command(
        "export",
        help="write a results directory's rows as CSV",
        description="One CSV row per counting row (the last row of each policy and episode), "
        "ordered by policy, scenario and seed, with every numeric metric as a dotted column.",
        arguments=results.export_arguments,
        handler=results.cmd_export,
        writes_stdout=without_output_file,
    ),
    Command(
        "verify",
        help="re-verify a results directory's rows from their records",
        description="Re-authenticate every counting ok row of RESULTS_DIR from its record (kept with "
        "'ember evaluate --keep-records', or submitted through a records entry): the record's SHA-256, the full "
        "engine (validation, replay, metrics) for the row's scenario and seed, and the metrics, compared "
        "type-strictly with the row's; a row without its record cannot be checked, and fails unless "
        f"--allow-unverifiable; {RANKING_FILE} and {STATISTICS_FILE}, when there, are recomputed and compared byte "
        "for byte. Prints a line per mismatched or unverifiable row or file and one summary line.",
        epilog=results.VERIFY_EPILOG,
        arguments=results.verify_arguments,
        handler=results.cmd_verify,
        writes_stdout=always,
        output=None,
    ),
    Command(
        "generate",
        help="generate a scenario from a seeded family",
        description="Write a scenario of a family (see --list) for a generator seed, as canonical JSON. "
        "The same arguments give the same bytes on every machine and Python version; every person can reach "
        "an exit at t = 0, and the fire can cut at least one person's route (docs/generate.md).",
        epilog="Parameters not given take the family's default; a parameter the family does not have is refused.",
        arguments=generating.generate_arguments,
        handler=generating.cmd_generate,
        writes_stdout=generating.generate_writes_stdout,
    ),
    Command(
        "suite",
        help="write the campaign file of a scenario suite",
        description="Write a campaign file (TOML, campaign.md) with every scenario of the suite, its seeds, and the "
        "built-in baselines; add your agent as another [[policies]] entry and run 'ember evaluate' on it. "
        "--tier, --scenario and --seeds keep a part of it (docs/generate.md).",
        epilog="Suites: ember-v1 (24 scenarios, builtin:ember-v1/NAME, listed by 'ember scenarios').",
        arguments=generating.suite_arguments,
        handler=generating.cmd_suite,
        writes_stdout=without_output_file,
    ),
    Command(
        "service",
        help="run a benchmark service: boards, teams, tokens, the HTTP API, exports",
        description="The EMBER service (docs/service.md): 'ember service init DATA' makes a service directory, "
        "'board add', 'team add' and 'token add|revoke' administer it, 'list' shows what is there, "
        "'submission withdraw', 'team disable' and 'job rerun' act on it, 'serve' runs the HTTP API (uvicorn), "
        "'export' writes a board as a results directory, 'reverify' re-checks every stored record, 'backup' copies "
        "the database (docs/operating.md). Needs the service extra: pip install 'ember-eval[service]'.",
        arguments=service.service_arguments,
        handler=service.cmd_service,
        writes_stdout=service.service_writes_stdout,
        output=None,
    ),
    Command(
        "submit",
        help="submit a policy's records to a board of an EMBER service",
        description="Create (or find) the submission of --policy NAME on BOARD, upload the episodes it is missing "
        "from SOURCE (a results directory made with --keep-records, or a folder laid out like a records entry), "
        "each verified by the service as it streams, and close the submission when it is complete; with --status "
        "ID, show a submission of the team's instead.",
        epilog=service.SUBMIT_EPILOG,
        arguments=service.submit_arguments,
        handler=service.cmd_submit,
        writes_stdout=always,
        output=None,
    ),
    Command(
        "jobs",
        help="show a hidden-track job of the team's on an EMBER service",
        description="The state of job ID (sent with 'ember submit --agent'): episodes done of the total, per "
        "scenario, and its failures, as the service tells the team (before the reveal: live keys only, fixed "
        "reasons).",
        arguments=service.jobs_arguments,
        handler=service.cmd_jobs,
        writes_stdout=always,
        output=None,
    ),
)
