"""A board's phases (``opens``, ``closes``, ``reveal_at``) and description; a submission's description and link."""

import sqlalchemy as sa
from alembic import op

revision = "0008_phases"
down_revision = "0007_cluster"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("boards") as batch:
        batch.add_column(sa.Column("opens", sa.String(32), nullable=True))
        batch.add_column(sa.Column("closes", sa.String(32), nullable=True))
        batch.add_column(sa.Column("reveal_at", sa.String(32), nullable=True))
        batch.add_column(sa.Column("description", sa.Text, nullable=True))
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("description", sa.String(200), nullable=True))
        batch.add_column(sa.Column("link", sa.String(300), nullable=True))


def downgrade():
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("link")
        batch.drop_column("description")
    with op.batch_alter_table("boards") as batch:
        batch.drop_column("description")
        batch.drop_column("reveal_at")
        batch.drop_column("closes")
        batch.drop_column("opens")
