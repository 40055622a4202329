"""Every ``-o``, with real files, symlinks, FIFOs, /dev/null and processes.

What the path names decides: a symlink is followed (the link stays), a
node that is not a regular file is written through, a regular file is
replaced atomically; ``run -o`` streams live, never destroys an existing
record when the run fails, and refuses a second concurrent writer.
"""

import json
import os
import shlex
import stat
import subprocess
import sys
import threading
import time

import pytest

import ember

from helpers.strict import no_hang

SCENARIO = "builtin:small-room"
PARTIAL_SUFFIX = ".partial"  # ember.files.PARTIAL_SUFFIX, the documented sibling of a replaced record
TIMEOUT = 60  # only stops a hang


def ember_cli(*args, **kwargs):
    argv = [sys.executable, "-m", "ember.cli", *map(str, args)]
    return subprocess.run(argv, capture_output=True, timeout=TIMEOUT, **kwargs)


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    path = tmp_path_factory.mktemp("record") / "greedy.record"
    ember.run_episode(ember.load_scenario(SCENARIO), "greedy", 0, str(path))
    return path


@pytest.fixture(scope="module")
def metrics_json(record):
    return json.dumps(ember.episode_metrics(SCENARIO, str(record)).to_dict(), indent=2) + "\n"


def _reader(fifo):
    """Read a FIFO to its end in a thread; returns (thread, chunks)."""
    chunks = []

    def read():
        with open(fifo, "rb") as stream:
            chunks.append(stream.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, chunks


# --- what -o names -----------------------------------------------------------------------


def test_output_symlink_is_followed_and_stays_a_link(tmp_path, record, metrics_json):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    done = ember_cli("metrics", SCENARIO, record, "-o", link)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text() == metrics_json
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]  # no temporary left


def test_output_dangling_symlink_creates_its_target(tmp_path, record, metrics_json):
    link = tmp_path / "link.json"
    link.symlink_to("made.json")
    assert ember_cli("metrics", SCENARIO, record, "-o", link).returncode == 0
    assert link.is_symlink() and (tmp_path / "made.json").read_text() == metrics_json


def test_output_fifo_is_written_through_not_replaced(tmp_path, record, metrics_json):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    thread, chunks = _reader(fifo)
    done = ember_cli("metrics", SCENARIO, record, "-o", fifo)
    thread.join(TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert chunks == [metrics_json.encode()]
    assert os.listdir(tmp_path) == ["out.fifo"]


@pytest.fixture
def null_device(tmp_path):
    """A null character device to write to.

    As root, a node of our own (mknod 1,3 in tmp_path): a regression that
    replaces the node must never replace the machine's /dev/null.  Otherwise
    the real /dev/null, which a non-root user cannot replace.
    """
    if os.geteuid() != 0:
        return os.devnull
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return str(node)


def test_output_dev_null_is_written_through(record, null_device):
    before = os.stat(null_device)
    for args in (("metrics", SCENARIO, record), ("run", SCENARIO)):
        done = ember_cli(*args, "-o", null_device)
        assert done.returncode == 0, done.stderr
        after = os.lstat(null_device)
        assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert os.path.getsize(null_device) == 0


def test_render_output_through_symlink_and_fifo(tmp_path, record):
    pytest.importorskip("PIL")
    target = tmp_path / "real.png"
    link = tmp_path / "link.png"
    link.symlink_to(target)
    assert ember_cli("render", SCENARIO, record, "-o", link).returncode == 0
    assert link.is_symlink() and target.read_bytes().startswith(b"\x89PNG")
    fifo = tmp_path / "pipe.gif"
    os.mkfifo(fifo)
    thread, chunks = _reader(fifo)
    done = ember_cli("render", SCENARIO, record, "-o", fifo)
    thread.join(TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and chunks[0].startswith(b"GIF89a")


def test_run_output_fifo_streams_through(tmp_path, record):
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    thread, chunks = _reader(fifo)
    done = ember_cli("run", SCENARIO, "-o", fifo)
    thread.join(TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert chunks == [record.read_bytes()]
    assert os.listdir(tmp_path) == ["run.fifo"]


def test_output_regular_file_is_replaced_atomically_keeping_its_mode(tmp_path, record, metrics_json):
    out = tmp_path / "m.json"
    out.write_text("old")
    out.chmod(0o640)
    inode = out.stat().st_ino
    assert ember_cli("metrics", SCENARIO, record, "-o", out).returncode == 0
    assert out.read_text() == metrics_json
    assert out.stat().st_ino != inode  # a new file renamed over it, not rewritten in place
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_output_file_failure_keeps_the_old_content_and_leaves_no_temporary(tmp_path):
    from ember.files import output_file

    out = tmp_path / "keep.txt"
    out.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with output_file(out) as stream:
            stream.write(b"half")
            raise RuntimeError("the writer failed")
    assert out.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["keep.txt"]


def test_output_directory_is_refused_naming_it(tmp_path, record):
    done = ember_cli("metrics", SCENARIO, record, "-o", tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == f"ember: {tmp_path}: Is a directory\n"


def test_demo_refuses_a_non_regular_output(tmp_path):
    done = ember_cli("demo", "-o", tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    assert "-o must name a regular file" in done.stderr.decode()


# --- run -o --------------------------------------------------------------------------------


FAILING_AGENT = "import sys; sys.stdin.readline(); sys.stdin.readline(); sys.exit(3)"


def test_run_failure_keeps_an_existing_record(tmp_path, record):
    out = tmp_path / "keep.record"
    out.write_bytes(record.read_bytes())
    agent = shlex.join([sys.executable, "-c", FAILING_AGENT])
    done = ember_cli("run", SCENARIO, "--agent", agent, "--sandbox", "off", "-o", out)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("ember: step 1: the agent exited with status 3")
    assert out.read_bytes() == record.read_bytes()
    assert os.listdir(tmp_path) == ["keep.record"]


def test_run_failure_on_a_new_path_leaves_the_unterminated_record(tmp_path):
    out = tmp_path / "new.record"
    agent = shlex.join([sys.executable, "-c", FAILING_AGENT])
    assert ember_cli("run", SCENARIO, "--agent", agent, "--sandbox", "off", "-o", out).returncode == 2
    assert out.read_bytes().endswith(b'"steps":[\n')  # header and s_0, then nothing: truncated
    assert os.listdir(tmp_path) == ["new.record"]


def test_run_success_replaces_an_existing_record(tmp_path, record):
    out = tmp_path / "r.record"
    out.write_bytes(b"an old record")
    assert ember_cli("run", SCENARIO, "-o", out).returncode == 0
    assert out.read_bytes() == record.read_bytes()
    assert os.listdir(tmp_path) == ["r.record"]


def test_run_api_to_a_symlink_follows_it(tmp_path, record):
    target, link = tmp_path / "t.record", tmp_path / "l.record"
    link.symlink_to(target)
    ember.run_episode(ember.load_scenario(SCENARIO), "greedy", 0, link)
    assert link.is_symlink() and target.read_bytes() == record.read_bytes()


SLOW_AGENT = """
import json, sys, time
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "observation":
        time.sleep(0.2)
        print(json.dumps({p["person_id"]: "stay" for p in message["observation"]["people"]}), flush=True)
    elif message["type"] == "end":
        break
"""


def _slow_run(tmp_path, out):
    agent_file = tmp_path / "slow_agent.py"
    agent_file.write_text(SLOW_AGENT)
    agent = shlex.join([sys.executable, str(agent_file)])
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ember.cli",
            "run",
            "builtin:office",
            "--agent",
            agent,
            "--sandbox",
            "off",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for(predicate):
    """Poll until ``predicate()``; ``no_hang`` only stops a hang."""
    with no_hang(TIMEOUT):
        while not predicate():
            time.sleep(0.02)


@pytest.mark.parametrize("existing", [False, True], ids=["new-path", "existing-record"])
def test_run_concurrent_writers_to_one_path_do_not_both_succeed(tmp_path, record, existing):
    out = tmp_path / "same.record"
    if existing:
        out.write_bytes(record.read_bytes())
    live = tmp_path / ("same.record" + PARTIAL_SUFFIX) if existing else out
    first = _slow_run(tmp_path, out)
    try:
        # The first writer is under way (its header is out) when the second starts.
        _wait_for(lambda: live.exists() and live.read_bytes().count(b"\n") >= 3)
        second = ember_cli("run", "builtin:office", "-o", out)
    finally:
        first.kill()
        first.wait(TIMEOUT)
    assert second.returncode == 2 and second.stdout == b""
    assert second.stderr.decode() == (
        f"ember: {out}: another process is writing this record (it holds the lock); not written.\n"
    )
    if existing:
        assert out.read_bytes() == record.read_bytes()  # the killed first writer did not touch it either


def test_run_concurrent_writers_one_wins_whole(tmp_path):
    """Two writers started together: one whole record, never an interleaving; or one refused."""
    out = tmp_path / "race.record"
    expected = {}
    for seed in (1, 2):
        expected[seed] = tmp_path / f"expected{seed}.record"
        ember.run_episode(ember.load_scenario(SCENARIO), "random", seed, expected[seed])
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ember.cli",
                "run",
                SCENARIO,
                "--policy",
                "random",
                "--seed",
                str(seed),
                "-o",
                str(out),
            ],
            stderr=subprocess.PIPE,
        )
        for seed in (1, 2)
    ]
    codes = [p.wait(TIMEOUT) for p in procs]
    errors = [p.stderr.read() for p in procs]
    for p in procs:
        p.stderr.close()
    # Both may succeed one after the other (the second replaces the whole file),
    # or one is refused; never an interleaved file.
    assert set(codes) <= {0, 2} and 0 in codes, errors
    for code, error in zip(codes, errors):
        assert code == 0 or b"another process is writing this record" in error
    assert out.read_bytes() in (expected[1].read_bytes(), expected[2].read_bytes())
    assert sorted(os.listdir(tmp_path)) == ["expected1.record", "expected2.record", "race.record"]


@pytest.mark.parametrize("existing", [False, True], ids=["new-path", "existing-record"])
def test_run_record_is_followable_while_written(tmp_path, record, existing):
    out = tmp_path / "live.record"
    if existing:
        out.write_bytes(record.read_bytes())
    live = tmp_path / ("live.record" + PARTIAL_SUFFIX) if existing else out
    run = _slow_run(tmp_path, out)
    try:
        # A reader following the live path sees complete step lines while the run goes on.
        _wait_for(lambda: live.exists() and live.read_bytes().count(b"\n") >= 5)
        assert run.poll() is None
        lines = live.read_bytes().split(b"\n")
        assert json.loads(lines[3].rstrip(b","))["step"] == 1
        if existing:
            assert out.read_bytes() == record.read_bytes()
    finally:
        run.kill()
        run.wait(TIMEOUT)
        run.stdout.close()
        run.stderr.close()


def test_output_busy_error_is_an_ember_os_error(tmp_path):
    from ember.errors import OutputBusyError
    from ember.files import output_file

    out = tmp_path / "x.record"
    with output_file(out, live=True) as stream:
        stream.write(b"partial")
        with pytest.raises(OutputBusyError, match="another process is writing this record"):
            with output_file(out, live=True):
                pass
    assert isinstance(OutputBusyError("x"), (ember.EmberError, OSError))
    assert out.read_bytes() == b"partial"


def test_partial_suffix_is_the_documented_one():
    from ember.files import PARTIAL_SUFFIX as suffix

    assert suffix == PARTIAL_SUFFIX


def test_measure_run_output_follows_the_same_rules(tmp_path, record):
    from ember.engine.run import measure_run

    target, link = tmp_path / "t.record", tmp_path / "l.record"
    target.write_bytes(b"an old record")
    link.symlink_to(target)

    def failing(observation):
        raise RuntimeError("the policy failed")

    with pytest.raises(RuntimeError):
        measure_run(SCENARIO, failing, 0, link)
    assert link.is_symlink() and target.read_bytes() == b"an old record"  # kept: the run failed
    assert sorted(os.listdir(tmp_path)) == ["l.record", "t.record"]
    measure_run(SCENARIO, "greedy", 0, link)
    assert link.is_symlink() and target.read_bytes() == record.read_bytes()


def test_run_compressed_output_follows_the_same_rules(tmp_path, record):
    import gzip

    out = tmp_path / "r.record.gz"
    out.write_bytes(b"an old record")
    agent = shlex.join([sys.executable, "-c", FAILING_AGENT])
    assert ember_cli("run", SCENARIO, "--agent", agent, "--sandbox", "off", "-o", out).returncode == 2
    assert out.read_bytes() == b"an old record"  # a failed run keeps it
    link = tmp_path / "link.gz"
    link.symlink_to(out.name)
    done = ember_cli("run", SCENARIO, "-o", link)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and gzip.decompress(out.read_bytes()) == record.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["link.gz", "r.record.gz"]


# --- several outputs of one command: all or none ------------------------------------------


def test_output_files_are_put_in_place_together(tmp_path):
    from ember.files import output_files

    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_bytes(b"kept")
    with output_files(old, new) as (first, second):
        first.write(b"one")
        second.write(b"two")
        assert (old.read_bytes(), new.exists()) == (b"kept", False)  # nothing in place before the end
    assert (old.read_bytes(), new.read_bytes()) == (b"one", b"two")
    assert sorted(os.listdir(tmp_path)) == ["new.txt", "old.txt"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("full_first", [True, False])
def test_one_output_that_fails_leaves_none_of_the_others(tmp_path, full_first):
    from ember.files import output_files

    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_bytes(b"kept")
    paths = ["/dev/full", old, new] if full_first else [old, new, "/dev/full"]
    with pytest.raises(OSError) as failure:
        with output_files(*paths) as streams:
            for stream in streams:
                stream.write(b"x")  # buffered: /dev/full fails when its stream is flushed, at the end
    assert failure.value.filename == "/dev/full" and failure.value.strerror == "No space left on device"
    assert old.read_bytes() == b"kept" and sorted(os.listdir(tmp_path)) == ["old.txt"]


def test_output_files_last_step_runs_before_the_renames(tmp_path):
    from ember.files import output_files

    out = tmp_path / "g.json"

    def last():
        assert not out.exists()
        raise OSError(28, "No space left on device", "standard output")

    with pytest.raises(OSError, match="standard output"):
        with output_files(out, last=last) as (stream,):
            stream.write(b"{}")
    assert os.listdir(tmp_path) == []


def test_an_error_of_the_block_keeps_its_own_file_name(tmp_path):
    # A record that cannot be read while an output is written is named as itself, never as the output.
    from ember.files import output_file, output_files

    for opened in (lambda: output_file(tmp_path / "out.txt"), lambda: output_files(tmp_path / "out.txt")):
        with pytest.raises(FileNotFoundError) as failure:
            with opened():
                os.stat(tmp_path / "no-such.record")
        assert failure.value.filename == str(tmp_path / "no-such.record")
        assert os.listdir(tmp_path) == []


def test_an_empty_output_path_names_no_file(tmp_path, monkeypatch):
    from ember.errors import OutputPathError
    from ember.files import output_file, output_files

    monkeypatch.chdir(tmp_path)
    for opened in (lambda: output_file(""), lambda: output_file("", live=True), lambda: output_files("a", "")):
        with pytest.raises(OutputPathError, match="^'': an empty path names no file; give a file name$"):
            with opened():
                pass
    assert isinstance(OutputPathError("x"), (ember.EmberError, ValueError))
    assert os.listdir(tmp_path) == []
