"""Campaign throughput: 'ember evaluate' against the bare simulator loop, local workers and real Dask processes.

One campaign (a built-in scenario x seeds x the built-in greedy and random
policies) is run, each way in a fresh process timed from its start to its
exit (interpreter, imports and worker start-up included):

  bare       the simulator and policy alone: no record, no metrics, no rows
  bare x2    the same episodes in two bare processes at once, half each: what two processes of nothing
             but the loop get from this machine (the ceiling of every two-worker throughput below)
  workers=1  ember evaluate --workers 1 (one local worker process)
  workers=2  ember evaluate --workers 2
  dask-1     ember evaluate --scheduler ADDRESS, a real 'dask scheduler' with one
             'dask worker --nworkers 1 --nthreads 1' process (started before the clock)
  dask-2     the same with two worker processes

for the code of this tree and, side by side in the same interleaved rounds,
the code of an older commit (``--old``, extracted with ``git archive`` into a
temporary folder; its own Dask cluster runs its own code).  Each run gives
its wall seconds and its CPU seconds (user + system of the command and of
the children it waited for: its local workers; for the Dask rows, plus what
the cluster's scheduler and workers spent meanwhile, from ``/proc``).
Prints the median (min-max) of both and the targets' ratios, each the
median of the rounds' own ratios:

  workers=1 / bare, CPU          <= 1.5   (the same work on one core)
  dask-1 / workers=1, CPU        <= 1.15
  dask-2 throughput / dask-1     >= 1.7   (wall: what two workers buy)
  bare x2 throughput / bare      none     (the machine's ceiling for the two throughput ratios)

``--where`` then splits this tree's ``workers=1`` CPU into layers, each
measured in a fresh process, in ms per episode: the bare loop, the loop as
campaigns run it (``run_policy`` on a shared-lists simulator), the metrics
(``measure_run`` over that loop), the campaign in one process (``evaluate``
with an in-process runner: rows, fsync, the ranking), and the processes
(the whole command's CPU minus that), beside the bare command's own
start-up.

``--bytecode`` runs every process with the trees' modules compiled once,
beforehand (``compileall`` into a folder of the run, ``PYTHONPYCACHEPREFIX``),
as an installed EMBER runs, where the environment sets
``PYTHONDONTWRITEBYTECODE`` (this machine's does): without it each process
compiles every module it imports again, which the command, importing far
more of EMBER than the bare loop, pays several times (its own process and
its worker's).

``--marginal`` measures instead what Dask costs beyond start-up (the
Dask overhead): against one real ``dask scheduler`` + one ``dask worker``
per tree, the campaign at ``--seeds`` and at twice as many, interleaved
``--rounds`` times; the command's CPU (user + system of the whole process)
plus the scheduler's (``/proc/PID/stat``) of the larger run minus the
smaller one's, per extra episode (start-up cancels).  Rows are compared
(sorted, without ``elapsed_s``) between the trees and with ``--workers 1``
of this tree.  Target: <= 0.5 ms an episode.

``--row-cost`` measures the command's own CPU per row in one process:
unpickling what a worker sends and appending it to episodes.jsonl (fsync
left out: the disk's time is not CPU), for the row dict the command
re-encoded and re-checked before and the ``RowLine`` (the worker's checked
bytes) it writes as they are now, on ``--seeds`` greedy office rows, and
whether both wrote the same bytes.

Usage::

    python benchmarks/bench_campaign.py --row-cost             # the command's CPU per row, dict against RowLine
    python benchmarks/bench_campaign.py                        # office, 60 seeds, 3 rounds, old 2b1401f
    python benchmarks/bench_campaign.py --rounds 5 --old none  # this tree only
    python benchmarks/bench_campaign.py --skip-dask --where    # and where an episode's CPU goes
    python benchmarks/bench_campaign.py --marginal --seeds 150 --old ea058d3   # 300 against 600 episodes
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
START_S = 60

BARE = """
import sys
from ember import Simulator
from ember.scenario import compile_scenario
from ember.sim.policies import make_policy

compiled = compile_scenario(sys.argv[1])
for seed in range(int(sys.argv[3]) if len(sys.argv) > 3 else 0, int(sys.argv[2])):  # argv: scenario, stop[, start]
    for name in ("greedy", "random"):
        sim = Simulator(compiled, seed)
        policy = make_policy(name, compiled, seed)
        while not sim.terminated:
            sim.step(policy(sim.observe()))
"""


# --where: the layers of one campaign's episodes, each measured in one fresh process (CPU seconds).
WHERE = """
import json, shutil, sys, time
started = time.process_time()
from ember import Simulator
from ember.campaign.attempt import run_task
from ember.campaign.driver import evaluate
from ember.engine.run import measure_run
from ember.scenario import compile_scenario
from ember.sim.loop import run_policy
from ember.sim.policies import make_policy

figures = {"imports": time.process_time() - started}
compiled = compile_scenario(sys.argv[1])
episodes = [(seed, name) for seed in range(int(sys.argv[2])) for name in ("greedy", "random")]


def timed(label, run):
    started = time.process_time()
    run()
    figures[label] = time.process_time() - started


def bare():
    for seed, name in episodes:
        sim = Simulator(compiled, seed)
        policy = make_policy(name, compiled, seed)
        while not sim.terminated:
            sim.step(policy(sim.observe()))


def shared():
    for seed, name in episodes:
        run_policy(Simulator(compiled, seed, shared_lists=True), name)


def measured():
    for seed, name in episodes:
        measure_run(compiled, name, seed)


class InProcess:
    window = 2

    def __init__(self):
        self.tasks, self.count = {}, 0

    def submit(self, task, key, attempt):
        self.count += 1
        self.tasks[self.count] = task
        return self.count

    def wait(self, futures):
        return list(futures)

    def outcomes(self, done):
        return [(future, "row", run_task(self.tasks.pop(future))) for future in done]

    def close(self, terminate=False):
        pass

    def check_sandbox(self, files):
        pass


def in_process():
    shutil.rmtree(sys.argv[4], ignore_errors=True)
    evaluate(sys.argv[3], sys.argv[4], make_runner=lambda workers, scheduler: InProcess())


timed("bare", bare)
timed("shared", shared)
timed("measure", measured)
timed("evaluate", in_process)
print(json.dumps(figures))
"""


def where(args, tree, path, folder):
    """--where: the lines of a table of what a campaign's episode costs beyond the bare loop, layer by
    layer (CPU, fresh processes)."""
    runs = []
    for number in range(args.rounds):
        results = os.path.join(folder, f"where-{number}")
        tree.run("-c", WHERE, args.scenario, str(args.seeds), path, results)
        layers = json.loads(tree.last_stdout)
        tree.run("-m", "ember.cli", "evaluate", path, "-o", results + "-command", "--workers", "1")
        layers["command"] = tree.last_cpu
        tree.run("-c", BARE, args.scenario, str(args.seeds))
        layers["bare command"] = tree.last_cpu
        runs.append(layers)
        print(f"where: round {number + 1} done", file=sys.stderr)
    episodes = 2 * args.seeds

    def ms(key, minus=None):
        values = [(run[key] - (run[minus] if minus else 0)) * 1000 / episodes for run in runs]
        return spread(values)

    rows = [
        ("the bare loop (public `Simulator` + policy)", "bare", None),
        ("the loop as campaigns run it (`run_policy`, shared lists), against bare", "shared", "bare"),
        ("the metrics (`measure_run` against that loop)", "measure", "shared"),
        ("the campaign around it, in one process (`evaluate`: rows, fsync, ranking)", "evaluate", "measure"),
        ("processes: the command's start-up, the spawned worker, pickling", "command", "evaluate"),
        ("(the bare command's own start-up and imports)", "bare command", "bare"),
        ("`ember evaluate --workers 1`, whole", "command", None),
        ("the bare command, whole", "bare command", None),
    ]
    title = f"Where a campaign's episode goes ({tree.name}; CPU ms per episode, median (min–max) of {args.rounds}):"
    lines = ["", title, "", "| layer | ms/episode |", "|---|---:|"]
    lines += [f"| {label} | {ms(key, minus)} |" for label, key, minus in rows]
    return lines


def campaign_text(scenario, seeds):
    return (
        f'campaign = "bench"\nseeds = {{ start = 0, count = {seeds} }}\nscenarios = ["{scenario}"]\n'
        '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
        '[[policies]]\nname = "random"\nbuiltin = "random"\n'
    )


class Tree:
    """One version of the code: its ``src`` folder and the Dask clusters that run it."""

    def __init__(self, name, src, folder, bytecode=False):
        self.name, self.src, self.folder = name, src, folder
        self.env = dict(os.environ, PYTHONPATH=src)
        if bytecode:
            # As an installed EMBER runs: its modules compiled once (into a folder of this run, so that
            # neither tree's sources get __pycache__ folders), not again in every process.
            self.env.pop("PYTHONDONTWRITEBYTECODE", None)
            self.env["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache-" + "".join(filter(str.isalnum, name)))
            subprocess.run([sys.executable, "-m", "compileall", "-q", src], env=self.env, check=True)
            cpu_of_children()  # the compiling is no run's CPU
        self.clusters = {}  # workers -> (scheduler address, processes)

    def run(self, *args, cluster=None):
        """Wall seconds of the command; ``last_cpu`` its CPU seconds and its children's, plus, with
        ``cluster`` (workers), what that Dask cluster's scheduler and workers spent meanwhile."""
        processes = self.clusters[cluster][1] if cluster else []
        before = [cpu_of(process.pid) for process in processes]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, *args], env=self.env, capture_output=True, timeout=1800, check=False)
        elapsed = time.perf_counter() - started
        self.last_cpu = cpu_of_children()
        self.last_cluster_cpu = sum(cpu_of(process.pid) - b for process, b in zip(processes, before, strict=True))
        self.last_stdout = done.stdout
        if done.returncode != 0:
            raise SystemExit(f"bench: {self.name}: {args[:4]} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
        return elapsed

    def run_pair(self, first, second):
        """Wall seconds of two commands run at once (``first`` and ``second``: argument lists), until both
        have ended; ``last_cpu`` is both's CPU seconds."""
        started = time.perf_counter()
        both = [subprocess.Popen([sys.executable, *args], env=self.env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE) for args in (first, second)]  # fmt: skip
        errors = [process.communicate(timeout=1800)[1] for process in both]
        elapsed = time.perf_counter() - started
        self.last_cpu = cpu_of_children()
        self.last_cluster_cpu = 0.0
        for process, error in zip(both, errors, strict=True):
            if process.returncode != 0:
                raise SystemExit(f"bench: {self.name}: a pair exited {process.returncode}: {error.decode()[-2000:]}")
        return elapsed

    def start_cluster(self, workers):
        folder = os.path.join(self.folder, f"cluster-{self.name}-{workers}")
        os.makedirs(folder)
        scheduler_file = os.path.join(folder, "scheduler.json")
        log = open(os.path.join(folder, "log"), "wb")  # noqa: SIM115 (lives as long as the cluster)
        dask = [sys.executable, "-m", "dask"]
        processes = [
            subprocess.Popen(
                [*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard"]
                + ["--scheduler-file", scheduler_file],
                env=self.env, stdout=subprocess.DEVNULL, stderr=log,
            )
        ]  # fmt: skip
        deadline = time.monotonic() + START_S
        while not os.path.exists(scheduler_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        address = json.load(open(scheduler_file))["address"]  # noqa: SIM115
        for _ in range(workers):
            processes.append(
                subprocess.Popen(
                    [*dask, "worker", "--scheduler-file", scheduler_file, "--host", "127.0.0.1"]
                    + ["--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                    env=self.env, stdout=subprocess.DEVNULL, stderr=log,
                )
            )  # fmt: skip
        from distributed import Client

        with Client(address, set_as_default=False, timeout=START_S) as client:
            client.wait_for_workers(workers, timeout=START_S)
        self.clusters[workers] = (address, processes)

    def stop(self):
        for _, processes in self.clusters.values():
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(START_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(START_S)


_children_before = [0.0]


def cpu_of_children():
    """User + system CPU seconds of the children waited for since the last call."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    spent, _children_before[0] = total - _children_before[0], total
    return spent


def cpu_of(pid):
    """User + system CPU seconds of a running process so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sorted_rows(results):
    """The rows of a results directory, sorted, without ``elapsed_s`` (what must not depend on how it ran)."""
    with open(os.path.join(results, "episodes.jsonl"), "rb") as handle:
        rows = [json.loads(line) for line in handle]
    for row in rows:
        del row["elapsed_s"]
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def marginal(args, folder):
    """--marginal: command + scheduler CPU per episode beyond start-up, on one real scheduler + worker a tree."""
    small, large = args.seeds, 2 * args.seeds
    paths = {}
    for seeds in (small, large):
        paths[seeds] = os.path.join(folder, f"campaign-{seeds}.toml")
        with open(paths[seeds], "w") as handle:
            handle.write(campaign_text(args.scenario, seeds))
    trees = [Tree("new", os.path.join(ROOT, "src"), folder)]
    if args.old != "none":
        trees.append(Tree(f"old {args.old}", old_tree(args.old, folder), folder))
    spent = {(tree.name, seeds): [] for tree in trees for seeds in (small, large)}
    rows = {}
    try:
        for tree in trees:
            tree.start_cluster(1)
        for tree in trees:  # a first run each, not counted: the workers import and warm up
            address = tree.clusters[1][0]
            results = os.path.join(folder, f"warm-{time.monotonic_ns()}")
            tree.run("-m", "ember.cli", "evaluate", paths[small], "-o", results, "--scheduler", address)
            shutil.rmtree(results, ignore_errors=True)
        for number in range(args.rounds):
            for tree in trees if number % 2 == 0 else trees[::-1]:
                address, processes = tree.clusters[1]
                for seeds in (small, large) if number % 2 == 0 else (large, small):
                    results = os.path.join(folder, f"res-{time.monotonic_ns()}")
                    before = cpu_of(processes[0].pid)
                    seconds = tree.run(
                        "-m", "ember.cli", "evaluate", paths[seeds], "-o", results, "--scheduler", address
                    )
                    scheduler = cpu_of(processes[0].pid) - before
                    spent[tree.name, seeds].append((tree.last_cpu, scheduler))
                    rows.setdefault((tree.name, seeds), sorted_rows(results))
                    shutil.rmtree(results, ignore_errors=True)
                    print(
                        f"round {number + 1} {tree.name} {2 * seeds} episodes: {seconds:.1f} s, command "
                        f"{tree.last_cpu:.2f} s CPU, scheduler {scheduler:.2f} s CPU",
                        file=sys.stderr,
                    )
        local = os.path.join(folder, "local")
        trees[0].run("-m", "ember.cli", "evaluate", paths[large], "-o", local, "--workers", "1")
        rows["local", large] = sorted_rows(local)
    finally:
        for tree in trees:
            tree.stop()
    extra = 2 * (large - small)  # episodes: seeds x 2 policies
    print(
        f"{args.scenario}: {2 * small} against {2 * large} episodes (greedy, random), one dask scheduler + one dask "
        f"worker (--nworkers 1 --nthreads 1) a tree; {args.rounds} interleaved rounds; {os.cpu_count()} CPUs; "
        f"load average {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]}"
    )
    print()
    print(
        "| tree | command ms/episode | scheduler ms/episode | command + scheduler ms/episode (median, min–max) "
        "| target |"
    )
    print("|---|---:|---:|---:|---:|")
    for tree in trees:
        pairs = list(zip(spent[tree.name, small], spent[tree.name, large], strict=True))
        command = [1000 * (b[0] - a[0]) / extra for a, b in pairs]
        scheduler = [1000 * (b[1] - a[1]) / extra for a, b in pairs]
        both = [c + s for c, s in zip(command, scheduler, strict=True)]
        met = "met" if statistics.median(both) <= 0.5 else "**not met**"
        print(
            f"| {tree.name} | {statistics.median(command):.2f} | {statistics.median(scheduler):.2f} | "
            f"{spread(both)} | <= 0.5 {met} |"
        )
    print()
    same_trees = all(rows[tree.name, seeds] == rows[trees[0].name, seeds] for tree in trees for seeds in (small, large))
    same_local = rows["local", large] == rows["new", large]
    print(
        f"rows identical between the trees: {'yes' if same_trees else '**NO**'}; "
        f"Dask rows identical to --workers 1: {'yes' if same_local else '**NO**'}"
    )


def row_cost(args, folder):
    """--row-cost: the command's CPU per row, a worker's row dict (decoded, re-encoded, re-checked) against its
    ``RowLine`` (bytes written as they are), in this process."""
    import pickle

    sys.path.insert(0, os.path.join(ROOT, "src"))
    from ember.campaign.attempt import run_task
    from ember.campaign.campaign_file import load_campaign
    from ember.campaign.driver import resolve
    from ember.campaign.plan import Plan
    from ember.results.rows import row_line
    from ember.results.writer import ResultsWriter

    path = os.path.join(folder, "campaign.toml")
    with open(path, "w") as handle:
        handle.write(campaign_text(args.scenario, args.seeds))
    campaign = load_campaign(path)
    resolved = resolve(campaign)
    plan = Plan(campaign, resolved, lambda key: None, False, os.path.join(folder, "res"), False)
    rows = [run_task(task) for _, task in plan.tasks()]
    sent = {"dict": [pickle.dumps(row, protocol=5) for row in rows]}
    sent["RowLine"] = [pickle.dumps(row_line(row, folder), protocol=5) for row in rows]
    spent, written = {}, {}
    real_fsync = os.fsync
    os.fsync = lambda fd: None  # noqa: ARG005 (the disk's time is not the command's CPU)
    try:
        for how, payloads in sent.items():
            results = os.path.join(folder, f"res-{how}")
            writer = ResultsWriter(results)
            writer.lock()
            writer.prepare(resolved)
            writer.start(b"", [(entry.scenario_id, entry.data) for entry in campaign.scenarios])
            append = writer.append if how == "dict" else writer.append_line
            started = time.process_time()
            for payload in payloads:
                append(pickle.loads(payload))  # noqa: S301 (made just above)
            spent[how] = (time.process_time() - started) / len(payloads)
            writer.close()
            with open(os.path.join(results, "episodes.jsonl"), "rb") as handle:
                written[how] = handle.read()
    finally:
        os.fsync = real_fsync
    print(f"{args.scenario}: {len(rows)} rows (greedy, random), {len(written['dict']) // len(rows):,} bytes a row;")
    print(f"load average {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]}")
    print()
    print("| what the worker sends | command CPU µs/row (unpickle + append) | x dict |")
    print("|---|---:|---:|")
    for how in sent:
        print(f"| {how} | {spent[how] * 1e6:.1f} | {spent[how] / spent['dict']:.2f} |")
    print()
    print(f"same episodes.jsonl bytes: {'yes' if written['dict'] == written['RowLine'] else '**NO**'}")


def old_tree(commit, folder):
    target = os.path.join(folder, f"old-{commit}")
    os.makedirs(target)
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "src"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return os.path.join(target, "src")


def spread(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="builtin:office")
    parser.add_argument("--seeds", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", default="2b1401f", help="the commit to compare with, or 'none'")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--marginal", action="store_true", help="Dask CPU per episode beyond start-up (see above)")
    parser.add_argument("--where", action="store_true", help="then where an episode's CPU goes, layer by layer")
    parser.add_argument("--row-cost", action="store_true", help="the command's CPU per row (see above)")
    parser.add_argument(
        "--bytecode",
        action="store_true",
        help="the trees' modules compiled once, beforehand, even where PYTHONDONTWRITEBYTECODE is set (see above)",
    )
    args = parser.parse_args()
    if args.row_cost:
        with tempfile.TemporaryDirectory(prefix="ember-bench-") as folder:
            row_cost(args, folder)
        return
    if args.marginal:
        with tempfile.TemporaryDirectory(prefix="ember-bench-") as folder:
            marginal(args, folder)
        return
    episodes = args.seeds * 2
    ways = ["bare", "bare x2", "workers=1", "workers=2"] + ([] if args.skip_dask else ["dask-1", "dask-2"])
    with tempfile.TemporaryDirectory(prefix="ember-bench-") as folder:
        path = os.path.join(folder, "campaign.toml")
        with open(path, "w") as handle:
            handle.write(campaign_text(args.scenario, args.seeds))
        trees = [Tree("new", os.path.join(ROOT, "src"), folder, args.bytecode)]
        if args.old != "none":
            trees.append(Tree(f"old {args.old}", old_tree(args.old, folder), folder, args.bytecode))
        times = {(tree.name, way): [] for tree in trees for way in ways}
        cpus = {(tree.name, way): [] for tree in trees for way in ways}
        try:
            if not args.skip_dask:
                for tree in trees:
                    tree.start_cluster(1)
                    tree.start_cluster(2)
            for number in range(args.rounds):
                for tree in trees if number % 2 == 0 else trees[::-1]:  # interleaved: both see the same load
                    for way in ways:
                        results = os.path.join(folder, f"res-{time.monotonic_ns()}")
                        if way == "bare":
                            seconds = tree.run("-c", BARE, args.scenario, str(args.seeds))
                        elif way == "bare x2":  # the same episodes in two processes at once: the machine's own
                            half = str(args.seeds // 2)
                            seconds = tree.run_pair(
                                ("-c", BARE, args.scenario, half), ("-c", BARE, args.scenario, str(args.seeds), half)
                            )
                        elif way.startswith("workers="):
                            seconds = tree.run("-m", "ember.cli", "evaluate", path, "-o", results, "--workers", way[-1])
                        else:
                            address = tree.clusters[int(way[-1])][0]
                            seconds = tree.run(
                                "-m", "ember.cli", "evaluate", path, "-o", results, "--scheduler", address,
                                cluster=int(way[-1]),
                            )  # fmt: skip
                        shutil.rmtree(results, ignore_errors=True)
                        cpu = tree.last_cpu + tree.last_cluster_cpu
                        times[tree.name, way].append(seconds)
                        cpus[tree.name, way].append(cpu)
                        said = f"round {number + 1} {tree.name} {way}: {seconds:.2f} s, {cpu:.2f} s CPU"
                        print(said, file=sys.stderr)
        finally:
            for tree in trees:
                tree.stop()
        layers = where(args, trees[0], path, folder) if args.where else []
    print(
        f"{args.scenario}: {episodes} episodes ({args.seeds} seeds x greedy, random); "
        f"{args.rounds} interleaved rounds; "
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]}"
    )
    print()
    print("| how | " + " | ".join(f"{tree.name} CPU s | wall s" for tree in trees) + " |")
    print("|---|" + "---:|---:|" * len(trees))
    for way in ways:
        cells = (f"{spread(cpus[tree.name, way])} | {spread(times[tree.name, way])}" for tree in trees)
        print(f"| {way} | " + " | ".join(cells) + " |")
    print()

    def ratio(tree, top, bottom, figures):
        # Per round, then the median: a busy spell slows both ways of one round alike.
        values = [a / b for a, b in zip(figures[tree.name, top], figures[tree.name, bottom], strict=True)]
        return statistics.median(values)

    # workers=1 against bare is a CPU ratio (the same work, one core); throughput is wall time.
    targets = [("workers=1 / bare, CPU (<= 1.5)", "workers=1", "bare", cpus)]
    targets.append(("workers=2 throughput / workers=1, wall (>= 1.7)", "workers=1", "workers=2", times))
    targets.append(("the machine's ceiling: bare x2 throughput / bare, wall (none)", "bare", "bare x2", times))
    if not args.skip_dask:
        targets.append(("dask-1 / workers=1, CPU (<= 1.15)", "dask-1", "workers=1", cpus))
        targets.append(("dask-2 throughput / dask-1, wall (>= 1.7)", "dask-1", "dask-2", times))
    print("| ratio (median of the rounds' ratios) | " + " | ".join(tree.name for tree in trees) + " |")
    print("|---|" + "---:|" * len(trees))
    for label, top, bottom, figures in targets:
        print(f"| {label} | " + " | ".join(f"{ratio(t, top, bottom, figures):.2f}" for t in trees) + " |")
    for line in layers:
        print(line)


if __name__ == "__main__":
    main()
