"""A command's result: to standard output (no -o, or -o -) or to the -o file, complete or not at all."""


def write_result(console, output, data):
    """``data`` (bytes, or an iterable of bytes pieces) on standard output, or atomically to ``output``.

    The file is never partial.  A failing write names what failed:
    ``standard output`` (the console) or the path (``files.output_file``).
    """
    pieces = (data,) if isinstance(data, (bytes, bytearray)) else data
    if output in (None, "-"):
        for piece in pieces:
            console.write_bytes(piece)
        console.flush()
        return
    from ..files import output_file

    with output_file(output) as stream:
        for piece in pieces:
            stream.write(piece)


def record_source(name):
    """What a RECORD argument names: a path, or standard input for ``-``."""
    import sys

    return sys.stdin.buffer if name == "-" else name
