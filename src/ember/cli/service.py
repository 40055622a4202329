"""``ember service ...`` (its own small command table) and ``ember submit`` (service.md §2).

``SERVICE_COMMANDS`` are ``Command`` rows named by their words after
``service`` ("board add", "token revoke"); the ``service`` row of the main
table builds their parsers and runs the chosen one.  Everything they do
is in ``ember.service`` (the ``service`` extra), imported when they run.
"""

from . import arguments
from .arguments import always, never
from .command import Command
from .exits import EXIT_MISMATCH

SERVICE_INSTALL = "pip install 'ember-eval[service]'"


def _service():
    try:
        import sqlalchemy  # noqa: F401
        import starlette  # noqa: F401

        import ember.service as service  # noqa: F401 (the extra's presence is what is checked)
    except ImportError as exc:
        from ..errors import MissingExtraError

        missing = f"the service needs the 'service' extra ({exc.name} is missing): {SERVICE_INSTALL}"
        raise MissingExtraError(missing) from None


def _data(parser):
    parser.add_argument("data", metavar="DATA", help="the service directory ('ember service init' makes it)")


def _operate(args, act, migrated=True):
    """``act(config, db)`` on the service directory ``args.data`` (migrated unless ``migrated`` is False, as a
    backup reads any), its database closed after."""
    _service()
    from ..service.registry import open_service

    config, db = open_service(args.data, migrated=migrated)
    try:
        return act(config, db)
    finally:
        db.dispose()


# -- init ------------------------------------------------------------------------------------


def init_arguments(parser):
    _data(parser)
    parser.add_argument(
        "--database", metavar="URL",
        help="a SQLAlchemy URL (postgresql+psycopg://USER@HOST/DB); default $EMBER_DATABASE_URL, else "
        "sqlite:///DATA/ember.db",
    )  # fmt: skip


def cmd_init(args, console):
    _service()
    from ..service.anchor import PUBLIC_KEY_FILE, load_key, public_key_text
    from ..service.registry import contents, existing_service, init_service

    found = existing_service(args.data, args.database)
    config = init_service(args.data, args.database)
    key = public_key_text(load_key(config.data))
    if found is None:
        console.say(
            f"ember: service directory {args.data} is ready (migrations applied, records in {config.records}; "
            f"the log's public key, in {PUBLIC_KEY_FILE}: {key})."
        )
        return 0
    done = []
    if found.pending:
        done.append("applied the pending migrations")
    if not found.had_key:
        done.append(f"made the log's key pair ({PUBLIC_KEY_FILE}: {key})")
    counts = ", ".join(f"{count} {name}" for name, count in _operate(args, lambda config, db: contents(db)).items())
    console.say(
        f"ember: {args.data} is a service directory already (database {found.database}: {counts}); "
        + ("; ".join(done) if done else "nothing changed")
        + "."
    )
    return 0


# -- board, team, token ------------------------------------------------------------------------


def board_add_arguments(parser):
    _data(parser)
    parser.add_argument("name", metavar="NAME", help="the board's name (an ID)")
    parser.add_argument("--campaign", metavar="FILE", required=True, help="a campaign file: its scenarios and seeds")
    parser.add_argument("--hidden", metavar="FILE", help="a campaign file whose scenarios form the hidden track")
    for option, text in (
        ("--opens", "the board takes submissions and bundles from T on (UTC, ISO 8601: 2026-12-03T07:00:00Z)"),
        ("--closes", "the board takes nothing from T on (UTC, ISO 8601)"),
        ("--reveal-at", "'serve' reveals the hidden track at T, as 'board reveal' does (UTC, ISO 8601)"),
    ):
        parser.add_argument(option, metavar="T", help=text)
    parser.add_argument("--description", metavar="TEXT", help="the board's description, shown with it")


def cmd_board_add(args, console):
    from ..service.registry import add_board

    board = _operate(
        args,
        lambda config, db: add_board(
            db, args.name, args.campaign, args.hidden, opens=args.opens, closes=args.closes,
            reveal_at=args.reveal_at, description=args.description,
        ),
    )  # fmt: skip
    episodes = sum(len(s["seeds"]) for s in board["scenarios"])
    line = f"ember: board {board['name']} added: {len(board['scenarios'])} scenarios, {episodes} episodes"
    times = (("opens", "opens"), ("closes", "closes"), ("reveals", "reveal_at"))
    phases = [f"{word} {board[key]}" for word, key in times if board[key] is not None]
    if phases:
        line += f" ({', '.join(phases)})"
    if board["hidden"] is not None:
        line += f"; hidden track committed: {board['hidden']['commitment']}"
    console.say(line + ".")
    if board.get("learnable"):
        console.warn(
            f"hidden scenarios {', '.join(board['learnable'])}: seeds in a 1.0 form are all live keys, so their "
            "hidden ranking can be learned from its own feedback; give them seeds = {live = L, final = F}"
        )
    return 0


def team_arguments(parser):
    _data(parser)
    parser.add_argument("team", metavar="TEAM", help="the team's name: [A-Za-z0-9][A-Za-z0-9_-]{0,23}")


def token_output_arguments(parser):
    team_arguments(parser)
    arguments.add_output(parser, "write the token to FILE, a new file made mode 0600 (the token is printed otherwise)")


def _token_to(args, console, make):
    """The token ``make()`` returns, printed, or written to ``-o FILE``: a new file, the owner's alone.

    The file is made (exclusively, mode 0600, links refused) before the team or token exists, so a path that
    cannot be written leaves nothing behind; a failure to make the token removes the file again.
    """
    if arguments.without_output_file(args):
        console.line(make())
        return 0
    import os

    from ..errors import OutputPathError

    try:
        fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise OutputPathError(f"{args.output}: exists already; a token goes to a new file") from None
    except OSError as exc:
        raise OutputPathError(f"{args.output}: {exc.strerror}") from None
    try:
        os.fchmod(fd, 0o600)  # whatever the umask was
        token = make()
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            fd = None
            handle.write(token + "\n")
    except BaseException:
        if fd is not None:
            os.close(fd)
        os.remove(args.output)
        raise
    console.say(f"ember: wrote the token of team {args.team} to {args.output} (mode 0600).")
    return 0


TEAMS_FROM_HELP = (
    "a file of team names, one a line (blank lines and lines starting with '#' skipped): every team is added, "
    "or none; needs -o DIR"
)


def team_add_arguments(parser):
    _data(parser)
    parser.add_argument(
        "team", metavar="TEAM", nargs="?", help="the team's name: [A-Za-z0-9][A-Za-z0-9_-]{0,23} (not with --from)"
    )
    parser.add_argument("--from", dest="names_file", metavar="FILE", help=TEAMS_FROM_HELP)
    arguments.add_output(
        parser, "write the token to FILE, a new file made mode 0600 (the token is printed otherwise); with --from, "
        "DIR: a new directory (mode 0700) holding DIR/TEAM.token for each team, each mode 0600"
    )  # fmt: skip


def team_names(path):
    """[(place, name)] of a --from file: one name a line, surrounding blanks stripped, blank and '#' lines skipped."""
    from ..errors import ServiceError

    try:
        with open(path, "rb") as handle:
            lines = handle.read().split(b"\n")
    except OSError as exc:
        raise ServiceError(f"--from {path}: {exc.strerror}") from None
    names = []
    for number, raw in enumerate(lines, 1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise ServiceError(f"{path}:{number}: expected UTF-8 text") from None
        if text and not text.startswith("#"):
            names.append((f"{path}:{number}", text))
    return names


def _tokens_into(folder, made):
    """Each (team, token) of ``made`` to ``folder``/TEAM.token: a new file, the owner's alone, links refused."""
    import os

    for team, token in made:
        fd = os.open(os.path.join(folder, f"{team}.token"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)  # whatever the umask was
            handle.write(token + "\n")


def cmd_team_add(args, console):
    _service()
    from ..errors import ServiceError
    from ..service.registry import add_team

    if (args.team is None) == (args.names_file is None):
        raise ServiceError("team add: expected TEAM or --from FILE (one of them)")
    if args.names_file is None:
        return _operate(args, lambda config, db: _token_to(args, console, lambda: add_team(db, args.team)))
    if arguments.without_output_file(args):
        raise ServiceError("team add --from: expected -o DIR, the new directory the tokens are written to")
    names = team_names(args.names_file)  # every line checked before anything is made
    made = _operate(args, lambda config, db: _teams_into(args.output, db, names))
    console.say(f"ember: added {len(made)} teams; their tokens are in {args.output}/TEAM.token (mode 0600).")
    return 0


def _teams_into(folder, db, names):
    """The teams of ``names`` added, their tokens in the new directory ``folder``; no team and no folder when
    either fails."""
    import os
    import shutil

    from ..errors import OutputPathError
    from ..service.registry import add_teams

    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        raise OutputPathError(f"{folder}: exists already; the tokens go to a new directory") from None
    except OSError as exc:
        raise OutputPathError(f"{folder}: {exc.strerror}") from None
    try:
        os.chmod(folder, 0o700)  # whatever the umask was
        return add_teams(db, names, deliver=lambda made: _tokens_into(folder, made))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def cmd_token_add(args, console):
    from ..service.registry import add_token

    return _operate(args, lambda config, db: _token_to(args, console, lambda: add_token(db, args.team)))


def token_revoke_arguments(parser):
    team_arguments(parser)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every live token of the team")
    which.add_argument("prefix", metavar="PREFIX", nargs="?", help="the first characters of the token (ember_XXXX...)")


def cmd_token_revoke(args, console):
    from ..service.registry import revoke_tokens

    count = _operate(args, lambda config, db: revoke_tokens(db, args.team, None if args.all else args.prefix))
    console.say(f"ember: revoked {count} token{'s' if count != 1 else ''} of team {args.team}.")
    return 0


def board_reveal_arguments(parser):
    _data(parser)
    parser.add_argument("name", metavar="BOARD", help="the board whose hidden track to reveal (service.md §9)")


def cmd_board_reveal(args, console):
    from ..service.hidden.secrecy import reveal

    state = _operate(args, lambda config, db: reveal(db, args.name))
    if state.revealed:
        console.say(f"ember: board {args.name}: the hidden track is revealed ({state.keys} keys and the salt).")
    else:
        console.say(
            f"ember: board {args.name}: the reveal has begun: no bundle is taken; {state.finished} of "
            f"{state.final_jobs} final jobs done; 'ember service serve' runs the rest, then publishes the keys, "
            "the salt and every hidden row."
        )
    return 0


def check_commitment_arguments(parser):
    parser.add_argument("url", metavar="URL", help="the service (https://HOST; http:// only to a loopback address)")
    parser.add_argument("board", metavar="BOARD")


def cmd_check_commitment(args, console):
    _service()
    from ..service.hidden.secrecy import check_commitment

    found = check_commitment(args.url, args.board)
    for problem in found.problems:
        console.line(f"{args.board}: {problem}")
    verdict = "holds" if found.holds else "does NOT hold"
    console.line(f"ember service check-commitment: board {args.board}: commitment {found.commitment} {verdict}.")
    return 0 if found.holds else EXIT_MISMATCH


# -- the operator's list and acts ---------------------------------------------------------------


def list_arguments(parser):
    _data(parser)
    parser.add_argument("what", choices=("boards", "teams", "submissions", "jobs"), help="what to list")
    parser.add_argument("--board", metavar="B", help="only board B's (teams: those with a submission or job on B)")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="a table (default) or JSON")


def cmd_list(args, console):
    from ..service.operator import listing

    columns, rows = _operate(args, lambda config, db: listing(db, args.what, args.board))
    if args.format == "json":
        from ..canonical import canonical_json

        console.line(canonical_json([dict(zip(columns, row)) for row in rows]).decode("utf-8"))
        return 0
    from ..summary import format_table

    shown = [["" if value is None else value for value in row] for row in rows]
    if rows:
        console.line(format_table(columns, shown))
    else:
        console.say(f"ember: no {args.what}.")
    return 0


def submission_arguments(parser):
    _data(parser)
    parser.add_argument("id", metavar="ID", help="the submission's id (ember service list DATA submissions)")


def cmd_submission_withdraw(args, console):
    from ..service.operator import withdraw

    found = _operate(args, lambda config, db: withdraw(db, args.id))
    console.say(f"ember: withdrew submission {found.id} ({found.team}.{found.policy} on board {found.board}).")
    return 0


def cmd_team_disable(args, console):
    from ..service.operator import disable_team

    boards = _operate(args, lambda config, db: disable_team(db, args.team))
    console.say(
        f"ember: team {args.team} disabled: its tokens no longer work; its closed submissions stay ranked "
        f"(logged on {boards} board{'s' if boards != 1 else ''})."
    )
    return 0


def job_arguments(parser):
    _data(parser)
    parser.add_argument("id", metavar="ID", help="the job's id (ember service list DATA jobs)")


def cmd_job_rerun(args, console):
    from ..service.operator import rerun_job

    new = _operate(args, lambda config, db: rerun_job(config, db, args.id))
    console.line(new)
    console.say(f"ember: job {new} queued: job {args.id}'s bundle again ('serve' runs it).")
    return 0


# -- serve, export, reverify, backup ---------------------------------------------------------------


def serve_arguments(parser):
    _data(parser)
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=arguments.count(0), default=8000, help="the port (default: 8000)")
    parser.add_argument("--workers", type=arguments.count(1), default=1, metavar="N", help="server processes")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler for the hidden-track evaluator")


def cmd_serve(args, console):
    _service()
    from ..service.serve import checked, serve

    checked(args.data)[1].dispose()  # a DATA serve refuses is refused before anything is said
    console.say(f"ember: serving {args.data} on http://{args.host}:{args.port} ({args.workers} processes).")
    console.flush()
    serve(args.data, args.host, args.port, args.workers, scheduler=args.scheduler)
    return 0


def export_arguments(parser):
    _data(parser)
    parser.add_argument("board", metavar="BOARD", help="the board's name")
    arguments.add_output(parser, "the results directory to write (new or empty)", "RESULTS_DIR", required=True)
    parser.add_argument(
        "--track", choices=("open", "live", "final", "hidden"), default="open",
        help="the track (default: open; hidden: final when the board has final keys, else live)",
    )  # fmt: skip


def cmd_export(args, console):
    from ..service.bounds import export_with_bounds

    count = _operate(args, lambda config, db: export_with_bounds(db, config, args.board, args.output, args.track))
    console.say(f"ember: wrote {args.output}: {count} rows.")
    return 0


def reverify_arguments(parser):
    _data(parser)
    parser.add_argument("board", metavar="BOARD", help="the board's name")


def cmd_reverify(args, console):
    from ..service.operations import reverify

    checked, differ = _operate(args, lambda config, db: reverify(config, db, args.board))
    for record, reason in differ:
        console.line(f"{record}: {reason}")
    console.line(f"ember service reverify: {checked} rows, {len(differ)} differ.")
    return EXIT_MISMATCH if differ else 0


def backup_arguments(parser):
    _data(parser)
    arguments.add_output(
        parser, "the copy of the database (and FILE.records: the records it names)", "FILE", required=True
    )


def cmd_backup(args, console):
    from ..service.operations import backup

    count, sqlite = _operate(args, lambda config, db: (backup(config, db, args.output), db.sqlite), migrated=False)
    kind = "pg_restore" if not sqlite else "sqlite3"
    console.say(
        f"ember: wrote {args.output} (for {kind}) and {args.output}.records ({count} records; copy them from DATA)."
    )
    return 0


def _service_commands():
    def row(name, text, arguments_of, handler, writes=never, output=None):
        return Command(name, text, text[0].upper() + text[1:] + ".", arguments_of, handler, writes, output)

    return (
        row("init", "make a service directory, or apply its pending migrations", init_arguments, cmd_init),
        row("board add", "add a board from a campaign file's scenarios and seeds", board_add_arguments, cmd_board_add),
        row("board reveal", "publish a board's hidden seeds and salt (no job may be running)", board_reveal_arguments,
            cmd_board_reveal),
        row("check-commitment", "check a board's hidden-track commitment against its revealed seeds",
            check_commitment_arguments, cmd_check_commitment, always),
        row("team add", "add a team (or every team of --from FILE); prints its first API token once (or writes "
            "it: -o FILE, mode 0600; with --from, -o DIR: DIR/TEAM.token each)",
            team_add_arguments, cmd_team_add, arguments.without_output_file),
        row("token add", "give a team another API token (printed once, or written: -o FILE, mode 0600)",
            token_output_arguments, cmd_token_add, arguments.without_output_file),
        row("token revoke", "revoke a team's tokens (--all, or one by its prefix)", token_revoke_arguments,
            cmd_token_revoke),
        row("list", "list boards, teams, submissions or jobs (a table, or --format json)", list_arguments, cmd_list,
            always),
        row("submission withdraw", "withdraw a team's submission (an operator_withdraw log entry)",
            submission_arguments, cmd_submission_withdraw),
        row("team disable", "disable a team: its tokens stop working, its ranked submissions stay",
            team_arguments, cmd_team_disable),
        row("job rerun", "queue a new job for an ended job's bundle (prints the new job's id)", job_arguments,
            cmd_job_rerun, always),
        row("serve", "run the HTTP service (uvicorn)", serve_arguments, cmd_serve),
        row("export", "write a board's track as a results directory", export_arguments, cmd_export, never, "-o"),
        row("reverify", "re-authenticate every stored record of a board", reverify_arguments, cmd_reverify, always),
        row("backup", "a consistent copy of the database (SQLite's backup, or pg_dump's custom format)",
            backup_arguments, cmd_backup, never, "-o"),
    )  # fmt: skip


def service_arguments(parser):
    """The ``service`` row's arguments: a subcommand per ``SERVICE_COMMANDS`` row (two words: a nested level)."""
    sub = parser.add_subparsers(dest="service_command", metavar="COMMAND", required=True, help="the service command")
    groups = {}
    for row in _service_commands():
        words = row.name.split()
        target = sub
        if len(words) == 2:
            if words[0] not in groups:
                group = sub.add_parser(words[0], help=f"{words[0]} commands")
                groups[words[0]] = group.add_subparsers(
                    dest=f"{words[0]}_command", metavar="COMMAND", required=True, help=f"the {words[0]} command"
                )
            target = groups[words[0]]
        command = target.add_parser(words[-1], help=row.help, description=row.description)
        row.arguments(command)
        command.set_defaults(service_row=row)


def cmd_service(args, console):
    return args.service_row.handler(args, console)


def service_writes_stdout(args):
    row = getattr(args, "service_row", None)
    return row is not None and row.writes_stdout(args)


# -- submit ------------------------------------------------------------------------------------

SUBMIT_EPILOG = (
    "Exit status: 0 when the submission is closed (or complete, with --no-close), 1 when some episodes were "
    "refused (each named with the server's message), 2 for bad input. A progress bar shows on a terminal. "
    "With --agent BUNDLE (the hidden track): prints the job's id and exits 0 once the service accepts the bundle."
)


def submit_arguments(parser):
    parser.add_argument("url", metavar="URL", help="the service (https://HOST; http:// only to a loopback address)")
    parser.add_argument("board", metavar="BOARD", help="the board's name")
    parser.add_argument("--token-file", metavar="F", required=True, help="a file holding the team's API token")
    parser.add_argument("--policy", metavar="NAME", help="the submission's policy name (not with --agent)")
    parser.add_argument(
        "source", metavar="SOURCE", help="a results directory (--keep-records) or a records folder; with --agent, "
        "the bundle; with --status, the submission's id"
    )  # fmt: skip
    # --agent BUNDLE reads as the flag and SOURCE (argparse cannot take an optional positional before options).
    parser.add_argument(
        "--agent", action="store_true", help="SOURCE is a .tar.gz agent bundle for the hidden track (service.md §6)"
    )
    parser.add_argument("--jobs", type=arguments.count(1), default=4, metavar="N", help="uploads at once (default 4)")
    parser.add_argument("--no-close", action="store_true", help="do not close the submission when it is complete")
    # --status ID reads as the flag and SOURCE, as --agent BUNDLE does.
    parser.add_argument(
        "--status", action="store_true", help="SOURCE is a submission's id (the team's own): show its state, the "
        "episodes done and missing, its refusals, instead of submitting"
    )  # fmt: skip
    parser.add_argument("--format", choices=("table", "json"), default="table", help="with --status: the output form")
    parser.add_argument(
        "--description", metavar="TEXT", help="one line (at most 200 characters) saying what the submission is"
    )
    parser.add_argument("--link", metavar="URL", help="an http(s) URL with more about it (a paper, the code)")


def cmd_submit(args, console):
    _service()
    from ..errors import ServiceError
    from ..progress import items_progress
    from ..service.client import read_token, submit

    about = args.description is not None or args.link is not None
    if args.status:
        if args.agent or args.policy is not None or about:
            raise ServiceError("ember submit --status ID: takes no --policy, --agent, --description or --link")
        from ..service.client import submission_status

        answer = submission_status(args.url, read_token(args.token_file), args.source)
        console.line(_status_text(answer, args.format, SUBMISSION_FIELDS))
        return 0
    if args.agent == (args.policy is not None):
        raise ServiceError("ember submit: expected --policy NAME SOURCE (the open track) or --agent BUNDLE (hidden)")
    if args.agent and about:
        raise ServiceError("ember submit --agent BUNDLE: takes no --description or --link (they describe a submission)")
    token = read_token(args.token_file)
    if args.agent:
        from ..service.client import submit_agent

        console.line(f"ember submit: job {submit_agent(args.url, args.board, token, args.source)} is queued.")
        return 0
    with items_progress("uploading", "records", console.progress_stream) as on_item:
        outcome = submit(
            args.url, args.board, token, args.policy, args.source, args.jobs, not args.no_close, on_item,
            description=args.description, link=args.link,
        )  # fmt: skip
    for scenario_id, seed, message in outcome.refused:
        console.warn(f"{scenario_id} seed {seed}: refused: {message}")
    console.line(f"ember submit: {outcome.line()}")
    if outcome.refused or outcome.missing:
        return EXIT_MISMATCH
    return 0


# -- bundle -----------------------------------------------------------------------------------------


def bundle_arguments(parser):
    parser.add_argument(
        "words", metavar="DIR | check FILE", nargs="+",
        help="DIR: a folder holding ember-agent.toml, written as a bundle to -o FILE; 'check FILE': run that "
        "bundle here in the sandbox on --scenario S (name a folder called 'check' as ./check)",
    )  # fmt: skip
    arguments.add_output(parser, "the bundle to write (a .tar.gz; with DIR)")
    parser.add_argument("--scenario", metavar="S", help="with check: the scenario to run on (builtin:NAME or a file)")
    parser.add_argument("--seed", type=arguments.count(0), default=0, metavar="N", help="with check: a public seed")
    parser.add_argument(
        "--team", metavar="TEAM", help="your team's name (TEAM.NAME must fit the service's limit; default: the "
        "longest team name, so the bundle fits any team)"
    )  # fmt: skip
    arguments.add_sandbox(parser, "with check")


def cmd_bundle(args, console):
    _service()
    from ..errors import ServiceError
    from ..service import bundle_tools

    words = args.words
    if words[0] == "check":
        if len(words) != 2 or args.scenario is None or args.output is not None:
            raise ServiceError("ember bundle check FILE --scenario S [--seed N]: expected one FILE and --scenario")
        run = bundle_tools.check_locally(words[1], args.scenario, args.seed, args.team, args.sandbox or "required")
        if run.ok:
            console.line(f"ember bundle check: {run.line()}")
            return 0
        console.line(f"ember bundle check: {run.line()}")
        return EXIT_MISMATCH
    if len(words) != 1 or args.output is None or args.scenario is not None or args.sandbox is not None:
        raise ServiceError("ember bundle DIR -o FILE: expected one folder and -o FILE (or: ember bundle check FILE)")
    manifest = bundle_tools.make_bundle(words[0], args.output, args.team)
    kind = "agent" if manifest.agent is not None else "python"
    console.say(f"ember: wrote {args.output}: policy {manifest.name} ({kind}); the service's checks pass.")
    return 0


#: The scalar fields of a status shown first, in this order; lists follow as tables or counts.
SUBMISSION_FIELDS = ("id", "board", "team", "policy", "state", "description", "link")
JOB_FIELDS = ("id", "state", "done", "total")


def _status_text(answer, form, fields):
    """A status answer as JSON (canonical), or as tables: its fields, then each list of objects, then each
    list of keys (episodes done, missing) as a count."""
    if form == "json":
        from ..canonical import canonical_json

        return canonical_json(answer).decode("utf-8")
    from ..summary import format_table

    shown = [(key, "" if answer[key] is None else answer[key]) for key in fields if key in answer]
    blocks = [format_table(("field", "value"), shown)]
    for key, value in answer.items():
        if key in fields or not isinstance(value, list):
            continue
        if value and all(isinstance(item, dict) for item in value):
            columns = [c for c in value[0] if not isinstance(value[0][c], (dict, list))]
            rows = [["" if item.get(c) is None else item.get(c) for c in columns] for item in value]
            blocks.append(f"{key}\n{format_table(columns, rows)}")
        elif value and all(isinstance(item, str) for item in value):
            blocks.append(f"{key}\n" + "\n".join(value))
        elif key != "rows":
            shown = ", ".join(f"{k[0]} seed {k[1]}" for k in value[:10]) + (", ..." if len(value) > 10 else "")
            blocks.append(f"{key}: {len(value)}" + (f" ({shown})" if value else ""))
    return "\n\n".join(blocks)


def jobs_arguments(parser):
    parser.add_argument("url", metavar="URL", help="the service (https://HOST; http:// only to a loopback address)")
    parser.add_argument("--token-file", metavar="F", required=True, help="a file holding the team's API token")
    parser.add_argument("id", metavar="ID", help="the job's id ('ember submit --agent' printed it)")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="a table (default) or JSON")


def cmd_jobs(args, console):
    _service()
    from ..service.client import job_status, read_token

    answer = job_status(args.url, read_token(args.token_file), args.id)
    console.line(_status_text(answer, args.format, JOB_FIELDS))
    return 0


__all__ = [
    "bundle_arguments", "cmd_bundle", "cmd_jobs", "cmd_service", "cmd_submit", "jobs_arguments",
    "service_arguments", "service_writes_stdout", "submit_arguments",
]  # fmt: skip
