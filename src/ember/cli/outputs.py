"""A command's result: to standard output (no -o, or -o -) or to the -o file, complete or not at all."""


def write_result(console, output, data):
    """``data`` (bytes) on standard output, or atomically to ``output`` (never a partial file).

    A failing write names what failed: ``standard output`` (the console) or
    the path (``files.output_file``).
    """
    if output in (None, "-"):
        console.write_bytes(data)
        console.flush()
        return
    from ..files import output_file

    with output_file(output) as stream:
        stream.write(data)


def record_source(name):
    """What a RECORD argument names: a path, or standard input for ``-``."""
    import sys

    return sys.stdin.buffer if name == "-" else name
