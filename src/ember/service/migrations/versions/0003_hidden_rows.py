"""The hidden track: its rows (failed ones have no record), a job's manifest and its reason for failing."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "hidden_rows",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("job_id", sa.String(36), sa.ForeignKey("jobs.id"), nullable=False),
        sa.Column("scenario_id", sa.String(64), nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("row", sa.LargeBinary, nullable=False),
        sa.Column("row_sha256", sa.String(64), nullable=False),
        sa.Column("record_sha256", sa.String(64), nullable=True),
        sa.Column("stored", sa.String(200), nullable=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.UniqueConstraint("job_id", "scenario_id", "seed"),
    )
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("manifest", sa.LargeBinary, nullable=True))
        batch.add_column(sa.Column("error", sa.Text, nullable=True))


def downgrade():
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("error")
        batch.drop_column("manifest")
    op.drop_table("hidden_rows")
