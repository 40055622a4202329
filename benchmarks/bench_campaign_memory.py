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
  resume     evaluate() on a results directory already holding |K| rows:
             the results layer's reader checks them all (keeping its counting
             table: a status and a row's place each), nothing is left to run

Target: lazy, evaluate and resume <= 100 bytes per episode of K at |K| = 10^6.
Usage::

    python benchmarks/bench_campaign_memory.py            # |K| = 10^4, 10^5, 10^6
    python benchmarks/bench_campaign_memory.py --sizes 1000 100000
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
        from ember.campaign.runner import _lost_row  # noqa: PLC2701 (a benchmark may look inside)

        return [(future, "row", _lost_row(self.flying.pop(future))) for future in done]

    def close(self, terminate=False):
        pass


def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(mode, size, folder):
    """Run in a fresh process: the peak memory growth of ``mode`` at ``size``, in bytes."""
    import importlib

    evaluating = importlib.import_module("ember.campaign.driver")  # the module (the package exports the function)
    from ember.campaign.driver import resolve
    from ember.campaign.plan import Plan, Tally
    from ember.campaign.runner import drive
    from ember.campaign.spec import load_campaign

    path = campaign_file(folder, size)
    results = os.path.join(folder, "res")
    if mode in ("evaluate", "resume"):
        evaluating._runner = lambda workers, scheduler: InstantRunner()  # no worker: only the command
        if mode == "resume":
            evaluating.evaluate(path, results)  # |K| rows, then measured from here
        before = peak_kib()
        summary = evaluating.evaluate(path, results)
        assert summary.missing == 0, summary.line()
        return (peak_kib() - before) * 1024
    before = peak_kib()
    campaign = load_campaign(path)
    resolved = resolve(campaign)
    plan = Plan(campaign, resolved, lambda key: None, False, results, False)
    tally = Tally(size, 0, 0, lambda key: None)
    tasks = plan.tasks()
    if mode == "eager":
        tasks = dict(tasks).items()  # what the previous code held: every task at once
    drive(InstantRunner(), tasks, 2, tally.add)
    return (peak_kib() - before) * 1024


def child(mode, size):
    where = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="ember-bench-memory-", dir=where) as folder:
        print(json.dumps({"bytes": measure(mode, size, folder)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--child", nargs=2, metavar=("MODE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    print(f"{'|K|':>10}  {'mode':<8}  {'peak growth':>12}  {'bytes/episode':>13}  {'vs eager':>8}  target")
    for size in args.sizes:
        measured = {}
        for mode in MODES:
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(size)],
                capture_output=True,
                text=True,
                check=True,
                timeout=3600,
            )
            measured[mode] = json.loads(done.stdout)["bytes"]
        for mode in MODES:
            per = measured[mode] / size
            ratio = measured[mode] / measured["eager"] if measured["eager"] else float("nan")
            verdict = "" if mode == "eager" else ("ok" if per <= TARGET_BYTES else "OVER")
            print(f"{size:>10,}  {mode:<7}  {measured[mode] / 2**20:>9.1f} MiB  {per:>13.1f}  {ratio:>8.2f}  {verdict}")


if __name__ == "__main__":
    main()
