"""The end-of-run summary of ``evaluate`` is counted from what is on disk (isolation.md §3).

A python policy replaces episodes.jsonl while the campaign runs (a racing
rewrite: the command's later rows go to a file nobody reads any more).
The summary, the exit status and ranking.json then say what the file
holds, never what the command remembers writing.
"""

import hashlib
import json

from helpers.campaigns import ember_cli, hook_env, read_rows, write_campaign

CAMPAIGN = """
campaign = "rewritten"
seeds = [0, 1, 2]
scenarios = ["tiny.json"]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "py"
python = "campaign_hooks:rewrites_rows"
"""


def test_the_summary_counts_the_rows_on_disk(tmp_path):
    path = write_campaign(tmp_path / "c", CAMPAIGN, hooks=True)
    results = tmp_path / "res"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "results").write_text(str(results))
    done = ember_cli("evaluate", path, "-o", results, "--workers", "1", env=hook_env(hooks), timeout=300)
    rows = read_rows(results)
    ok = sum(row["status"] == "ok" for row in rows)
    failed = len(rows) - ok
    assert (hooks / "rewrote").exists()
    assert len(rows) < 6  # the rewrite dropped rows the command wrote
    missing = 6 - ok - failed
    shown = f", {missing} without a row" if missing else ""
    summary = f"ember: 6 episodes: {ok} ok, {failed} failed{shown} (this run: 6 ok, 0 failed of 6)."
    assert summary in done.stderr.decode().splitlines(), done.stderr
    assert done.returncode == (0 if missing == 0 else 1)
    ranking = json.loads((results / "ranking.json").read_bytes())
    assert ranking["source"]["sha256"] == hashlib.sha256((results / "episodes.jsonl").read_bytes()).hexdigest()


FAILING = """
campaign = "failing"
seeds = [0, 1]
scenarios = ["tiny.json"]

[[policies]]
name = "greedy"
builtin = "greedy"

[[policies]]
name = "crash"
agent = "python3 crash.py"

[[policies]]
name = "team-x"
records = "subs"
"""
CRASH = "import sys\nprint('boom: the weights are missing', file=sys.stderr)\nsys.exit(3)\n"


def test_the_summary_says_why_rows_failed(tmp_path):
    """campaign.md 1.1: per policy with failed rows, the count, the first reason and the logs/ path; exit 0."""
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "crash.py").write_text(CRASH)
    (folder / "subs").mkdir()
    path = write_campaign(folder, FAILING)
    results = tmp_path / "res"
    done = ember_cli("evaluate", path, "-o", results, "--workers", "1", "--sandbox", "off")
    assert done.returncode == 0, done.stderr
    rows = read_rows(results)
    first = {}
    for row in rows:  # the file order: the first failed row of each policy
        if row["status"] == "failed":
            first.setdefault(row["policy"], row)
    assert sorted(first) == ["crash", "team-x"]
    crash, team = first["crash"], first["team-x"]
    log = results / "logs" / "crash" / crash["scenario_id"] / f"{crash['seed']}.stderr"
    assert b"boom: the weights are missing" in log.read_bytes()
    lines = done.stderr.decode().splitlines()
    assert f"ember: policy crash: 2 failed; the first: {crash['error']} (details in {log})" in lines, lines
    assert f"ember: policy team-x: 2 failed; the first: {team['error']}" in lines, lines
    assert not any(line.startswith("ember: policy greedy:") for line in lines)
    summary = lines.index("ember: 6 episodes: 2 ok, 4 failed (this run: 2 ok, 4 failed of 6).")
    assert lines[summary + 1].startswith("ember: policy crash: ") and lines[summary + 2].startswith(
        "ember: policy team-x"
    )
