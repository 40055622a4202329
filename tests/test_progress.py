"""Progress on long work (ember.progress): without the cli extra's tqdm there is no progress, silently."""

import io
import sys

from helpers.records import scripted


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_without_tqdm_there_is_no_progress_silently(monkeypatch, tmp_path):
    from ember import progress

    path = tmp_path / "data"
    path.write_bytes(b"x" * (progress.PROGRESS_MIN_BYTES + 1))
    terminal = Terminal()
    with progress.reading_progress(str(path), stream=terminal) as chunks:
        assert chunks is not str(path)
        assert sum(len(chunk) for chunk in chunks) == progress.PROGRESS_MIN_BYTES + 1
    assert "ember: reading the record [" in terminal.getvalue()
    policy = scripted([{"A": "stay"}])
    with progress.step_counter(policy, 5, stream=terminal) as counted:
        assert counted is not policy
    monkeypatch.setitem(sys.modules, "tqdm", None)
    quiet = Terminal()
    with progress.reading_progress(str(path), stream=quiet) as chunks:
        assert chunks == str(path)
    with progress.step_counter(policy, 5, stream=quiet) as counted:
        assert counted is policy
    assert quiet.getvalue() == ""
