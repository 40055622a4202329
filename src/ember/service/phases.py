"""A board's phases (docs/service.md, "Phases"): when it takes submissions and bundles, when it reveals.

``board add --opens T --closes T --reveal-at T`` fixes them (UTC, ISO 8601,
each optional).  Before ``opens`` and after ``closes`` a board takes nothing
a team sends: a new submission, a record, a closing, a hidden-track bundle
(409 naming the time); from ``reveal_at`` on its hidden track takes no
bundle either, so the jobs the reveal waits for are only those already
queued.  ``refuse_outside`` is the one place that decides, at the moment a
request arrives.  The ``serve`` parent reveals the hidden track at
``reveal_at`` (``hidden.reveal_at``).
"""

import datetime

from ..errors import ServiceError
from .errors import ServiceRefusal

#: The form times are stored and shown in: UTC, to the second.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
EXAMPLE = "2026-12-03T07:00:00Z"
MAX_BOARD_DESCRIPTION = 2000


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def parse_time(text, option):
    """The UTC time ``text`` (ISO 8601, ``Z`` or ``+00:00``, to the second) as ``TIME_FORMAT``; ``option`` names
    where it came from.  A time without a zone, in another zone or with a fraction of a second is refused."""
    expected = f"expected a UTC time in ISO 8601 to the second, e.g. {EXAMPLE}"
    try:
        moment = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ServiceError(f"{option}: {expected}, got {text!r:.80}") from None
    if moment.tzinfo is None:
        raise ServiceError(f"{option}: {expected}, got {text!r:.80} (no time zone)")
    if moment.utcoffset() != datetime.timedelta(0):
        raise ServiceError(f"{option}: {expected}, got {text!r:.80} (offset {moment.strftime('%z')})")
    if moment.microsecond:
        raise ServiceError(f"{option}: {expected}, got {text!r:.80} (a fraction of a second)")
    return moment.strftime(TIME_FORMAT)


def moment_of(stored):
    """The aware datetime of a stored time, or None."""
    if stored is None:
        return None
    return datetime.datetime.strptime(stored, TIME_FORMAT).replace(tzinfo=datetime.timezone.utc)


def check_phases(opens, closes, reveal_at, hidden):
    """Refuse phases that cannot be meant: ``opens`` not before ``closes``, a reveal before the board closes, a
    reveal of a board without a hidden track (each argument a stored time or None)."""
    if reveal_at is not None and not hidden:
        raise ServiceError("--reveal-at: the board has no hidden track to reveal (--hidden FILE)")
    if opens is not None and closes is not None and not opens < closes:
        raise ServiceError(f"--closes: expected a time after --opens {opens}, got {closes}")
    if reveal_at is not None and closes is not None and reveal_at < closes:
        raise ServiceError(f"--reveal-at: expected a time at or after --closes {closes}, got {reveal_at}")
    if reveal_at is not None and opens is not None and not opens < reveal_at:
        raise ServiceError(f"--reveal-at: expected a time after --opens {opens}, got {reveal_at}")


def check_board_description(text):
    """A board's description: the operator's words, at most ``MAX_BOARD_DESCRIPTION`` characters, lines of
    printable text."""
    if not text.strip():
        raise ServiceError("--description: expected some text, got none")
    if len(text) > MAX_BOARD_DESCRIPTION:
        raise ServiceError(f"--description: expected at most {MAX_BOARD_DESCRIPTION} characters, got {len(text)}")
    bad = next((c for c in text if c != "\n" and not c.isprintable()), None)
    if bad is not None:
        raise ServiceError(f"--description: expected printable text and newlines, got the character {bad!r}")
    return text


def board_columns(opens, closes, reveal_at, description, hidden):
    """The ``boards`` columns of ``board add``'s ``--opens``, ``--closes``, ``--reveal-at`` (text or None) and
    ``--description`` (None or text), each checked; ``hidden``: whether the board has a hidden track."""
    times = {
        key: None if text is None else parse_time(text, option)
        for key, option, text in (("opens", "--opens", opens), ("closes", "--closes", closes),
                                  ("reveal_at", "--reveal-at", reveal_at))
    }  # fmt: skip
    check_phases(times["opens"], times["closes"], times["reveal_at"], hidden)
    if description is not None:
        check_board_description(description)
    return {**times, "description": description}


def refuse_outside(board, bundle=False, now=None, headers=None):
    """409 unless ``board`` takes what a team sends at ``now`` (default: this moment): after ``opens``, before
    ``closes`` and, for a hidden-track ``bundle``, before ``reveal_at``."""
    now = now or utc_now()
    shown = now.strftime(TIME_FORMAT)
    if board.opens is not None and now < moment_of(board.opens):
        message = f"board {board.name} opens at {board.opens}: it takes nothing before (it is {shown})"
        raise ServiceRefusal(409, message, headers=headers)
    if board.closes is not None and now >= moment_of(board.closes):
        message = f"board {board.name} closed at {board.closes}: it takes nothing after (it is {shown})"
        raise ServiceRefusal(409, message, headers=headers)
    if bundle and board.reveal_at is not None and now >= moment_of(board.reveal_at):
        message = f"board {board.name} reveals its hidden track at {board.reveal_at}: no bundle from then on"
        raise ServiceRefusal(409, f"{message} (it is {shown})", headers=headers)


def reveal_due(board, now=None):
    """True when ``board`` has a ``reveal_at`` that has come."""
    return board.reveal_at is not None and (now or utc_now()) >= moment_of(board.reveal_at)
