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
