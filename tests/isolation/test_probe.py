"""The probe: what a ``required`` sandbox needs that the machine lacks, as one line naming it."""

import contextlib
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from ember.errors import SandboxError
from ember.isolation import cgroups
from ember.isolation.installation import python_paths
from ember.isolation.probe import require_sandbox, sandbox_problem, unreadable
from ember.isolation.sandbox import Sandbox
from ember.isolation.seccomp_filter import MISSING

from helpers.sandboxes import modes, open_folder, private_folder, run_sandboxed, write_file


def test_this_machine_can_make_the_sandbox_for_the_python_running_the_tests():
    assert sandbox_problem() is None


def test_the_folders_on_the_way_never_matter_a_policy_under_a_0700_folder_passes_and_runs():
    with private_folder() as private:
        policy = write_file(private, "agents/planner.py", "import json\nprint(json.dumps(open(__file__).read()))\n")
        before = modes(private)
        assert sandbox_problem(files=[policy]) is None
        outcome = run_sandboxed(policy, private)
        assert (outcome.status, outcome.verdict) == (0, "import json\nprint(json.dumps(open(__file__).read()))\n")
        assert modes(private) == before  # nothing changed on the host, the 0700 folder on the way included
        assert before[os.path.dirname(private)] & 0o7777 == 0o700


def test_a_python_installation_under_a_0700_home_passes():
    with open_folder() as folder:
        home = os.path.join(folder, "root")
        prefix = os.path.join(home, ".pyenv", "versions", "3.11.7")
        os.makedirs(prefix)
        os.chmod(home, 0o700)
        assert sandbox_problem(python=[prefix]) is None
        assert os.stat(home).st_mode & 0o7777 == 0o700


@pytest.mark.parametrize(
    ("layout", "blocked", "kind"),
    [
        ("file", "policy.py", "a file without o+r; make it readable: chmod o+r"),
        ("folder", "pkg", "a folder without o+rx; make it readable: chmod o+rx"),
        ("inner", "pkg/sub/deeper", "a folder without o+rx; make it readable: chmod o+rx"),
    ],
)
def test_a_bound_path_the_sandbox_uid_cannot_read_is_refused_naming_it_and_the_fix(layout, blocked, kind):
    with open_folder() as folder:
        policy = write_file(folder, "policy.py", "x = 1\n")
        write_file(folder, "pkg/sub/deeper/mod.py", "x = 1\n")
        bound = policy if layout == "file" else os.path.join(folder, "pkg")
        path = os.path.join(folder, blocked)
        os.chmod(path, 0o600 if layout == "file" else 0o750)
        with pytest.raises(SandboxError) as caught:
            require_sandbox(files=[bound])
        assert str(caught.value) == (
            f"the sandbox cannot run here: the sandbox's uid 65534 cannot read {path} (the policy's files): "
            f"{kind} {path}; --sandbox off runs the policies with the operator's rights."
        )
        assert os.stat(path).st_mode & 0o777 == (0o600 if layout == "file" else 0o750)


def test_a_file_inside_a_bound_folder_keeps_its_own_mode():
    with open_folder() as folder:
        write_file(folder, "pkg/__init__.py", "x = 1\n")
        write_file(folder, "pkg/secret.bin", "0", mode=0o600)
        assert sandbox_problem(files=[os.path.join(folder, "pkg")]) is None


def test_an_unreadable_file_itself_is_named():
    with open_folder() as folder:
        secret = write_file(folder, "weights.bin", "0", mode=0o600)
        assert unreadable([secret]) == secret
        assert unreadable([folder]) is None


def test_the_python_installation_holds_the_interpreter_and_this_checkouts_sources():
    import ember

    paths = python_paths()
    source_root = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    assert any(source_root == path or source_root.startswith(path + "/") for path in paths)
    executable = os.path.realpath(os.sys.executable)
    assert any(executable.startswith(path + "/") for path in ["/usr", *paths])


def test_episode_cgroups_hold_their_limits_and_are_removed():
    groups = cgroups.EpisodeCgroups(cgroups.Hierarchy.find(), 48, 12)
    folders = list(groups.folders)
    try:
        assert all(os.path.isdir(path) for path in folders)
        if groups.hierarchy.version == 1:
            memory, pids = folders
            assert pathlib.Path(os.path.join(memory, "memory.limit_in_bytes")).read_text().strip() == str(48 << 20)
            assert pathlib.Path(os.path.join(pids, "pids.max")).read_text().strip() == "12"
        else:
            assert pathlib.Path(os.path.join(folders[0], "memory.max")).read_text().strip() == str(48 << 20)
            assert pathlib.Path(os.path.join(folders[0], "pids.max")).read_text().strip() == "12"
        assert groups.pids() == set()
        assert groups.oom_killed() is False
    finally:
        groups.close()
    assert [path for path in folders if os.path.exists(path)] == []


def test_the_cgroups_of_a_killed_episode_process_are_ended_and_removed_by_its_watcher():
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:  # an episode process: makes its cgroups, puts a process in them, and is killed
        groups = cgroups.EpisodeCgroups(cgroups.Hierarchy.find(), 64, 8)
        sleeper = os.fork()
        if sleeper == 0:
            for path in groups.procs_files:
                pathlib.Path(path).write_text(str(os.getpid()))
            os.write(write_fd, b"x")
            os.execv("/bin/sleep", ["sleep", "30"])
        try:
            signal.pause()  # until killed
        finally:
            os._exit(1)  # never back into pytest in a forked child
    os.read(read_fd, 1)
    os.kill(child, 9)
    os.waitpid(child, 0)
    left = cgroups.remove_left_by(child)
    assert left  # it had made them
    assert [path for path in left if os.path.exists(path)] == []


def _killed_maker_with_a_sleeper():
    """A process that made its cgroups and put a ``sleep`` in them, SIGKILLed with nobody to clean up after
    it (its watcher killed too): (its pid, the sleeper's pid)."""
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        groups = cgroups.EpisodeCgroups(cgroups.Hierarchy.find(), 64, 8)
        sleeper = os.fork()
        if sleeper == 0:
            for path in groups.procs_files:
                pathlib.Path(path).write_text(str(os.getpid()))
            os.write(write_fd, str(os.getpid()).encode() + b"\n")
            os.execv("/bin/sleep", ["sleep", "60"])
        try:
            signal.pause()  # until killed
        finally:
            os._exit(1)  # never back into pytest in a forked child
    sleeper = int(os.read(read_fd, 64).split(b"\n")[0])
    os.close(read_fd)
    os.close(write_fd)
    os.kill(child, 9)
    os.waitpid(child, 0)
    return child, sleeper


def _left_by(pid):
    hierarchy = cgroups.Hierarchy.find()
    return sorted(
        os.path.join(parent, name)
        for parent in {hierarchy.memory, hierarchy.pids}
        for name in os.listdir(parent)
        if name.startswith(f"ember-{pid}-")
    )


def test_the_next_check_ends_and_removes_what_a_killed_run_left_with_nobody_to_clean_up():
    maker, sleeper = _killed_maker_with_a_sleeper()
    assert _left_by(maker)
    assert pathlib.Path(f"/proc/{sleeper}").exists()  # the policy's process outlived its episode...
    assert sandbox_problem() is None  # ...until the next command checks the sandbox before it runs
    with contextlib.suppress(ChildProcessError):
        os.waitpid(sleeper, 0)  # reparented to the test's process or init: gone either way
    assert not pathlib.Path(f"/proc/{sleeper}").exists() or _zombie(sleeper)
    assert _left_by(maker) == []


def _zombie(pid):
    with contextlib.suppress(OSError):
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return False


def test_a_cgroup_left_under_a_reused_pid_never_blocks_the_next_episode_given_that_pid():
    # A killed process's cgroups were named by its PID and its count of cgroups alone, and episode
    # processes forked from one worker inherit that count: the next one given the same PID failed to
    # start its sandbox ("File exists").  Every name carries a random part.
    names = set()
    for _ in range(2):
        read_fd, write_fd = os.pipe()
        child = os.fork()
        if child == 0:  # each starts from the count the parent (a worker) had: the same N in both
            groups = cgroups.EpisodeCgroups(cgroups.Hierarchy.find(), 64, 8)
            os.write(write_fd, os.path.basename(groups.folders[0]).encode())
            groups.close()
            os._exit(0)
        names.add(os.read(read_fd, 200).decode().split("-", 2)[2])  # N-TOKEN, without the PID
        os.waitpid(child, 0)
        os.close(read_fd)
        os.close(write_fd)
    assert len(names) == 2


def test_without_libseccomp_a_sandbox_run_by_root_is_refused_in_one_line_naming_it():
    # The probe in a process where neither binding of libseccomp can be imported (as on a machine without
    # them): the sandbox run by root has no user namespace, and only the filter keeps the policy from making one.
    code = (
        "import sys\n"
        "sys.modules['pyseccomp'] = sys.modules['seccomp'] = None\n"
        "from ember.errors import SandboxError\n"
        "from ember.isolation.probe import require_sandbox\n"
        "try:\n"
        "    require_sandbox()\n"
        "except SandboxError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"the sandbox cannot run here: {MISSING} is not available (pyseccomp: ")
    assert lines[0].endswith("; --sandbox off runs the policies with the operator's rights.")


def test_a_failing_setpriv_is_reported_as_the_identity_not_as_bubblewrap(monkeypatch):
    # setpriv is the last step inside the sandbox: bubblewrap has made everything when it fails.
    real = Sandbox.identity

    def unknown_user(self):
        words = real(self)
        words[words.index("--reuid") + 1] = "no-such-user-ember"  # a uid setpriv cannot take
        return words

    monkeypatch.setattr(Sandbox, "identity", unknown_user)
    problem = sandbox_problem()
    assert problem.startswith("setpriv cannot take the sandbox's identity (uid 65534) inside the sandbox: setpriv: ")
    assert "no-such-user-ember" in problem
    assert "bubblewrap" not in problem


@pytest.mark.parametrize("uid", [0, -1, 4294967295, 4294967296, "65534"])
def test_a_uid_setpriv_would_leave_root_or_cannot_take_is_refused(uid):
    with pytest.raises(SandboxError) as caught:
        Sandbox(uid=uid)
    assert str(caught.value) == f"the sandbox's uid: expected an integer from 1 to 4294967294, got {uid!r}"


def test_a_non_root_operator_who_cannot_make_cgroups_is_told_how_to_get_a_delegated_one():
    # The probe's cgroup check run by an ordinary user (uid 65534) on this machine, whose cgroups (v1 here)
    # are root's: the host's file system as it is, but for a private /root holding only the Python, so the
    # user can run it.
    python_home = os.path.realpath(sys.base_prefix)
    bwrap = [
        "/usr/bin/bwrap", "--bind", "/", "/", "--perms", "0755", "--tmpfs", "/root",
        "--ro-bind", python_home, python_home, "--proc", "/proc", "--dev", "/dev", "--unshare-pid",
        "--die-with-parent", "--",
        "/usr/bin/setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--inh-caps=-all",
        "--bounding-set=-all", "--",
    ]  # fmt: skip
    code = (
        "import os\nfrom ember.isolation.probe import _cgroup_problem\nprint(os.geteuid())\nprint(_cgroup_problem())\n"
    )
    done = subprocess.run([*bwrap, sys.executable, "-c", code], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    uid, problem = done.stdout.decode().splitlines()
    assert uid == "65534"
    assert problem.startswith("EMBER cannot create the policy's memory and pids cgroups as uid 65534 (")
    assert "Permission denied" in problem
    assert problem.endswith(
        "the cgroups are not delegated to this user (cgroup v1 never is); ask the administrator for a delegated "
        "cgroup (cgroup v2 with memory and pids: systemd-run --user --scope -p Delegate=yes ember ..., or v1 "
        "memory and pids cgroups owned by uid 65534 that EMBER runs in), or use --sandbox off"
    )
