"""The report's distance to the possible (bounds.md §5): columns per policy and per scenario, and a plot.

The bounds are written by the test (helpers in tests/results/test_bounds_file.py's manner), and the
page's cells are compared with sums made from episodes.jsonl's rows directly.
"""

import html
import re
import shutil

import pytest

from ember.canonical import canonical_json_reference

from helpers.results_dirs import ember_cli, in_process, rows, write_campaign_folder

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    base = tmp_path_factory.mktemp("report-bounds")
    path = write_campaign_folder(base / "c")
    results = base / "res"
    done = ember_cli("evaluate", path, "-o", results, "--keep-records", timeout=300)
    assert done.returncode == 0, done.stderr
    return results


def _bounds(results):
    import json

    campaign = json.loads((results / "campaign.json").read_bytes())
    population = {(r["scenario_id"], r["seed"]): r["metrics"]["safety"]["population"] for r in rows(results)
                  if r["status"] == "ok"}  # fmt: skip
    lines = []
    for scenario in campaign["scenarios"]:
        for seed in sorted(scenario["seeds"]):
            n = population[scenario["scenario_id"], seed]
            lines.append({
                "bounds_version": "1.0", "scenario_id": scenario["scenario_id"],
                "scenario_hash": scenario["scenario_hash"], "seed": seed, "population": n,
                "evacuated_max": n - seed, "casualties_min": seed, "fire_stable_step": 4, "limit": None,
            })  # fmt: skip
    return lines


def _cells(results, lines, scenario_id=None):
    bound = {(v["scenario_id"], v["seed"]): v for v in lines}
    sums = {}
    for row in rows(results):
        if row["status"] != "ok" or scenario_id not in (None, row["scenario_id"]):
            continue
        b = bound[row["scenario_id"], row["seed"]]
        s = sums.setdefault(row["policy"], [0, 0, 0, 0])
        s[0] += row["metrics"]["safety"]["casualties"]
        s[1] += b["casualties_min"]
        s[2] += row["metrics"]["safety"]["evacuated"]
        s[3] += b["evacuated_max"]
    out = {}
    for policy, (c, cmin, e, emax) in sums.items():
        tenths = (2000 * e + emax) // (2 * emax)
        out[policy] = (str(c - cmin), f"{e}/{emax} ({tenths // 10}.{tenths % 10}%)")
    return out


def _text_rows(page, section):
    body = page[page.index(f'<section id="{section}"') :]
    body = body[: body.index("</section>")]
    found = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if cells:  # the header row has th cells only
            found.append([html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return found


def test_the_page_shows_the_distance_per_policy_and_per_scenario(finished, tmp_path):
    results = tmp_path / "res"
    shutil.copytree(finished, results)
    before = in_process("report", results, "-o", tmp_path / "plain.html", "--replicates", "1000")
    assert before[0] == 0, before[2]
    plain = (tmp_path / "plain.html").read_text()
    assert "evacuated of possible" not in plain and "plot-possible" not in plain
    lines = _bounds(results)
    (results / "bounds.jsonl").write_bytes(b"".join(canonical_json_reference(v) + b"\n" for v in lines))
    status, _, err = in_process("report", results, "-o", tmp_path / "r.html", "--replicates", "1000")
    assert status == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "evacuated of possible" in page and 'id="plot-possible"' in page and "<svg" in page
    expected = _cells(results, lines)
    board = _text_rows(page, "leaderboard")
    assert len(board) == len(expected)
    for cells in board:
        policy = next(p for p in expected if p in cells)
        assert cells[-2:] == list(expected[policy])
    scenarios = _text_rows(page, "scenarios")
    for scenario_id in ("office-floor", "room"):
        per = _cells(results, lines, scenario_id)
        for policy, pair in per.items():
            assert any(cells[-2:] == list(pair) and policy in cells for cells in scenarios), (scenario_id, policy)
