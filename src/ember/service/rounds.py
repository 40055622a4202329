"""The serve parent's background loops (bounds, derived files, reveals at their time, hidden jobs).

Each is a round repeated until its ``stop`` is set.  A round that fails is
tried again at the next: a database down or a full disk (``EmberError``,
``OSError``) silently, anything else (a defect) said once per distinct
line.  No failure ends the loop: a thread that died would leave its work
undone until the next start, with nothing said.
"""

import sys

from ..errors import EmberError

#: What a round returns to end its loop for good (there is nothing it can ever do in this process).
STOP = "stop"


def say_line(line):
    print(line, file=sys.stderr, flush=True)


def every_round(stop, interval, round_, what, say=say_line):
    """Call ``round_()`` until ``stop`` (a ``threading.Event``) is set.

    ``round_`` returns None (the next round after ``interval`` seconds), a number of seconds to wait instead
    (0: at once), or ``STOP``.  ``what`` names the loop in the line said of a defect.
    """
    said = set()
    while not stop.is_set():
        wait = interval
        try:
            answer = round_()
        except (EmberError, OSError):
            answer = None  # the next round tries again (a database down, a full disk)
        except Exception as exc:  # noqa: BLE001 (a defect: said once, tried again each round; the loop must not end)
            line = f"ember: {what} failed this round: {type(exc).__name__}: {exc}"
            if line not in said:
                said.add(line)
                say(line)
            answer = None
        if answer == STOP:
            return
        if answer is not None:
            wait = answer
        if wait:
            stop.wait(wait)
