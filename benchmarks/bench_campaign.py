"""Campaign throughput: episodes/s of 'ember evaluate' against the bare simulator loop.

One campaign (built-in scenarios x seeds x the built-in greedy and random
policies) is run four ways, each timed from the call to its return:

  bare       the simulator and policy alone, in this process: no record, no metrics
  workers=1  evaluate(..., workers=1): one local worker process, metrics and rows included
  workers=2  evaluate(..., workers=2)
  dask-2     evaluate(..., scheduler=...) on a Dask LocalCluster of 2 worker processes
             (the cluster is started before the clock starts)

and prints a table with episodes/s and ratios.  Targets (issue 15): workers=1
within 1.5x of bare; workers=2 at least 1.7x the throughput of workers=1 on
2 cores.  Usage::

    python benchmarks/bench_campaign.py                       # office, 12 seeds, greedy + random
    python benchmarks/bench_campaign.py --scenario builtin:bottleneck --seeds 8
    python benchmarks/bench_campaign.py --skip-dask
"""

import argparse
import os
import shutil
import sys
import tempfile
import time


def campaign_text(scenario, seeds):
    return (
        f'campaign = "bench"\nseeds = {{ start = 0, count = {seeds} }}\nscenarios = ["{scenario}"]\n'
        '[[policies]]\nname = "greedy"\nbuiltin = "greedy"\n'
        '[[policies]]\nname = "random"\nbuiltin = "random"\n'
    )


def bare(scenario, seeds):
    from ember import Simulator
    from ember.scenario import compile_scenario
    from ember.sim.policies import make_policy

    compiled = compile_scenario(scenario)
    steps = 0
    started = time.perf_counter()
    for seed in range(seeds):
        for name in ("greedy", "random"):
            sim = Simulator(compiled, seed)
            policy = make_policy(name, compiled, seed)
            while not sim.terminated:
                sim.step(policy(sim.observe()))
                steps += 1
    return time.perf_counter() - started, steps


def evaluate_once(path, folder, **options):
    from ember.campaign import evaluate

    results = os.path.join(folder, f"res-{time.monotonic_ns()}")
    started = time.perf_counter()
    summary = evaluate(path, results, stream=open(os.devnull, "w"), **options)  # noqa: SIM115
    elapsed = time.perf_counter() - started
    if summary.ok != summary.episodes:
        raise SystemExit(f"bench: {summary.line()}")
    shutil.rmtree(results)
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="builtin:office")
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--skip-dask", action="store_true")
    args = parser.parse_args()
    episodes = args.seeds * 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="ember-bench-") as folder:
        path = os.path.join(folder, "campaign.toml")
        with open(path, "w") as handle:
            handle.write(campaign_text(args.scenario, args.seeds))
        floor, steps = bare(args.scenario, args.seeds)
        rows.append(("bare simulator loop", floor))
        rows.append(("evaluate --workers 1", evaluate_once(path, folder, workers=1)))
        rows.append(("evaluate --workers 2", evaluate_once(path, folder, workers=2)))
        if not args.skip_dask:
            from distributed import LocalCluster

            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
                rows.append(
                    (
                        "evaluate --scheduler (LocalCluster, 2 workers)",
                        evaluate_once(path, folder, scheduler=cluster.scheduler_address),
                    )
                )
    one = rows[1][1]
    print(
        f"{args.scenario}: {episodes} episodes ({args.seeds} seeds x greedy, random), {steps:,} steps; "
        f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}"
    )
    print()
    print("| how | seconds | episodes/s | x bare time | throughput x workers=1 |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.2f} | {episodes / seconds:.2f} | {seconds / floor:.2f} | {one / seconds:.2f} |")


if __name__ == "__main__":
    main()
