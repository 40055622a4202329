"""Memory and time of reading a results directory: the streamed reader against reading the file whole.

    python benchmarks/bench_results_reader.py [--rows 2000 20000] [--repeat 1]

For each size it writes a results directory (``builtin:small-room``, two
policies, real metrics rows), then in fresh processes measures
``ember.results.read_results`` (episodes.jsonl streamed line by line, the
``ember rank`` path) and the floor it replaces: the file read whole into
memory and parsed from the bytes (``results_of_bytes``, what ``ember rank``
did before the results layer).  Prints peak RSS and CPU seconds, and the
ratios streamed / whole.  The streamed reader's peak should stay nearly
flat as the file grows; reading whole grows with the file.
"""

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

_MEASURE = """
import resource, sys, time
from ember.results import read_results, results_of_bytes, parse_campaign
directory, how = sys.argv[1], sys.argv[2]
started = time.process_time()
if how == "streamed":
    results = read_results(directory)
else:
    with open(directory + "/campaign.json", "rb") as handle:
        campaign = parse_campaign(handle.read())
    with open(directory + "/episodes.jsonl", "rb") as handle:
        results = results_of_bytes(campaign, handle.read())
spent = time.process_time() - started
print(results.lines, spent, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_results(directory, seeds):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from ember import load_scenario, scenario_hash

    from helpers.ranking_results import builtin_metrics, campaign_dict, canonical_line, ok_row

    scenario = load_scenario("builtin:small-room")
    value = campaign_dict(
        "bench",
        [(scenario["scenario_id"], scenario_hash(scenario), "builtin:small-room", range(seeds))],
        [("greedy", "builtin", "greedy"), ("stay", "builtin", "stay")],
    )
    os.makedirs(directory)
    with open(os.path.join(directory, "campaign.json"), "wb") as handle:
        handle.write(canonical_line(value))
    with open(os.path.join(directory, "episodes.jsonl"), "wb") as handle:
        for policy in ("greedy", "stay"):
            base = builtin_metrics("builtin:small-room", policy, 0)
            for seed in range(seeds):
                handle.write(canonical_line(ok_row(policy, dict(base, seed=seed))))
    return os.path.getsize(os.path.join(directory, "episodes.jsonl"))


def measure(directory, how):
    done = subprocess.run([sys.executable, "-c", _MEASURE, directory, how], capture_output=True, check=True, text=True)
    lines, spent, peak_kb = done.stdout.split()
    return int(lines), float(spent), int(peak_kb) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[2000, 20000], help="rows per directory")
    parser.add_argument("--repeat", type=int, default=1, help="measurements per reader (the minimum is shown)")
    args = parser.parse_args()
    columns = ("rows", "episodes.jsonl MB", "streamed peak MB", "whole peak MB", "peak ratio")
    columns += ("streamed s", "whole s", "time ratio")
    print("| " + " | ".join(columns) + " |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as base:
        for rows in args.rows:
            directory = os.path.join(base, f"r{rows}")
            size = write_results(directory, rows // 2)
            found = {}
            for how in ("streamed", "whole"):
                runs = [measure(directory, how) for _ in range(args.repeat)]
                found[how] = (min(r[1] for r in runs), min(r[2] for r in runs))
            (s_time, s_peak), (w_time, w_peak) = found["streamed"], found["whole"]
            print(
                f"| {rows:,} | {size / 2**20:.1f} | {s_peak:.1f} | {w_peak:.1f} | {s_peak / w_peak:.2f}x "
                f"| {s_time:.2f} | {w_time:.2f} | {s_time / w_time:.2f}x |"
            )


if __name__ == "__main__":
    main()
