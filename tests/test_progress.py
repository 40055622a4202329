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


def test_ember_stats_shows_its_resamples_on_a_terminal(tmp_path):
    """A real process whose stderr is a pseudo-terminal draws the resampling bar; its stdout keeps only the JSON."""
    import os
    import pty
    import subprocess

    from helpers.ranking_results import builtin_results

    results = builtin_results(tmp_path / "r", policies=("greedy", "stay"))
    master, slave = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ember.cli", "stats", results.path, "--replicates", "1000"],
            stdout=subprocess.PIPE,
            stderr=slave,
            timeout=120,
            check=False,
        )
        os.close(slave)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    assert done.returncode == 0
    assert done.stdout.startswith(b'{"campaign":"small-study"') and done.stdout.endswith(b"}\n")
    assert b"ember: resampling:" in drawn and b"resamples" in drawn
