"""The service's tables (service.md §1), in SQLAlchemy Core: one schema for SQLite and PostgreSQL.

The migrations (``migrations/versions``) create exactly these; the code
reads and writes through these ``Table`` objects.  The tables are listed in
the order of the migration that creates each, and a column that a later
migration adds to an existing table is appended to it (``append_column``)
under that migration's heading, so each ``Table`` lists its columns in the
order the database holds them.  Canonical JSON (rows, log entries,
scenarios) is stored as bytes, never as a JSON column: a database's JSON
type may rewrite numbers (PostgreSQL's JSONB writes ``5e-05`` as
``0.00005``).  Seeds are below 2^63, so a signed 64-bit integer holds them.
"""

import sqlalchemy as sa

metadata = sa.MetaData()

# --- 0001_first: teams and tokens, boards and their scenarios, submissions, rows, refusals, the log ---

teams = sa.Table(
    "teams",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(24), nullable=False, unique=True),
    # Team names are unique ignoring case (service.md §2).
    sa.Column("folded", sa.String(24), nullable=False, unique=True),
    sa.Column("created_at", sa.String(32), nullable=False),
)

tokens = sa.Table(
    "tokens",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    # Only the token's SHA-256 is stored; the prefix lets an operator name a token to revoke.
    sa.Column("sha256", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("revoked_at", sa.String(32), nullable=True),
)

boards = sa.Table(
    "boards",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(64), nullable=False, unique=True),
    sa.Column("versions", sa.LargeBinary, nullable=False),  # canonical JSON
    sa.Column("hidden", sa.LargeBinary, nullable=True),  # canonical JSON: public part of the hidden track
    sa.Column("hidden_secret", sa.LargeBinary, nullable=True),  # canonical JSON: keys and salt until the reveal
    sa.Column("version", sa.Integer, nullable=False),  # the seq of the board's last log entry
    sa.Column("created_at", sa.String(32), nullable=False),
)

scenarios = sa.Table(
    "scenarios",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), nullable=False),
    sa.Column("track", sa.String(8), nullable=False),  # "open" or "hidden"
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("scenario_id", sa.String(64), nullable=False),
    sa.Column("scenario_hash", sa.String(71), nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),  # the scenario's canonical bytes
    sa.Column("seeds", sa.LargeBinary, nullable=False),  # canonical JSON list; the hidden track's count only
    sa.UniqueConstraint("board_id", "track", "scenario_id"),
)

submissions = sa.Table(
    "submissions",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), nullable=False),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("policy", sa.String(64), nullable=False),
    sa.Column("state", sa.String(12), nullable=False),  # open, closed, withdrawn
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("closed_at", sa.String(32), nullable=True),
    # Withdrawn names stay taken (service.md §3).
    sa.UniqueConstraint("board_id", "team_id", "policy"),
)

rows = sa.Table(
    "rows",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("submission_id", sa.String(36), sa.ForeignKey("submissions.id"), nullable=False),
    sa.Column("scenario_id", sa.String(64), nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("row", sa.LargeBinary, nullable=False),  # the row's canonical JSON, without its newline
    sa.Column("record_sha256", sa.String(64), nullable=False),
    sa.Column("stored", sa.String(200), nullable=False),  # the record's path in the store
    sa.Column("seq", sa.Integer, nullable=False),  # its log entry's seq
    # One accepted record per key, whatever the number of server processes (service.md §8).
    sa.UniqueConstraint("submission_id", "scenario_id", "seed"),
)

refusals = sa.Table(
    "refusals",
    metadata,
    sa.Column("submission_id", sa.String(36), sa.ForeignKey("submissions.id"), primary_key=True),
    sa.Column("scenario_id", sa.String(64), primary_key=True),
    sa.Column("seed", sa.BigInteger, primary_key=True),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("at", sa.String(32), nullable=False),
)

log = sa.Table(
    "log",
    metadata,
    sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("entry", sa.LargeBinary, nullable=False),  # the canonical JSON line with its hash, verbatim
    sa.Column("hash", sa.String(64), nullable=False),
)

# --- 0002_limits_and_jobs: limits counted across server processes, and hidden-track jobs ---

in_flight = sa.Table(
    "in_flight",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("kind", sa.String(8), nullable=False),  # "upload" (per team) or "verify" (per server)
    sa.Column("started_at", sa.String(32), nullable=False),
)

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.String(36), primary_key=True),
    sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), nullable=False),
    sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
    sa.Column("policy", sa.String(64), nullable=False),
    sa.Column("state", sa.String(12), nullable=False),  # queued, running, done, failed
    sa.Column("bundle", sa.String(200), nullable=False),
    sa.Column("owner", sa.String(64), nullable=True),
    sa.Column("lease_until", sa.String(32), nullable=True),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("done_at", sa.String(32), nullable=True),
    sa.Column("data", sa.LargeBinary, nullable=True),
)

# --- 0003_hidden_rows: the hidden track's rows, a job's manifest and failure ---

jobs.append_column(sa.Column("manifest", sa.LargeBinary, nullable=True))  # canonical JSON of ember-agent.toml
jobs.append_column(sa.Column("error", sa.Text, nullable=True))  # why a job failed (never a seed)

hidden_rows = sa.Table(
    "hidden_rows",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("job_id", sa.String(36), sa.ForeignKey("jobs.id"), nullable=False),
    sa.Column("scenario_id", sa.String(64), nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("row", sa.LargeBinary, nullable=False),  # the row's canonical JSON: secret until the reveal
    sa.Column("row_sha256", sa.String(64), nullable=False),
    sa.Column("record_sha256", sa.String(64), nullable=True),  # failed rows have no record
    sa.Column("stored", sa.String(200), nullable=True),
    sa.Column("seq", sa.Integer, nullable=True),  # its hidden_row entry's seq (a final row's: from the reveal)
    # One row per episode of a job, however often its evaluator is killed and resumed (service.md §6).
    sa.UniqueConstraint("job_id", "scenario_id", "seed"),
)

# --- 0004_hidden: the hidden track's live and final keys, its closing, kept stderr tails ---

# null, or "closed" once the reveal has begun: no bundle is taken while the final keys are evaluated.
boards.append_column(sa.Column("hidden_state", sa.String(12), nullable=True))
jobs.append_column(sa.Column("key_set", sa.String(8), nullable=True))  # "live" (null: a job made before) or "final"
jobs.append_column(sa.Column("origin", sa.String(36), nullable=True))  # a final job: the live job it runs again
# The episode's stderr tail (at most 64 KiB), kept once its job's folder is gone; served after the reveal.
hidden_rows.append_column(sa.Column("stderr", sa.LargeBinary, nullable=True))

# --- 0005_doors: who owns a record on a board, the lock of the limits counted across processes ---

record_owners = sa.Table(
    "record_owners",
    metadata,
    # The first acceptance of a record (by its SHA-256) on a board owns it: another team's copy is refused
    # (service.md §9).  Written in the accepting transaction; a withdrawn submission's records are freed.
    sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), primary_key=True),
    sa.Column("record_sha256", sa.String(64), primary_key=True),
    sa.Column("submission_id", sa.String(36), sa.ForeignKey("submissions.id"), nullable=False),
)

locks = sa.Table(
    "locks",
    metadata,
    # Rows locked (FOR UPDATE) around a count and the insert it allows, so that no two server processes
    # both count under a limit and both insert (on SQLite ``BEGIN IMMEDIATE`` does the same).
    sa.Column("name", sa.String(16), primary_key=True),
)

# --- the sixth schema version: a team the operator disabled (its tokens stop working) ---

teams.append_column(sa.Column("disabled_at", sa.String(32), nullable=True))

# --- 0007_cluster: leases of the work one of several serve hosts does for all of them ---

leases = sa.Table(
    "leases",
    metadata,
    # Who does a piece of shared work now: one row per (kind, name), e.g. ("board", NAME) for a board's
    # derived files.  Taken when free, expired or its holder's process is gone; renewed while held.  (A
    # hidden job's lease is its own row's ``owner`` and ``lease_until``.)
    sa.Column("kind", sa.String(16), primary_key=True),
    sa.Column("name", sa.String(200), primary_key=True),  # a board's name, a serve parent's holder name
    sa.Column("holder", sa.String(200), nullable=False),
    sa.Column("expires_at", sa.String(32), nullable=False),
)
# The serve parent whose servers hold a slot (its lease ("server", HOLDER) renewed while it lives): another
# host's start or a limit reached frees only the slots of a server that is gone.  Null: a slot of before.
in_flight.append_column(sa.Column("holder", sa.String(200), nullable=True))

# --- 0008_phases: when a board takes submissions and bundles, when it reveals; what a board and a submission are ---

# UTC times as "YYYY-MM-DDTHH:MM:SSZ" (null: no such limit), fixed at ``board add`` like the rest of a board.
boards.append_column(sa.Column("opens", sa.String(32), nullable=True))
boards.append_column(sa.Column("closes", sa.String(32), nullable=True))
boards.append_column(sa.Column("reveal_at", sa.String(32), nullable=True))
boards.append_column(sa.Column("description", sa.Text, nullable=True))
# A team's words about its submission (one line) and a link to more (http or https); null when not given.
submissions.append_column(sa.Column("description", sa.String(200), nullable=True))
submissions.append_column(sa.Column("link", sa.String(300), nullable=True))
