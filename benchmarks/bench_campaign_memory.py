"""Campaign driver memory: bytes per episode of K that 'ember evaluate' keeps, up to |K| = 10^6.

Each measurement runs in a fresh process and reports the growth of its
peak resident memory over the same process just before the work, divided
by |K| (one built-in scenario x |K| seeds x one policy):

  lazy     what evaluate does now: load and resolve the campaign, encode
           campaign.json, then make every task lazily and drive it
           through a runner that answers at once (no worker, no disk)
  eager    the previous code's plan in the same run: every task built up
           front in a dict, then driven the same way (the ratio's base)
  resume   a results directory already holding |K| rows: reading it back
           (the store's reader keeps every counting row) and planning the
           run that follows (nothing left to do)

Target (issue 19): lazy <= 100 bytes per episode of K at |K| = 10^6.
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


def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(mode, size, folder):
    """Run in a fresh process: the peak memory growth of ``mode`` at ``size``, in bytes."""
    from ember.campaign.evaluate import resolve
    from ember.campaign.plan import Plan, Tally
    from ember.campaign.runner import drive
    from ember.campaign.spec import load_campaign
    from ember.campaign.store import ResultsDir
    from ember.canonical import canonical_json_reference

    path = campaign_file(folder, size)
    results = os.path.join(folder, "res")
    if mode == "resume":
        _write_rows(path, results, size)
    before = peak_kib()
    campaign = load_campaign(path)
    resolved = resolve(campaign)
    counting = {}
    if mode == "resume":
        store = ResultsDir(results)
        store.lock()
        _, rows, _ = store.existing()
        counting = rows.counting
    else:
        encoded = canonical_json_reference(resolved)  # campaign.json, as the store writes it
        del encoded

    def last_status(key):
        row = counting.get(key)
        return None if row is None else row["status"]

    plan = Plan(campaign, resolved, last_status, False, results, False)
    tally = Tally(size, 0, 0, last_status)
    tasks = plan.tasks()
    if mode == "eager":
        tasks = dict(tasks).items()  # what the previous code held: every task at once
    drive(InstantRunner(), tasks, 2, tally.add)
    return (peak_kib() - before) * 1024


def _write_rows(path, results, size):
    """A results directory with ``size`` failed rows, written directly (no fsync: only memory is measured)."""
    from ember.campaign.evaluate import resolve
    from ember.campaign.runner import _lost_row  # noqa: PLC2701
    from ember.campaign.spec import load_campaign
    from ember.canonical import canonical_json_reference

    campaign = load_campaign(path)
    resolved = resolve(campaign)
    os.makedirs(results)
    with open(os.path.join(results, "campaign.json"), "wb") as handle:
        handle.write(canonical_json_reference(resolved) + b"\n")
    sc = resolved["scenarios"][0]
    with open(os.path.join(results, "episodes.jsonl"), "wb") as handle:
        for seed in sc["seeds"]:
            task = {
                "scenario_id": sc["scenario_id"],
                "scenario_hash": sc["scenario_hash"],
                "seed": seed,
                "policy": {"name": "greedy"},
            }
            handle.write(canonical_json_reference(_lost_row(task)) + b"\n")


def child(mode, size):
    with tempfile.TemporaryDirectory(prefix="ember-bench-memory-") as folder:
        print(json.dumps({"bytes": measure(mode, size, folder)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--child", nargs=2, metavar=("MODE", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    print(f"{'|K|':>10}  {'mode':<7}  {'peak growth':>12}  {'bytes/episode':>13}  {'vs eager':>8}  target")
    for size in args.sizes:
        measured = {}
        for mode in ("eager", "lazy", "resume"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(size)],
                capture_output=True,
                text=True,
                check=True,
                timeout=3600,
            )
            measured[mode] = json.loads(done.stdout)["bytes"]
        for mode in ("eager", "lazy", "resume"):
            per = measured[mode] / size
            ratio = measured[mode] / measured["eager"] if measured["eager"] else float("nan")
            verdict = ("ok" if per <= TARGET_BYTES else "OVER") if mode == "lazy" else ""
            print(f"{size:>10,}  {mode:<7}  {measured[mode] / 2**20:>9.1f} MiB  {per:>13.1f}  {ratio:>8.2f}  {verdict}")


if __name__ == "__main__":
    main()
