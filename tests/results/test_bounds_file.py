"""bounds.jsonl read back (bounds.md §4-§5) and the distance to the possible on the rank and stats tables.

The bounds here are written by the test (values chosen per key, one key
without a bound); the tables' cells are compared with sums made directly
from episodes.jsonl's rows, so the distance code is checked against a
batch computation of its own definition.
"""

import json

import pytest

from ember.canonical import canonical_json_reference
from ember.errors import ResultsError
from ember.results import read_campaign_value
from ember.results.bounds import Distance, EpisodeBounds, bounds_of_bytes, key_order, read_bounds

from helpers.results_dirs import in_process, rows


def campaign_of(results):
    from ember.results import CampaignJson

    return CampaignJson(read_campaign_value(results))


def bounds_lines(results, null_key=None):
    """One bounds object per key of ``results``' campaign: evacuated_max = population − 1 − (seed % 2), min 1."""
    campaign = campaign_of(results)
    population = {}
    for row in rows(results):
        if row["status"] == "ok":
            population[row["scenario_id"], row["seed"]] = row["metrics"]["safety"]["population"]
    lines = []
    for scenario_id, scenario_hash, seed in key_order(campaign):
        n = population[scenario_id, seed]
        value = {
            "bounds_version": "1.0",
            "scenario_id": scenario_id,
            "scenario_hash": scenario_hash,
            "seed": seed,
            "population": n,
            "evacuated_max": n - 1 - seed % 2,
            "casualties_min": 1,
            "fire_stable_step": 3,
            "limit": None,
        }
        if (scenario_id, seed) == null_key:
            value.update(evacuated_max=None, casualties_min=None, fire_stable_step=None, limit="W = 1 exceeds 2^27")
        lines.append(value)
    return lines


def encode(lines):
    return b"".join(canonical_json_reference(value) + b"\n" for value in lines)


def expected_cells(results, lines):
    """Each policy's (avoidable, 'E/M (p%)', no-bound count) summed directly from the rows: the batch reference."""
    bound = {(v["scenario_id"], v["seed"]): v for v in lines}
    sums = {}
    for row in rows(results):
        if row["status"] != "ok":
            continue
        b = bound[row["scenario_id"], row["seed"]]
        entry = sums.setdefault(row["policy"], [0, 0, 0, 0, 0])
        if b["evacuated_max"] is None:
            entry[4] += 1
            continue
        safety = row["metrics"]["safety"]
        entry[0] += safety["casualties"]
        entry[1] += b["casualties_min"]
        entry[2] += safety["evacuated"]
        entry[3] += b["evacuated_max"]
    cells = {}
    for policy, (casualties, casualties_min, evacuated, evacuated_max, no_bound) in sums.items():
        from fractions import Fraction

        share = Fraction(100 * evacuated, evacuated_max)
        tenths = int(share * 10 + Fraction(1, 2))  # half up, exactly
        text = f"{evacuated}/{evacuated_max} ({tenths // 10}.{tenths % 10}%)"
        cells[policy] = (str(casualties - casualties_min), text, no_bound)
    return cells


def test_a_file_of_every_key_is_read_back(kept_copy):
    _, results = kept_copy
    lines = bounds_lines(results)
    (results / "bounds.jsonl").write_bytes(encode(lines))
    found = read_bounds(results, campaign_of(results))
    assert len(found) == len(lines)
    for value in lines:
        got = found[value["scenario_hash"], value["seed"]]
        assert (got.population, got.evacuated_max, got.casualties_min) == (
            value["population"],
            value["evacuated_max"],
            value["casualties_min"],
        )


def test_no_file_is_no_bounds(kept_copy):
    _, results = kept_copy
    assert read_bounds(results, campaign_of(results)) is None


def _defects(lines):
    """(name, the file's bytes, the line the error must name) for every way a line can be wrong."""
    yield "missing line", encode(lines[:-1]), len(lines)
    yield "extra line", encode(lines + [lines[0]]), len(lines) + 1
    yield "out of order", encode([lines[1], lines[0], *lines[2:]]), 1
    yield "no newline", encode(lines)[:-1], len(lines)
    spaced = json.dumps(lines[0]).encode() + b"\n" + encode(lines[1:])
    yield "not canonical", spaced, 1
    for field, value in (
        ("bounds_version", "2.0"),
        ("population", 0),
        ("evacuated_max", -1),
        ("casualties_min", 10**6),
        ("seed", 99),
        ("scenario_hash", "sha256:" + "0" * 64),
        ("limit", "W = 1 exceeds 2^27"),
        ("evacuated_max", None),
        ("seed", 0.0),
    ):
        changed = [dict(lines[0], **{field: value}), *lines[1:]]
        yield f"{field}={value!r}", encode(changed), 1
    extra = [dict(lines[0], extra=1), *lines[1:]]
    yield "an unknown key", encode(extra), 1
    yield "not JSON", b"{\n" + encode(lines[1:]), 1


def test_every_defect_is_refused_naming_the_line(kept_copy):
    _, results = kept_copy
    lines = bounds_lines(results)
    campaign = campaign_of(results)
    for name, data, line in _defects(lines):
        with pytest.raises(ResultsError) as caught:
            bounds_of_bytes(data, campaign)
        assert str(caught.value).startswith(f"bounds.jsonl:{line}: "), (name, str(caught.value))


@pytest.mark.parametrize("null_key", [None, ("room", 1)])
def test_rank_and_stats_tables_show_the_distance_summed_from_the_rows(kept_copy, null_key):
    _, results = kept_copy
    lines = bounds_lines(results, null_key)
    (results / "bounds.jsonl").write_bytes(encode(lines))
    expected = expected_cells(results, lines)
    for command in (("rank",), ("stats", "--replicates", "1000")):
        status, out, err = in_process(*command, results, "--format", "table")
        assert status == 0, err
        assert "avoidable casualties" in out and "evacuated of possible" in out
        for policy, (avoidable, evacuated, no_bound) in expected.items():
            line = next(text for text in out.splitlines() if f" {policy} " in f" {text} ")
            cells = line.split()
            assert avoidable in cells, (policy, line)
            shown = evacuated + (f", {no_bound} without a bound" if no_bound else "")
            assert line.rstrip().endswith(shown), (policy, line, shown)
        assert ("left out of both" in out) is (null_key is not None)


def test_the_json_outputs_do_not_change_with_bounds(kept_copy):
    _, results = kept_copy
    before = [in_process(command, results)[1] for command in ("rank",)]
    (results / "bounds.jsonl").write_bytes(encode(bounds_lines(results)))
    after = [in_process(command, results)[1] for command in ("rank",)]
    assert before == after


def test_a_broken_bounds_file_fails_the_table_in_one_line(kept_copy):
    _, results = kept_copy
    lines = bounds_lines(results)
    (results / "bounds.jsonl").write_bytes(encode(lines[:-1]))
    status, out, err = in_process("rank", results, "--format", "table")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "bounds.jsonl:" in err


def test_percent_is_rounded_half_up_in_exact_arithmetic():
    distance = Distance()

    class Outcome:
        def __init__(self, evacuated, casualties=0):
            self.evacuated = evacuated
            self.casualties = casualties

    distance.add(Outcome(1), EpisodeBounds(8, 8, 0))  # 12.5% exactly
    assert distance.evacuated_text() == "1/8 (12.5%)"
    distance = Distance()
    distance.add(Outcome(1), EpisodeBounds(16, 16, 0))  # 6.25% -> 6.3%
    assert distance.evacuated_text() == "1/16 (6.3%)"
    distance = Distance()
    distance.add(Outcome(2), EpisodeBounds(3, 3, 0))  # 66.666...% -> 66.7%
    assert distance.evacuated_text() == "2/3 (66.7%)"
    empty = Distance()
    empty.add(Outcome(0, 3), EpisodeBounds(3, 0, 3))
    assert (empty.evacuated_text(), empty.avoidable_text()) == ("—", "0")
    unbounded = Distance()
    unbounded.add(Outcome(0), EpisodeBounds(3, None, None))
    assert (unbounded.evacuated_text(), unbounded.avoidable_text(), unbounded.no_bound) == ("—", "—", 1)
