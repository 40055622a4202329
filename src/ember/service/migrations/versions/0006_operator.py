"""A team the operator disabled: ``teams.disabled_at`` (its tokens stop working; its rows stay)."""

import sqlalchemy as sa
from alembic import op

revision = "0006_operator"
down_revision = "0005_doors"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("teams") as batch:
        batch.add_column(sa.Column("disabled_at", sa.String(32), nullable=True))


def downgrade():
    with op.batch_alter_table("teams") as batch:
        batch.drop_column("disabled_at")
