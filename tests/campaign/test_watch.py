"""The episode process (campaign/watch.py), driven in this process through ``run_task``.

Each attempt below is a real episode process (forked, or started afresh as
on a Dask worker) running real foreign code: its standard streams are
capped logs, its time bounds are enforced from outside, its end is
reported in one line, its kept record is whole or absent.
"""

import gzip
import hashlib
import os
import sys
import textwrap

import pytest

from ember.campaign import campaign_file as spec
from ember.campaign import watch
from ember.campaign.attempt import run_task
from ember.campaign.logs import LOG_CAP_BYTES, cut_line
from ember.campaign.task import Task
from ember.errors import ResultsIOError
from ember.scenario import compile_scenario

from helpers.campaigns import EXAMPLE_AGENT

SMALL = compile_scenario("builtin:small-room")
MIB = 1024 * 1024


def make_task(folder, results, policy, seed=0, keep=False):
    return Task(
        campaign="watch",
        policy=policy,
        where="policies[3]",
        scenario=SMALL.data,
        scenario_id=SMALL.scenario_id,
        scenario_hash=SMALL.hash,
        seed=seed,
        folder=str(folder),
        results=str(results),
        keep_records=keep,
        sandbox="off",  # the watcher's mechanics; the sandbox's are tested in tests/isolation
    )


@pytest.fixture
def place(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    return folder, tmp_path / "res"


def python_task(place, source, name="make", step_timeout=2.0, **more):
    folder, results = place
    module = f"mod_{abs(hash(source)) % 10**8}"
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    return make_task(
        folder, results, {"name": "py", "python": f"{module}:{name}", "step_timeout": step_timeout}, **more
    )


def logs(place, policy="py", seed=0):
    return place[1] / "logs" / policy / SMALL.scenario_id / str(seed)


GREEDY = """
from ember.sim.policies import GreedyPolicy
def make(scenario):
    return GreedyPolicy(scenario)
"""


def builtin_row(place, seed=0, keep=False):
    folder, results = place
    return run_task(make_task(folder, results, {"name": "g", "builtin": "greedy"}, seed=seed, keep=keep))


def test_a_python_episode_gives_the_builtin_row(place):
    row = run_task(python_task(place, GREEDY))
    assert row["status"] == "ok", row["error"]
    assert row["metrics"] == builtin_row(place)["metrics"]
    assert not logs(place).with_suffix(".stdout").exists()  # a python policy's stdout is the answer channel
    assert logs(place).with_suffix(".stderr").read_bytes() == b""


def test_without_fork_the_episode_process_starts_afresh_with_the_same_row(place, monkeypatch):
    # A Dask worker has threads: the episode process is then a new interpreter (no fork).
    monkeypatch.setattr(watch, "_can_fork", lambda: False)
    row = run_task(python_task(place, GREEDY + "\nprint('hello from a fresh interpreter')\n"))
    assert row["status"] == "ok", row["error"]
    assert row["metrics"] == builtin_row(place)["metrics"]
    assert logs(place).with_suffix(".stderr").read_text() == "hello from a fresh interpreter\n"  # print(): the log


def test_kept_records_are_whole_and_the_same_for_python_and_builtin(place):
    python_row = run_task(python_task(place, GREEDY, keep=True))
    records = place[1] / "records"
    python_record = (records / "py" / SMALL.scenario_id / "0.record.gz").read_bytes()
    builtin = builtin_row(place, keep=True)
    builtin_record = (records / "g" / SMALL.scenario_id / "0.record.gz").read_bytes()
    assert python_record == builtin_record
    assert python_row["record_sha256"] == builtin["record_sha256"]
    assert python_row["record_sha256"] == hashlib.sha256(gzip.decompress(python_record)).hexdigest()
    assert python_row["record"] == os.path.join("records", "py", SMALL.scenario_id, "0.record.gz")
    assert [p.name for p in (records / "py" / SMALL.scenario_id).iterdir()] == ["0.record.gz"]


FLOOD = """
import os, sys
from ember.sim.policies import GreedyPolicy
def make(scenario):
    greedy = GreedyPolicy(scenario)
    def policy(observation):
        if observation["step"] == 1:
            chunk = bytes(range(256)) * 4096  # 1 MiB
            for _ in range(11):
                sys.stdout.buffer.write(chunk)  # print()'s stream: the log, as standard error is
            sys.stdout.buffer.write(b"tail")
            sys.stdout.flush()
        return greedy(observation)
    return policy
"""


def test_logs_are_capped_with_a_last_line_saying_how_much_was_cut(place):
    row = run_task(python_task(place, FLOOD))
    assert row["status"] == "ok", row["error"]
    chunk = bytes(range(256)) * 4096
    for suffix, written in ((".stderr", chunk * 11 + b"tail"),):
        data = logs(place).with_suffix(suffix).read_bytes()
        assert data[:LOG_CAP_BYTES] == written[:LOG_CAP_BYTES]
        assert data[LOG_CAP_BYTES:] == b"\n" + cut_line(len(written) - LOG_CAP_BYTES)
        assert data.endswith(b"more bytes were cut: a log keeps at most 10485760 bytes of an episode]\n")


def test_an_agent_flooding_stderr_is_capped(place):
    folder, results = place
    (folder / "noisy.py").write_text(
        "import os, runpy, sys\n"
        "for _ in range(12):\n    os.write(2, b'x' * (1 << 20))\n"
        f"sys.argv = [{EXAMPLE_AGENT!r}]\nrunpy.run_path({EXAMPLE_AGENT!r}, run_name='__main__')\n"
    )
    policy = {"name": "noisy", "agent": f"{sys.executable} noisy.py", "step_timeout": 10.0}
    row = run_task(make_task(folder, results, policy))
    assert row["status"] == "ok", row["error"]
    data = logs(place, "noisy").with_suffix(".stderr").read_bytes()
    assert data == b"x" * LOG_CAP_BYTES + b"\n" + cut_line(2 * MIB)
    assert not logs(place, "noisy").with_suffix(".stdout").exists()  # an agent's stdout is the protocol


def test_an_agent_timeout_names_its_policy_entry(place):
    folder, results = place
    (folder / "mute.py").write_text("import time\ntime.sleep(60)\n")
    row = run_task(
        make_task(folder, results, {"name": "mute", "agent": f"{sys.executable} mute.py", "step_timeout": 0.3})
    )
    assert row["error"] == "step 1: the agent did not answer within 0.3 s (policies[3].step_timeout)."


@pytest.mark.parametrize(
    "body, reason",
    [
        ("os._exit(3)", "step 2: the python policy exited with status 3 before answering the observation."),
        (
            "os.kill(os.getpid(), signal.SIGSEGV)",
            "step 2: the python policy was killed by SIGSEGV before answering the observation.",
        ),
        ("sys.exit(4)", "step 2: the python policy raised SystemExit: 4"),
        ("raise KeyboardInterrupt", "step 2: the python policy raised KeyboardInterrupt: "),
    ],
    ids=["os._exit", "SIGSEGV", "sys.exit", "KeyboardInterrupt"],
)
def test_a_python_policy_that_ends_its_process_is_one_failed_row(place, body, reason):
    source = f"""
    import os, signal, sys
    from ember.sim.policies import GreedyPolicy
    def make(scenario):
        greedy = GreedyPolicy(scenario)
        def policy(observation):
            if observation["step"] == 2:
                {body}
            return greedy(observation)
        return policy
    """
    row = run_task(python_task(place, source))
    assert row["status"] == "failed" and row["metrics"] is None
    assert row["error"] == reason.rstrip()


def test_making_a_policy_is_bounded(place, monkeypatch):
    monkeypatch.setattr(spec, "WORK_TIMEOUT_S", 0.5)
    source = """
    import time
    def make(scenario):
        while True:
            try:
                time.sleep(10)
            except BaseException:
                pass
    """
    # Making the policy is the host's work before its first answer: step 1's step_timeout bounds it.
    task = python_task(place, source, step_timeout=0.2)
    row = run_task(task)
    assert row["error"] == "step 1: the python policy did not answer within 0.2 s (policies[3].step_timeout)."


def test_a_policy_slowing_its_own_process_cannot_stall_embers_steps(place, monkeypatch):
    monkeypatch.setattr(spec, "WORK_TIMEOUT_S", 0.5)
    source = """
    import sys, time
    from ember.sim.policies import GreedyPolicy
    def make(scenario):
        greedy = GreedyPolicy(scenario)
        def policy(observation):
            actions = greedy(observation)
            if observation["step"] == 1:
                # From now on every function call in this process sleeps: EMBER's own steps stall.
                sys.setprofile(lambda frame, event, arg: time.sleep(0.01) if event == "call" else None)
            return actions
        return policy
    """
    # It once slowed the process that ran the simulator; now it slows its own host alone.
    row = run_task(python_task(place, source, step_timeout=5.0))
    assert row["status"] == "ok", row["error"]
    assert row["metrics"] == builtin_row(place)["metrics"]


def test_a_timed_out_episode_leaves_no_record_and_no_temporary_file(place):
    source = """
    import time
    from ember.sim.policies import GreedyPolicy
    def make(scenario):
        greedy = GreedyPolicy(scenario)
        def policy(observation):
            if observation["step"] == 3:
                time.sleep(30)
            return greedy(observation)
        return policy
    """
    row = run_task(python_task(place, source, step_timeout=0.3, keep=True))
    assert row["error"] == "step 3: the python policy did not answer within 0.3 s (policies[3].step_timeout)."
    assert row["record"] is None
    folder = place[1] / "records" / "py" / SMALL.scenario_id
    assert list(folder.iterdir()) == []
    assert sorted(p.name for p in logs(place).parent.iterdir()) == ["0.stderr"]


def test_a_full_results_directory_is_embers_error_not_the_policys(place, tmp_path):
    folder, results = place
    (results / "logs").mkdir(parents=True)
    os.symlink("/dev/full", results / "logs" / "py")  # not a folder: the log cannot be created
    with pytest.raises(ResultsIOError) as raised:
        run_task(python_task(place, GREEDY))
    assert str(results / "logs" / "py") in str(raised.value)
