"""Speed II: the pipeline on every record layout, gzip, and the simulator.

One command prints one table (``python benchmarks/bench_speed.py``); every
ratio is to a floor measured in the same run, and every row is the median of
``--repeat`` runs (default 3) with the spread (min-max) beside it.  Each
measurement runs in a fresh process, so its peak RSS is its own; times are
CPU seconds of that process (``time.process_time``), so other jobs on a
shared machine disturb them less than wall-clock times.

Reading rows (20 people on 40x40, ``builtin:long-horizon`` cut at T steps,
records written by EMBER's own ``run_episode``, random policy, seed 1):

  floor LAYOUT   ``for _ in ijson.items(f, "steps.item")`` on that very file (yajl2_c)
  full  LAYOUT   ``episode_metrics(scenario, path)``: validate, replay, measure

with LAYOUT one of

  canonical  EMBER's own bytes (simulator.md §5), one step per line
  pretty     ``json.dumps(record, indent=1)``
  sorted     ``json.dumps(record, sort_keys=True)`` on one line (final_state first)
  spaced     other RFC 8259 whitespace: a space after every ``,`` and ``:``,
             CRLF line ends, a tab before every step
  gzip       the canonical record gzip-compressed, given to ``episode_metrics``
             as it is; its ratio is to the floor on the *uncompressed* file

Simulator rows (``Simulator`` + the random policy, seed 1, nothing written):

  sim hall   ``builtin:hall`` (1,000 people, 200x200, fire spreading), first ``--hall-steps`` steps
  sim 20     ``builtin:long-horizon`` (20 people, 40x40, fire sealed), ``--sim-steps`` steps

each also run with the simulator of ``--baseline`` (a git revision; default:
the code before Speed II), extracted with ``git archive`` into the data
directory; the ratio column of a sim row is new steps/s over baseline steps/s.

Episode-loop rows (the one loop in ``sim/loop.py``), the same
two scenarios and policy, each against the code of ``--loop-baseline``
(default: the commit before the one loop), measured in the same run:

  write hall / write 20     ``run_episode`` to ``/dev/null`` (a binary stream): loop, encoding, a flush per part
  measure hall / measure 20 ``engine.measure_run``, no record: loop and the engine's accumulators

Usage::

    python benchmarks/bench_speed.py                       # T = 10^5, 3 repeats, everything
    python benchmarks/bench_speed.py --steps 10000 --repeat 5
    python benchmarks/bench_speed.py --only sim --repeat 5
    python benchmarks/bench_speed.py --only loop --repeat 5              # the episode loop, now and before
    python benchmarks/bench_speed.py --only read --steps 10000 100000 1000000   # RSS flat?
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUTS = ("canonical", "pretty", "sorted", "spaced")
BASELINE = "d928755"  # the last commit before the Speed II work
LOOP_BASELINE = "2b1401f"  # the last commit before the one episode loop


# -- records in every layout --------------------------------------------------


def scenario_20(steps):
    import ember

    scenario = ember.load_scenario("builtin:long-horizon")
    scenario["scenario_id"] = f"bench-20x40-{steps}"
    scenario["termination"]["max_steps"] = steps
    return scenario


def canonical_parts(path):
    """(header, initial_state, step lines iterator, final_state) of a canonical record, streamed."""
    with open(path, "rb") as handle:
        head = handle.readline()
        initial = handle.readline()
        handle.readline()  # "steps":[
        header = json.loads(head[len(b'{"header":') : -2])
        initial_state = json.loads(initial[len(b'"initial_state":') : -2])
    return header, initial_state


def step_lines(path):
    with open(path, "rb") as handle:
        for _ in range(3):
            handle.readline()
        for line in handle:
            if line.startswith(b"],"):
                return
            yield line.rstrip(b"\n").rstrip(b",")


def final_state_of(path):
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - (1 << 20)))
        last = handle.read().rsplit(b"\n", 2)[-2]
    return json.loads(last[len(b'"final_state":') : -1])


def indented(value, level):
    """``json.dumps(value, indent=1)`` as it appears nested ``level`` deep in a larger dump."""
    return json.dumps(value, indent=1).replace("\n", "\n" + " " * level)


def write_layout(layout, canonical, target):
    """Write ``canonical``'s record in ``layout``, one step at a time (memory: one step)."""
    header, initial = canonical_parts(canonical)
    final = final_state_of(canonical)
    steps = (json.loads(line) for line in step_lines(canonical))
    with open(target, "w", encoding="utf-8", newline="") as out:
        if layout == "pretty":
            out.write(
                '{\n "header": '
                + indented(header, 1)
                + ',\n "initial_state": '
                + indented(initial, 1)
                + ',\n "steps": ['
            )
            for j, step in enumerate(steps):
                out.write(("," if j else "") + "\n  " + indented(step, 2))
            out.write('\n ],\n "final_state": ' + indented(final, 1) + "\n}")
        elif layout == "sorted":
            dump = lambda v: json.dumps(v, sort_keys=True)  # noqa: E731 - the default separators: ", " and ": "
            out.write(
                '{"final_state": '
                + dump(final)
                + ', "header": '
                + dump(header)
                + ', "initial_state": '
                + dump(initial)
                + ', "steps": ['
            )
            for j, step in enumerate(steps):
                out.write((", " if j else "") + dump(step))
            out.write("]}")
        elif layout == "spaced":
            dump = lambda v: json.dumps(v, separators=(", ", ": "))  # noqa: E731
            out.write(
                '{ "header" : ' + dump(header) + ' ,\r\n "initial_state" : ' + dump(initial) + ' ,\r\n "steps" : [\r\n'
            )
            for j, step in enumerate(steps):
                out.write((" ,\r\n" if j else "") + "\t" + dump(step))
            out.write('\r\n] ,\r\n "final_state" : ' + dump(final) + " }\r\n")
        else:
            raise ValueError(layout)


def ensure_records(steps, data_dir):
    """The canonical record for T = ``steps`` and its other layouts; paths by layout name."""
    import ember

    scenario = scenario_20(steps)
    stem = data_dir / scenario["scenario_id"]
    scenario_file = stem.with_suffix(".scenario.json")
    scenario_file.write_text(json.dumps(scenario))
    paths = {"canonical": stem.with_suffix(".record")}
    if not paths["canonical"].exists():
        print(f"writing {paths['canonical'].name} ...", file=sys.stderr, flush=True)
        part = str(paths["canonical"]) + ".part"
        ember.run_episode(scenario, "random", 1, part)
        os.replace(part, paths["canonical"])
    for layout in LAYOUTS[1:]:
        paths[layout] = stem.with_suffix(f".{layout}.record")
        if not paths[layout].exists():
            print(f"writing {paths[layout].name} ...", file=sys.stderr, flush=True)
            part = str(paths[layout]) + ".part"
            write_layout(layout, paths["canonical"], part)
            os.replace(part, paths[layout])
    paths["gzip"] = stem.with_suffix(".record.gz")
    if not paths["gzip"].exists():
        print(f"writing {paths['gzip'].name} ...", file=sys.stderr, flush=True)
        part = str(paths["gzip"]) + ".part"
        with open(paths["canonical"], "rb") as source, gzip.open(part, "wb", compresslevel=6) as out:
            while chunk := source.read(1 << 20):
                out.write(chunk)
        os.replace(part, paths["gzip"])
    return scenario_file, paths


def baseline_src(revision, data_dir):
    """``src/`` of ``revision``, extracted once into the data directory."""
    target = data_dir / f"baseline-{revision}"
    if not (target / "src" / "ember").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "src"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


# -- one measurement (in a child process) ---------------------------------------


def measure(kind, target, scenario_arg, steps):
    """Print the CPU seconds (and steps done) of one measurement as JSON."""
    import ijson

    import ember

    if kind == "floor":
        started = time.process_time()
        with open(target, "rb") as handle:
            for _ in ijson.items(handle, "steps.item"):
                pass
        done = None
    elif kind == "full":
        scenario = json.loads(Path(scenario_arg).read_text())
        started = time.process_time()
        ember.episode_metrics(scenario, target)
        done = None
    elif kind == "gzip":
        # The reader recognises gzip by its magic bytes: decompression is inside the time.
        scenario = json.loads(Path(scenario_arg).read_text())
        started = time.process_time()
        ember.episode_metrics(scenario, target)
        done = None
    elif kind == "sim":
        from ember.sim.policies import make_policy

        scenario = ember.load_scenario(scenario_arg)
        scenario["termination"]["max_steps"] = int(steps)
        sim = ember.Simulator(scenario, 1)
        policy = make_policy("random", sim.scenario, 1)
        started = time.process_time()
        done = 0
        while not sim.terminated:
            sim.step(policy(sim.observe()))
            done += 1
    elif kind in ("write", "measure"):
        scenario = ember.load_scenario(scenario_arg)
        scenario["termination"]["max_steps"] = int(steps)
        with open(os.devnull, "wb") as sink:
            started = time.process_time()
            if kind == "write":
                done = ember.run_episode(scenario, "random", 1, sink)["step"]
            else:
                from ember.engine.run import measure_run

                measured = measure_run(scenario, "random", 1)
                # Before the one loop measure_run gave the EpisodeMetrics alone.
                metrics = getattr(measured, "metrics", measured)
                done = metrics["time"]["episode_steps"]
    else:
        raise SystemExit(f"unknown kind {kind}")
    print(json.dumps({"seconds": time.process_time() - started, "steps": done}))


def run_child(kind, target, scenario_arg, steps=0, src=None):
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.Popen(
        [sys.executable, __file__, "--measure", kind, str(target), str(scenario_arg), str(steps)],
        stdout=subprocess.PIPE,
        env=env,
    )
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.stdout.close()
    if status != 0:
        raise SystemExit(f"measurement {kind} {target} failed with status {status}")
    result = json.loads(out)
    return result["seconds"], result["steps"], usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


# -- the table --------------------------------------------------------------------


def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"


def read_rows(steps, data_dir, repeat):
    """Rows: (label, seconds list, ratio list, rss) for one T."""
    scenario_file, paths = ensure_records(steps, data_dir)
    size_mb = paths["canonical"].stat().st_size / 1e6
    times = {}  # (kind, layout) -> [seconds]
    rss = {}
    plan = [("floor", layout) for layout in LAYOUTS] + [("full", layout) for layout in LAYOUTS] + [("gzip", "gzip")]
    for _ in range(repeat):
        for kind, layout in plan:  # interleaved, so a busy spell hits every row alike
            seconds, _, peak = run_child(kind, paths[layout], scenario_file)
            times.setdefault((kind, layout), []).append(seconds)
            rss[(kind, layout)] = max(rss.get((kind, layout), 0), peak)
    rows = []
    for kind, layout in plan:
        floor_layout = "canonical" if layout == "gzip" else layout
        floors = times[("floor", floor_layout)]
        ratios = [t / f for t, f in zip(times[(kind, layout)], floors)]  # each run against the floor of its own round
        mb = (paths[layout].stat().st_size if layout != "gzip" else paths["canonical"].stat().st_size) / 1e6
        rows.append((f"{kind} {layout}", steps, times[(kind, layout)], ratios, rss[(kind, layout)], mb))
    print(f"  (T = {steps:,}: canonical record {size_mb:.0f} MB)", file=sys.stderr)
    return rows


def sim_rows(args):
    src = baseline_src(args.baseline, args.data_dir)
    rows = []
    for label, scenario, steps in (
        ("sim hall", "builtin:hall", args.hall_steps),
        ("sim 20", "builtin:long-horizon", args.sim_steps),
    ):
        new, old = [], []
        for _ in range(args.repeat):
            seconds, done, peak = run_child("sim", "-", scenario, steps)
            new.append(done / seconds)
            seconds, done, _ = run_child("sim", "-", scenario, steps, src=src)
            old.append(done / seconds)
        rows.append((label, steps, new, old))
    return rows


def loop_rows(args):
    src = baseline_src(args.loop_baseline, args.data_dir)
    rows = []
    for kind in ("write", "measure"):
        for label, scenario, steps in (
            ("hall", "builtin:hall", args.hall_steps),
            ("20", "builtin:long-horizon", args.sim_steps),
        ):
            new, old = [], []
            for _ in range(args.repeat):  # interleaved: a busy spell hits both alike
                seconds, done, _ = run_child(kind, "-", scenario, steps)
                new.append(done / seconds)
                seconds, done, _ = run_child(kind, "-", scenario, steps, src=src)
                old.append(done / seconds)
            rows.append((f"{kind} {label}", steps, new, old))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[100_000], help="record lengths T (default: 10^5)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (median and spread are shown)")
    parser.add_argument(
        "--only", choices=("read", "sim", "loop"), help="just the reading, the simulator or the episode-loop rows"
    )
    parser.add_argument("--hall-steps", type=int, default=1000, help="steps of builtin:hall to run (default 1000)")
    parser.add_argument("--sim-steps", type=int, default=50_000, help="steps of the 20-people simulator row")
    parser.add_argument(
        "--baseline", default=BASELINE, help=f"git revision of the 'before' simulator (default {BASELINE})"
    )
    parser.add_argument(
        "--loop-baseline",
        default=LOOP_BASELINE,
        help=f"git revision of the 'before' episode loop (default {LOOP_BASELINE})",
    )
    parser.add_argument(
        "--data-dir", type=Path, default=ROOT / "bench-data", help="where records are written and cached"
    )
    parser.add_argument("--measure", nargs=4, metavar=("KIND", "TARGET", "SCENARIO", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return
    import ijson

    args.data_dir.mkdir(exist_ok=True)
    print(
        f"python {sys.version.split()[0]}, ijson {ijson.__version__} backend {ijson.backend}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at start; CPU seconds, median (min-max) of {args.repeat} runs"
    )
    if args.only in (None, "read"):
        print()
        header = f"{'what':<16} {'T':>9} {'CPU s':>22} {'MB/s':>7} {'x floor':>22} {'peak RSS MB':>12}"
        print(header)
        print("-" * len(header))
        for steps in args.steps:
            for label, t, seconds, ratios, rss, mb in read_rows(steps, args.data_dir, args.repeat):
                print(
                    f"{label:<16} {t:>9,} {spread(seconds, lambda x: f'{x:.2f}'):>22} "
                    f"{mb / statistics.median(seconds):7.1f} {spread(ratios, lambda x: f'{x:.2f}'):>22} {rss:12.1f}",
                    flush=True,
                )
    for part, rows, baseline in (("sim", sim_rows, args.baseline), ("loop", loop_rows, args.loop_baseline)):
        if args.only not in (None, part):
            continue
        print()
        header = f"{'what':<13} {'steps':>7} {'steps/s now':>24} {f'steps/s at {baseline}':>24} {'x before':>8}"
        print(header)
        print("-" * len(header))
        for label, steps, new, old in rows(args):
            print(
                f"{label:<13} {steps:>7,} {spread(new, lambda x: f'{x:,.0f}'):>24} "
                f"{spread(old, lambda x: f'{x:,.0f}'):>24} {statistics.median(new) / statistics.median(old):8.2f}",
                flush=True,
            )
    load = os.getloadavg()[0]
    print(
        f"\nload average {load:.1f} at the end"
        + (" (a loaded machine: treat the numbers as rough)" if load > 1.5 else "")
    )


if __name__ == "__main__":
    main()
