"""A record's bytes checked and hashed in one read: ``authenticate_record``, ``AuthenticationStream``;
its digest alone (``DigestStream``), its comparison with a stored record (``ComparisonStream``)."""

import hashlib

from ..errors import MetricsInputError
from ..record.compression import Decompression, sniff
from ..record.limits import record_limits
from ..record.pipeline import RecordInput, read_into
from ..record.sinks import ByteSink, RecordSink
from ..scenario import CompiledScenario
from .core import EpisodeEngine, compile_checked


class _TextDigest(ByteSink):
    """The end of a second decompression: the SHA-256 of the record's (decompressed) JSON text."""

    def __init__(self):
        self.sha = hashlib.sha256()

    def feed(self, chunk):
        self.sha.update(chunk)

    def close(self):
        pass


class _BothInputs(ByteSink):
    """Feeds each chunk of the record to the engine's input, then to the digest's decompression."""

    def __init__(self, *inputs):
        self.inputs = inputs

    def feed(self, chunk):
        for record_input in self.inputs:
            record_input.feed(chunk)

    def close(self):
        for record_input in self.inputs:
            record_input.close()


def authenticate_record(scenario, record):
    """Authenticate and measure a record (stages 1-3, as ``episode_metrics``) and hash it, in one read.

    Returns (``EpisodeMetrics``, hex SHA-256 of the record's decompressed
    bytes: the JSON text, whether the file is plain, gzip or zstd).  The
    chunks go first to the engine, so a record it refuses (``MetricsInputError``)
    is never decompressed further for the digest.
    """
    compiled = compile_checked(scenario)
    engine = EpisodeEngine(compiled)
    digest = _TextDigest()
    both = _BothInputs(RecordInput(engine, record_limits(compiled), engine.take_line), Decompression(digest))
    read_into(record, both)
    return engine.result, digest.sha.hexdigest()


class _Counted(ByteSink):
    """Counts the decompressed bytes on their way to the digest; past ``max_bytes`` a ``MetricsInputError``."""

    def __init__(self, digest, max_bytes):
        self.digest = digest
        self.max_bytes = max_bytes
        self.length = 0

    def feed(self, chunk):
        self.length += len(chunk)
        if self.max_bytes is not None and self.length > self.max_bytes:
            raise MetricsInputError(
                f"$: the record is longer than {self.max_bytes:,} bytes decompressed (the limit of this reader)."
            )
        self.digest.feed(chunk)

    def close(self):
        self.digest.close()


class _SeedExpected(RecordSink):
    """A reader sink in front of an ``EpisodeEngine``: the header's seed must be the expected one."""

    def __init__(self, engine, seed):
        self.engine = engine
        self.seed = seed

    def header(self, value):
        seed = value.get("seed") if isinstance(value, dict) else None
        if type(seed) is int and seed != self.seed:
            raise MetricsInputError(f"$.header.seed: expected seed {self.seed}, the record's header names seed {seed}.")
        self.engine.header(value)

    def initial_state(self, value):
        self.engine.initial_state(value)

    def step(self, index, value):
        self.engine.step(index, value)

    def final_state(self, value):
        self.engine.final_state(value)

    def end(self):
        self.engine.end()

    def __getattr__(self, name):  # anything else (``take_line``) is the engine's
        return getattr(self.engine, name)


class AuthenticationStream(ByteSink):
    """Push form of ``authenticate_record``: ``feed(chunk)`` the record's bytes (plain, gzip or zstd), then
    ``close()`` -> (``EpisodeMetrics``, hex SHA-256 of the decompressed bytes).

    ``seed``, when given, is the seed the record must be of: a header naming
    another is refused as soon as the header is read.  ``max_bytes`` bounds
    the decompressed length.  Memory is the engine's (grid and population),
    never the record's length.  After an error the stream refuses further input.
    """

    def __init__(self, scenario, seed=None, max_bytes=None):
        compiled = scenario if isinstance(scenario, CompiledScenario) else compile_checked(scenario)
        engine = EpisodeEngine(compiled)
        self._engine = engine
        self._digest = _TextDigest()
        sink = engine if seed is None else _SeedExpected(engine, seed)
        # The engine first, as ``authenticate_record``: a record it refuses is decompressed no further.
        self._inputs = _BothInputs(
            RecordInput(sink, record_limits(compiled), engine.take_line),
            Decompression(_Counted(self._digest, max_bytes)),
        )
        self._failed = None

    def feed(self, chunk):
        if self._failed is not None:
            raise MetricsInputError(f"the stream already failed: {self._failed}") from self._failed
        try:
            self._inputs.feed(chunk)
        except Exception as exc:
            self._failed = exc
            raise

    def close(self):
        if self._failed is not None:
            raise MetricsInputError(f"the stream already failed: {self._failed}") from self._failed
        try:
            self._inputs.close()
        except Exception as exc:
            self._failed = exc
            raise
        return self._engine.result, self._digest.sha.hexdigest()


def record_suffix(head):
    """The file suffix of a record whose first bytes are ``head``: ``.record.gz`` (gzip), ``.record.zst`` (zstd)
    or ``.record`` (anything else), as every reader recognises them (campaign.md §5)."""
    kind = sniff(bytes(head[:4]))
    return {"gzip": ".record.gz", "zstd": ".record.zst"}.get(kind, ".record")


class DigestStream(ByteSink):
    """The SHA-256 of a record's decompressed bytes, pushed (``feed``/``close`` -> hex), without verifying it:
    an upload of a record already accepted is hashed, never verified again (service.md §3)."""

    def __init__(self, max_bytes=None):
        self._digest = _TextDigest()
        self._input = Decompression(_Counted(self._digest, max_bytes))

    def feed(self, chunk):
        self._input.feed(chunk)

    def close(self):
        self._input.close()
        return self._digest.sha.hexdigest()


class ComparisonStream(ByteSink):
    """Whether a record pushed (``feed``/``close``) decompresses to the same bytes as the stored record read
    from ``handle``: ``feed`` raises ``MetricsInputError`` as soon as the bytes pass the stored record's
    length or differ from it, so a re-upload to a key with an accepted record costs at most that record's
    length (service.md §9), whatever it would decompress to."""

    def __init__(self, handle):
        self._stored = _StoredRecord(handle)
        self._input = Decompression(_Compared(self._stored))

    def feed(self, chunk):
        self._input.feed(chunk)

    def close(self):
        self._input.close()
        self._stored.take(1)
        if self._stored.buffer:
            raise MetricsInputError(f"$: the record ends after {self._stored.offset:,} bytes, before the accepted one.")


class _StoredRecord(ByteSink):
    """The stored record's decompressed bytes, read as they are asked for (``take``)."""

    READ = 4096  # compressed bytes read at a time: the decompressed buffer stays small

    def __init__(self, handle):
        self.handle = handle
        self.buffer = bytearray()
        self.ended = False
        self.offset = 0  # bytes compared so far
        self.source = Decompression(self)

    def feed(self, chunk):  # the stored record's decompression hands its bytes here
        self.buffer += chunk.encode("utf-8") if isinstance(chunk, str) else chunk

    def close(self):
        pass

    def take(self, count):
        """Make ``count`` bytes ready in ``buffer`` (fewer at the stored record's end)."""
        while len(self.buffer) < count and not self.ended:
            block = self.handle.read(self.READ)
            if block:
                self.source.feed(block)
            else:
                self.ended = True
                self.source.close()


class _Compared(ByteSink):
    """Each decompressed piece of the upload against the stored record's next bytes."""

    def __init__(self, stored):
        self.stored = stored

    def feed(self, chunk):
        stored = self.stored
        piece = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
        stored.take(len(piece))
        if len(stored.buffer) < len(piece):
            raise MetricsInputError(
                f"$: the record is longer than the accepted one ({stored.offset + len(stored.buffer):,} bytes)."
            )
        if stored.buffer[: len(piece)] != piece:
            where = f"{stored.offset:,} to {stored.offset + len(piece):,}"
            raise MetricsInputError(f"$: the record differs from the accepted one within bytes {where}.")
        del stored.buffer[: len(piece)]
        stored.offset += len(piece)

    def close(self):
        pass
