"""The one way in for every reader of records: ``read_record`` (pull) or ``RecordInput`` (push).

source → decompression → canonical-line front end → strict reader → sink
(``record.pipeline``).  ``episode_metrics`` (pull) and ``MetricsStream``
(push) differ only in how bytes reach the same reader and engine.
"""

import contextlib
import os

from ..errors import MetricsInputError
from ..record.limits import DEFAULT_LIMITS, record_limits
from ..record.pipeline import RecordInput, read_into
from ..record.sinks import ByteSink
from ..sim.simulator import collector_paused
from .core import EpisodeEngine, compile_checked


def read_record(record, sink, limits=DEFAULT_LIMITS, take_line=None):
    """The record-reading entry point, pull form: read the whole record source into ``sink``.

    ``record`` is anything output.md accepts (a path, a binary file or
    pipe, bytes, an iterable of bytes chunks); ``limits`` bound the strict
    reader, ``take_line`` is the canonical-line fast path (``RecordInput``,
    the push form, takes the same).  Every reader of records (metrics,
    replay, render, campaigns, the CLI) comes in here or through ``RecordInput``.
    """
    read_into(record, RecordInput(sink, limits, take_line))


def measure_record(compiled, record, on_state=None):
    """Validate, replay and measure ``record`` of the compiled scenario; the ``EpisodeMetrics``."""
    engine = EpisodeEngine(compiled, on_state=on_state)
    # Reading a file or bytes builds trees of JSON values and the replay's steps, never a cycle:
    # with the collector paused, the young-generation scans of each replayed step's burning list
    # are not made.  Sources and callbacks that run the caller's code keep it running.
    own_code_only = on_state is None and isinstance(record, (str, bytes, bytearray, os.PathLike))
    with collector_paused() if own_code_only else contextlib.nullcontext():
        read_record(record, engine, record_limits(compiled), engine.take_line)
    return engine.result


class MetricsStream(ByteSink):
    """Push form of ``episode_metrics``: ``feed(chunk)`` repeatedly, then ``close()``.

    Errors surface at the earliest ``feed`` or ``close`` that can know of
    them; after an error the stream refuses further input.
    """

    def __init__(self, scenario):
        self._engine = EpisodeEngine(compile_checked(scenario))
        engine = self._engine
        self._input = RecordInput(
            engine, record_limits(engine.scenario), engine.take_line if engine.replay_enabled else None
        )
        self._result = None
        self._failed = None

    def feed(self, chunk):
        self._guard()
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            # bytes(5) would be five NUL bytes, bytes([1, 2]) two bytes: refuse, never convert.
            raise MetricsInputError(f"$: a record chunk must be bytes, not {type(chunk).__name__}.")
        try:
            self._input.feed(chunk)
        except Exception as exc:
            self._failed = exc
            raise

    def close(self):
        self._guard()
        try:
            self._input.close()
            self._result = self._engine.result
        except Exception as exc:
            self._failed = exc
            raise
        return self._result

    def _guard(self):
        if self._failed is not None:
            raise MetricsInputError(f"the stream already failed: {self._failed}") from self._failed
        if self._result is not None:
            raise MetricsInputError("the stream is closed; start a new MetricsStream for another record.")


def episode_metrics(scenario, record):
    """Validate, replay and measure one episode in a single streaming pass."""
    return measure_record(compile_checked(scenario), record)
