"""Speed and memory of the metrics pipeline against the floor of merely parsing.

Writes long records with EMBER's own ``run_episode`` (cached in
``bench-data/``), then measures, each in a fresh process so that peak RSS is
its own:

  floor      iterate ``ijson.items(f, "steps.item")`` (yajl2_c), nothing else
  checks     stages 1-2 and metrics, no replay (so no canonical fast path)
  full       ``episode_metrics(scenario, path)``: validate, replay, measure
  push       ``MetricsStream`` fed 64 KiB chunks read from the file
  gzip       ``episode_metrics`` on the same record gzip-compressed (level 6)
  render     ``render_ascii`` of the last frame (``ember render --ascii``)
  sim        the simulator and policy alone, no record written or read

and prints a table: seconds, steps/s, MB/s, ratio to the floor measured in
the same run, peak RSS.  Usage::

    python benchmarks/bench_metrics.py                  # 20 people, T = 10^4 and 10^5
    python benchmarks/bench_metrics.py --steps 10000 100000 1000000 --population both
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("floor", "checks", "full", "push", "gzip", "render", "sim")


def small_scenario(steps):
    """20 people on 40x40: the built-in long-horizon scenario, cut at ``steps``."""
    import ember

    scenario = ember.load_scenario("builtin:long-horizon")
    scenario["scenario_id"] = f"bench-20x40-{steps}"
    scenario["termination"]["max_steps"] = steps
    return scenario


def large_scenario(steps):
    """1,000 people on 200x200, shut in a doorless hall so all live to the horizon."""
    rows = cols = 200
    ring = [[r, c] for r in range(50, 150) for c in range(50, 150) if r in (50, 149) or c in (50, 149)]
    closet = [[r, c] for r in range(0, 5) for c in range(97, 104) if r == 4 or c in (97, 103)]
    inside = [[r, c] for r in range(52, 148, 3) for c in range(52, 148, 3)][:1000]
    return {
        "schema_version": "1.0",
        "scenario_id": f"bench-1000x200-{steps}",
        "grid": {"rows": rows, "cols": cols},
        "walls": sorted(ring + closet),
        "exits": [{"exit_id": "nw", "position": [0, 0]}, {"exit_id": "se", "position": [199, 199]}],
        "people": [{"person_id": f"p{k:04d}", "position": cell} for k, cell in enumerate(inside)],
        "fire": {"ignitions": [[0, 100]], "spread_probability": "1/8", "enter_fire": "casualty"},
        "termination": {"max_steps": steps},
    }


def ensure_record(population, steps, data_dir):
    import ember

    scenario = (small_scenario if population == "20" else large_scenario)(steps)
    stem = data_dir / f"{scenario['scenario_id']}"
    record, scenario_file = stem.with_suffix(".record"), stem.with_suffix(".scenario.json")
    scenario_file.write_text(json.dumps(scenario))
    if not record.exists():
        print(f"writing {record.name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        ember.run_episode(scenario, "random", 1, str(record) + ".part")
        os.replace(str(record) + ".part", record)
        print(f"  {steps:,} steps in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return record, scenario_file


def gzip_copy(record):
    """The path of ``record`` gzip-compressed (made once, next to it)."""
    import gzip
    import shutil

    path = Path(str(record) + ".gz")
    if not path.exists():
        with open(record, "rb") as source, gzip.GzipFile(str(path) + ".part", "wb", compresslevel=6, mtime=0) as out:
            shutil.copyfileobj(source, out, 1 << 20)
        os.replace(str(path) + ".part", path)
    return path


def measure(kind, record, scenario_file):
    """Run one measurement in this (child) process; print its seconds as JSON."""
    import ijson

    import ember
    from ember.engine.core import EpisodeEngine
    from ember.engine.read import MetricsStream, read_record
    from ember.record.limits import record_limits
    from ember.scenario import compile_scenario

    scenario = compile_scenario(json.loads(Path(scenario_file).read_text()))
    started = time.perf_counter()
    if kind == "floor":
        with open(record, "rb") as handle:
            for _ in ijson.items(handle, "steps.item"):
                pass
    elif kind == "checks":
        engine = EpisodeEngine(scenario, replay=False)  # no replay: no canonical fast path either
        read_record(record, engine, record_limits(scenario))
    elif kind == "full":
        ember.episode_metrics(scenario, record)
    elif kind == "push":
        stream = MetricsStream(scenario)
        with open(record, "rb") as handle:
            while chunk := handle.read(65536):
                stream.feed(chunk)
        stream.close()
    elif kind == "gzip":
        ember.episode_metrics(scenario, gzip_copy(record))
    elif kind == "render":
        from ember.render import render_ascii

        render_ascii(scenario, record)
    elif kind == "sim":
        from ember.sim.policies import make_policy

        sim = ember.Simulator(scenario, 1)
        policy = make_policy("random", scenario, 1)
        while not sim.terminated:
            sim.step(policy(sim.observe()))
    print(json.dumps({"seconds": time.perf_counter() - started}))


def run_child(kind, record, scenario_file):
    child = subprocess.Popen(
        [sys.executable, __file__, "--measure", kind, str(record), str(scenario_file)],
        stdout=subprocess.PIPE,
    )
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.stdout.close()
    if status != 0:
        raise SystemExit(f"measurement {kind} failed with status {status}")
    return json.loads(out)["seconds"], usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[10_000, 100_000], help="record lengths T (default: 10^4 10^5)"
    )
    parser.add_argument(
        "--population",
        choices=("20", "1000", "both"),
        default="20",
        help="20 people on 40x40, 1,000 on 200x200, or both",
    )
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="what to measure")
    parser.add_argument(
        "--data-dir", type=Path, default=ROOT / "bench-data", help="where records are written and cached"
    )
    parser.add_argument("--measure", nargs=3, metavar=("KIND", "RECORD", "SCENARIO"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return
    import ijson

    print(f"python {sys.version.split()[0]}, ijson {ijson.__version__} backend {ijson.backend}, {os.cpu_count()} CPUs")
    args.data_dir.mkdir(exist_ok=True)
    populations = ("20", "1000") if args.population == "both" else (args.population,)
    header = (
        f"{'people':>6} {'T':>9} {'what':<7} {'seconds':>9} {'steps/s':>9} {'MB/s':>7} {'x floor':>8} "
        f"{'peak RSS MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for population in populations:
        for steps in args.steps:
            record, scenario_file = ensure_record(population, steps, args.data_dir)
            if "gzip" in args.kinds:
                gzip_copy(record)  # made before the timings
            size_mb = record.stat().st_size / 1e6
            floor = None
            for kind in args.kinds:
                seconds, rss = run_child(kind, record, scenario_file)
                if kind == "floor":
                    floor = seconds
                ratio = f"{seconds / floor:8.2f}" if floor else f"{'-':>8}"
                mbs = f"{size_mb / seconds:7.1f}" if kind != "sim" else f"{'-':>7}"
                print(
                    f"{population:>6} {steps:>9,} {kind:<7} {seconds:9.2f} {steps / seconds:9,.0f} {mbs} {ratio} "
                    f"{rss:12.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
