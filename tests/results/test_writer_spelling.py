"""The spelling of what the writer writes (results/writer.py, results/rows.py): json.dumps's (campaign.md §4)."""

import json
import shutil
import sys

from helpers.campaigns import EXAMPLE_AGENT, ember_cli, write_campaign


def test_float_spelling_in_campaign_json_and_rows_is_json_dumps(tmp_path):
    """Regression: orjson writes 0.00005 where campaign.md §4 (json.dumps) requires 5e-05."""
    (tmp_path / "c").mkdir()
    shutil.copy(EXAMPLE_AGENT, tmp_path / "c" / "greedy_agent.py")  # the agent's file is in its campaign folder
    path = write_campaign(
        tmp_path / "c",
        f"""
campaign = "floats"
seeds = [0]
scenarios = ["builtin:small-room"]
[[policies]]
name = "greedy"
builtin = "greedy"
[[policies]]
name = "hasty"
agent = "{sys.executable} greedy_agent.py"
step_timeout = 5e-05
""",
    )
    done = ember_cli("evaluate", path, "-o", tmp_path / "res", "--workers", "1")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "res" / "campaign.json").read_bytes()
    assert b'"step_timeout":5e-05' in text
    lines = [text[:-1], *(tmp_path / "res" / "episodes.jsonl").read_bytes().splitlines()]
    assert len(lines) == 3
    for line in lines:
        reference = json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert line == reference
