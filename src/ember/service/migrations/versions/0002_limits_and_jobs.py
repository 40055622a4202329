"""Limits counted across server processes (uploads in flight, verifications) and hidden-track jobs."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "in_flight",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("started_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), nullable=False),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("policy", sa.String(64), nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        sa.Column("bundle", sa.String(200), nullable=False),
        sa.Column("owner", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.String(32), nullable=True),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("done_at", sa.String(32), nullable=True),
        sa.Column("data", sa.LargeBinary, nullable=True),
    )


def downgrade():
    op.drop_table("jobs")
    op.drop_table("in_flight")
