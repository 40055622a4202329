"""Several serve hosts on one database: the ``leases`` table (who derives a board's files now) and the serve
parent holding each upload slot (``in_flight.holder``)."""

import sqlalchemy as sa
from alembic import op

revision = "0007_cluster"
down_revision = "0006_operator"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "leases",
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.String(32), nullable=False),
    )
    with op.batch_alter_table("in_flight") as batch:
        batch.add_column(sa.Column("holder", sa.String(200), nullable=True))


def downgrade():
    with op.batch_alter_table("in_flight") as batch:
        batch.drop_column("holder")
    op.drop_table("leases")
