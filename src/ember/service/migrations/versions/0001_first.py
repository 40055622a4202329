"""The first schema: teams, tokens, boards, scenarios, submissions, rows, refusals, the audit log."""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(24), nullable=False, unique=True),
        sa.Column("folded", sa.String(24), nullable=False, unique=True),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("revoked_at", sa.String(32), nullable=True),
    )
    op.create_table(
        "boards",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("versions", sa.LargeBinary, nullable=False),
        sa.Column("hidden", sa.LargeBinary, nullable=True),
        sa.Column("hidden_secret", sa.LargeBinary, nullable=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "scenarios",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), nullable=False),
        sa.Column("track", sa.String(8), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("scenario_id", sa.String(64), nullable=False),
        sa.Column("scenario_hash", sa.String(71), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("seeds", sa.LargeBinary, nullable=False),
        sa.UniqueConstraint("board_id", "track", "scenario_id"),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), nullable=False),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("policy", sa.String(64), nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("closed_at", sa.String(32), nullable=True),
        sa.UniqueConstraint("board_id", "team_id", "policy"),
    )
    op.create_table(
        "rows",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submission_id", sa.String(36), sa.ForeignKey("submissions.id"), nullable=False),
        sa.Column("scenario_id", sa.String(64), nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("row", sa.LargeBinary, nullable=False),
        sa.Column("record_sha256", sa.String(64), nullable=False),
        sa.Column("stored", sa.String(200), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.UniqueConstraint("submission_id", "scenario_id", "seed"),
    )
    op.create_table(
        "refusals",
        sa.Column("submission_id", sa.String(36), sa.ForeignKey("submissions.id"), primary_key=True),
        sa.Column("scenario_id", sa.String(64), primary_key=True),
        sa.Column("seed", sa.BigInteger, primary_key=True),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
    )
    op.create_table(
        "log",
        sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("entry", sa.LargeBinary, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )


def downgrade():
    for name in ("log", "refusals", "rows", "submissions", "scenarios", "boards", "tokens", "teams"):
        op.drop_table(name)
