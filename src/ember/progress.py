"""Progress on a terminal's stderr: bytes of a big record read, steps of a run.

Progress is drawn only when the stream is a terminal: a redirected or
captured stderr (a log file, CI, a test) must hold only real messages.  The
line is redrawn with a carriage return at most ``UPDATES_PER_SECOND``
times a second and erased when the work ends, successful or not, so that
an error message that follows starts on a clean line.
"""

import contextlib
import os
import stat
import sys
import time

from .record.source import iter_chunks

#: Records smaller than this are read too fast for a progress bar to help.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024
UPDATES_PER_SECOND = 10
_BAR_WIDTH = 30


class ProgressLine:
    """One self-overwriting status line on a terminal stream."""

    def __init__(self, stream):
        self.stream = stream
        self._last = None  # monotonic time of the last redraw
        self._width = 0

    def show(self, text, force=False):
        now = time.monotonic()
        if not force and self._last is not None and now - self._last < 1 / UPDATES_PER_SECOND:
            return
        self._last = now
        pad = " " * max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write(f"\r{text}{pad}")
        self.stream.flush()

    def clear(self):
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def _file_size(source):
    """Bytes left to read from a path or a regular file, or None when unknown (a pipe)."""
    try:
        if isinstance(source, (str, os.PathLike)):
            return os.stat(source).st_size
        if hasattr(source, "fileno"):
            info = os.fstat(source.fileno())
            if stat.S_ISREG(info.st_mode):
                return info.st_size - source.tell()
    except (OSError, ValueError, AttributeError):
        pass  # the reader reports an unreadable source in its own words
    return None


def _bar(label, done, total):
    fraction = min(1.0, done / total) if total else 1.0
    filled = int(fraction * _BAR_WIDTH)
    mb = 1024 * 1024
    return f"ember: {label} [{'#' * filled}{'.' * (_BAR_WIDTH - filled)}] {fraction:4.0%} {done / mb:,.1f}/{total / mb:,.1f} MB"


def _counted(chunks, line, label, total):
    done = 0
    for chunk in chunks:
        yield chunk
        done += len(chunk)
        line.show(_bar(label, done, total))


@contextlib.contextmanager
def reading_progress(source, label="reading the record", stream=None, min_bytes=PROGRESS_MIN_BYTES):
    """Yield ``source`` itself, or an iterable of its chunks that draws a progress bar.

    The bar is drawn when ``stream`` (default: the current ``sys.stderr``)
    is a terminal and the source is a file of at least ``min_bytes``; any
    record reader accepts what is yielded (output.md: an iterable of bytes
    chunks is a record source).  The bar is erased on leaving the block.
    """
    stream = sys.stderr if stream is None else stream
    total = _file_size(source) if _is_terminal(stream) else None
    if total is None or total < min_bytes:
        yield source
        return
    line = ProgressLine(stream)
    try:
        yield _counted(iter_chunks(source), line, label, total)
    finally:
        line.clear()


class StepCounter:
    """Wraps a policy to show "step t of at most H" on a terminal while an episode runs."""

    def __init__(self, policy, max_steps, stream):
        self.policy = policy
        self.max_steps = max_steps
        self.line = ProgressLine(stream)

    def __call__(self, observation):
        self.line.show(f"ember: step {observation['step']:,} of at most {self.max_steps:,}")
        return self.policy(observation)

    def clear(self):
        self.line.clear()


@contextlib.contextmanager
def step_counter(policy, max_steps, stream=None):
    """Yield ``policy``, wrapped in a ``StepCounter`` when ``stream`` (default stderr) is a terminal."""
    stream = sys.stderr if stream is None else stream
    if not _is_terminal(stream):
        yield policy
        return
    counter = StepCounter(policy, max_steps, stream)
    try:
        yield counter
    finally:
        counter.clear()
