"""Peak memory of 'ember export' and 'ember report' against the number of rows, this tree beside an older commit.

    python benchmarks/bench_rows.py                          # 15,000 / 30,000 / 60,000 rows, old ea058d3
    python benchmarks/bench_rows.py --rows 15000 --old none  # this tree only

Each size is a results directory written synthetically (no episode is run):
``builtin:office`` x N/4 seeds x 4 built-in policies, every row carrying the
real metrics of one of a few office episodes run once (its seed field set
to the row's), written seed by seed with the policies interleaved, as
``ember evaluate`` writes them.  Each command runs in a fresh process under
this tree's code and under the old code (``--old``, extracted with ``git
archive``), alternately; the table prints each one's peak RSS, CPU seconds
and whether the two outputs are the same bytes.  Targets (rows
streamed): export at most 100 MB and report at most 400 MB at 60,000 rows.
``ember report`` runs with ``--replicates 1000`` (the bootstrap is not what
is measured here; its arrays grow with B x policies, not with rows).
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
POLICIES = ("greedy", "planner", "random", "stay")
SCENARIO = "builtin:office"
VARIANTS = 6  # real episodes per policy whose metrics the rows reuse

_MEASURE = """
import resource, sys, time
from ember.cli import main
started = time.process_time()
status = main(sys.argv[1:])
spent = time.process_time() - started
sys.stderr.write(f"BENCH {status} {spent} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n")
"""


def write_results(directory, rows):
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from ember import load_scenario, scenario_hash

    from helpers.ranking_results import builtin_metrics, campaign_dict, canonical_line, ok_row

    scenario = load_scenario(SCENARIO)
    seeds = rows // len(POLICIES)
    value = campaign_dict(
        "bench-rows",
        [(scenario["scenario_id"], scenario_hash(scenario), SCENARIO, range(seeds))],
        [(name, "builtin", name) for name in POLICIES],
    )
    base = {name: [builtin_metrics(SCENARIO, name, seed) for seed in range(VARIANTS)] for name in POLICIES}
    os.makedirs(directory)
    with open(os.path.join(directory, "campaign.json"), "wb") as handle:
        handle.write(canonical_line(value))
    with open(os.path.join(directory, "episodes.jsonl"), "wb") as handle:
        for seed in range(seeds):
            for name in POLICIES:
                metrics = dict(base[name][seed % VARIANTS], seed=seed)
                handle.write(canonical_line(ok_row(name, metrics, elapsed_s=0.05 + (seed % 7) / 100)))
    return os.path.getsize(os.path.join(directory, "episodes.jsonl"))


def extract(commit, folder):
    target = os.path.join(folder, "old")
    os.makedirs(target)
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "src"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return os.path.join(target, "src")


def measure(src, args, output):
    env = dict(os.environ, PYTHONPATH=src)
    done = subprocess.run([sys.executable, "-c", _MEASURE, *args], env=env, capture_output=True, check=False)
    line = [ln for ln in done.stderr.decode().splitlines() if ln.startswith("BENCH ")]
    if done.returncode != 0 or not line:
        raise SystemExit(f"bench: {args}: exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    _, status, spent, peak_kb = line[-1].split()
    with open(output, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    return int(status), float(spent), int(peak_kb) / 1024, digest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[15000, 30000, 60000])
    parser.add_argument("--old", default="ea058d3", help="the commit to compare with, or 'none'")
    parser.add_argument("--commands", nargs="+", default=["export", "report"], choices=["export", "report"])
    options = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-rows-")
    try:
        trees = [("new", os.path.join(ROOT, "src"))]
        if options.old != "none":
            trees.append(("old", extract(options.old, folder)))
        table = []
        for rows in options.rows:
            directory = os.path.join(folder, f"r{rows}")
            size = write_results(directory, rows)
            for command in options.commands:
                results = {}
                for name, src in trees:
                    output = os.path.join(folder, f"{command}-{name}.out")
                    args = [command, directory, "-o", output]
                    if command == "report":
                        args += ["--replicates", "1000"]
                    results[name] = measure(src, args, output)
                    print(
                        f"  {rows:,} rows {command} {name}: {results[name][2]:.1f} MB, {results[name][1]:.1f} s",
                        flush=True,
                    )
                table.append((rows, size, command, results))
        target = {"export": 100, "report": 400}
        print()
        print(
            "| rows | episodes.jsonl MB | command | peak RSS MB new | old | new / old | CPU s new | old "
            "| same bytes | target |"
        )
        print("|---:|---:|---|---:|---:|---:|---:|---:|:---:|---:|")
        for rows, size, command, results in table:
            new = results["new"]
            old = results.get("old")
            cells = [f"{rows:,}", f"{size / 2**20:.0f}", command, f"{new[2]:.1f}"]
            if old is None:
                cells += ["-", "-", f"{new[1]:.1f}", "-", "-"]
            else:
                cells += [f"{old[2]:.1f}", f"{new[2] / old[2]:.2f}", f"{new[1]:.1f}", f"{old[1]:.1f}"]
                cells.append("yes" if new[3] == old[3] else "**NO**")
            cells.append(f"<= {target[command]} MB" + (" met" if new[2] <= target[command] else " **not met**"))
            print("| " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
