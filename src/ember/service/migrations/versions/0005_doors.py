"""Who owns a record on a board (the first acceptance; copies refused) and the lock of the counted limits."""

import sqlalchemy as sa
from alembic import op

revision = "0005_doors"
down_revision = "0004_hidden"
branch_labels = None
depends_on = None


def upgrade():
    owners = op.create_table(
        "record_owners",
        sa.Column("board_id", sa.Integer, sa.ForeignKey("boards.id"), primary_key=True),
        sa.Column("record_sha256", sa.String(64), primary_key=True),
        sa.Column("submission_id", sa.String(36), sa.ForeignKey("submissions.id"), nullable=False),
    )
    locks = op.create_table("locks", sa.Column("name", sa.String(16), primary_key=True))
    op.bulk_insert(locks, [{"name": "slots"}])
    # Rows accepted before: each record belongs to the first submission not withdrawn that holds it.
    connection = op.get_bind()
    found = connection.execute(
        sa.text(
            "SELECT s.board_id, r.record_sha256, r.submission_id FROM rows r JOIN submissions s"
            " ON s.id = r.submission_id WHERE s.state != 'withdrawn' ORDER BY r.seq, r.id"
        )
    ).all()
    first = {}
    for board_id, sha256, submission_id in found:
        first.setdefault((board_id, sha256), submission_id)
    if first:
        op.bulk_insert(owners, [{"board_id": b, "record_sha256": h, "submission_id": s} for (b, h), s in first.items()])


def downgrade():
    op.drop_table("locks")
    op.drop_table("record_owners")
