"""The hidden track's two key sets (live and final), its closing before the reveal, and kept stderr tails."""

import sqlalchemy as sa
from alembic import op

revision = "0004_hidden"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("boards") as batch:
        batch.add_column(sa.Column("hidden_state", sa.String(12), nullable=True))
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("key_set", sa.String(8), nullable=True))
        batch.add_column(sa.Column("origin", sa.String(36), nullable=True))
    with op.batch_alter_table("hidden_rows") as batch:
        batch.add_column(sa.Column("stderr", sa.LargeBinary, nullable=True))
        batch.alter_column("seq", existing_type=sa.Integer, nullable=True)


def downgrade():
    with op.batch_alter_table("hidden_rows") as batch:
        batch.alter_column("seq", existing_type=sa.Integer, nullable=False)
        batch.drop_column("stderr")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("origin")
        batch.drop_column("key_set")
    with op.batch_alter_table("boards") as batch:
        batch.drop_column("hidden_state")
