"""Episode logs (``RESULTS_DIR/logs/<policy>/<scenario_id>/<seed>.stdout|.stderr``), capped.

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

LOG_CAP_BYTES = 10 * 1024 * 1024
TEMPORARY_MARK = ".tmp"


def cut_line(cut, cap=LOG_CAP_BYTES):
    return f"[ember: {cut} more bytes were cut: a log keeps at most {cap} bytes of an episode]\n".encode()


class CappedLog:
    """One log file being written: ``write`` keeps the first ``cap`` bytes, ``commit`` renames it into place."""

    def __init__(self, path, cap=LOG_CAP_BYTES):
        self.path = path
        self.cap = cap
        self.kept = 0
        self.cut = 0
        self.last = b"\n"
        self.tmp = f"{path}{TEMPORARY_MARK}{uuid.uuid4().hex}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise ResultsIOError(exc.errno, exc.strerror or str(exc), path) from None

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
            os.replace(self.tmp, self.path)
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
