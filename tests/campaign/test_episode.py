"""One episode of a campaign (ember.campaign.episode): the four sources (builtin, agent, python, records)."""

import gzip
import hashlib
import json
import shutil

import ember
from ember.record.writer import run_episode

from helpers.campaigns import (
    EXAMPLE_AGENT,
    SMALL,
    builtin_metrics,
    by_key,
    ember_cli,
    expected_code,
    read_rows,
    write_campaign,
)
from helpers.ranking_results import assert_same

# -- the four sources --------------------------------------------------------------

AGENT_SCRIPT = """
import runpy, sys
print("agent says hello", file=sys.stderr, flush=True)
runpy.run_path("greedy_agent.py", run_name="__main__")
"""


def test_python_agent_and_records_sources(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    shutil.copy(EXAMPLE_AGENT, folder / "greedy_agent.py")
    (folder / "agent.py").write_text(AGENT_SCRIPT)
    (folder / "crash.py").write_text("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    sub = folder / "subs" / "small-room"
    sub.mkdir(parents=True)
    small = ember.load_scenario(SMALL)
    run_episode(small, "greedy", 0, str(sub / "0.record"))
    run_episode(small, "greedy", 1, str(sub / "2.record"))  # seed 1 placed as seed 2
    run_episode(small, "greedy", 3, str(sub / "3.record"))
    (sub / "3.record.gz").write_bytes(gzip.compress((sub / "3.record").read_bytes()))  # two files for seed 3
    (sub / "notes.txt").write_text("ignored")
    run_episode(small, "greedy", 4, str(sub / "4.record.gz"))
    run_episode(small, "greedy", 5, str(sub / "5.record.zst"))
    path = write_campaign(
        folder,
        """
campaign = "sources"
seeds = [0, 1, 2, 3, 4, 5]
scenarios = ["builtin:small-room"]

[[policies]]
name = "py"
python = "campaign_hooks:greedy"

[[policies]]
name = "agent"
agent = "python3 agent.py"
files = ["agent.py", "greedy_agent.py"]
step_timeout = 30

[[policies]]
name = "subs"
records = "subs"

[[policies]]
name = "crash"
agent = "python3 crash.py"

[[policies]]
name = "raises"
python = "campaign_hooks:raises"

[[policies]]
name = "illegal"
python = "campaign_hooks:illegal"
""",
        hooks=True,
    )
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2")
    assert done.returncode == 0, done.stderr
    assert b"boom" not in done.stderr and b"hello" not in done.stderr  # agent stderr goes to logs only
    campaign = json.loads((results / "campaign.json").read_bytes())
    assert campaign["policies"][1] == {
        "name": "agent",
        "agent": "python3 agent.py",
        "files": ["agent.py", "greedy_agent.py"],
        "step_timeout": 30.0,
        "code": expected_code(path.parent, "agent.py", "greedy_agent.py"),
    }
    assert campaign["policies"][3] == {
        "name": "crash",
        "agent": "python3 crash.py",
        "step_timeout": 10.0,
        "code": expected_code(path.parent, "crash.py"),
    }
    rows = by_key(read_rows(results))
    assert len(rows) == 36
    h = ember.scenario_hash(small)
    for seed in range(6):
        metrics, _ = builtin_metrics(SMALL, "greedy", seed, tmp_path)
        for policy in ("py", "agent"):
            row = rows[(policy, h, seed)]
            assert row["status"] == "ok", row["error"]
            assert_same(row["metrics"], metrics)
            assert row["record"] is None and row["record_sha256"] is None
        log = results / "logs" / "agent" / "small-room" / f"{seed}.stderr"
        assert log.read_text() == "agent says hello\n"
        assert (results / "logs" / "crash" / "small-room" / f"{seed}.stderr").read_text() == "boom\n"
        crash = rows[("crash", h, seed)]
        assert crash["status"] == "failed" and crash["metrics"] is None and crash["steps"] is None
        assert "exited with status 3" in crash["error"]
        assert "ZeroDivisionError: the policy divides by zero" in rows[("raises", h, seed)]["error"]
        assert "illegal actions" in rows[("illegal", h, seed)]["error"]
    sub0 = rows[("subs", h, 0)]
    assert sub0["status"] == "ok" and sub0["record"] == "subs/small-room/0.record"
    assert sub0["record_sha256"] == hashlib.sha256((sub / "0.record").read_bytes()).hexdigest()
    assert_same(sub0["metrics"], builtin_metrics(SMALL, "greedy", 0, tmp_path)[0])
    assert (
        rows[("subs", h, 1)]["error"] == "no submitted record subs/small-room/1.record (nor .record.gz, .record.zst)."
    )
    assert "header names seed 1, its place seed 2" in rows[("subs", h, 2)]["error"]
    assert "two files for one episode" in rows[("subs", h, 3)]["error"]
    for seed, name in ((4, "4.record.gz"), (5, "5.record.zst")):  # compressed: the hash is of the record itself
        row = rows[("subs", h, seed)]
        metrics, plain = builtin_metrics(SMALL, "greedy", seed, tmp_path)
        assert row["status"] == "ok" and row["record"] == f"subs/small-room/{name}"
        assert row["record_sha256"] == hashlib.sha256(plain).hexdigest()
        assert_same(row["metrics"], metrics)
    for row in rows.values():
        assert (row["error"] is None) == (row["status"] == "ok")
        assert "\n" not in (row["error"] or "")


def test_python_policy_step_timeout(tmp_path):
    path = write_campaign(
        tmp_path / "c",
        """
campaign = "slow"
seeds = [0]
scenarios = ["builtin:small-room"]
[[policies]]
name = "slow"
python = "campaign_hooks:slow"
step_timeout = 0.2
""",
        hooks=True,
    )
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1")
    assert done.returncode == 0, done.stderr
    [row] = read_rows(tmp_path / "res")
    assert row["status"] == "failed"
    # The place that set the bound is named, so its author knows what to change: policies[i].step_timeout.
    assert row["error"] == "step 1: the python policy did not answer within 0.2 s (policies[0].step_timeout)."


def test_kept_records_exist_for_ok_rows_only(tmp_path):
    """--keep-records: an agent's or python policy's record is kept, hashed as written, for an ok row;
    a failed attempt leaves no file (and no temporary) behind."""
    folder = tmp_path / "c"
    folder.mkdir()
    shutil.copy(EXAMPLE_AGENT, folder / "greedy_agent.py")
    (folder / "crash.py").write_text("import sys\nsys.exit(3)\n")
    path = write_campaign(
        folder,
        """
campaign = "kept"
seeds = [0, 1]
scenarios = ["builtin:small-room"]

[[policies]]
name = "agent"
agent = "python3 greedy_agent.py"
step_timeout = 30

[[policies]]
name = "py"
python = "campaign_hooks:greedy"

[[policies]]
name = "raises"
python = "campaign_hooks:raises"

[[policies]]
name = "crash"
agent = "python3 crash.py"
""",
        hooks=True,
    )
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "2", "--keep-records")
    assert done.returncode == 0, done.stderr
    rows = by_key(read_rows(results))
    h = ember.scenario_hash(ember.load_scenario(SMALL))
    for seed in (0, 1):
        _, plain = builtin_metrics(SMALL, "greedy", seed, tmp_path)
        for policy in ("agent", "py"):
            row = rows[(policy, h, seed)]
            assert row["status"] == "ok", row["error"]
            assert row["record"] == f"records/{policy}/small-room/{seed}.record.gz"
            assert gzip.decompress((results / row["record"]).read_bytes()) == plain
            assert row["record_sha256"] == hashlib.sha256(plain).hexdigest()
        for policy in ("raises", "crash"):
            row = rows[(policy, h, seed)]
            assert row["status"] == "failed" and row["record"] is None and row["record_sha256"] is None
    kept = sorted(
        p.relative_to(results / "records").as_posix() for p in (results / "records").rglob("*") if p.is_file()
    )
    assert kept == [f"{policy}/small-room/{seed}.record.gz" for policy in ("agent", "py") for seed in (0, 1)]
