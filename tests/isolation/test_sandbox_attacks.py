"""Each property of isolation.md §2 as an attack: it succeeds without the sandbox and fails inside it.

Real bubblewrap, real cgroups, real processes.  Every attack is a small
program printing its verdict (``{"succeeded": ...}``) as its last line;
run plainly (as the test's own user) it must succeed, so the test shows
that it attacks something real; run in the sandbox it must fail.
"""

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from ember.isolation.environment import FIXED_ENVIRONMENT
from ember.isolation.sandbox import SandboxLimits

from helpers.sandboxes import open_folder, run_plain, run_sandboxed, sandbox_for, write_file


@pytest.fixture
def folder():
    with open_folder() as path:
        yield path


def test_the_callers_environment_is_invisible_and_the_environment_is_exactly_the_fixed_one(folder, monkeypatch):
    monkeypatch.setenv("EMBER_TEST_TOKEN", "token-3f9a")
    script = write_file(
        folder,
        "env_attack.py",
        """
        import json, os
        print(json.dumps({"succeeded": os.environ.get("EMBER_TEST_TOKEN") == "token-3f9a", "env": dict(os.environ)}))
        """,
    )
    assert run_plain(script, folder).verdict["succeeded"] is True
    inside = run_sandboxed(script, folder, env={"POLICY_MODE": "fast"})
    assert inside.verdict["succeeded"] is False
    assert inside.verdict["env"] == {**FIXED_ENVIRONMENT, "POLICY_MODE": "fast"}


def test_files_outside_the_policys_own_are_unreadable(folder):
    with open_folder() as elsewhere:
        secret = write_file(elsewhere, "secret.txt", "the operator's token\n")
        sibling = write_file(folder, "competitor.py", "SECRET_WEIGHTS = 42\n")  # another policy's file, same folder
        private = write_file(folder, "private.txt", "root only\n", mode=0o600)
        script = write_file(
            folder,
            "file_attack.py",
            """
            import json, sys
            read = {}
            for path in sys.argv[1:]:
                if path == "--inside":
                    continue
                try:
                    with open(path) as handle:
                        read[path] = handle.read()
                except OSError as exc:
                    read[path] = None
            print(json.dumps({"succeeded": any(v is not None for v in read.values()), "read": read}))
            """,
        )
        targets = [secret, sibling, "/etc/shadow", private]
        plain = run_plain(script, folder, targets)
        assert all(plain.verdict["read"][path] is not None for path in targets)  # as root, everything
        inside = run_sandboxed(script, folder, targets, files=[private])
        assert inside.verdict["read"] == {
            secret: None,
            sibling: None,
            "/etc/shadow": None,
            private: None,  # bound, but 0600 root's: the sandbox's uid is not root
        }


def test_the_working_directory_holds_only_the_policys_files_and_etc_only_the_allowlist(folder):
    write_file(folder, "other_policy/weights.json", "{}")
    script = write_file(
        folder,
        "listing_attack.py",
        """
        import json, os
        seen = sorted(os.listdir("."))
        etc = sorted(os.listdir("/etc"))
        print(json.dumps({"succeeded": "other_policy" in seen, "cwd": os.getcwd(), "seen": seen, "etc": etc}))
        """,
    )
    assert run_plain(script, folder).verdict["succeeded"] is True
    inside = run_sandboxed(script, folder)
    assert inside.verdict["cwd"] == folder
    assert inside.verdict["seen"] == ["listing_attack.py"]
    allowed = {"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "ssl", "passwd", "group"}
    assert set(inside.verdict["etc"]) <= allowed
    assert {"passwd", "group"} <= set(inside.verdict["etc"])


def test_the_identity_is_unprivileged_with_no_capability_and_the_open_file_limits_are_set(folder):
    script = write_file(
        folder,
        "identity_attack.py",
        """
        import getpass, json, os, resource
        caps = [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")][0]
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
            raised = True
        except (ValueError, OSError):
            raised = False
        print(json.dumps({
            "succeeded": os.getuid() == 0 or int(caps, 16) != 0 or raised,
            "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "caps": caps, "user": getpass.getuser(),
            "nofile": resource.getrlimit(resource.RLIMIT_NOFILE), "core": resource.getrlimit(resource.RLIMIT_CORE),
        }))
        """,
    )
    if os.geteuid() == 0:
        assert run_plain(script, folder).verdict["succeeded"] is True
    inside = run_sandboxed(script, folder).verdict
    assert inside["succeeded"] is False
    assert (inside["uid"], inside["gid"], inside["groups"], int(inside["caps"], 16)) == (65534, 65534, [], 0)
    assert inside["user"] == "ember"
    assert inside["nofile"] == [256, 256]
    assert inside["core"] == [0, 0]


def test_only_stdin_stdout_and_stderr_are_inherited(folder):
    script = write_file(
        folder,
        "fd_attack.py",
        """
        import json, os
        fds = sorted(int(name) for name in os.listdir("/proc/self/fd"))
        inherited = [fd for fd in fds if fd > 2 and os.path.exists(f"/proc/self/fd/{fd}")]
        print(json.dumps({"succeeded": bool(inherited), "fds": inherited}))
        """,
    )
    read_fd, write_fd = os.pipe()  # a descriptor of the caller's, as a control pipe was
    try:
        assert run_plain(script, folder, pass_fds=(write_fd,)).verdict["succeeded"] is True
        assert run_sandboxed(script, folder).verdict["succeeded"] is False
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_remounting_a_read_only_bind_fails_and_the_policys_files_root_and_dev_stay_read_only(folder):
    script = write_file(
        folder,
        "remount_attack.py",
        """
        import ctypes, json, os, sys
        me = os.path.abspath(sys.argv[0])
        remount = None
        if "--inside" in sys.argv:  # outside, the file is no mount point, and nothing needs remounting
            libc = ctypes.CDLL(None, use_errno=True)
            MS_REMOUNT, MS_BIND = 32, 4096
            for target in (me, "/", "/dev"):
                if libc.mount(b"none", target.encode(), None, MS_REMOUNT | MS_BIND, None) == 0:
                    remount = target
        wrote = []
        for path in (me, "/ember-attack-" + os.path.basename(os.path.dirname(me)), "/dev/ember-attack"):
            if "--inside" not in sys.argv and path != me:
                if os.access(os.path.dirname(path), os.W_OK):
                    wrote.append(path)  # root could: not done, not to touch the machine
                continue
            try:
                with open(path, "a") as handle:
                    handle.write("# changed\\n")
                wrote.append(path)
            except OSError:
                pass
        print(json.dumps({"succeeded": bool(wrote) or remount is not None, "wrote": wrote, "remount": remount}))
        """,
    )
    before = pathlib.Path(script).read_text()
    plain = run_plain(script, folder)
    assert plain.verdict["succeeded"] is True
    pathlib.Path(script).write_text(before)
    inside = run_sandboxed(script, folder)
    assert inside.verdict == {"succeeded": False, "wrote": [], "remount": None}
    assert pathlib.Path(script).read_text() == before


def test_tcp_and_abstract_sockets_on_the_hosts_loopback_are_unreachable(folder):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    abstract_name = f"ember-test-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + abstract_name)
    abstract.listen(8)
    script = write_file(
        folder,
        "net_attack.py",
        """
        import json, socket, sys
        port, name = int(sys.argv[1]), sys.argv[2]
        reached = []
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            reached.append("tcp")
        except OSError:
            pass
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect("\\0" + name)
            reached.append("abstract")
        except OSError:
            pass
        print(json.dumps({"succeeded": bool(reached), "reached": reached}))
        """,
    )
    try:
        args = [str(listener.getsockname()[1]), abstract_name]
        assert run_plain(script, folder, args).verdict["reached"] == ["tcp", "abstract"]
        assert run_sandboxed(script, folder, args).verdict == {"succeeded": False, "reached": []}
    finally:
        listener.close()
        abstract.close()


def _sleeper():
    return subprocess.Popen(["sleep", "60"])  # noqa: S607


def test_other_processes_are_invisible_and_cannot_be_signalled(folder):
    script = write_file(
        folder,
        "pid_attack.py",
        """
        import json, os, signal, sys
        victim = int(sys.argv[1])
        done = []
        try:
            open(f"/proc/{victim}/cmdline").read()
            done.append("read")
        except OSError:
            pass
        try:
            os.kill(victim, signal.SIGKILL)
            done.append("killed")
        except OSError:
            pass
        mine = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
        print(json.dumps({"succeeded": bool(done), "done": done, "pids": mine}))
        """,
    )
    victim = _sleeper()
    try:
        assert run_plain(script, folder, [str(victim.pid)]).verdict["done"] == ["read", "killed"]
        assert victim.wait(10) == -signal.SIGKILL
    finally:
        victim.kill()
    victim = _sleeper()
    try:
        inside = run_sandboxed(script, folder, [str(victim.pid)]).verdict
        assert inside["done"] == []
        assert victim.poll() is None  # still running
        assert len(inside["pids"]) <= 3  # bubblewrap's init, the attack (and nothing of the host)
    finally:
        victim.kill()
        victim.wait()


def test_memory_over_memory_mb_is_killed_and_detected(folder):
    script = write_file(
        folder,
        "memory_attack.py",
        """
        import json
        block = b"x" * (192 << 20)
        print(json.dumps({"succeeded": len(block) == 192 << 20}))
        """,
    )
    assert run_plain(script, folder).verdict["succeeded"] is True
    inside = run_sandboxed(script, folder, limits=SandboxLimits(memory_mb=64))
    assert inside.verdict is None
    assert inside.status == -signal.SIGKILL
    assert inside.oom is True
    within = run_sandboxed(script, folder, limits=SandboxLimits(memory_mb=512))
    assert (within.verdict, within.oom) == ({"succeeded": True}, False)


def test_tmp_over_tmp_mb_is_refused_and_nothing_written_there_outlives_the_sandbox(folder):
    name = f"ember-attack-{uuid.uuid4().hex}"
    script = write_file(
        folder,
        "tmp_attack.py",
        """
        import errno, json, os, sys
        name = sys.argv[1]
        written, error = 0, None
        with open(os.path.join("/tmp", name + ".small"), "w") as handle:
            handle.write("left behind?")
        try:
            with open(os.path.join("/tmp", name), "wb") as handle:
                for _ in range(32):
                    handle.write(b"\\0" * (1 << 20))
                    handle.flush()
                    written += 1
        except OSError as exc:
            error = errno.errorcode.get(exc.errno)
        print(json.dumps({"succeeded": written == 32, "written_mb": written, "error": error}))
        """,
    )
    try:
        assert run_plain(script, folder, [name]).verdict["succeeded"] is True
    finally:
        for suffix in ("", ".small"):
            os.remove(os.path.join("/tmp", name + suffix))
    inside = run_sandboxed(script, folder, [name], limits=SandboxLimits(tmp_mb=8)).verdict
    assert inside["succeeded"] is False
    assert inside["error"] == "ENOSPC"
    assert inside["written_mb"] < 8
    assert not os.path.exists(os.path.join("/tmp", name))
    assert not os.path.exists(os.path.join("/tmp", name + ".small"))


_FORK_BOMB = """
import json, os, sys, time
started, error, cap = [], None, 40
for _ in range(cap):
    try:
        pid = os.fork()
    except OSError as exc:
        error = exc.__class__.__name__
        break
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        if not started:  # the first child leaves: a daemon in a session of its own
            os.setsid()
        time.sleep(60)
        os._exit(0)
    started.append(pid)
print(json.dumps({"succeeded": len(started) == cap, "started": started, "error": error}), flush=True)
if "--inside" in sys.argv:
    time.sleep(60)  # until the episode ends it
"""


def test_a_fork_bomb_is_bounded_by_max_processes_and_nothing_outlives_the_sandbox(folder):
    script = write_file(folder, "fork_attack.py", _FORK_BOMB)
    plain = run_plain(script, folder)
    try:
        assert plain.verdict["succeeded"] is True
        assert os.path.exists(f"/proc/{plain.verdict['started'][0]}")  # the daemon outlived its parent
    finally:
        for pid in plain.verdict["started"]:
            os.kill(pid, signal.SIGKILL)
    process = sandbox_for(script, folder, limits=SandboxLimits(max_processes=8)).start(
        [sys.executable, script, "--inside"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        line = process.stdout.readline()
        seen = process.groups.pids()
        folders = list(process.groups.folders)
    finally:
        process.close()
    import json

    verdict = json.loads(line)
    assert verdict["succeeded"] is False
    assert verdict["error"] == "BlockingIOError"
    assert len(verdict["started"]) < 8  # the attack itself is one of the 8
    assert len(seen) >= len(verdict["started"]) + 1
    deadline = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{pid}") for pid in seen) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [pid for pid in seen if _alive(pid)] == []
    assert [path for path in folders if os.path.exists(path)] == []


def _alive(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            return "State:\tZ" not in handle.read()
    except OSError:
        return False


def test_threads_count_against_max_processes(folder):
    script = write_file(
        folder,
        "thread_attack.py",
        """
        import json, threading, time
        started, error = 0, None
        for _ in range(30):
            try:
                threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
                started += 1
            except RuntimeError as exc:
                error = str(exc)
                break
        print(json.dumps({"succeeded": started == 30, "started": started, "error": error}), flush=True)
        import os
        os._exit(0)
        """,
    )
    assert run_plain(script, folder).verdict["succeeded"] is True
    inside = run_sandboxed(script, folder, limits=SandboxLimits(max_processes=8)).verdict
    assert inside["succeeded"] is False
    assert inside["started"] < 8


def test_nothing_can_be_dropped_into_the_python_installation(folder):
    import site

    targets = [os.path.join(path, f"ember-attack-{uuid.uuid4().hex}.pth") for path in site.getsitepackages()]
    targets.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(pytest.__file__))), "x.pth"))
    script = write_file(
        folder,
        "pth_attack.py",
        """
        import json, os, sys
        dropped = []
        for path in sys.argv[1:]:
            if path == "--inside":
                continue
            try:
                with open(path, "x") as handle:
                    handle.write("# a comment only: ignored by site\\n")
                dropped.append(path)
                os.remove(path)
            except OSError:
                pass
        print(json.dumps({"succeeded": bool(dropped), "dropped": dropped}))
        """,
    )
    if os.geteuid() == 0:
        assert run_plain(script, folder, targets[:1]).verdict["succeeded"] is True
    assert run_sandboxed(script, folder, targets).verdict == {"succeeded": False, "dropped": []}
    assert [path for path in targets if os.path.exists(path)] == []


def test_every_capability_set_is_empty_and_no_new_privs_is_set(folder):
    script = write_file(
        folder,
        "capability_attack.py",
        """
        import json, os
        status = dict(line.rstrip("\\n").split(":\\t", 1) for line in open("/proc/self/status") if ":\\t" in line)
        sets = {name: int(status[name], 16) for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
        print(json.dumps({
            "succeeded": any(sets.values()) or status["NoNewPrivs"] != "1",
            "sets": sets, "no_new_privs": status["NoNewPrivs"], "uid": os.getuid(), "gid": os.getgid(),
        }))
        """,
    )
    if os.geteuid() == 0:
        assert run_plain(script, folder).verdict["succeeded"] is True
    inside = run_sandboxed(script, folder).verdict
    assert inside == {
        "succeeded": False,
        "sets": {"CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0, "CapAmb": 0},
        "no_new_privs": "1",
        "uid": 65534,
        "gid": 65534,
    }


def test_a_user_namespace_of_its_own_is_refused_and_threads_and_processes_still_start(folder):
    script = write_file(
        folder,
        "userns_attack.py",
        """
        import ctypes, errno, json, os, subprocess, threading
        libc = ctypes.CDLL(None, use_errno=True)
        CLONE_NEWUSER, SYS_CLONE3 = 0x10000000, 435  # clone3's number on x86_64 and aarch64
        def errno_of(call, *args):
            result = call(*args)
            return 0 if result >= 0 else errno.errorcode[ctypes.get_errno()]
        if hasattr(os, "unshare"):
            try:
                os.unshare(os.CLONE_NEWUSER)
                unshare = 0
            except OSError as exc:
                unshare = errno.errorcode[exc.errno]
        else:
            unshare = errno_of(libc.unshare, CLONE_NEWUSER)
        command = subprocess.run(["unshare", "-U", "true"], capture_output=True, check=False)
        clone3 = errno_of(libc.syscall, SYS_CLONE3, None, 88)  # no arguments: EFAULT where it is allowed
        results = []
        threads = [threading.Thread(target=lambda: results.append(sum(range(1000)))) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        import numpy  # after unshare: OpenBLAS starts threads, and a threaded process cannot unshare
        product = numpy.ones((64, 64)) @ numpy.ones((64, 64))
        child = subprocess.run(["/bin/echo", "child"], capture_output=True, check=False).stdout.decode()
        print(json.dumps({
            "succeeded": unshare == 0 or command.returncode == 0,
            "unshare": unshare, "command": [command.returncode, command.stderr.decode().strip()],
            "clone3": clone3, "threads": results, "numpy": float(product[0, 0]), "child": child,
        }))
        """,
    )
    if os.geteuid() == 0:
        plain = run_plain(script, folder).verdict
        assert (plain["succeeded"], plain["unshare"], plain["clone3"]) == (True, 0, "EFAULT")
    inside = run_sandboxed(script, folder).verdict
    assert inside == {
        "succeeded": False,
        "unshare": "EPERM",
        "command": [1, "unshare: unshare failed: Operation not permitted"],
        "clone3": "ENOSYS",
        "threads": [499500] * 4,
        "numpy": 64.0,
        "child": "child\n",
    }


def test_each_bind_is_made_from_the_resolved_path_at_the_named_path(folder):
    # The policy's file is named through a link (the campaign side checks that its resolution stays in the
    # campaign folder): bubblewrap is handed the resolved source, so no link is followed when it mounts.
    real = write_file(folder, "store/real_policy.py", "import json, os\nprint(json.dumps(os.listdir('.')))\n")
    named = os.path.join(folder, "policy.py")
    os.symlink("store/real_policy.py", named)
    sandbox = sandbox_for(named, folder)
    args = sandbox.bwrap_arguments(3, 4, 5)
    binds = [(args[at + 1], args[at + 2]) for at, word in enumerate(args) if word == "--ro-bind"]
    assert (real, named) in binds
    assert all(source == os.path.realpath(source) for source, _ in binds)
    process = sandbox.start([sys.executable, named], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = process.popen.communicate(timeout=60)
    finally:
        process.close()
    assert (process.returncode, out) == (0, b'["policy.py"]\n'), err  # a file at its name; the store unseen
