"""A busy board (service.md §3, §5, §7): many teams closing at once, and how fast the derived files keep up.

  board      ``builtin:small-room`` with seeds 0-2; --teams teams (default 1,000), each one submission of its own
             genuine records (a greedy walk with some people held back at random per team, so every record is
             distinct and every team ranks), added with ``service team add --from``; 16 concurrent clients
             (create, 3 PUTs, close) against ``serve --workers 2`` (PostgreSQL with --postgres, else SQLite)
  v1         the same against an ember-v1 board (--v1-scenarios of its scenarios, --v1-seeds seeds) with
             --v1-policies policies (default 200)

Per board: upload throughput (records accepted per second over the whole load), p50/p99 of
``GET /api/boards/{board}`` and of ``GET /boards/{board}`` asked every 50 ms during the load, the lag from
the last close to a ranking.json (and a statistics.json) covering every policy, ``ember stats``'s CPU
time on the export (the batch statistics the deriver matches), ``service export``'s wall time, the page's
size and its render time in headless chromium (when present: to the load event), ``team add --from``'s
time per team, and the serve parent's peak RSS (sampled every 50 ms).

Records are generated once per (scenario, team, seed) and cached in ``bench-data/board/``.

Usage::

    python benchmarks/bench_board.py                              # 1,000 teams and the 200-policy ember-v1 board
    python benchmarks/bench_board.py --teams 200 --v1-policies 50 # quick
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import httpx

from serving import start_server

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(os.path.dirname(HERE), "bench-data", "board")
CLIENTS = 16
POLL_S = 0.05
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def ember(*args, env=None, timeout=3600):
    done = subprocess.run([sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ember {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}")
    return done


class HeldBack:
    """Greedy, but each person is held back (stays) at a step with a probability drawn per team: a policy of
    the team's own, genuine, whose records differ from team to team."""

    def __init__(self, scenario, seed, team, salt=0):
        from ember.sim.policies import make_policy

        self.greedy = make_policy("greedy", scenario, seed)
        self.random = random.Random(f"{team}/{seed}/{salt}")
        self.hold = 0.2 + 0.4 * random.Random(team).random()

    def __call__(self, observation):
        actions = self.greedy(observation)
        return {person: "stay" if self.random.random() < self.hold else action for person, action in actions.items()}


def make_records(name, scenarios, seeds, teams):
    """{(team index, scenario_id, seed): path} of distinct genuine records, cached."""
    from ember import Simulator
    from ember.record.writer import RecordWriter
    from ember.scenario import compile_scenario
    from ember.sim.loop import run_policy

    folder = os.path.join(CACHE, name)
    paths, seen = {}, set()
    for source in scenarios:
        scenario = compile_scenario(source).data
        scenario_id = scenario["scenario_id"]
        for team in range(teams):
            for seed in seeds:
                path = os.path.join(folder, scenario_id, f"{team}-{seed}.record")
                salt = 0
                while True:  # another stream until the record is no other team's (a copy is refused, §9)
                    if not os.path.exists(path):
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        simulator = Simulator(scenario, seed)
                        with open(path + ".tmp", "wb") as out:
                            run_policy(simulator, HeldBack(scenario, seed, team, salt), (RecordWriter(out),))
                        os.replace(path + ".tmp", path)
                    with open(path, "rb") as handle:
                        digest = hashlib.sha256(handle.read()).digest()
                    if digest not in seen:
                        break
                    os.unlink(path)
                    salt += 1
                seen.add(digest)
                paths[team, scenario_id, seed] = path
    return paths


def rss(pid):
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


class Sampler(threading.Thread):
    """The serve parent's peak RSS and the latencies of the board's GETs, every POLL_S until stopped."""

    def __init__(self, pid, url, board):
        super().__init__(daemon=True)
        self.pid, self.url, self.board = pid, url, board
        self.peak = 0
        self.api, self.page = [], []
        self.stop = threading.Event()
        self.polling = threading.Event()

    def run(self):
        with httpx.Client(timeout=60) as client:
            while not self.stop.is_set():
                self.peak = max(self.peak, rss(self.pid))
                if self.polling.is_set():
                    for path, into in ((f"/api/boards/{self.board}", self.api), (f"/boards/{self.board}", self.page)):
                        started = time.perf_counter()
                        if client.get(self.url + path).status_code == 200:
                            into.append(time.perf_counter() - started)
                time.sleep(POLL_S)


def percentile(values, share):
    values = sorted(values)
    return values[min(len(values) - 1, int(share * len(values)))] if values else float("nan")


def p50_p99(values):
    return f"{percentile(values, 0.5) * 1e3:.0f} / {percentile(values, 0.99) * 1e3:.0f}"


def submit_one(url, board, token, team, keys, paths):
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
        answer = client.post(f"/api/boards/{board}/submissions", json={"policy": "p"})
        if answer.status_code != 201:
            raise SystemExit(f"team {team}: new submission: {answer.status_code} {answer.text}")
        submission = answer.json()["id"]
        for scenario_id, seed in keys:
            with open(paths[team, scenario_id, seed], "rb") as handle:
                data = handle.read()
            for _ in range(600):
                answer = client.put(f"/api/submissions/{submission}/episodes/{scenario_id}/{seed}", content=data)
                if answer.status_code not in (429, 503):
                    break
                time.sleep(float(answer.headers.get("retry-after", "1")))
            if answer.status_code != 201:
                raise SystemExit(f"team {team}: PUT {scenario_id}/{seed}: {answer.status_code} {answer.text[:300]}")
        answer = client.post(f"/api/submissions/{submission}/close")
        if answer.status_code != 200:
            raise SystemExit(f"team {team}: close: {answer.status_code} {answer.text}")
    return time.perf_counter()


def page_render(url, board):
    """Seconds from navigation to the end of the load event of the board page in headless chromium (the
    browser's own navigation timing, in a second tab after a first one warmed it), or None without chromium."""
    from helpers.browser import CHROMIUM, DevTools, Tab

    if CHROMIUM is None:
        return None
    profile = tempfile.mkdtemp(prefix="bench-board-chromium-")
    try:
        tools = DevTools(CHROMIUM, profile)
        try:
            warm = Tab(tools)
            warm.open(f"{url}/boards/{board}")
            warm.close()
            tab = Tab(tools)
            tab.open(f"{url}/boards/{board}")
            elapsed = tab.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
            tab.close()
            return elapsed / 1e3
        finally:
            tools.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def run_board(options, label, board, campaign_lines, scenarios, seeds, teams, database):
    paths = make_records(label, scenarios, seeds, teams)
    keys = sorted({(scenario_id, seed) for _, scenario_id, seed in paths})
    folder = tempfile.mkdtemp(prefix=f"bench-board-{label}-")
    server = sampler = None
    try:
        campaign = os.path.join(folder, "board.toml")
        with open(campaign, "w") as handle:
            handle.write(campaign_lines)
        data = os.path.join(folder, "DATA")
        ember("service", "init", data, *(("--database", database) if database else ()))
        ember("service", "board", "add", data, board, "--campaign", campaign)
        names = os.path.join(folder, "teams.txt")
        with open(names, "w") as handle:
            handle.writelines(f"team{i}\n" for i in range(teams))
        started = time.perf_counter()
        ember("service", "team", "add", data, "--from", names, "-o", os.path.join(folder, "tokens"))
        team_add = (time.perf_counter() - started) / teams
        tokens = []
        for i in range(teams):
            with open(os.path.join(folder, "tokens", f"team{i}.token")) as handle:
                tokens.append(handle.read().strip())
        server, url = start_server(data, folder)
        sampler = Sampler(server.pid, url, board)
        sampler.start()
        sampler.polling.set()
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            ends = list(pool.map(lambda i: submit_one(url, board, tokens[i], i, keys, paths), range(teams)))
        last_close = max(ends)
        load = last_close - started
        sampler.polling.clear()
        version = httpx.get(f"{url}/api/boards/{board}", timeout=60).json()["version"]

        def covered(name):
            answer = httpx.get(f"{url}/api/boards/{board}/{name}", timeout=60)
            if answer.status_code != 200:
                return False
            found = json.loads(answer.content)
            return len(found.get("ranked", found.get("policies", ()))) == teams

        lags = {}
        deadline = time.perf_counter() + options.lag_limit
        while len(lags) < 2 and time.perf_counter() < deadline:
            for name in ("ranking.json", "statistics.json"):
                if name not in lags and covered(name):
                    lags[name] = time.perf_counter() - last_close
            time.sleep(0.2)
        page_version = None
        while time.perf_counter() < deadline:
            answer = httpx.get(f"{url}/boards/{board}", timeout=60)
            page_version = int(answer.headers.get("ember-board-version", "0"))
            if page_version >= version:
                break
            time.sleep(0.2)
        page_lag = time.perf_counter() - last_close
        page = httpx.get(f"{url}/boards/{board}", timeout=60).content
        render = page_render(url, board) if not options.no_browser else None
        export = os.path.join(folder, "export")
        started = time.perf_counter()
        ember("service", "export", data, board, "-o", export)
        export_s = time.perf_counter() - started
        stats = subprocess.run(
            [sys.executable, "-c", "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
             "stdout=subprocess.DEVNULL); r = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print(r.ru_utime + r.ru_stime)", sys.executable, "-m", "ember.cli", "stats", export],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        sampler.stop.set()
        sampler.join()
        records = teams * len(keys)
        return {
            "board": f"{label}: {teams} teams x {len(keys)} keys",
            "uploads/s": f"{records / load:.1f} ({records} in {load:.0f} s)",
            "GET api p50/p99 ms": p50_p99(sampler.api),
            "GET page p50/p99 ms": p50_p99(sampler.page),
            "lag ranking / stats / page s": " / ".join(
                f"{lags[name]:.1f}" if name in lags else f"> {options.lag_limit:.0f}"
                for name in ("ranking.json", "statistics.json")
            )
            + (f" / {page_lag:.1f}" if page_version is not None and page_version >= version else " / not caught up"),
            "ember stats CPU s": f"{float(stats.stdout.strip()):.1f}",
            "export s": f"{export_s:.1f}",
            "page KB / render s": f"{len(page) / 1e3:.0f} / " + ("-" if render is None else f"{render:.2f}"),
            "team add ms/team": f"{team_add * 1e3:.1f}",
            "serve parent peak MB": f"{sampler.peak / 1e6:.0f}",
        }
    finally:
        if sampler is not None:
            sampler.stop.set()
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(timeout=60)
        if not options.keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"kept {folder}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=1000, help="teams on the small-room board (0: skip it)")
    parser.add_argument("--v1-policies", type=int, default=200, help="policies on the ember-v1 board (0: skip it)")
    parser.add_argument("--v1-scenarios", default="small", help="which ember-v1 scenarios: small, medium or all")
    parser.add_argument("--v1-seeds", type=int, default=1, help="seeds per ember-v1 scenario")
    parser.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL cluster, not SQLite")
    parser.add_argument("--lag-limit", type=float, default=300, help="how long to wait for the derived files")
    parser.add_argument("--no-browser", action="store_true", help="skip the page render time")
    parser.add_argument("--keep", action="store_true", help="keep the service directories")
    options = parser.parse_args()
    cluster = None
    database = None
    if options.postgres:
        from helpers.service import PostgresCluster

        cluster = PostgresCluster()
        database = cluster.database()
    rows = []
    try:
        if options.teams:
            text = 'campaign = "room"\nseeds = [0, 1, 2]\nscenarios = ["builtin:small-room"]\n'
            room = ["builtin:small-room"]
            rows.append(run_board(options, "small-room", "room", text, room, [0, 1, 2], options.teams, database))
        if options.v1_policies:
            from importlib.resources import files

            names = sorted(p.name[:-5] for p in files("ember.scenarios").joinpath("ember-v1").iterdir())
            if options.v1_scenarios != "all":
                names = [n for n in names if n.startswith(options.v1_scenarios + "-")]
            sources = [f"builtin:ember-v1/{n}" for n in names]
            seeds = list(range(options.v1_seeds))
            text = f'campaign = "v1"\nseeds = {seeds}\nscenarios = {json.dumps(sources)}\n'
            if cluster is not None:
                database = cluster.database()
            rows.append(run_board(options, "ember-v1", "v1", text, sources, seeds, options.v1_policies, database))
    finally:
        if cluster is not None:
            cluster.close()
    from tabulate import tabulate

    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, {'PostgreSQL' if cluster else 'SQLite'}")
    print(tabulate([[key, *(row[key] for row in rows)] for key in rows[0]], tablefmt="github"))


if __name__ == "__main__":
    main()
