"""Campaign driver memory: bytes per episode of K that 'ember evaluate' keeps, up to |K| = 10^6.

Each measurement runs in a fresh process and reports the growth of its
peak resident memory over the same process just before the work, divided
by |K| (one built-in scenario x |K| seeds x one policy).  Episodes are
answered at once by a runner without workers (a small failed row each),
so only what the command itself keeps is measured:

  eager      the previous code's plan: every task built up front in a dict,
             then driven (structures only: load, resolve, plan, drive)
  lazy       the same, with the tasks made one at a time (what evaluate does)
  evaluate   evaluate() itself on a new results directory: campaign.json,
             scenarios/, |K| rows appended (on /dev/shm when there is one,
             where fsync is cheap)
  resume     evaluate() on a results directory already holding |K| rows
             (written by another process first, so that the peak measured is
             the resume's own): the results layer's reader checks them all
             (keeping its counting table: a status and a row's place each),
             nothing is left to run

Each mode runs under this tree's code and, in the same run, under an older
commit's (``--old``, extracted with ``git archive``; ``none`` to skip), and
the table gives new / old of each mode.

Target: lazy, evaluate and resume <= 100 bytes per episode of K at |K| = 10^6.
Usage::

    python benchmarks/bench_campaign_memory.py            # |K| = 10^4, 10^5, 10^6, against f92f092
    python benchmarks/bench_campaign_memory.py --sizes 1000000 --modes evaluate resume
    python benchmarks/bench_campaign_memory.py --sizes 1000 100000 --old none
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile

TARGET_BYTES = 100
MODES = ("eager", "lazy", "evaluate", "resume")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def old_tree(commit, folder):
    """The ``src`` folder of ``commit``, extracted with ``git archive`` into ``folder``."""
    target = os.path.join(folder, f"old-{commit}")
    os.makedirs(target)
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "src"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return os.path.join(target, "src")


def campaign_file(folder, size):
    path = os.path.join(folder, "campaign.toml")
    with open(path, "w") as handle:
        handle.write(
            f'campaign = "memory"\nseeds = {{ start = 0, count = {size} }}\nscenarios = ["builtin:small-room"]\n'
            '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
        )
    return path


class InstantRunner:
    """A runner whose every attempt is done at once with a small failed row (no worker, no disk)."""

    window = 4

    def __init__(self):
        self.flying = {}
        self.count = 0

    def submit(self, task, key, attempt):
        self.count += 1
        self.flying[self.count] = task
        return self.count

    def wait(self, futures):
        return list(futures)

    def outcomes(self, done):
        from ember.campaign.runner import WORKER_LOST
        from ember.results.rows import failed_row

        return [
            (future, "row", failed_row(**self.flying.pop(future).row_fields(), error=WORKER_LOST)) for future in done
        ]

    def close(self, terminate=False):
        pass

    def check_sandbox(self, files):
        pass


def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def instant_runner(workers, scheduler):
    """evaluate's ``make_runner``: no worker, so that only the command itself is measured."""
    return InstantRunner()


def fill(folder, size):
    """|K| rows in ``folder``'s results directory (the resume's starting point), run in a process of its own."""
    from ember.campaign import evaluate

    summary = evaluate(campaign_file(folder, size), os.path.join(folder, "res"), make_runner=instant_runner)
    assert summary.missing == 0, summary.line()


def measure(mode, size, folder):
    """Run in a fresh process: the peak memory growth of ``mode`` at ``size``, in bytes."""
    from ember.campaign import Summary, evaluate
    from ember.campaign.campaign_file import load_campaign
    from ember.campaign.driver import resolve
    from ember.campaign.plan import Plan
    from ember.campaign.runner import run_tasks

    path = campaign_file(folder, size)
    results = os.path.join(folder, "res")
    if mode in ("evaluate", "resume"):
        if mode == "resume":
            # Another process writes the |K| rows: here, the peak before the work is the interpreter's,
            # not that first run's (a peak the resume would then have to exceed to be seen at all).
            subprocess.run([sys.executable, __file__, "--fill", folder, str(size)], check=True, timeout=3600)
        before = peak_kib()
        summary = evaluate(path, results, make_runner=instant_runner)
        assert summary.missing == 0, summary.line()
        return (peak_kib() - before) * 1024
    before = peak_kib()
    campaign = load_campaign(path)
    resolved = resolve(campaign)
    plan = Plan(campaign, resolved, lambda key: None, False, results, False)
    summary = Summary(size, size)  # what evaluate keeps of each row written: this run's two counts

    def on_row(row):
        if row["status"] == "ok":
            summary.this_run_ok += 1
        else:
            summary.this_run_failed += 1

    tasks = plan.tasks()
    if mode == "eager":
        tasks = dict(tasks).items()  # what the previous code held: every task at once
    run_tasks(InstantRunner(), tasks, 2, on_row)
    return (peak_kib() - before) * 1024


def child(mode, size):
    where = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="ember-bench-memory-", dir=where) as folder:
        print(json.dumps({"bytes": measure(mode, size, folder)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--old", default="f92f092", help="the commit to compare with, or 'none'")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--fill", nargs=2, metavar=("FOLDER", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    if args.fill:
        fill(args.fill[0], int(args.fill[1]))
        return
    with tempfile.TemporaryDirectory(prefix="ember-bench-memory-trees-") as scratch:
        trees = [("new", os.path.join(ROOT, "src"))]
        if args.old != "none":
            trees.append((f"old {args.old}", old_tree(args.old, scratch)))
        print(f"load average {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
        print()
        print("| \\|K\\| | mode | tree | peak growth MiB | bytes/episode | x old | target |")
        print("|---:|---|---|---:|---:|---:|---|")
        for size in args.sizes:
            for mode in args.modes:
                measured = {}
                for name, src in trees:  # the trees one after the other, mode by mode
                    env = dict(os.environ, PYTHONPATH=src)
                    done = subprocess.run(
                        [sys.executable, __file__, "--child", mode, str(size)],
                        capture_output=True,
                        text=True,
                        check=True,
                        timeout=3600,
                        env=env,
                    )
                    measured[name] = json.loads(done.stdout)["bytes"]
                for name, _ in trees:
                    per = measured[name] / size
                    old = measured.get(trees[-1][0]) if len(trees) > 1 else None
                    ratio = f"{measured[name] / old:.2f}" if old else "-"
                    verdict = "-" if mode == "eager" else ("met" if per <= TARGET_BYTES else "**not met**")
                    print(
                        f"| {size:,} | {mode} | {name} | {measured[name] / 2**20:.1f} | {per:.1f} | {ratio} | "
                        f"<= {TARGET_BYTES} {verdict} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
