"""Turn any record source output.md accepts into a stream of byte chunks."""

import io
import os

from ..errors import MetricsInputError

CHUNK_SIZE = 65536


def iter_chunks(source, chunk_size=CHUNK_SIZE):
    """Yield bytes chunks from a path, a binary file or pipe, bytes, or an iterable of bytes.

    A pipe yields each chunk as soon as the writer has produced it (``read1``),
    so a record can be consumed while a simulator is still writing it.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source).cast("B") if not isinstance(source, bytes) else source
        for start in range(0, len(data), chunk_size):
            yield bytes(data[start:start + chunk_size])
        return
    if isinstance(source, (str, os.PathLike)):
        yield from _read_path(source, chunk_size)
        return
    if isinstance(source, io.TextIOBase):
        raise MetricsInputError("$: the record must be read as bytes; open the file in binary mode ('rb').")
    if hasattr(source, "read"):
        yield from _read_stream(source, chunk_size)
        return
    try:
        iterator = iter(source)
    except TypeError:
        raise MetricsInputError(
            f"$: a record must be a path, a binary file, bytes or an iterable of bytes chunks, not {type(source).__name__}."
        ) from None
    for j, chunk in enumerate(iterator):
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise MetricsInputError(f"$: chunk {j} of the record is {type(chunk).__name__}, not bytes.")
        yield bytes(chunk)


def _read_path(path, chunk_size):
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise MetricsInputError(f"$: cannot read the record file {os.fspath(path)!r}: {exc.strerror or exc}.") from exc
    with stream:
        yield from _read_stream(stream, chunk_size)


def _read_stream(stream, chunk_size):
    read = getattr(stream, "read1", None) or stream.read
    while True:
        try:
            chunk = read(chunk_size)
        except OSError as exc:
            raise MetricsInputError(f"$: reading the record failed: {exc.strerror or exc}.") from exc
        if not chunk:
            return
        if isinstance(chunk, str):
            raise MetricsInputError("$: the record must be read as bytes; open the file in binary mode ('rb').")
        yield chunk
