"""A team's rows on a board (a submission, a job): selected with their team's and board's names, found by id.

``submissions.find`` and ``hidden.jobs.find`` answer a participant's request for one (404 for an id that is
unknown or not a version-4 UUID, 403 for another team's); the operator's listings select them all.
"""

import uuid

import sqlalchemy as sa

from . import tables
from .errors import ServiceRefusal


def with_names(table, *columns):
    """A select of ``table``'s rows (or of ``columns`` of them) with their team's and board's names (``team``,
    ``board``)."""
    c = table.c
    return (
        sa.select(*(columns or (table,)), tables.teams.c.name.label("team"), tables.boards.c.name.label("board"))
        .join(tables.teams, tables.teams.c.id == c.team_id)
        .join(tables.boards, tables.boards.c.id == c.board_id)
    )


def find_owned(connection, table, row_id, team, what):
    """The row ``row_id`` of ``table`` with its team's and board's names; ``what`` ("submission", "job") names it
    in the refusals: 404 unknown, 403 another team's when ``team`` is given."""
    try:
        uuid.UUID(row_id, version=4)
    except (ValueError, AttributeError, TypeError):
        raise ServiceRefusal(404, f"no such {what}") from None
    found = connection.execute(with_names(table).where(table.c.id == row_id)).first()
    if found is None:
        raise ServiceRefusal(404, f"no such {what}")
    if team is not None and found.team_id != team.id:
        raise ServiceRefusal(403, f"this {what} belongs to another team")
    return found
