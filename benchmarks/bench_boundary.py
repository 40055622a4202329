"""The price of the trust boundary and the sandbox: hosted policies against the code before them.

Two foreign policies, each playing greedy: a python policy (greedy wrapped
as a module, ``python = "greedy_module:make"``) and an agent (the
standard-library ``examples/greedy_agent.py``, run by this interpreter).
Each is evaluated with ``ember evaluate --workers 1`` on ``builtin:office``
(``--seeds`` seeds) and on ``builtin:ember-v1/large-hall-casualty`` (one
seed), by the code of this tree (the policy process in the sandbox,
``--sandbox required``) and, in the same interleaved rounds, by the code of
the base commit (``--base``, extracted with ``git archive``: the python
policy in the episode process, the agent unsandboxed).  The time per
episode is the mean ``elapsed_s`` of the policy's rows (the attempt's wall
time on its worker); the table prints the median ratio new / base over the
rounds (min-max) against the targets:

  builtin:office                         <= 1.5
  builtin:ember-v1/large-hall-casualty   <= 1.2

and the sandbox's start-up over ``--starts`` starts: ``python -c pass``
bare and sandboxed (its cgroups made and removed), and a sandbox running
``/bin/true``, median and max in milliseconds.

``--cpu`` measures instead the CPU time of a python policy's office
episode (the whole process tree: the command, its worker, the sandbox and
the policy's interpreter, from a ``cpuacct`` cgroup of its own where the
machine offers one, else ``RUSAGE_CHILDREN``, which counts a process
only once it is waited for), as the difference between
``ember evaluate --workers 1`` of ``--seeds`` and of twice as many seeds
over the extra episodes (start-up cancels), this tree and the base
interleaved ``--rounds`` times.  Each tree is copied to a scratch folder,
compiled (as ``pip install`` does; ``--no-bytecode`` leaves it without, so
that every sandbox compiles every module it imports) and run by a virtual
environment of its own, so that the sandbox imports that tree's host.
Each round also runs ``--repeat`` times, per tree, ``--seeds`` episodes
alone (``EPISODES``: the launcher, the sandbox, the host, the policy, the
simulator and the measurement, none of a campaign's machinery, which is
the same code in both trees), whose CPU varies far less.
Target: <= 0.1 s an episode.

Usage::

    python benchmarks/bench_boundary.py                    # 3 rounds, 20 office seeds, base ea058d3
    python benchmarks/bench_boundary.py --cpu --rounds 3 --base f92f092   # CPU s per python-policy episode
    python benchmarks/bench_boundary.py --rounds 1 --skip-large
"""

import argparse
import json
import os
import resource
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OFFICE, LARGE = "builtin:office", "builtin:ember-v1/large-hall-casualty"
TARGETS = {OFFICE: 1.5, LARGE: 1.2}
GREEDY_MODULE = """
from ember.sim.policies import GreedyPolicy


def make(scenario):
    return GreedyPolicy(scenario)
"""


def campaign_text(scenario, seeds):
    agent = json.dumps(f"{sys.executable} greedy_agent.py")
    return (
        f'campaign = "boundary"\nseeds = {{ start = 0, count = {seeds} }}\nscenarios = ["{scenario}"]\n'
        '[[policies]]\nname = "python"\npython = "greedy_module:make"\n'
        f'[[policies]]\nname = "agent"\nagent = {agent}\n'
    )


def base_tree(commit, folder):
    target = os.path.join(folder, f"base-{commit}")
    os.makedirs(target)
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "src"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return os.path.join(target, "src")


def campaign_folder(scenario, seeds):
    """A folder the sandbox's uid can read, with the two policies and the campaign file."""
    folder = tempfile.mkdtemp(prefix="ember-bench-boundary-", dir="/tmp")
    os.chmod(folder, 0o755)
    for name, text in (("greedy_module.py", GREEDY_MODULE), ("campaign.toml", campaign_text(scenario, seeds))):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    shutil.copy(os.path.join(ROOT, "examples", "greedy_agent.py"), folder)
    for name in os.listdir(folder):
        os.chmod(os.path.join(folder, name), 0o644)
    return folder


def per_episode(src, folder, scratch):
    """{policy: mean elapsed_s of its rows} of one evaluate by the code in ``src``."""
    results = tempfile.mkdtemp(dir=scratch)
    shutil.rmtree(results)
    env = dict(os.environ, PYTHONPATH=src)
    command = [sys.executable, "-m", "ember.cli", "evaluate", os.path.join(folder, "campaign.toml"), "-o", results]
    done = subprocess.run([*command, "--workers", "1"], env=env, capture_output=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench: {src}: evaluate exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    with open(os.path.join(results, "episodes.jsonl"), encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    bad = [row for row in rows if row["status"] != "ok"]
    if bad:
        raise SystemExit(f"bench: {src}: failed rows: {bad[:2]}")
    times = {}
    for row in rows:
        times.setdefault(row["policy"], []).append(row["elapsed_s"])
    shutil.rmtree(results)
    return {policy: statistics.mean(values) for policy, values in times.items()}


def spread(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def start_ups(starts):
    """Milliseconds: (bare python -c pass, sandboxed python -c pass, sandboxed /bin/true) lists."""
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from ember.isolation.probe import require_sandbox
    from ember.isolation.sandbox import Sandbox

    require_sandbox()
    sandbox = Sandbox(cwd="/tmp")
    measured = {"bare python -c pass": [], "sandboxed python -c pass": [], "sandboxed /bin/true": []}
    for _ in range(starts):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        measured["bare python -c pass"].append((time.perf_counter() - started) * 1000)
        for name, command in (
            ("sandboxed python -c pass", [sys.executable, "-c", "pass"]),
            ("sandboxed /bin/true", ["/bin/true"]),
        ):
            started = time.perf_counter()
            process = sandbox.start(command)
            process.wait()
            process.close()
            measured[name].append((time.perf_counter() - started) * 1000)
    return measured


def python_only(seeds):
    """A campaign folder of the python policy alone on the office, ``seeds`` seeds."""
    folder = campaign_folder(OFFICE, seeds)
    text = (
        f'campaign = "boundary"\nseeds = {{ start = 0, count = {seeds} }}\nscenarios = ["{OFFICE}"]\n'
        '[[policies]]\nname = "python"\npython = "greedy_module:make"\n'
    )
    with open(os.path.join(folder, "campaign.toml"), "w", encoding="utf-8") as handle:
        handle.write(text)
    return folder


def cpuacct_folder():
    """The v1 ``cpuacct`` hierarchy's mount point when this process can make a cgroup there, else None."""
    with open("/proc/self/mountinfo", encoding="ascii") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            tail = right.split()
            if len(tail) >= 3 and tail[0] == "cgroup" and "cpuacct" in tail[2].split(","):
                point = left.split()[4]
                if os.access(point, os.W_OK):
                    return point
    return None


def wait_empty(procs, deadline_s=10.0):
    """Until no process is left in a cgroup (a worker's processes may end after the command has exited)."""
    deadline = time.monotonic() + deadline_s
    while True:
        with open(procs, encoding="ascii") as handle:
            left = handle.read().split()
        if not left:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: processes {left} outlived the evaluate by {deadline_s:g} s")
        time.sleep(0.01)


def tree_venv(src, scratch, name):
    """A virtual environment running the code in ``src`` with this environment's packages: its interpreter.

    The sandbox binds and imports what the episode process's own interpreter has installed (its prefix,
    its editable source roots, ``installation.python_paths``), never ``PYTHONPATH``: without a venv of its
    own, a tree's sandboxed host and policy would be this checkout's code whatever the tree."""
    venv = os.path.join(scratch, f"venv-{name}")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site_packages = os.path.join(venv, "lib", version, "site-packages")
    packages = [path for path in site.getsitepackages() if os.path.isdir(path)]
    # Path lines only: this environment's .pth files (its editable EMBER) are not read from there.
    with open(os.path.join(site_packages, "ember-tree.pth"), "w", encoding="utf-8") as handle:
        handle.write("".join(f"{path}\n" for path in [src, *packages]))
    return os.path.join(venv, "bin", "python")


def copied_tree(folder):
    """This checkout's ``src`` copied to ``folder``, its bytecode left behind (``compile_tree`` makes it)."""
    target = os.path.join(folder, "new", "src")
    shutil.copytree(os.path.join(ROOT, "src"), target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def compile_tree(src):
    """Bytecode for every module of ``src``, as ``pip install`` writes it (the sandbox can write none)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", src], check=True, stdout=subprocess.DEVNULL)


def tree_cpu(python, folder, scratch):
    """CPU seconds of ``ember evaluate --workers 1`` on ``folder``'s campaign and of every process it starts.

    In a ``cpuacct`` cgroup of its own when this machine offers one (v1, run by root): the sandboxes'
    processes stay in it (their own cgroups are memory and pids ones), so it counts them even when they
    are killed before being waited for.  Else ``RUSAGE_CHILDREN``, which counts only the waited-for."""
    results = os.path.join(tempfile.mkdtemp(dir=scratch), "res")
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    command = [python, "-m", "ember.cli", "evaluate", os.path.join(folder, "campaign.toml"), "-o", results]
    point = cpuacct_folder()
    group = None
    if point is not None:
        group = os.path.join(point, f"ember-bench-{os.getpid()}-{time.monotonic_ns()}")
        os.mkdir(group)
    procs = None if group is None else os.path.join(group, "cgroup.procs")

    def join():  # in the child, before exec: the whole tree is in the group from its first instruction
        with open(procs, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run(
            [*command, "--workers", "1"],
            env=env,
            capture_output=True,
            timeout=3600,
            check=False,
            preexec_fn=None if group is None else join,  # noqa: PLW1509 (a benchmark's own child)
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if group is not None:
            wait_empty(procs)
            with open(os.path.join(group, "cpuacct.usage"), encoding="ascii") as handle:
                spent = int(handle.read()) / 1e9
    finally:
        if group is not None:
            os.rmdir(group)
    if done.returncode != 0:
        raise SystemExit(f"bench: {python}: evaluate exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    if group is None:
        spent = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return spent


#: Run by a tree's interpreter in a cpuacct cgroup of its own: office episodes of the python policy through the
#: boundary as an episode process runs them (the launcher, the sandbox, the host, the simulator and the
#: measurement), none of a campaign's machinery; the CPU of the group per episode after a first one.
EPISODES = """
import sys
from ember.agent import AgentPolicy
from ember.engine.run import measure_run
from ember.isolation.boundary import Launcher, host_command
from ember.scenario import compile_scenario, load_scenario

folder, usage, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
scenario = compile_scenario(load_scenario("builtin:office"))
source = "greedy_module:make"


def episode(seed):
    launcher = Launcher("required", files=[folder + "/greedy_module.py"], cwd=folder, own_session=False)
    agent = AgentPolicy(
        host_command(source), scenario.data, 10.0, launch=launcher, who="python policy", host_source=source
    )
    with agent:
        agent.finish(measure_run(scenario, agent, seed, out=None, live=False).final_state)


def spent():
    with open(usage, encoding="ascii") as handle:
        return int(handle.read())


episode(0)
before = spent()
for seed in range(1, count + 1):
    episode(seed)
print((spent() - before) / 1e9 / count)
"""


def episodes_cpu(python, folder, count):
    """CPU seconds per office episode of ``EPISODES`` run by ``python``; None without a cpuacct cgroup."""
    point = cpuacct_folder()
    if point is None:
        return None
    group = os.path.join(point, f"ember-bench-{os.getpid()}-{time.monotonic_ns()}")
    os.mkdir(group)
    procs = os.path.join(group, "cgroup.procs")

    def join():  # in the child, before exec
        with open(procs, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))

    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    try:
        done = subprocess.run(
            [python, "-c", EPISODES, folder, os.path.join(group, "cpuacct.usage"), str(count)],
            env=env,
            capture_output=True,
            timeout=3600,
            check=False,
            preexec_fn=join,  # noqa: PLW1509 (a benchmark's own child)
        )
        wait_empty(procs)
    finally:
        os.rmdir(group)
    if done.returncode != 0:
        raise SystemExit(f"bench: {python}: the episodes exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return float(done.stdout.decode().split()[-1])


def cpu_table(per, target):
    print("| tree | CPU s/episode | new / base | target | met |")
    print("|---|---:|---:|---:|:---:|")
    ratios = [n / b for n, b in zip(per["new"], per["base"], strict=True)]
    for name in ("base", "new"):
        met = "yes" if statistics.median(per[name]) <= target else "**no**"
        ratio = spread(ratios) if name == "new" else "1.00"
        values = per[name]
        shown = f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f})"
        print(f"| {name} | {shown} | {ratio} | {target} | {met} |")


def cpu_main(args, trees, scratch, folders):
    small, large = python_only(args.seeds), python_only(2 * args.seeds)
    folders += [small, large]
    trees = dict(trees, new=copied_tree(scratch))
    if not args.no_bytecode:
        for src in trees.values():
            compile_tree(src)
    trees = {name: tree_venv(src, scratch, name) for name, src in trees.items()}
    per = {name: [] for name in trees}
    alone = {name: [] for name in trees}
    for round_number in range(args.rounds):
        order = ("base", "new") if round_number % 2 == 0 else ("new", "base")
        for name in order:
            spent = tree_cpu(trees[name], large, scratch) - tree_cpu(trees[name], small, scratch)
            per[name].append(spent / args.seeds)
        for name in order:
            for _ in range(args.repeat):
                alone[name].append(episodes_cpu(trees[name], small, args.seeds))
        shown = {n: (round(v[-1], 4), round(alone[n][-1] or 0, 4)) for n, v in per.items()}
        print(f"bench: round {round_number + 1}: {shown}", file=sys.stderr, flush=True)
    print(f"\n{args.rounds} rounds, base {args.base}, office, python policy, --workers 1; CPU s per episode")
    how = "cgroup cpuacct" if cpuacct_folder() else "RUSAGE_CHILDREN"
    code = "without bytecode (every module compiled in every sandbox)" if args.no_bytecode else "with bytecode"
    print(f"(the whole process tree, {how}, {2 * args.seeds} against {args.seeds} seeds, {code}), median (min-max)\n")
    cpu_table(per, 0.1)
    if None not in alone["new"]:
        print(f"\nthe episodes alone ({args.seeds} a run, {args.repeat} runs a round): launcher, sandbox, host,")
        print("policy, simulator and measurement, none of the campaign's machinery; median (min-max)\n")
        cpu_table(alone, 0.1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=20, help="office seeds (default 20)")
    parser.add_argument("--base", default="ea058d3", help="the commit to compare with (default ea058d3)")
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--skip-large", action="store_true", help="office only")
    parser.add_argument("--cpu", action="store_true", help="CPU s per python-policy office episode (see above)")
    parser.add_argument("--repeat", type=int, default=3, help="with --cpu: runs of the episodes alone a round")
    parser.add_argument(
        "--no-bytecode", action="store_true", help="with --cpu: leave both trees without bytecode (see above)"
    )
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="ember-bench-")
    folders = []
    try:
        trees = {"base": base_tree(args.base, scratch), "new": os.path.join(ROOT, "src")}
        if args.cpu:
            cpu_main(args, trees, scratch, folders)
            return
        cases = [(OFFICE, args.seeds)] + ([] if args.skip_large else [(LARGE, 1)])
        ratios = {}
        seconds = {}
        for scenario, seeds in cases:
            folder = campaign_folder(scenario, seeds)
            folders.append(folder)
            for round_number in range(args.rounds):
                order = ("base", "new") if round_number % 2 == 0 else ("new", "base")
                measured = {name: per_episode(trees[name], folder, scratch) for name in order}
                for policy in ("python", "agent"):
                    ratios.setdefault((scenario, policy), []).append(measured["new"][policy] / measured["base"][policy])
                    for name in ("base", "new"):
                        seconds.setdefault((scenario, policy, name), []).append(measured[name][policy])
                print(f"bench: {scenario} round {round_number + 1}: {measured}", file=sys.stderr, flush=True)
        print(f"\n{args.rounds} rounds, base {args.base}, --workers 1; seconds per episode, median (min-max)\n")
        print("| scenario | policy | base s/episode | new s/episode | new / base | target | met |")
        print("|---|---|---:|---:|---:|---:|:---:|")
        for (scenario, policy), values in ratios.items():
            met = "yes" if statistics.median(values) <= TARGETS[scenario] else "**no**"
            base_s, new_s = seconds[(scenario, policy, "base")], seconds[(scenario, policy, "new")]
            print(
                f"| {scenario} | {policy} | {spread(base_s)} | {spread(new_s)} | {spread(values)} "
                f"| {TARGETS[scenario]} | {met} |"
            )
        measured = start_ups(args.starts)
        print(f"\nstart-up over {args.starts} starts, milliseconds\n")
        print("| what | median | max |")
        print("|---|---:|---:|")
        for name, values in measured.items():
            print(f"| {name} | {statistics.median(values):.1f} | {max(values):.1f} |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
