"""The hosted service's costs (service.md §3): a table of ratios measured in one run, never a timed test.

  verify     one upload's wall time (PUT, verified while it streams) against ``ember verify``'s work on the same
             record (``verify_results`` in this process, after the command itself accepted the directory: a
             results directory laid out as the export, holding that one row); the least of --rounds of each:
             target <= 1.1x; beside it the CPU of the process that verified it (its fork server's reaped
             children's) against ``verify_results``' CPU in this process, the comparison a loaded machine keeps
  8 uploads  8 concurrent uploads (8 teams, one each) to ``serve --workers 2``: throughput against one upload
             (8 x one upload's time / the 8 uploads' wall time): target >= 1.7x on 2 cores
  ceiling    the same 8 verifications at once in 8 forked processes of ``verify_results`` alone: the throughput
             the machine itself gives them (no target), and the 8 uploads' as a part of it
  p99 GET    p99 latency of ``GET /api/boards/{board}`` asked every 20 ms during the 8 uploads: target < 100 ms
  1 GB       peak RSS of the server's processes while one record of >= 1 GiB decompressed streams in (gzip), over
             their RSS before (the process verifying it: over the peak of the one that verified a small record of
             the same scenario): bounded by grid and population, not by the record's length

The records are a stay policy on a scenario where nothing can happen (the
fire cannot spread, nobody moves) until ``max_steps``: every step is the
same line but for its number, so a record of any length is written by
template in seconds, and the engine still replays every step of it.  Each team's record is EMBER's canonical
bytes (another layout takes the engine's general front end, about twice the work), differing in one blocked
first move.

Usage::

    python benchmarks/bench_service.py                 # 20,000-step records, 2 rounds of the first row, 1 GiB
    python benchmarks/bench_service.py --steps 5000 --big-gib 0.25
"""

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx

from serving import start_server

TEAMS = 8
PEOPLE = 20
BOARD = "bench"


def ember(*args, env=None):
    done = subprocess.run([sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ember {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def scenario(scenario_id, steps):
    people = [{"person_id": f"p{i}", "position": [1 + i // 10, 1 + i % 10]} for i in range(PEOPLE)]
    return {
        "schema_version": "1.0", "scenario_id": scenario_id, "grid": {"rows": 8, "cols": 14}, "walls": [],
        "exits": [{"exit_id": "door", "position": [7, 13]}], "people": people,
        "fire": {"ignitions": [[0, 13]], "spread_probability": "0/1", "enter_fire": "casualty"},
        "termination": {"max_steps": steps},
    }  # fmt: skip


class Template:
    """A record of the do-nothing episode, for any number of steps, from real 3-step ones.

    Variant 0 is the stay policy's; variant ``v`` > 0 differs at its first step only: person ``p{v-1}``
    tries south into ``p{v+9}``, who stays (``blocked_occupied``), and nothing changes.  Every variant is
    EMBER's own canonical bytes (``run_episode``), so every upload takes the same canonical-line path.
    """

    def __init__(self, folder):
        self.folder = folder
        path = os.path.join(folder, "template.json")
        with open(path, "w") as handle:
            json.dump(scenario("template", 3), handle)
        record = os.path.join(folder, "template.record")
        ember("run", path, "--policy", "stay", "-o", record)
        with open(record, "rb") as handle:
            self.lines = handle.read().split(b"\n")
        self.old_hash = json.loads(self.lines[0].rstrip(b",").split(b":", 1)[1])["scenario_hash"].encode()
        self.first_steps = {0: self.lines[3]}

    def first_step(self, variant):
        """Step 1's line of ``variant`` (see the class)."""
        if variant not in self.first_steps:
            if not 0 < variant <= 10:
                raise SystemExit(f"no template variant {variant}: 0 to 10")
            from ember import run_episode

            mover = f"p{variant - 1}"

            def policy(observation):
                moves = {person["person_id"]: "stay" for person in observation["people"]}  # the active ones
                if observation["step"] == 1:
                    moves[mover] = "south"
                return moves

            record = os.path.join(self.folder, f"template-{variant}.record")
            run_episode(scenario("template", 3), policy, 0, record)
            with open(record, "rb") as handle:
                lines = handle.read().split(b"\n")
            if b"blocked_occupied" not in lines[3] or lines[4:] != self.lines[4:]:
                raise SystemExit(f"template variant {variant} changed more than its first step")
            self.first_steps[variant] = lines[3]
        return self.first_steps[variant]

    def write(self, path, value, gzipped, variant=0):
        """Write ``value``'s record (a scenario dict) to ``path``; returns its decompressed length.  Records of
        another ``variant`` differ in their first step (``first_step``: the same work, canonical bytes): each
        team uploads its own bytes, since another team's record is a copy (service.md §6)."""
        from ember import scenario_hash

        steps = value["termination"]["max_steps"]
        lines = self.lines
        name = f'"{value["scenario_id"]}"'.encode()
        header = lines[0].replace(self.old_hash, scenario_hash(value).encode()).replace(b'"template"', name)
        middle, last = lines[4], lines[5]  # steps 2 and 3 of 3
        total = 0
        opener = gzip.open(path, "wb", compresslevel=6) if gzipped else open(path, "wb")  # noqa: SIM115
        with opener as out:

            def put(data):
                nonlocal total
                out.write(data + b"\n")
                total += len(data) + 1

            put(header)
            put(lines[1])
            put(lines[2])
            block = [self.first_step(variant)]
            for step in range(2, steps):
                block.append(middle.replace(b'"step":2', b'"step":%d' % step))
                if len(block) == 4096:
                    put(b"\n".join(block))
                    block = []
            if block:
                put(b"\n".join(block))
            put(last.replace(b'"step":3', b'"step":%d' % steps))
            tail = lines[6:]
            while tail and tail[-1] == b"":
                tail = tail[:-1]
            for line in tail:
                put(line.replace(b'"step":3', b'"step":%d' % steps))  # final_state names the last step too
        return total


def session_pids(leader):
    """The pids of every process in ``leader``'s session (the serve parent and its workers) still there."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getsid(int(entry)) == leader:
                yield int(entry)
        except (OSError, ProcessLookupError):
            continue


def session_rss(leader):
    """{pid: RSS bytes} of every process in ``leader``'s session."""
    found = {}
    for pid in session_pids(leader):
        try:
            with open(f"/proc/{pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        found[pid] = int(line.split()[1]) * 1024
        except OSError:
            continue
    return found


def verifying_cpu(leader):
    """The CPU seconds (user + system) of the verifying processes of ``leader``'s session that ended: their fork
    servers' reaped children's (``cutime + cstime``), however loaded the machine; ticks of 10 ms."""
    total = 0
    for pid in session_pids(leader):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"multiprocessing.forkserver" not in handle.read():
                    continue
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += int(fields[13]) + int(fields[14])
        except (OSError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def verified_cpu(leader, before, uploads=1):
    """The CPU of the ``uploads`` verifying processes that ended since ``before`` (``verifying_cpu``), waited
    for: the answer does not wait for a verifying process's exit, nor its fork server's reaping of it."""
    deadline, last, seen = time.monotonic() + 5, None, 0
    while time.monotonic() < deadline:
        now = verifying_cpu(leader)
        seen = seen + 1 if now == last else 0
        if now > before and seen >= 4:  # unchanged for 0.2 s: every one reaped
            return now - before
        last = now
        time.sleep(0.05)
    return verifying_cpu(leader) - before


class RssWatch(threading.Thread):
    def __init__(self, leader):
        super().__init__(daemon=True)
        self.leader = leader
        self.peak = {}
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for pid, rss in session_rss(self.leader).items():
                self.peak[pid] = max(self.peak.get(pid, 0), rss)
            time.sleep(0.05)


def new_client(token):
    """An upload's client (an ``httpx.Client`` is 30-80 ms of this process's time, its TLS context: made once a
    session, as ``ember submit`` makes it, and no part of the service's work).  It holds no connection until
    its first request."""
    return httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=3600)


def put_file(url, token, submission, scenario_id, path, client=None):
    """The upload's wall time: from the request's first byte to its answer, on a new connection.  The client is
    made before the clock (``new_client``; ``client``: one made beforehand, for the concurrent uploads, whose
    clocks run meanwhile; a retry after a 503 makes its own)."""
    with open(path, "rb") as handle:
        data = handle.read()
    while True:
        with client or new_client(token) as client:
            started = time.perf_counter()
            answer = client.put(f"{url}/api/submissions/{submission}/episodes/{scenario_id}/0", content=data)
            elapsed = time.perf_counter() - started
        client = None  # closed: a retry makes its own
        if answer.status_code != 503 or "retry-after" not in answer.headers:
            break
        time.sleep(float(answer.headers["retry-after"]))  # busy, as service.md says a client then does
    if answer.status_code != 201:
        raise SystemExit(f"upload of {path}: {answer.status_code} {answer.text[:300]}")
    return elapsed


def streamed(path):
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            yield block


def _verify_in_child(export, start):
    from ember.results.verify import verify_results

    start.wait()
    verify_results(export)


def concurrent_verifies(export, count):
    """The wall time of ``count`` ``verify_results(export)`` at once, each in a forked process of its own
    (released together once all are started): what the machine gives the same work with nothing around it."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    start = context.Event()
    children = [context.Process(target=_verify_in_child, args=(export, start)) for _ in range(count)]
    for child in children:
        child.start()
    started = time.perf_counter()
    start.set()
    for child in children:
        child.join()
    if any(child.exitcode for child in children):
        raise SystemExit("a concurrent verify_results failed")
    return time.perf_counter() - started


def new_submission(url, token, policy):
    answer = httpx.post(f"{url}/api/boards/{BOARD}/submissions", json={"policy": policy},
                        headers={"Authorization": f"Bearer {token}"}, timeout=60)  # fmt: skip
    if answer.status_code != 201:
        raise SystemExit(f"new submission: {answer.status_code} {answer.text}")
    return answer.json()["id"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20000, help="steps of the speed rows' record")
    parser.add_argument("--big-gib", type=float, default=1.0, help="decompressed size of the RSS row's record")
    parser.add_argument("--rounds", type=int, default=2, help="upload, verify rounds of the first row (the least each)")
    options = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-service-")
    server = None
    try:
        template = Template(folder)
        step_bytes = len(template.lines[4]) + 1
        small = scenario("small-run", options.steps)
        big = scenario("long-run", max(2, int(options.big_gib * (1 << 30) / step_bytes) + 1))
        paths = {}
        for value in (small, big):
            path = os.path.join(folder, f"{value['scenario_id']}.json")
            with open(path, "w") as handle:
                json.dump(value, handle)
            paths[value["scenario_id"]] = path
        small_records = [os.path.join(folder, f"small-{i}.record.gz") for i in range(TEAMS)]
        small_plain = [template.write(path, small, True, i) for i, path in enumerate(small_records)][0]
        small_record = small_records[0]
        big_record = os.path.join(folder, "big.record.gz")
        big_plain = template.write(big_record, big, True)
        campaign = os.path.join(folder, "board.toml")
        with open(campaign, "w") as handle:
            handle.write(
                f'campaign = "{BOARD}"\nseeds = [0]\nscenarios = ["{paths["small-run"]}", "{paths["long-run"]}"]\n'
            )
        data = os.path.join(folder, "DATA")
        ember("service", "init", data)
        config = os.path.join(data, "service.toml")
        with open(config) as handle:
            text = handle.read()
        # Every one of the 8 uploads may verify at once: the 2 workers share the 2 cores.
        text = text.replace("max_verifications = 0", f"max_verifications = {TEAMS}")
        with open(config, "w") as handle:
            handle.write(text)
        ember("service", "board", "add", data, BOARD, "--campaign", campaign)
        tokens = [ember("service", "team", "add", data, f"team{i}").strip() for i in range(TEAMS)]
        server, url = start_server(data, folder)

        # One upload, then ember verify of the same record (the export of that closed submission).
        first = new_submission(url, tokens[0], "one")
        cpu_before = verifying_cpu(server.pid)
        uploads = [put_file(url, tokens[0], first, "small-run", small_record)]
        upload_cpu = [verified_cpu(server.pid, cpu_before)]
        big_submission = new_submission(url, tokens[1], "big")
        export = os.path.join(folder, "export")
        # The one-row export: close needs every key, so the board's second key gets the big record later;
        # verify is timed on a results directory holding just this record (the export's layout, one row).
        row = httpx.get(f"{url}/api/submissions/{first}", headers={"Authorization": f"Bearer {tokens[0]}"},
                        timeout=60).json()["rows"][0]  # fmt: skip
        os.makedirs(os.path.join(export, "records", "team0.one", "small-run"))
        os.makedirs(os.path.join(export, "scenarios"))
        shutil.copyfile(small_record, os.path.join(export, *row["record"].split("/")))
        from ember.canonical import canonical_json_reference
        from ember.scenario import scenario_hash
        from ember.versions import package_version

        versions = httpx.get(f"{url}/api/boards/{BOARD}", timeout=60).json()["versions"]
        with open(os.path.join(export, "scenarios", "small-run.json"), "wb") as handle:
            handle.write(canonical_json_reference(small) + b"\n")
        campaign_json = {
            "campaign": BOARD,
            "versions": {**{k: versions[k] for k in ("simulator", "observation", "metrics", "ranking")},
                         "package": package_version()},
            "scenarios": [{"scenario_id": "small-run", "scenario_hash": scenario_hash(small),
                           "source": "scenarios/small-run.json", "seeds": [0]}],
            "policies": [{"name": "team0.one", "records": "records/team0.one"}],
        }  # fmt: skip
        with open(os.path.join(export, "campaign.json"), "wb") as handle:
            handle.write(canonical_json_reference(campaign_json) + b"\n")
        with open(os.path.join(export, "episodes.jsonl"), "wb") as handle:
            handle.write(canonical_json_reference(row) + b"\n")
        ember("verify", export)  # the command accepts it; then its work, timed without the interpreter's start-up
        from ember.results.verify import verify_results

        verifies, verify_cpu = [], []
        for round_ in range(options.rounds):
            if round_:  # another team's first upload of the same record: verified again, not a re-upload
                again = new_submission(url, tokens[round_ % TEAMS], f"one-{round_}")
                cpu_before = verifying_cpu(server.pid)
                uploads.append(put_file(url, tokens[round_ % TEAMS], again, "small-run", small_records[round_ % TEAMS]))
                upload_cpu.append(verified_cpu(server.pid, cpu_before))
            started, cpu_started = time.perf_counter(), time.process_time()
            verify_results(export)
            verifies.append(time.perf_counter() - started)
            verify_cpu.append(time.process_time() - cpu_started)
        # The least disturbed of each (the machine is shared): the same rule for both.
        one, verify = min(uploads), min(verifies)
        one_cpu, verify_cpu = min(upload_cpu), min(verify_cpu)

        # The machine's own ceiling: the same 8 verifications at once, in 8 processes of nothing but
        # ``verify_results`` (no server, no client, no transfer).
        ceiling = concurrent_verifies(export, TEAMS)

        # 8 concurrent uploads, one per team, with the board's JSON asked every 20 ms meanwhile.
        submissions = [new_submission(url, tokens[i], "eight") for i in range(TEAMS)]
        latencies = []
        done = threading.Event()

        def poll():
            with httpx.Client(timeout=30) as client:
                while not done.is_set():
                    started = time.perf_counter()
                    assert client.get(f"{url}/api/boards/{BOARD}").status_code == 200
                    latencies.append(time.perf_counter() - started)
                    time.sleep(0.02)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        times = [None] * TEAMS

        failures = []

        def upload(i):
            try:
                times[i] = put_file(url, tokens[i], submissions[i], "small-run", small_records[i], clients[i])
            except SystemExit as failure:  # a thread's SystemExit is silent: kept to be said below
                failures.append(str(failure))

        threads = [threading.Thread(target=upload, args=(i,)) for i in range(TEAMS)]
        clients = [new_client(tokens[i]) for i in range(TEAMS)]  # made before the clock starts
        cpu_before = verifying_cpu(server.pid)
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        eight = time.perf_counter() - started
        eight_cpu = verified_cpu(server.pid, cpu_before, TEAMS)
        done.set()
        poller.join()
        if None in times:
            raise SystemExit(f"an upload of the 8 failed: {failures[0] if failures else 'no answer'}")
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]

        # The 1 GiB record, streamed in; RSS of the server's processes sampled meanwhile.  Each upload is
        # verified in a process of its own, started for it: its growth is counted from the peak of the one
        # that verified a small record (the same grid and population) just before.
        before = session_rss(server.pid)
        watch = RssWatch(server.pid)
        watch.start()
        put_file(url, tokens[2], new_submission(url, tokens[2], "small-rss"), "small-run", small_records[2])
        watch.stop.set()
        watch.join()
        small_peak = max((peak for pid, peak in watch.peak.items() if pid not in before), default=0)
        before = session_rss(server.pid)
        watch = RssWatch(server.pid)
        watch.start()
        started = time.perf_counter()
        answer = httpx.put(f"{url}/api/submissions/{big_submission}/episodes/long-run/0", content=streamed(big_record),
                           headers={"Authorization": f"Bearer {tokens[1]}"}, timeout=3600)  # fmt: skip
        put_file_big = time.perf_counter() - started
        watch.stop.set()
        watch.join()
        if answer.status_code != 201:
            raise SystemExit(f"the big upload: {answer.status_code} {answer.text[:300]}")
        grown = {pid: watch.peak[pid] - before.get(pid, small_peak) for pid in watch.peak}
        busiest = max(grown, key=grown.get)
        started_for_it = busiest not in before

        print(f"records: {options.steps:,} steps ({small_plain / 1e6:,.1f} MB decompressed, "
              f"{os.path.getsize(small_record) / 1e6:,.2f} MB gzip); big: {big['termination']['max_steps']:,} steps "
              f"({big_plain / (1 << 30):,.2f} GiB decompressed, {os.path.getsize(big_record) / 1e6:,.1f} MB gzip); "
              f"{PEOPLE} people on 8x14; cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")  # fmt: skip
        rows = [
            ("one upload vs ember verify", f"{one:.2f} s vs {verify:.2f} s (least of {options.rounds})",
             f"{one / verify:.2f}x", "<= 1.1x",
             one / verify <= 1.1),
            ("its verifying process's CPU vs ember verify's", f"{one_cpu:.2f} s vs {verify_cpu:.2f} s (least of "
             f"{options.rounds}; 8 concurrent: {eight_cpu / TEAMS:.2f} s each)", f"{one_cpu / verify_cpu:.2f}x",
             "<= 1.1x", one_cpu / verify_cpu <= 1.1),
            ("8 concurrent uploads, --workers 2", f"{eight:.2f} s (one: {one:.2f} s; each {min(times):.2f}-"
             f"{max(times):.2f} s)", f"{TEAMS * one / eight:.2f}x throughput", ">= 1.7x", TEAMS * one / eight >= 1.7),
            ("the machine's ceiling: 8 verify_results at once", f"{ceiling:.2f} s in 8 processes (one: "
             f"{verify:.2f} s); the 8 uploads reach {ceiling / eight:.2f}x of it", f"{TEAMS * verify / ceiling:.2f}x "
             "throughput", "none: the ceiling", None),
            ("p99 GET /api/boards/{board} during them", f"{len(latencies)} requests, median "
             f"{statistics.median(latencies) * 1e3:.1f} ms", f"{p99 * 1e3:.1f} ms", "< 100 ms", p99 < 0.1),
            (f"peak RSS receiving {big_plain / (1 << 30):.2f} GiB", f"{put_file_big:.0f} s; process {busiest}: "
             + (f"verifying, {small_peak / 1e6:.0f} MB on the small record" if started_for_it
                else f"{before.get(busiest, 0) / 1e6:.0f} MB before"), f"+{grown[busiest] / 1e6:.1f} MB",
             "bounded (not ~ length)", grown[busiest] < 0.05 * big_plain),
        ]  # fmt: skip
        from tabulate import tabulate

        table = [(*row[:4], "–" if row[4] is None else "yes" if row[4] else "NO") for row in rows]
        print(tabulate(table, headers=("case", "measured", "figure", "target", "met"), tablefmt="github"))
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
