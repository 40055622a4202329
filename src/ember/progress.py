"""Progress on a terminal's stderr: bytes of a big record read, steps of a run.

Drawn by tqdm (the ``cli`` extra); without it there is no progress display,
silently.  Progress is drawn only when the stream is a terminal: a
redirected or captured stderr (a log file, CI, a test) must hold only real
messages.  The line is redrawn at most ``UPDATES_PER_SECOND`` times a
second and erased when the work ends, successful or not, so that an error
message that follows starts on a clean line.
"""

import contextlib
import os
import stat
import sys

from .record.source import iter_chunks

#: Records smaller than this are read too fast for a progress bar to help.
PROGRESS_MIN_BYTES = 8 * 1024 * 1024
UPDATES_PER_SECOND = 10
_MB = 1024 * 1024
_READING_FORMAT = "ember: {desc} [{bar:30}] {percentage:3.0f}% {n:,.1f}/{total:,.1f} MB"
_STEP_FORMAT = "ember: step {n:,} of at most {total:,}"


def _tqdm():
    """tqdm's class, or None without the ``cli`` extra."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


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


def _bar(tqdm, stream, **options):
    # One line, erased at the end (leave=False), throttled, plain ASCII.  The
    # size is fixed: tqdm draws nothing on a terminal that reports 0 rows.
    return tqdm(
        file=stream,
        leave=False,
        mininterval=1 / UPDATES_PER_SECOND,
        ascii=".#",
        ncols=120,
        nrows=24,
        dynamic_ncols=False,
        **options,
    )


def _counted(chunks, bar):
    for chunk in chunks:
        yield chunk
        bar.update(len(chunk))


@contextlib.contextmanager
def reading_progress(source, label="reading the record", stream=None, min_bytes=PROGRESS_MIN_BYTES):
    """Yield ``source`` itself, or an iterable of its chunks that draws a progress bar.

    The bar is drawn when ``stream`` (default: the current ``sys.stderr``)
    is a terminal, the source is a file of at least ``min_bytes`` and tqdm
    is installed; any record reader accepts what is yielded (output.md: an
    iterable of bytes chunks is a record source).  The bar is erased on
    leaving the block.
    """
    stream = sys.stderr if stream is None else stream
    total = _file_size(source) if _is_terminal(stream) else None
    tqdm = _tqdm() if total is not None and total >= min_bytes else None
    if tqdm is None:
        yield source
        return
    bar = _bar(tqdm, stream, total=total, desc=label, unit_scale=1 / _MB, bar_format=_READING_FORMAT)
    try:
        yield _counted(iter_chunks(source), bar)
    finally:
        bar.close()


class StepCounter:
    """Wraps a policy to show "step t of at most H" while an episode runs."""

    def __init__(self, policy, bar):
        self.policy = policy
        self.bar = bar

    def __call__(self, observation):
        self.bar.update(observation["step"] - self.bar.n)
        return self.policy(observation)


@contextlib.contextmanager
def step_counter(policy, max_steps, stream=None):
    """Yield ``policy``, wrapped in a ``StepCounter`` when ``stream`` (default stderr) is a terminal.

    Without tqdm, ``policy`` itself.
    """
    stream = sys.stderr if stream is None else stream
    tqdm = _tqdm() if _is_terminal(stream) else None
    if tqdm is None:
        yield policy
        return
    bar = _bar(tqdm, stream, total=max_steps, initial=1, bar_format=_STEP_FORMAT)  # drawn as step 1 starts
    try:
        yield StepCounter(policy, bar)
    finally:
        bar.close()


@contextlib.contextmanager
def items_progress(label, unit, stream=None):
    """Yield ``on_item(done, total)``: on a terminal with tqdm it draws "label [bar] done/total unit".

    For work counted in items (the rows ``ember verify`` checks).  The bar
    starts at the first call and is erased on leaving the block; elsewhere
    ``on_item`` does nothing.
    """
    stream = sys.stderr if stream is None else stream
    tqdm = _tqdm() if _is_terminal(stream) else None
    bars = []

    def on_item(done, total):
        if tqdm is None:
            return
        if not bars:
            bars.append(_bar(tqdm, stream, total=total, desc=f"ember: {label}", unit=f" {unit}"))
        bars[0].update(done - bars[0].n)

    try:
        yield on_item
    finally:
        for bar in bars:
            bar.close()


@contextlib.contextmanager
def episodes_progress(stream=None):
    """Yield ``on_episode(done, failed, total)`` for ``ember evaluate``: on a terminal with tqdm it draws
    "ember evaluate [bar] done/total episode, failed=N" with the rate and time left.

    The bar starts at the first call (with ``total``) and is erased on leaving the block.
    """
    stream = sys.stderr if stream is None else stream
    tqdm = _tqdm() if _is_terminal(stream) else None
    bars = []

    def on_episode(done, failed, total):
        if tqdm is None or not total:
            return
        if not bars:
            bars.append(_bar(tqdm, stream, total=total, desc="ember evaluate", unit="episode"))
        bars[0].set_postfix(failed=failed, refresh=False)
        bars[0].update(done - bars[0].n)
        if done >= total:
            bars[0].refresh()  # the last state is drawn whatever the throttle skipped

    try:
        yield on_episode
    finally:
        for bar in bars:
            bar.close()
