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
the policy's interpreter, from ``RUSAGE_CHILDREN``), as the difference
between ``ember evaluate --workers 1`` of ``--seeds`` and of twice as many
seeds over the extra episodes (start-up cancels), this tree and the base
interleaved ``--rounds`` times.  Target: <= 0.1 s an episode.

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


def tree_cpu(src, folder, scratch):
    """CPU seconds of ``ember evaluate --workers 1`` on ``folder``'s campaign and every process it waited for."""
    results = os.path.join(tempfile.mkdtemp(dir=scratch), "res")
    env = dict(os.environ, PYTHONPATH=src)
    command = [sys.executable, "-m", "ember.cli", "evaluate", os.path.join(folder, "campaign.toml"), "-o", results]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*command, "--workers", "1"], env=env, capture_output=True, timeout=3600, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench: {src}: evaluate exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def cpu_main(args, trees, scratch, folders):
    small, large = python_only(args.seeds), python_only(2 * args.seeds)
    folders += [small, large]
    per = {name: [] for name in trees}
    for round_number in range(args.rounds):
        order = ("base", "new") if round_number % 2 == 0 else ("new", "base")
        for name in order:
            spent = tree_cpu(trees[name], large, scratch) - tree_cpu(trees[name], small, scratch)
            per[name].append(spent / args.seeds)
        print(f"bench: round {round_number + 1}: { ({n: v[-1] for n, v in per.items()}) }", file=sys.stderr, flush=True)
    print(f"\n{args.rounds} rounds, base {args.base}, office, python policy, --workers 1; CPU s per episode")
    print(f"(the whole process tree, {2 * args.seeds} against {args.seeds} seeds), median (min-max)\n")
    print("| tree | CPU s/episode | new / base | target | met |")
    print("|---|---:|---:|---:|:---:|")
    ratios = [n / b for n, b in zip(per["new"], per["base"], strict=True)]
    for name in ("base", "new"):
        met = "yes" if statistics.median(per[name]) <= 0.1 else "**no**"
        ratio = spread(ratios) if name == "new" else "1.00"
        values = per[name]
        shown = f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f})"
        print(f"| {name} | {shown} | {ratio} | 0.1 | {met} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=20, help="office seeds (default 20)")
    parser.add_argument("--base", default="ea058d3", help="the commit to compare with (default ea058d3)")
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--skip-large", action="store_true", help="office only")
    parser.add_argument("--cpu", action="store_true", help="CPU s per python-policy office episode (see above)")
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
