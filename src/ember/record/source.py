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
        data = source if isinstance(source, bytes) else _byte_view(source)
        for start in range(0, len(data), chunk_size):
            yield bytes(data[start : start + chunk_size])
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
            "$: a record must be a path, a binary file, bytes or an iterable of bytes chunks, "
            f"not {type(source).__name__}."
        ) from None
    for j, chunk in enumerate(iterator):
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise MetricsInputError(f"$: chunk {j} of the record is {type(chunk).__name__}, not bytes.")
        yield bytes(chunk)


def _reason(exc):
    return (getattr(exc, "strerror", None) or str(exc)).rstrip(".")


def _byte_view(source):
    view = memoryview(source)
    try:
        return view.cast("B")
    except TypeError:  # not C-contiguous (e.g. a strided slice): copy it
        return view.tobytes()


def _shown(path):
    text = repr(os.fspath(path))
    return text if len(text) <= 200 else text[:197] + "..."


def _read_path(path, chunk_size):
    try:
        stream = open(path, "rb")  # noqa: SIM115 (closed by the with below, once open succeeded)
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        raise MetricsInputError(f"$: cannot read the record file {_shown(path)}: {_reason(exc)}.") from exc
    with stream:
        yield from _read_stream(stream, chunk_size)


def _read_stream(stream, chunk_size):
    read = getattr(stream, "read1", None) or stream.read
    while True:
        try:
            chunk = read(chunk_size)
        except (OSError, ValueError) as exc:  # ValueError: e.g. a closed file
            raise MetricsInputError(f"$: reading the record failed: {_reason(exc)}.") from exc
        if isinstance(chunk, str):
            raise MetricsInputError("$: the record must be read as bytes; open the file in binary mode ('rb').")
        if chunk is None:  # a non-blocking stream with nothing to read yet
            raise MetricsInputError("$: reading the record failed: the stream is non-blocking and had no data.")
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise MetricsInputError(f"$: reading the record gave {type(chunk).__name__}, not bytes.")
        if not chunk:
            return
        yield bytes(chunk)
