"""``ember export`` (ember.campaign.export, campaign.md §6): the counting rows as CSV."""

import csv
import io

from helpers.campaigns import (
    BASIC,
    assert_one_line_error,
    ember_cli,
    read_rows,
    write_campaign,
)

# -- export -------------------------------------------------------------------------------


def _expected_leaves(metrics, prefix=""):
    out = {}
    for key, value in metrics.items():
        name = prefix + key
        if name in ("people", "time.evacuation_steps"):
            continue
        if isinstance(value, dict):
            out.update(_expected_leaves(value, name + "."))
        elif not isinstance(value, str):
            out[name] = value
    return out


def test_export_csv(tmp_path):
    path = write_campaign(
        tmp_path / "c", BASIC + '\n[[policies]]\nname = "bad"\npython = "campaign_hooks:raises"\n', hooks=True
    )
    results = tmp_path / "res"
    assert ember_cli("evaluate", path, "-o", results, "--workers", "2").returncode == 0
    out = tmp_path / "rows.csv"
    done = ember_cli("export", results, "-o", out)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    text = out.read_bytes()
    assert ember_cli("export", results).stdout == text
    assert b"\r" not in text and text.endswith(b"\n")
    table = list(csv.reader(io.StringIO(text.decode())))
    header, body = table[0], table[1:]
    fixed = ["scenario_id", "scenario_hash", "seed", "policy", "status", "error", "steps", "elapsed_s"]
    assert header[:8] == fixed and header[8:] == sorted(header[8:])
    rows = read_rows(results)
    order = {"greedy": 0, "rnd": 1, "bad": 2}
    scen = {"small-room": 0, "tiny": 1}
    expected_rows = sorted(rows, key=lambda r: (order[r["policy"]], scen[r["scenario_id"]], r["seed"]))
    assert [(r[3], r[0], int(r[2])) for r in body] == [
        (r["policy"], r["scenario_id"], r["seed"]) for r in expected_rows
    ]
    names = set()
    for row in rows:
        if row["metrics"]:
            names |= set(_expected_leaves(row["metrics"]))
    assert header[8:] == sorted(names)
    assert "safety.casualties" in names and "exits.evacuations_per_exit.door" in names
    for line, row in zip(body, expected_rows):
        cells = dict(zip(header, line))
        assert cells["elapsed_s"] == repr(row["elapsed_s"])
        assert cells["error"] == (row["error"] or "")
        assert cells["steps"] == ("" if row["steps"] is None else str(row["steps"]))
        leaves = _expected_leaves(row["metrics"]) if row["metrics"] else {}
        for name in header[8:]:
            value = leaves.get(name)
            assert cells[name] == ("" if value is None else repr(value) if isinstance(value, float) else str(value))


def test_export_bad_input(tmp_path):
    done = ember_cli("export", tmp_path / "nothing")
    # The results layer's words, as rank and report say them (one reader for every command).
    assert "nothing: no such directory, expected a results directory" in assert_one_line_error(done)
