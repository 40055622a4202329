"""The one record opener for writing: a path → a binary stream, compressed by its name.

``open_record_output(path)`` is how every record file is opened for
writing (``ember run -o``, ``run_episode``, ``measure_run``, the
environments' ``record=``, a campaign's kept records):

* the file itself is opened by ``files.output_file``, the one way every
  output is written (a symlink followed, a FIFO or device written through,
  a regular file replaced as that module says);
* a name ending ``.gz`` is written gzip-compressed (mtime 0 and no file
  name in the header, so the same record gives the same bytes), ``.zst``
  zstd-compressed (the stdlib's ``compression.zstd`` on Python 3.14+, else
  the ``zstandard`` package of the ``zstd`` extra, refused before the file
  is created when neither is there); anything else plain (campaign.md §5).

Two modes, by who may read the file while it is written:

* ``live=True`` (the default): a record streamed while its episode runs,
  followable as it grows (``tail -f``, ``ember metrics`` on a pipe).  The
  file is opened with ``output_file(live=True)`` and every ``flush()`` the
  writer makes (one per part) ends a compressed block, so a reader
  following the file can decompress every part written so far.
* ``live=False``: a record nobody can see before it is complete (a
  campaign's kept record).  The file is opened with ``output_file``'s
  complete-or-nothing rule (a temporary sibling renamed into place when
  the block ends without an exception), and ``flush()`` does nothing:
  compressed blocks stay whole, which is smaller and faster, and the
  stream is ended at the close.

A compressed stream is ended before the file is closed, also when the
block raises: a live record cut short by a failure is a valid gzip or zstd
stream of the truncated record, which the reader calls truncated.
"""

import contextlib
import os

from ..errors import MissingExtraError
from ..files import output_file
from .compression import ZSTD_INSTALL, zstd_module

GZIP_LEVEL = 6


def output_kind(path):
    """ "gzip" for a name ending ``.gz``, "zstd" for ``.zst``, else "plain" (any letter case)."""
    name = os.fspath(path)
    name = name.lower() if isinstance(name, str) else name.decode(errors="replace").lower()
    if name.endswith(".gz"):
        return "gzip"
    if name.endswith(".zst"):
        return "zstd"
    return "plain"


class RecordOutput:
    """The binary stream a record is written to: ``raw`` itself, or a compressor writing into it.

    ``flush()`` makes every byte written so far readable from ``raw`` when
    ``live`` (a gzip sync flush or a zstd block flush, then ``raw``'s
    flush), and does nothing otherwise.  ``close()`` ends the compressed
    stream; ``raw`` belongs to whoever opened it.
    """

    def __init__(self, raw, kind, live):
        self.raw = raw
        self.kind = kind
        self.live = live
        if kind == "plain":
            self.stream = raw
        elif kind == "gzip":
            import gzip

            # mtime 0 and no file name: the same record gives the same bytes.
            self.stream = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=GZIP_LEVEL)
        else:
            self.stream = zstd_writer(raw)

    def write(self, data):
        return self.stream.write(data)

    def flush(self):
        if self.live:
            self.stream.flush()
            if self.stream is not self.raw:
                self.raw.flush()

    def close(self):
        if self.stream is not self.raw:
            self.stream.close()


def zstd_writer(raw):
    """A zstd compressor writing into the binary file ``raw`` (left open when it is closed)."""
    name, module = zstd_module()
    if name == "stdlib":
        return module.ZstdFile(raw, "wb")
    return module.ZstdCompressor().stream_writer(raw, closefd=False)


@contextlib.contextmanager
def open_record_output(path, *, live=True):
    """The record file ``path`` open for writing (see the module docstring); a context manager."""
    kind = output_kind(path)
    if kind == "zstd" and zstd_module() is None:  # refused before the file is created
        raise MissingExtraError(f"writing a .zst record needs zstd support: {ZSTD_INSTALL}.")
    with output_file(path, live=live) as raw:
        output = RecordOutput(raw, kind, live)
        try:
            yield output
        finally:
            output.close()
