"""Statistics cost: 'ember stats' (B = 10,000) against 'ember rank' on the same results directory.

A synthetic but valid results directory (campaign.md §4) is written once
and cached: 10,000 episodes (100 scenarios x 100 seeds by default) x 4
policies = 40,000 ok rows, each the real metrics of a built-in policy on
builtin:office with its safety counts, time to safety and fire histogram
varied per episode (about 430 MB).  Then, each in a fresh process, one after
the other (side by side in the same run, on the same files):

  rank       ember rank DIR -o FILE
  stats B    ember stats DIR -o FILE --replicates B   (for each B given)

and a table of seconds, ratio to rank and peak RSS is printed.  Targets:
stats at B = 10,000 within 2x rank, and peak RSS that does not
grow with B beyond the B · |P| · (H + 5) replicate values statistics.md §8
keeps (8 bytes each).  Usage::

    python benchmarks/bench_stats.py                          # B = 1,000 and 10,000, 2 rounds
    python benchmarks/bench_stats.py --replicates 10000 100000 --rounds 3
    python benchmarks/bench_stats.py --scenarios 1000 --seeds 10   # more strata

The board case (``--board N``) is a leaderboard of many policies: the
genuine rows of a small real campaign (ember-v1's layout, 24 strata of 5, 3
and 1 seeds = 72 keys, on small generated floors; the four built-in
policies, evaluated once and cached) relabelled as N policies (every 25th
an exact copy of a real one, the others key by key mosaics of the four).
Each round runs, in fresh processes, 'ember rank' and 'ember stats' on
every board and the ``--baseline`` revision's 'ember stats' (extracted with
git archive) on the ``--reference-policies`` boards, which it can finish;
it prints CPU seconds, the baseline / new ratio, whether both wrote the same
bytes, and the N-policy time against the 60 s target::

    python benchmarks/bench_stats.py --board 1000 --replicates 10000 --rounds 2
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ("greedy", "planner", "random", "stay")
TEMPLATE_SCENARIO = "builtin:office"


def templates():
    """The real metrics of each policy on the template scenario (seed 0), as dicts."""
    import io

    from ember import episode_metrics, load_scenario, run_episode
    from ember.scenario import compile_scenario
    from ember.sim.policies import make_policy

    scenario = compile_scenario(TEMPLATE_SCENARIO)
    found = {}
    for name in POLICIES:
        out = io.BytesIO()
        run_episode(scenario, make_policy(name, scenario, 0), 0, out)
        found[name] = episode_metrics(load_scenario(TEMPLATE_SCENARIO), out.getvalue()).to_dict()
    return found


def varied(template, policy_index, scenario_id, scenario_hash, seed, rng):
    """A copy of ``template`` for another episode: new key, safety counts, time and histogram counts."""
    metrics = json.loads(json.dumps(template))
    metrics["scenario_id"], metrics["scenario_hash"], metrics["seed"] = scenario_id, scenario_hash, seed
    safety = metrics["safety"]
    population = safety["population"]
    casualties = min(population, rng.randrange(0, 3 + 2 * policy_index))
    stranded = min(population - casualties, rng.randrange(0, 2 + policy_index))
    safety.update(casualties=casualties, stranded=stranded, evacuated=population - casualties - stranded)
    time_ = metrics["time"]
    time_["person_time_to_safety_total"] = max(0, time_["person_time_to_safety_total"] + rng.randrange(-300, 300))
    histogram = metrics["fire_exposure"]["distance_histogram"]
    for distance in histogram:
        histogram[distance] = max(0, histogram[distance] + rng.randrange(-3, 4))
    return metrics


def ensure_results(folder, scenarios, seeds):
    """The results directory for ``scenarios`` x ``seeds``, written once (campaign.json last: it marks it done)."""
    from ember.canonical import canonical_json
    from ember.versions import METRICS_VERSION, OBSERVATION_VERSION, RANKING_VERSION, SIMULATOR_VERSION

    path = folder / f"results-{scenarios}x{seeds}"
    if (path / "campaign.json").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20)
    base = templates()
    ids = [f"scenario-{h:04d}" for h in range(scenarios)]
    hashes = [f"sha256:{h:064x}" for h in range(scenarios)]
    print(f"writing {scenarios * seeds * len(POLICIES):,} rows to {path} ...", file=sys.stderr, flush=True)
    with open(path / "episodes.jsonl", "wb") as out:
        for h in range(scenarios):
            for seed in range(seeds):
                for i, policy in enumerate(POLICIES):
                    metrics = varied(base[policy], i, ids[h], hashes[h], seed, rng)
                    row = {
                        "scenario_id": ids[h],
                        "scenario_hash": hashes[h],
                        "seed": seed,
                        "policy": policy,
                        "status": "ok",
                        "error": None,
                        "metrics": metrics,
                        "steps": metrics["time"]["episode_steps"],
                        "record": None,
                        "record_sha256": None,
                        "elapsed_s": 0.25,
                    }
                    out.write(canonical_json(row) + b"\n")
    campaign = {
        "campaign": "bench-stats",
        "versions": {
            "simulator": SIMULATOR_VERSION,
            "observation": OBSERVATION_VERSION,
            "metrics": METRICS_VERSION,
            "ranking": RANKING_VERSION,
            "package": "1.0.0",
        },
        "scenarios": [
            {"scenario_id": ids[h], "scenario_hash": hashes[h], "source": f"{ids[h]}.json", "seeds": list(range(seeds))}
            for h in range(scenarios)
        ],
        "policies": [{"name": name, "builtin": name} for name in POLICIES],
    }
    (path / "campaign.json").write_bytes(canonical_json(campaign) + b"\n")
    return path


#: The small campaign whose genuine rows the board is made of: ember-v1's layout (4 families x 2 fire modes x
#: 3 tiers, seeds 5 / 3 / 1: 72 episode keys in 24 strata) on small generated floors, so that a row is a few KB.
BOARD_FAMILIES = ("office", "hall", "bottleneck", "multi-exit")
BOARD_MODES = ("casualty", "block")
BOARD_TIERS = (("small", 16, 4, 5), ("medium", 20, 6, 3), ("large", 24, 8, 1))  # tier, rows = cols, people, seeds
BOARD_POLICIES = ("stay", "random", "greedy", "planner")
#: Every COPY_EVERY-th policy of a board is an exact copy of a real one (ties in every resample); the rest are mosaics.
COPY_EVERY = 25


def ember(arguments, env=None, cwd=None):
    command, default_env = ember_command()
    subprocess.run(command + arguments, env=env or default_env, cwd=cwd, check=True, capture_output=True)


def ensure_board_source(folder):
    """A real small campaign's results directory (4 built-in policies x 72 keys), evaluated once and cached."""
    path = folder / "board-source"
    results = path / "results"
    if (results / "campaign.json").exists():
        return results
    path.mkdir(parents=True, exist_ok=True)
    print(f"evaluating the board's source campaign into {path} ...", file=sys.stderr, flush=True)
    lines = ['campaign = "board-source"', "scenarios = ["]
    for tier, size, people, seeds in BOARD_TIERS:
        for family in BOARD_FAMILIES:
            for mode in BOARD_MODES:
                name = f"{tier}-{family}-{mode}"
                ember(
                    ["generate", family, "--seed", str(len(lines)), "--rows", str(size), "--cols", str(size)]
                    + ["--people", str(people), "--enter-fire", mode, "--id", f"board.{name}", "-o", f"{name}.json"],
                    cwd=path,
                )
                lines.append(f'    {{ source = "{name}.json", seeds = {{ start = 0, count = {seeds} }} }},')
    lines.append("]")
    for policy in BOARD_POLICIES:
        lines += ["", "[[policies]]", f'name = "{policy}"', f'builtin = "{policy}"']
    (path / "board.toml").write_text("\n".join(lines) + "\n")
    ember(["evaluate", "board.toml", "-o", "results", "--workers", "1"], cwd=path)
    return results


def ensure_board(folder, policies):
    """A results directory of ``policies`` policies x 72 keys: the source campaign's genuine rows, relabelled.

    Policy i is named p0000, p0001, ...; every ``COPY_EVERY``-th is an exact
    copy of one real policy (so some policies tie in every resample); each
    other takes, key by key, the row of a real policy drawn at random (a
    mosaic: genuine rows, a board of distinct policies).
    """
    from ember.canonical import canonical_json

    path = folder / f"board-{policies}x72"
    if (path / "campaign.json").exists():
        return path
    source = ensure_board_source(folder)
    campaign = json.loads((source / "campaign.json").read_bytes())
    rows = {}
    for line in (source / "episodes.jsonl").read_bytes().splitlines():
        row = json.loads(line)
        rows[row["policy"], row["scenario_hash"], row["seed"]] = row
    keys = [(s["scenario_hash"], seed) for s in campaign["scenarios"] for seed in s["seeds"]]
    rng = random.Random(policies)
    path.mkdir(parents=True, exist_ok=True)
    named = []
    with open(path / "episodes.jsonl", "wb") as out:
        for i in range(policies):
            name = f"p{i:04d}"
            copy = BOARD_POLICIES[(i // COPY_EVERY) % len(BOARD_POLICIES)] if i % COPY_EVERY == 0 else None
            named.append({"name": name, "builtin": copy or "greedy"})
            for scenario_hash, seed in keys:
                row = dict(rows[copy or rng.choice(BOARD_POLICIES), scenario_hash, seed], policy=name)
                out.write(canonical_json(row) + b"\n")
    campaign["campaign"], campaign["policies"] = f"board-{policies}", named
    (path / "campaign.json").write_bytes(canonical_json(campaign) + b"\n")
    return path


def ember_command():
    """How to run ``ember`` from this checkout: its sources first on the path."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return [sys.executable, "-c", "import sys; from ember.cli import main; sys.exit(main())"], env


def has_stats_command():
    command, env = ember_command()
    done = subprocess.run(command + ["stats", "--help"], env=env, capture_output=True)
    return done.returncode == 0


#: Until the command line has 'ember stats': the same reading and writing as 'ember rank', in a library call.
LIBRARY_STATS = """
import sys
from ember.results import parse_campaign
from ember.stats import compute_statistics, statistics_bytes
directory, output, replicates = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(directory + "/campaign.json", "rb") as handle:
    campaign = parse_campaign(handle.read())
with open(directory + "/episodes.jsonl", "rb") as handle:
    episodes = handle.read()
statistics, _ = compute_statistics(campaign, episodes, replicates)
with open(output, "wb") as handle:
    handle.write(statistics_bytes(statistics))
"""


def run(arguments, library=False, src=None):
    """Seconds (wall), CPU seconds (user + system) and peak RSS (MB) of one ``ember`` process.

    ``src``: run the ``ember`` of that source tree (a baseline's) instead of this checkout's.
    """
    command, env = ember_command()
    if src is not None:
        env = dict(env, PYTHONPATH=str(src))
    if library:
        command = [sys.executable, "-c", LIBRARY_STATS]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:  # the commands' notes (ember verify) would clutter the table
        child = subprocess.Popen(command + arguments, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        if status != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(arguments)} failed with status {status}: {errors.read().decode()}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def baseline_src(revision, data_dir):
    """``src/`` of ``revision``, extracted once into the data directory (``git archive``)."""
    target = data_dir / f"baseline-{revision}"
    if not (target / "src" / "ember").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", revision, "src"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


#: The statistics before they ranked replicates by sorting (m x |P| x |P| comparisons per block).
BASELINE = "649e734"


def board_main(args):
    """The board case: ``ember stats`` on ``--board`` policies x 72 keys; the baseline on the smaller boards."""
    src = baseline_src(args.baseline, args.data_dir)
    sizes = sorted(set(args.reference_policies)) + [args.board]
    boards = {n: ensure_board(args.data_dir, n) for n in sizes}
    size = (boards[args.board] / "episodes.jsonl").stat().st_size / 1e6
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; boards of N policies "
        f"x 72 keys (24 strata), B = {args.replicates[-1]:,}; {args.board:,} policies: episodes.jsonl {size:,.0f} MB; "
        f"baseline {args.baseline}"
    )
    replicates = str(args.replicates[-1])
    measured, same = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.rounds):
            for n in sizes:  # interleaved: each round measures every kind once
                out = {kind: os.path.join(scratch, f"{kind}-{n}.json") for kind in ("rank", "stats", "baseline")}
                measured.setdefault((n, "rank"), []).append(run(["rank", str(boards[n]), "-o", out["rank"]]))
                stats = ["stats", str(boards[n]), "-o", out["stats"], "--replicates", replicates]
                measured.setdefault((n, "stats"), []).append(run(stats))
                if n != args.board:
                    baseline = ["stats", str(boards[n]), "-o", out["baseline"], "--replicates", replicates]
                    measured.setdefault((n, "baseline"), []).append(run(baseline, src=src))
                    with open(out["stats"], "rb") as new, open(out["baseline"], "rb") as old:
                        same[n] = same.get(n, True) and new.read() == old.read()

    def cpu(n, kind):
        return statistics.median(c for _, c, _ in measured[n, kind])

    def rss(n, kind):
        return max(r for _, _, r in measured[n, kind])

    header = (
        f"{'policies':>8} {'rank CPU s':>10} {'stats CPU s':>11} {'baseline CPU s':>14} {'baseline / stats':>16} "
        f"{'stats - rank':>12} {'stats MB':>9} {'baseline MB':>11} {'same bytes':>10}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        row = f"{n:>8,} {cpu(n, 'rank'):10.2f} {cpu(n, 'stats'):11.2f} "
        if n != args.board:
            ratio = cpu(n, "baseline") / cpu(n, "stats")
            row += f"{cpu(n, 'baseline'):14.2f} {ratio:16.2f} "
        else:
            row += f"{'-':>14} {'-':>16} "
        row += f"{cpu(n, 'stats') - cpu(n, 'rank'):12.2f} {rss(n, 'stats'):9.1f} "
        row += (
            f"{rss(n, 'baseline'):11.1f} {'yes' if same[n] else 'NO':>10}"
            if n != args.board
            else f"{'-':>11} {'-':>10}"
        )
        print(row, flush=True)
    verdict = "met" if cpu(args.board, "stats") <= 60 else "NOT met"
    print(
        f"{args.board:,} policies x 72 keys: ember stats {cpu(args.board, 'stats'):.1f} CPU s (target 60 s: {verdict})"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=100, help="scenarios (strata), default 100")
    parser.add_argument("--seeds", type=int, default=100, help="seeds per scenario, default 100")
    parser.add_argument(
        "--replicates", type=int, nargs="+", default=[1_000, 10_000], help="values of B (default 1000 10000)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every measurement (default 2)")
    parser.add_argument(
        "--data-dir", type=Path, default=ROOT / "bench-data", help="where the results directory is cached"
    )
    parser.add_argument("--board", type=int, help="the board case: N policies x 72 keys (e.g. 1000); see the docstring")
    parser.add_argument(
        "--reference-policies",
        type=int,
        nargs="+",
        default=[50, 100],
        help="board sizes the baseline also runs on (default 50 100)",
    )
    parser.add_argument("--baseline", default=BASELINE, help=f"git revision of the baseline (default {BASELINE})")
    args = parser.parse_args()
    if args.board is not None:
        return board_main(args)
    results = ensure_results(args.data_dir, args.scenarios, args.seeds)
    size = (results / "episodes.jsonl").stat().st_size / 1e6
    episodes = args.scenarios * args.seeds
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {results.name}: {episodes:,} episodes x "
        f"{len(POLICIES)} policies, episodes.jsonl {size:,.0f} MB"
    )
    cli = has_stats_command()
    if not cli:
        print("(no 'ember stats' command in this checkout: stats runs as the same library call in its own process)")
    kinds = [("rank", None)] + [(f"stats B={b:,}", b) for b in args.replicates]
    measured = {kind: [] for kind, _ in kinds}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for kind, replicates in kinds:  # interleaved: each round measures every kind once
                output = os.path.join(scratch, f"out-{round_}.json")
                if replicates is None:
                    measured[kind].append(run(["rank", str(results), "-o", output]))
                elif cli:
                    measured[kind].append(run(["stats", str(results), "-o", output, "--replicates", str(replicates)]))
                else:
                    measured[kind].append(run([str(results), output, str(replicates)], library=True))
    header = f"{'command':<16} {'seconds (median)':>17} {'min-max':>15} {'x rank':>7} {'peak RSS MB':>12}"
    print(header)
    print("-" * len(header))
    rank_median = statistics.median(seconds for seconds, _, _ in measured["rank"])
    for kind, _ in kinds:
        times = [seconds for seconds, _, _ in measured[kind]]
        rss = max(peak for _, _, peak in measured[kind])
        median = statistics.median(times)
        print(
            f"{kind:<16} {median:17.2f} {min(times):7.2f}-{max(times):<7.2f} {median / rank_median:7.2f} {rss:12.1f}",
            flush=True,
        )
    low, high = min(args.replicates), max(args.replicates)
    if low != high:
        grown = (high - low) * len(POLICIES) * (args.scenarios + 5)
        peaks = {b: max(peak for _, _, peak in measured[f"stats B={b:,}"]) for b in (low, high)}
        print(
            f"B {low:,} -> {high:,}: peak RSS {peaks[high] - peaks[low]:+.1f} MB; "
            f"the replicate values statistics.md §8 keeps grow by {grown:,} values "
            f"({grown * 4 / 1e6:.1f} MB as int32, {grown * 8 / 1e6:.1f} MB as int64)"
        )


if __name__ == "__main__":
    main()
