"""Compressed records, read (campaign.md §5).

``Decompression`` is the first stage of every record reader.  It
recognises gzip (``1f 8b``) and zstd (``28 b5 2f fd``) by the first bytes
of the input, however the input is chunked, and passes anything else on
unchanged.  A compressed record is decompressed as a stream: the
decompressor is given bounded input and asked for bounded output, so
memory stays constant whatever the expansion, and the reader's limits
apply to the decompressed bytes (a small file that expands without end is
refused at the first part that is too long).  One layer only: what comes
out must be the JSON text, not another compressed stream.  Several gzip
members or zstd frames one after the other are one stream; any other byte
after the compressed stream makes the record malformed.

Writing compressed records is ``output.open_record_output``'s.

gzip is zlib's (stdlib).  zstd is the stdlib's ``compression.zstd`` where
Python has it (3.14+), else the ``zstandard`` package (the ``zstd`` extra),
imported only when a zstd record is met.
"""

import zlib

from ..errors import MetricsInputError
from .sinks import ByteSink

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_MAGICS = ((GZIP_MAGIC, "gzip"), (ZSTD_MAGIC, "zstd"))

#: At most this many decompressed bytes come out of one decompressor call.
OUTPUT_PIECE = 64 * 1024
# The zstandard package's decompressor has no output limit, so it is given
# input in pieces this small: a zstd block of 3 header bytes and 1 byte of
# run-length data expands to at most 128 KiB, so 128 bytes of input give at
# most 4 MiB of output.
_ZSTANDARD_INPUT_PIECE = 128

ZSTD_INSTALL = "pip install 'ember-eval[zstd]' (or pip install zstandard)"


def sniff(head):
    """ "gzip", "zstd", None (``head`` may still become a magic number) or "plain"."""
    for magic, kind in _MAGICS:
        if head.startswith(magic):
            return kind
    if any(magic.startswith(head) for magic, _ in _MAGICS):
        return None
    return "plain"


# --- decompressors: one gzip member or one zstd frame ---------------------------------


class _BoundedMember:
    """zlib's and ``compression.zstd``'s decompressors, which take an output limit."""

    def __init__(self, decompressor, errors):
        self._decompressor = decompressor
        self.errors = errors  # what it raises on corrupt input

    @property
    def eof(self):
        return self._decompressor.eof

    @property
    def unused_data(self):
        return self._decompressor.unused_data

    def pieces(self, data):
        """The decompressed bytes of ``data``, in pieces of at most ``OUTPUT_PIECE`` bytes."""
        decompressor = self._decompressor
        while True:
            out = decompressor.decompress(data, OUTPUT_PIECE)
            # zlib hands back the input it has not read; zstd keeps it inside.
            data = getattr(decompressor, "unconsumed_tail", b"")
            if out:
                yield out
            # A full piece may leave output pending even with no input left.
            if decompressor.eof or (not data and len(out) < OUTPUT_PIECE):
                return


class _ZstandardFrame:
    """The ``zstandard`` package: bounded output by bounded input (see ``_ZSTANDARD_INPUT_PIECE``)."""

    def __init__(self, module):
        self._decompressor = module.ZstdDecompressor().decompressobj(write_size=OUTPUT_PIECE, read_across_frames=False)
        self.errors = (module.ZstdError,)
        self.eof = False
        self.unused_data = b""

    def pieces(self, data):
        decompressor = self._decompressor
        for start in range(0, len(data), _ZSTANDARD_INPUT_PIECE):
            out = decompressor.decompress(data[start : start + _ZSTANDARD_INPUT_PIECE])
            if out:
                yield out
            if decompressor.eof:
                self.eof = True
                self.unused_data = decompressor.unused_data + data[start + _ZSTANDARD_INPUT_PIECE :]
                return


def zstd_module():
    """("stdlib", compression.zstd) on Python 3.14+, else ("zstandard", zstandard), else None."""
    try:
        from compression import zstd
    except ImportError:
        pass
    else:
        return "stdlib", zstd
    try:
        import zstandard
    except ImportError:
        return None
    return "zstandard", zstandard


def _member(kind):
    if kind == "gzip":
        return _BoundedMember(zlib.decompressobj(wbits=16 + zlib.MAX_WBITS), (zlib.error,))
    found = zstd_module()
    if found is None:
        raise MetricsInputError(f"$: the record is zstd-compressed; reading it needs zstd support: {ZSTD_INSTALL}.")
    name, module = found
    if name == "stdlib":
        return _BoundedMember(module.ZstdDecompressor(), (module.ZstdError,))
    return _ZstandardFrame(module)


# --- the reading stage -------------------------------------------------------------------


class Decompression(ByteSink):
    """First stage of a record reader: ``feed(chunk)`` / ``close()``; the JSON text goes to ``downstream``.

    ``downstream`` has ``feed`` and ``close`` (the front end or the strict
    reader).  Plain input passes through unchanged.  ``on_compressed()`` is
    called once when the input turns out to be compressed.
    """

    def __init__(self, downstream: ByteSink, on_compressed=None):
        self.downstream = downstream
        self._on_compressed = on_compressed  # called once if the input is compressed
        self._head = b""  # the first bytes, until they tell what the input is
        self._kind = None  # "plain", "gzip" or "zstd" once known
        self._member = None  # the gzip member or zstd frame being decompressed
        self._between = b""  # bytes after a finished member, until they tell whether another one starts
        self._output_head = b""  # the first decompressed bytes, until they show no second layer
        self._output_checked = False
        self._compressed_bytes = 0

    def feed(self, chunk):
        if self._kind == "plain" or not isinstance(chunk, (bytes, bytearray, memoryview)):
            self.downstream.feed(chunk)  # text and other non-bytes get the reader's own refusal
            return
        if self._kind is None:
            self._head += chunk
            kind = sniff(self._head)
            if kind is None:
                return
            self._kind = kind
            chunk, self._head = self._head, b""
            if kind == "plain":
                self.downstream.feed(chunk)
                return
            self._member = _member(kind)
            if self._on_compressed is not None:
                self._on_compressed()
        self._decompress(bytes(chunk))

    def close(self):
        if self._kind is None:  # fewer bytes than a magic number: plain text
            self._kind = "plain"
            if self._head:
                self.downstream.feed(self._head)
        elif self._kind != "plain":
            if self._between:
                self._trailing()
            if not self._member.eof:
                raise MetricsInputError(
                    f"$: the {self._kind} stream is truncated: the input ends inside it "
                    f"(after {self._compressed_bytes:,} compressed bytes)."
                )
            if not self._output_checked:
                self._output_checked = True
                if self._output_head:
                    self.downstream.feed(self._output_head)
        self.downstream.close()

    def _decompress(self, data):
        while data:
            if self._member.eof:
                self._between += data
                kind = sniff(self._between)
                if kind is None:
                    return  # the next magic number may still come
                if kind != self._kind:
                    self._trailing()
                data, self._between = self._between, b""
                self._member = _member(self._kind)
            self._compressed_bytes += len(data)
            try:
                for piece in self._member.pieces(data):
                    self._pass(piece)
            except self._member.errors as exc:
                raise MetricsInputError(
                    f"$: the {self._kind} stream is corrupt ({exc}), within its first {self._compressed_bytes:,} bytes."
                ) from exc
            data = self._member.unused_data if self._member.eof else b""
            if data:
                self._compressed_bytes -= len(data)

    def _trailing(self):
        raise MetricsInputError(
            f"$: Malformed record: data follows the end of the {self._kind} stream "
            f"(at compressed byte {self._compressed_bytes:,}); only another {self._kind} "
            f"{'member' if self._kind == 'gzip' else 'frame'} may."
        )

    def _pass(self, piece):
        if self._output_checked:
            self.downstream.feed(piece)
            return
        self._output_head += piece
        inner = sniff(self._output_head)
        if inner is None:
            return
        if inner != "plain":
            raise MetricsInputError(
                f"$: the {self._kind} stream holds a {inner} stream: a record is compressed once, "
                "and what it decompresses to must be the JSON text."
            )
        self._output_checked = True
        piece, self._output_head = self._output_head, b""
        self.downstream.feed(piece)
