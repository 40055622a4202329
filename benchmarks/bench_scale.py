"""Per-step cost at scale, the old code and the new side by side in one run.

Two tables, both measured in fresh processes (peak RSS is each process's own):

``--compare`` (the default): every case runs under the code of ``--baseline``
(a git revision, extracted with ``git archive`` into the data directory) and
under this checkout, alternately (old, new, new, old, ...), ``--repeat``
rounds.  A case's figure is CPU seconds of the work (``time.process_time``,
after the imports) or, for ``ember metrics``, the user + system CPU seconds
of the whole command (interpreter start-up included).  Each round gives one
ratio old / new (> 1: the new code is faster); the table prints the median
ratio of the rounds with their spread (min-max), the target, and whether
the median meets it.  Only ratios are printed: the machine is shared, and a
busy spell slows the old and the new run of a round alike.

Cases (``builtin:ember-v1/large-hall-casualty``: 200x200, 1,000 people,
fire p = 1/4; seed 1):

  sim greedy        ``Simulator`` + greedy to termination, nothing written (the public
                    default: the burning list and cell lists are read-only ``FrozenList``s
                    shared between steps, everything else made afresh for each step)
  sim greedy, EMBER's loop
                    the same episode through ``sim.loop.run_policy`` on a
                    ``Simulator(shared_lists=True)``, as ``ember run``, ``measure_run``
                    and campaigns run a built-in policy (the old code: its one loop)
  measure greedy    ``measure_run(scenario, "greedy", 1)``
  measure planner   ``measure_run(scenario, "planner", 1)``
  ember metrics     ``ember metrics SCENARIO RECORD`` on the greedy record
  small: sim 20     ``builtin:long-horizon`` (20 people) + random, 50,000 steps
  small: measure 20 ``measure_run`` on ``builtin:long-horizon`` + random, 20,000 steps
  small: metrics 20 ``ember metrics`` on that 20,000-step record

``--scale2``: one table of every figure of the Scale II work beside BASE
(``--base``, default ea058d3) in the same run, ``--repeat`` rounds of
alternating old and new runs: the public ``Simulator`` loop (also beside
2b1401f), ``measure_run`` and ``ember metrics`` on a generated 1,000x1,000
floor with 50,000 people and 120 steps (``ember generate hall --seed 1
--rows 1000 --cols 1000 --people 50000 --max-steps 120``; its record has
step lines of about 8 MB, past the old fast path's 4 MiB), with peak RSS
and whether the outputs are identical; then the per-unit cost of
``measure_run`` (CPU microseconds per active person + burning cell, per
step) on the 200x200 hall of ``--stadium`` and on that floor, each code
against its own 200x200 figure.

``--stadium``: the new code alone, ``measure_run`` with greedy on generated
halls of 200x200 / 1,000 people, 500x500 / 6,000 and 1,000x1,000 / 25,000
(``--sizes`` to choose): steps, milliseconds per step, that cost divided by
(cells + people) relative to the first size, and peak RSS.

Usage::

    python benchmarks/bench_scale.py                      # compare, 3 rounds
    python benchmarks/bench_scale.py --repeat 5 --only "measure greedy" "sim greedy"
    python benchmarks/bench_scale.py --stadium
    python benchmarks/bench_scale.py --stadium --sizes 200 500
    python benchmarks/bench_scale.py --scale2 --repeat 1
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "2b1401f"  # the code before the scale work
BASE = "ea058d3"  # the code before the Scale II work
LARGE = "builtin:ember-v1/large-hall-casualty"
SMALL = "builtin:long-horizon"

# name -> (kind, scenario, policy, steps cap or 0, target ratio old/new)
CASES = {
    "sim greedy": ("sim", LARGE, "greedy", 0, 3.0),
    "sim greedy, EMBER's loop": ("loop", LARGE, "greedy", 0, 3.0),
    "measure greedy": ("measure", LARGE, "greedy", 0, 4.0),
    "measure planner": ("measure", LARGE, "planner", 0, 4.0),
    "ember metrics": ("metrics", LARGE, "greedy", 0, 3.0),
    "small: sim 20": ("sim", SMALL, "random", 50_000, 1.0),
    "small: measure 20": ("measure", SMALL, "random", 20_000, 1.0),
    "small: metrics 20": ("metrics", SMALL, "random", 20_000, 1.0),
}

# Stadium sizes: side -> people; halls keep the large tier's pillar density and doors.
STADIUM = {200: 1_000, 500: 6_000, 1000: 25_000}
# side -> (target of ms/step, target of per-(cells + people) cost), both against 200x200
STADIUM_TARGETS = {500: ("<= 7x", ""), 1000: ("", "<= 1.1x")}


# -- in the child process ----------------------------------------------------------


def load(scenario_arg, steps):
    import ember

    if scenario_arg.startswith("builtin:"):
        scenario = ember.load_scenario(scenario_arg)
    else:
        scenario = json.loads(Path(scenario_arg).read_text())
    if int(steps):
        scenario["termination"]["max_steps"] = int(steps)
    return scenario


def measure(kind, scenario_arg, policy_name, steps):
    """Print the CPU seconds of one measurement (and the steps it ran) as JSON."""
    import ember
    from ember.engine.run import measure_run
    from ember.sim.policies import make_policy

    scenario = load(scenario_arg, steps)
    started = time.process_time()
    if kind == "sim":
        sim = ember.Simulator(scenario, 1)
        policy = make_policy(policy_name, sim.scenario, 1)
        while not sim.terminated:
            sim.step(policy(sim.observe()))
        done = sim.t
    elif kind == "loop":
        try:  # the loop of ember run, measure_run and campaigns: a shared-lists simulator
            from ember.sim.loop import run_policy

            sim = ember.Simulator(scenario, 1, shared_lists=True)
            run_policy(sim, policy_name)
        except ImportError:  # the old code had one loop: the public one above
            sim = ember.Simulator(scenario, 1)
            policy = make_policy(policy_name, sim.scenario, 1)
            while not sim.terminated:
                sim.step(policy(sim.observe()))
        done = sim.t
    elif kind == "measure":
        result = measure_run(scenario, policy_name, 1)
        metrics = getattr(result, "metrics", result)  # a MeasuredRun once measure_run returns one
        done = metrics["time"]["episode_steps"]
    elif kind == "units":  # measure_run, counting the work of each step: active people + burning cells
        import ember.engine.run
        from ember.canonical import canonical_json

        units = [0]
        step = ember.engine.run.MeasuringSink.on_step

        def counting(self, value, final_state):
            units[0] += len(value["movements"]) + len(value["snapshot"]["burning"] or ())
            step(self, value, final_state)

        ember.engine.run.MeasuringSink.on_step = counting
        started = time.process_time()
        metrics = measure_run(scenario, policy_name, 1).metrics
        seconds = time.process_time() - started
        digest = hashlib.sha256(canonical_json(metrics.to_dict())).hexdigest()
        steps = metrics["time"]["episode_steps"]
        print(json.dumps({"seconds": seconds, "steps": steps, "units": units[0], "digest": digest}))
        return
    else:
        raise SystemExit(f"unknown kind {kind}")
    print(json.dumps({"seconds": time.process_time() - started, "steps": done}))


# -- the parent ----------------------------------------------------------------------


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


def run(command, src):
    """Run ``command`` with ``src`` first on the path; (stdout, CPU seconds of the process, peak RSS MB)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(src)
    child = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.stdout.close()
    if status != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed with status {status}")
    return out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss: KiB on Linux


def scenario_file(scenario_arg, steps, data_dir, src):
    """A scenario file for ``ember metrics`` (builtin with the step cap applied)."""
    name = scenario_arg.replace("builtin:", "").replace("/", "-") + (f"-{steps}" if steps else "")
    path = data_dir / f"{name}.scenario.json"
    if not path.exists():
        code = (
            "import json, sys; sys.path.insert(0, sys.argv[1]); "
            "from bench_scale import load; print(json.dumps(load(sys.argv[2], sys.argv[3])))"
        )
        out, _, _ = run([sys.executable, "-c", code, str(ROOT / "benchmarks"), scenario_arg, str(steps)], src)
        path.write_bytes(out)
    return path


def record_file(scenario_path, policy_name, data_dir, src):
    """The record of ``policy_name`` (seed 1) on the scenario, written once by ``ember run``."""
    path = scenario_path.with_suffix(f".{policy_name}.record")
    if not path.exists():
        print(f"writing {path.name} ...", file=sys.stderr, flush=True)
        part = str(path) + ".part"
        run(
            [sys.executable, "-m", "ember.cli", "run", str(scenario_path), "--policy", policy_name, "--seed", "1",
             "-o", part],
            src,
        )  # fmt: skip
        os.replace(part, path)
    return path


def case_command(name, data_dir, src):
    kind, scenario_arg, policy_name, steps, _ = CASES[name]
    if kind == "metrics":
        scenario_path = scenario_file(scenario_arg, steps, data_dir, src)
        record = record_file(scenario_path, policy_name, data_dir, src)
        return [sys.executable, "-m", "ember.cli", "metrics", str(scenario_path), str(record)]
    return [sys.executable, __file__, "--measure", kind, scenario_arg, policy_name, str(steps)]


def one_run(name, command, src):
    """CPU seconds of the measured work, the output (for the identity check) and peak RSS."""
    out, cpu, rss = run(command, src)
    if CASES[name][0] == "metrics":
        return cpu, hashlib.sha256(out).hexdigest(), rss  # the whole command, start-up included
    result = json.loads(out)
    return result["seconds"], result["steps"], rss


def spread(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def compare(args):
    old_src, new_src = baseline_src(args.baseline, args.data_dir), ROOT / "src"
    names = args.only or list(CASES)
    for name in names:
        if name not in CASES:
            raise SystemExit(f"--only: unknown case {name!r}; expected one of {', '.join(CASES)}")
    commands = {name: case_command(name, args.data_dir, new_src) for name in names}
    ratios, rss, outputs = {name: [] for name in names}, {}, {}
    for round_ in range(args.repeat):
        for name in names:
            # Alternate which code goes first, so neither always gets the warmer or the quieter turn.
            order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
            seconds = {}
            for which in order:
                cpu, output, peak = one_run(name, commands[name], old_src if which == "old" else new_src)
                seconds[which] = cpu
                outputs.setdefault((name, which), set()).add(output)
                rss[(name, which)] = max(rss.get((name, which), 0), peak)
            ratios[name].append(seconds["old"] / seconds["new"])
        print(f"  round {round_ + 1} of {args.repeat} done", file=sys.stderr, flush=True)
    width = max(20, *map(len, names))
    header = f"{'case':<{width}} {'x old (old/new CPU), median (min-max)':>38} {'target':>7} {'met':>4}"
    header += f" {'RSS MB old/new':>16}"
    print(header)
    print("-" * len(header))
    for name in names:
        target = CASES[name][4]
        same = outputs[(name, "old")] == outputs[(name, "new")] and len(outputs[(name, "new")]) == 1
        median = statistics.median(ratios[name])
        print(
            f"{name:<{width}} {spread(ratios[name]):>38} {target:>6.1f}x {'yes' if median >= target else 'NO':>4} "
            f"{rss[(name, 'old')]:>7.1f}/{rss[(name, 'new')]:<7.1f}" + ("" if same else "  OUTPUT DIFFERS")
        )


def stadium(args):
    rows = []
    for side in args.sizes:
        people = STADIUM.get(side) or side * side // 40
        path = stadium_scenario(side, args.data_dir)
        out, _, rss = run([sys.executable, __file__, "--measure", "measure", str(path), "greedy", "0"], ROOT / "src")
        result = json.loads(out)
        per_step = result["seconds"] / result["steps"] * 1000
        rows.append((side, people, result["steps"], per_step, per_step / (side * side + people), rss))
        print(f"  {side}x{side} done", file=sys.stderr, flush=True)
    base_step, base = rows[0][3], rows[0][4]
    header = f"{'grid':>11} {'people':>7} {'steps':>6} {'ms/step':>8} {'x ms/step':>10} {'target':>7}"
    header += f" {'x (cells+people) growth':>24} {'target':>7} {'peak RSS MB':>12}"
    print(header)
    print("-" * len(header))
    for side, people, steps, per_step, per_unit, peak in rows:
        grid = f"{side}x{side}"
        step_target, unit_target = STADIUM_TARGETS.get(side, ("", ""))
        print(
            f"{grid:>11} {people:>7,} {steps:>6,} {per_step:>8.1f} {per_step / base_step:>10.2f} {step_target:>7}"
            f" {per_unit / base:>24.2f} {unit_target:>7} {peak:>12.1f}"
        )
    print("\nx ms/step: against the first size; x (cells + people) growth: ms/step / (cells + people), against the")
    print("first size (at most 1.0: the per-step cost grows no faster than cells + people). Targets against 200x200:")
    print("500x500 / 6,000 within 7x a step; 1,000x1,000 / 25,000 within 1.1x per cell + person.")


def scale2_scenario(data_dir):
    """The Scale II floor: 1,000x1,000, 50,000 people, 120 steps (the defaults of ``ember generate hall``)."""
    path = data_dir / "stadium50k.json"
    if not path.exists():
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
        command = [
            sys.executable, "-m", "ember.cli", "generate", "hall", "--seed", "1", "--rows", "1000", "--cols", "1000",
            "--people", "50000", "--max-steps", "120", "-o", str(path),
        ]  # fmt: skip
        run(command, ROOT / "src")
    return path


def stadium_scenario(side, data_dir):
    """The ``--stadium`` hall of ``side`` (written once)."""
    people = STADIUM.get(side) or side * side // 40
    path = data_dir / f"stadium-{side}.scenario.json"
    if not path.exists():
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
        scale = side * side / (200 * 200)
        command = [
            sys.executable, "-m", "ember.cli", "generate", "hall", "--seed", "1", "--rows", str(side),
            "--cols", str(side), "--people", str(people), "--pillars", str(round(250 * scale)),
            "--pillar-size", "3", "--exits", str(min(64, max(6, round(6 * side / 200)))), "--door", "3",
            "--ignitions", "3", "--spread", "1/4", "--id", f"stadium-{side}", "-o", str(path),
        ]  # fmt: skip
        run(command, ROOT / "src")
    return path


def scale2(args):
    """Every figure of the Scale II work beside BASE (and 2b1401f for the public loop), in one run."""
    new_src = ROOT / "src"
    sources = {rev: baseline_src(rev, args.data_dir) for rev in (args.base, args.baseline)}
    big = scale2_scenario(args.data_dir)
    record = record_file(big, "greedy", args.data_dir, new_src)
    me = [sys.executable, __file__, "--measure"]
    cases = [  # (name, command, old revision, how its output is compared)
        ("sim greedy (public Simulator)", me + ["sim", LARGE, "greedy", "0"], args.baseline, "steps"),
        ("sim greedy (public Simulator)", me + ["sim", LARGE, "greedy", "0"], args.base, "steps"),
        ("50k stadium: measure_run", me + ["units", str(big), "greedy", "0"], args.base, "digest"),
        ("50k stadium: ember metrics", [sys.executable, "-m", "ember.cli", "metrics", str(big), str(record)],
         args.base, "bytes"),
    ]  # fmt: skip
    ratios = {k: [] for k in range(len(cases))}
    rss, outputs, units_seen = {}, {}, {}
    for round_ in range(args.repeat):
        for k, (name, command, old, how) in enumerate(cases):
            order = ("old", "new") if round_ % 2 == 0 else ("new", "old")
            seconds = {}
            for which in order:
                out, cpu, peak = run(command, sources[old] if which == "old" else new_src)
                if how == "bytes":
                    seconds[which], output = cpu, hashlib.sha256(out).hexdigest()
                else:
                    result = json.loads(out)
                    seconds[which], output = result["seconds"], result[how]
                    units_seen.setdefault((k, which), result)
                outputs.setdefault((k, which), set()).add(output)
                rss[(k, which)] = max(rss.get((k, which), 0), peak)
            ratios[k].append(seconds["old"] / seconds["new"])
            print(f"  round {round_ + 1}: {name} against {old} done", file=sys.stderr, flush=True)
    header = f"{'case':<32} {'old':>8} {'x old (old/new CPU)':>24} {'peak RSS MB old / new':>22} {'output':>10}"
    print(header)
    print("-" * len(header))
    for k, (name, _, old, _) in enumerate(cases):
        same = outputs[(k, "old")] == outputs[(k, "new")] and len(outputs[(k, "new")]) == 1
        memory = f"{rss[(k, 'old')]:.1f} / {rss[(k, 'new')]:.1f}"
        print(f"{name:<32} {old:>8} {spread(ratios[k]):>24} {memory:>22} {'same' if same else 'DIFFERS':>10}")
    # Per-unit cost: each code's figures against its own 200x200 figure, in the same run (the 50,000-people
    # floor's from the rounds above, its first round).
    rows = []
    for which, src in (("old", sources[args.base]), ("new", new_src)):
        code = args.base if which == "old" else "new"
        for side in (200, 1000):
            people = STADIUM[side]
            out, _, peak = run(me + ["units", str(stadium_scenario(side, args.data_dir)), "greedy", "0"], src)
            rows.append((f"{side}x{side} / {people:,} people", code, json.loads(out), peak))
            print(f"  per-unit {side}x{side} under {code} done", file=sys.stderr, flush=True)
        rows.append(("1000x1000 / 50,000, 120 steps", code, units_seen[(2, which)], rss[(2, which)]))
    print(f"\n{'per-unit cost of measure_run':<32} {'code':>8} {'steps':>6} {'units/step':>11} {'us/unit':>8}"
          f" {'x 200x200':>10} {'peak RSS MB':>12}")  # fmt: skip
    first = {}
    for label, code, result, peak in rows:
        cost = result["seconds"] / result["units"] * 1e6
        first.setdefault(code, cost)
        print(f"{label:<32} {code:>8} {result['steps']:>6} {result['units'] / result['steps']:>11,.0f}"
              f" {cost:>8.3f} {cost / first[code]:>10.2f} {peak:>12.1f}")  # fmt: skip
    print("\nunits: active people + burning cells, summed over the steps; us/unit: CPU microseconds of")
    print("measure_run per unit; x 200x200: against the same code's 200x200 figure")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stadium", action="store_true", help="per-step cost of measure_run on stadium-sized halls")
    parser.add_argument("--scale2", action="store_true", help="Scale II: every figure beside --base, in one table")
    parser.add_argument("--base", default=BASE, help=f"git revision of the Scale II base (default {BASE})")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(STADIUM), help="stadium grid sides")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of old and new runs (default 3)")
    parser.add_argument("--only", nargs="+", metavar="CASE", help=f"cases to run: {', '.join(CASES)}")
    parser.add_argument("--baseline", default=BASELINE, help=f"git revision of the old code (default {BASELINE})")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench-data", help="records and extracted code")
    parser.add_argument("--measure", nargs=4, metavar=("KIND", "SCENARIO", "POLICY", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return
    args.data_dir.mkdir(exist_ok=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    if args.scale2:
        scale2(args)
    elif args.stadium:
        stadium(args)
    else:
        print(f"old: {args.baseline}; new: this checkout; {args.repeat} rounds, CPU seconds per run\n")
        compare(args)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
