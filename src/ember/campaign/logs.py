"""Episode logs (``results.layout.log_file``: an episode's standard error), capped.

What an agent or a python policy writes on its standard streams is kept
for its author, never shown on the terminal.  A log holds at most
``LOG_CAP_BYTES`` bytes of what the episode wrote; the rest is read and
dropped (so the writer never blocks), and a last line says how many bytes
were cut.  A log is written under a temporary name and renamed into place
when the episode ends, so an attempt that runs twice leaves one whole log.
Writing it is writing the results directory: an error is a
``ResultsIOError`` naming the log.
"""

import contextlib
import os
import uuid

from ..errors import ResultsIOError
from ..files import create_new, make_folder, replace_into
from ..results.layout import temporary_name

LOG_CAP_BYTES = 10 * 1024 * 1024


def cut_line(cut, cap=LOG_CAP_BYTES):
    return f"[ember: {cut} more bytes were cut: a log keeps at most {cap} bytes of an episode]\n".encode()


class CappedLog:
    """One log file being written: ``write`` keeps the first ``cap`` bytes, ``commit`` renames it into place."""

    def __init__(self, results, relative, cap=LOG_CAP_BYTES):
        self.path = os.path.join(results, relative)
        self.cap = cap
        self.kept = 0
        self.cut = 0
        self.last = b"\n"
        self.tmp = temporary_name(self.path, uuid.uuid4().hex)
        self.fd = None
        make_folder(results, os.path.dirname(relative))  # never through a link
        self.fd = create_new(self.tmp, self.path)

    def write(self, data):
        room = self.cap - self.kept
        if room > 0:
            keep = data[:room]
            self._write_all(keep)
            self.kept += len(keep)
            if keep:
                self.last = keep[-1:]
        self.cut += max(0, len(data) - max(room, 0))

    def _write_all(self, data):
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            raise ResultsIOError(exc.errno, exc.strerror or str(exc), self.path) from None

    def commit(self):
        """Close the log (with the cut line if anything was cut) and rename it into place."""
        try:
            if self.cut:
                self._write_all((b"" if self.last == b"\n" else b"\n") + cut_line(self.cut, self.cap))
            os.close(self.fd)
            self.fd = None
            replace_into(self.tmp, self.path)
        except ResultsIOError:
            raise
        except OSError as exc:
            raise ResultsIOError(exc.errno, exc.strerror or str(exc), self.path) from None
        finally:
            self.discard()

    def discard(self):
        """Close and remove the temporary file (after ``commit``, only what is left of a failure)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.tmp)
