"""Memory and speed of ``ember trajectories`` against ``ember metrics`` on the same records.

Writing PedPy trajectories reads the record through the same engine as
the metrics (validation, replay) and writes each frame as it passes, so
its peak RSS must stay flat in the number of steps, like the metrics'.
Records are EMBER's own (``run_episode``, random policy, 20 people kept
alive on the built-in long-horizon floor), cached in ``bench-data/``.
Each measurement runs in a fresh process, so its peak RSS is its own.
Prints: steps, record MB, seconds and peak RSS of metrics (the floor) and
of trajectories, and their ratios.  Usage::

    python benchmarks/bench_interop.py                       # T = 10^3, 10^4, 10^5
    python benchmarks/bench_interop.py --steps 1000 1000000
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def scenario(steps):
    import ember

    data = ember.load_scenario("builtin:long-horizon")
    data["scenario_id"] = f"bench-interop-{steps}"
    data["termination"]["max_steps"] = steps
    return data


def ensure_record(steps, folder):
    import ember

    data = scenario(steps)
    record, scenario_file = folder / f"{data['scenario_id']}.record", folder / f"{data['scenario_id']}.scenario.json"
    scenario_file.write_text(json.dumps(data))
    if not record.exists():
        print(f"writing {record.name} ...", file=sys.stderr, flush=True)
        ember.run_episode(data, "random", 1, str(record) + ".part")
        os.replace(str(record) + ".part", record)
    return record, scenario_file


def child(kind, scenario_file, record, out):
    """One measurement in this (fresh) process: prints CPU seconds and peak RSS in MB."""
    sys.path.insert(0, str(ROOT / "src"))
    started = time.process_time()
    if kind == "metrics":
        from ember import episode_metrics

        episode_metrics(scenario_file, record)
    else:
        from ember.interop.trajectories import write_trajectories

        write_trajectories(scenario_file, record, out)
    seconds = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak}))


def measure(kind, scenario_file, record, out):
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(scenario_file), str(record), str(out)],
        capture_output=True,
        check=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
    )
    return json.loads(done.stdout)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--data", type=Path, default=ROOT / "bench-data")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    args.data.mkdir(exist_ok=True)
    print("| steps | record MB | metrics s | trajectories s | x metrics | metrics peak MB | trajectories peak MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for steps in args.steps:
        record, scenario_file = ensure_record(steps, args.data)
        out = args.data / f"bench-interop-{steps}.txt"
        floor = measure("metrics", scenario_file, record, out)
        ours = measure("trajectories", scenario_file, record, out)
        out.unlink()
        print(
            f"| {steps:,} | {record.stat().st_size / 1e6:,.1f} | {floor['seconds']:.2f} | {ours['seconds']:.2f} "
            f"| {ours['seconds'] / floor['seconds']:.2f} | {floor['peak_mb']:.1f} | {ours['peak_mb']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
