"""Ranking 1.0 (ranking.md): hand-computed cases, real campaigns against a batch recomputation, input errors."""

import copy
import hashlib
import itertools
import json
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ember.errors import EmberError, MissingExtraError, ResultsError
from ember.ranking import FORMULA, compute_ranking, format_leaderboard, ranking_bytes

from helpers.ranking_results import (
    assert_same,
    builtin_metrics,
    builtin_results,
    campaign_dict,
    canonical_line,
    failed_row,
    hand_metrics,
    ok_row,
)

H1 = "sha256:" + "1" * 64
H2 = "sha256:" + "2" * 64


def hand_campaign(policies, scenarios=(("s1", H1, (0, 1)),), name="hand"):
    return campaign_dict(
        name,
        [(sid, h, f"{sid}.json", seeds) for sid, h, seeds in scenarios],
        [(p, "builtin", "greedy") for p in policies],
    )


def rows_bytes(*rows):
    return b"".join(canonical_line(row) if isinstance(row, dict) else row for row in rows)


def hand_row(policy, seed, scenario=("s1", H1), **values):
    return ok_row(policy, hand_metrics(scenario[0], scenario[1], seed, **values))


# --- a simple batch recomputation, written from the spec's words ----------------------------


def batch_ranking(campaign, episodes):
    """ranking.md §1-§5 the plain way: last row per (policy, key), left-to-right Fraction sums."""
    lines = episodes[: episodes.rfind(b"\n") + 1].split(b"\n")[:-1]
    rows = [json.loads(line) for line in lines]
    keys = [(s["scenario_hash"], seed) for s in campaign["scenarios"] for seed in s["seeds"]]
    last, earlier = {}, {}
    for row in rows:
        slot = (row["policy"], (row["scenario_hash"], row["seed"]))
        earlier[slot] = slot in last
        last[slot] = row

    def values(m):
        x = Fraction(0)
        for d, n in m["fire_exposure"]["distance_histogram"].items():
            x += Fraction(n, int(d))
        return (m["safety"]["casualties"], m["safety"]["stranded"], m["time"]["person_time_to_safety_total"], x)

    ranked, unranked = [], []
    for p in campaign["policies"]:
        name = p["name"]
        kind = next(k for k in ("builtin", "agent", "python", "records") if k in p)
        counting = [last.get((name, key)) for key in keys]
        if all(r is not None and r["status"] == "ok" for r in counting):
            ms = [r["metrics"] for r in counting]
            tot = [sum(values(m)[i] for m in ms) for i in range(4)]
            pop = sum(m["safety"]["population"] for m in ms)
            evac = sum(m["safety"]["evacuated"] for m in ms)
            by = {}
            for s in campaign["scenarios"]:
                sm = [last[name, (s["scenario_hash"], seed)]["metrics"] for seed in s["seeds"]]
                by[s["scenario_id"]] = {
                    "episodes": len(sm),
                    "population": sum(m["safety"]["population"] for m in sm),
                    "evacuated": sum(m["safety"]["evacuated"] for m in sm),
                    "casualties": sum(values(m)[0] for m in sm),
                    "stranded": sum(values(m)[1] for m in sm),
                    "person_time_to_safety_total": sum(values(m)[2] for m in sm),
                    "exposure": float(sum((values(m)[3] for m in sm), Fraction(0))),
                }
            ranked.append(
                (
                    tuple(tot),
                    name,
                    {
                        "policy": name,
                        "kind": kind,
                        "casualties": tot[0],
                        "stranded": tot[1],
                        "person_time_to_safety_total": tot[2],
                        "exposure": float(tot[3]),
                        "population": pop,
                        "evacuated": evac,
                        "casualty_rate": tot[0] / pop,
                        "stranded_rate": tot[1] / pop,
                        "evacuated_rate": evac / pop,
                        "mean_person_time_to_safety": tot[2] / pop,
                        "failed_before_ok": sum(1 for key in keys if earlier[name, key]),
                        "by_scenario": by,
                    },
                )
            )
        else:
            ok = sum(1 for r in counting if r is not None and r["status"] == "ok")
            failed = sum(1 for r in counting if r is not None and r["status"] == "failed")
            unranked.append(
                {"policy": name, "kind": kind, "ok": ok, "failed": failed, "missing": len(keys) - ok - failed}
            )
    ranked.sort(key=lambda t: (t[0], t[1]))
    out, pairs = [], []
    for i, (tup, _name, entry) in enumerate(ranked):
        rank = i + 1
        while rank > 1 and ranked[rank - 2][0] == tup:
            rank -= 1
        out.append({"rank": rank, **entry})
    for (_, a, _), (_, b, _) in itertools.pairwise(ranked):
        tally = {"above_better": 0, "below_better": 0, "equal": 0}
        for key in keys:
            va, vb = values(last[a, key]["metrics"]), values(last[b, key]["metrics"])
            tally["above_better" if va < vb else "below_better" if va > vb else "equal"] += 1
        pairs.append({"above": a, "below": b, **tally})
    return {
        "ranking_version": "1.0",
        "metrics_version": "1.0",
        "campaign": campaign["campaign"],
        "formula": FORMULA,
        "episodes": len(keys),
        "source": {
            "file": "episodes.jsonl",
            "sha256": hashlib.sha256(episodes[: episodes.rfind(b"\n") + 1]).hexdigest(),
        },
        "ranked": out,
        "pairs": pairs,
        "unranked": sorted(unranked, key=lambda e: e["policy"]),
    }


# --- real episodes -----------------------------------------------------------------------------


def test_real_campaign_matches_batch_recomputation(tmp_path):
    results = builtin_results(tmp_path, scenarios=(("builtin:small-room", (0, 1, 2)), ("builtin:bottleneck", (0, 1))))
    ranking, warnings = compute_ranking(results.campaign, results.episodes())
    assert warnings == []
    assert_same(ranking, batch_ranking(results.campaign, results.episodes()))
    assert [e["policy"] for e in ranking["ranked"]] == ["greedy", "random", "stay"]
    assert ranking["ranked"][0]["by_scenario"]["small-room"]["episodes"] == 3
    assert ranking["episodes"] == 5


def test_x_is_the_histogram_sum_not_exposure_total(tmp_path):
    """The printed exposure is the correctly rounded exact sum; exposure_total is never read."""
    results = builtin_results(tmp_path, policies=("greedy",))
    ranking, _ = compute_ranking(results.campaign, results.episodes())
    exact = sum(
        (
            Fraction(n, int(d))
            for seed in (0, 1, 2)
            for d, n in builtin_metrics("builtin:small-room", "greedy", seed)["fire_exposure"][
                "distance_histogram"
            ].items()
        ),
        Fraction(0),
    )
    assert_same(ranking["ranked"][0]["exposure"], float(exact))
    # Poison exposure_total: nothing changes.
    poisoned = builtin_results(tmp_path / "poisoned", policies=("greedy",))
    episodes = poisoned.episodes().replace(b'"exposure_total":', b'"exposure_total":1e+300,"_was":')
    assert episodes != poisoned.episodes()
    again, _ = compute_ranking(poisoned.campaign, episodes)
    assert again["ranked"] == ranking["ranked"]


# --- hand-computed orders --------------------------------------------------------------------


def test_ties_share_competition_ranks_listed_by_name():
    campaign = hand_campaign(["d", "c", "b", "a"], scenarios=(("s1", H1, (0,)),))
    episodes = rows_bytes(
        hand_row("d", 0, casualties=3),
        hand_row("c", 0, casualties=1, time_to_safety=50),
        hand_row("b", 0, casualties=1, time_to_safety=50),
        hand_row("a", 0, casualties=0, time_to_safety=400),
    )
    ranking, _ = compute_ranking(campaign, episodes)
    assert [(e["rank"], e["policy"]) for e in ranking["ranked"]] == [(1, "a"), (2, "b"), (2, "c"), (4, "d")]
    assert ranking["pairs"] == [
        {"above": "a", "below": "b", "above_better": 1, "below_better": 0, "equal": 0},
        {"above": "b", "below": "c", "above_better": 0, "below_better": 0, "equal": 1},
        {"above": "c", "below": "d", "above_better": 1, "below_better": 0, "equal": 0},
    ]


def test_names_in_code_point_order():
    campaign = hand_campaign(["b", "a", "B", "9x", "Z9", "a-", "a."], scenarios=(("s1", H1, (0,)),))
    episodes = rows_bytes(*(hand_row(p, 0) for p in ("b", "a", "B", "9x", "Z9", "a-", "a.")))
    ranking, _ = compute_ranking(campaign, episodes)
    assert [e["policy"] for e in ranking["ranked"]] == ["9x", "B", "Z9", "a", "a-", "a.", "b"]
    assert {e["rank"] for e in ranking["ranked"]} == {1}


def test_stranded_then_time_then_exposure_break_ties():
    campaign = hand_campaign(["fast-stranded", "slow", "quick", "quick-near-fire", "safe-slowest"])
    episodes = rows_bytes(
        # Equal casualties (1 in total) everywhere but safe-slowest (0).
        hand_row("fast-stranded", 0, casualties=1, stranded=1, time_to_safety=10),
        hand_row("fast-stranded", 1, time_to_safety=10),
        hand_row("slow", 0, casualties=1, time_to_safety=300),
        hand_row("slow", 1, time_to_safety=300),
        hand_row("quick", 0, casualties=1, time_to_safety=100, histogram={1: 5}),
        hand_row("quick", 1, time_to_safety=100),
        hand_row("quick-near-fire", 0, casualties=1, time_to_safety=100, histogram={1: 6}),
        hand_row("quick-near-fire", 1, time_to_safety=100),
        hand_row("safe-slowest", 0, time_to_safety=800, histogram={1: 50}),
        hand_row("safe-slowest", 1, stranded=0, time_to_safety=800),
    )
    ranking, _ = compute_ranking(campaign, episodes)
    order = [(e["rank"], e["policy"]) for e in ranking["ranked"]]
    # Fewer casualties first whatever the time; then stranded (the fastest run has one stranded
    # person and falls below the slow ones); then time; exposure only between equal times.
    assert order == [(1, "safe-slowest"), (2, "quick"), (3, "quick-near-fire"), (4, "slow"), (5, "fast-stranded")]
    quick = ranking["ranked"][1]
    assert_same(quick["exposure"], 5.0)
    assert_same(quick["person_time_to_safety_total"], 200)
    assert_same(quick["mean_person_time_to_safety"], 25.0)
    assert_same(quick["casualty_rate"], 0.125)
    assert_same(quick["evacuated_rate"], 0.875)
    assert quick["by_scenario"] == {
        "s1": {
            "episodes": 2,
            "population": 8,
            "evacuated": 7,
            "casualties": 1,
            "stranded": 0,
            "person_time_to_safety_total": 200,
            "exposure": 5.0,
        }
    }


def test_exposure_is_exact_where_float_summing_is_not():
    """0.1 + 0.2 != 0.3 in floats; ranking compares 1/10 + 1/5 and 3/10 exactly: a tie."""
    assert 0.1 + 0.2 != 0.3
    campaign = hand_campaign(["sum-of-two", "one-episode"])
    episodes = rows_bytes(
        hand_row("sum-of-two", 0, histogram={10: 1}),
        hand_row("sum-of-two", 1, histogram={5: 1}),
        hand_row("one-episode", 0, histogram={10: 3}),
        hand_row("one-episode", 1, histogram={}),
    )
    ranking, _ = compute_ranking(campaign, episodes)
    assert [(e["rank"], e["policy"], e["exposure"]) for e in ranking["ranked"]] == [
        (1, "one-episode", 0.3),
        (1, "sum-of-two", 0.3),
    ]
    assert_same(
        ranking["pairs"],
        [{"above": "one-episode", "below": "sum-of-two", "above_better": 1, "below_better": 1, "equal": 0}],
    )


def test_exposure_rounded_once_from_the_exact_rational():
    """1/3 + 1/3 + 1/3 of one histogram is exactly 1: 1.0, though float sums of thirds need not be."""
    campaign = hand_campaign(["p"], scenarios=(("s1", H1, (0, 1, 2)),))
    episodes = rows_bytes(*(hand_row("p", seed, histogram={3: 1, 7: 1}) for seed in (0, 1, 2)))
    ranking, _ = compute_ranking(campaign, episodes)
    assert_same(ranking["ranked"][0]["exposure"], float(Fraction(3, 3) + Fraction(3, 7)))
    assert ranking["ranked"][0]["exposure"] == 10 / 7


def test_unranked_failed_before_ok_and_counting_row():
    campaign = hand_campaign(["retried", "flaky", "absent", "partial"])
    episodes = rows_bytes(
        failed_row("retried", "s1", H1, 0),
        failed_row("retried", "s1", H1, 0, error="worker lost"),
        hand_row("retried", 0, casualties=1),
        hand_row("retried", 1),
        hand_row("flaky", 0),
        failed_row("flaky", "s1", H1, 1),
        hand_row("partial", 0),
    )
    ranking, _ = compute_ranking(campaign, episodes)
    assert [(e["policy"], e["failed_before_ok"], e["casualties"]) for e in ranking["ranked"]] == [("retried", 1, 1)]
    assert ranking["pairs"] == []
    assert ranking["unranked"] == [
        {"policy": "absent", "kind": "builtin", "ok": 0, "failed": 0, "missing": 2},
        {"policy": "flaky", "kind": "builtin", "ok": 1, "failed": 1, "missing": 0},
        {"policy": "partial", "kind": "builtin", "ok": 1, "failed": 0, "missing": 1},
    ]


def test_a_later_failed_row_is_the_counting_row_until_an_ok_one():
    campaign = hand_campaign(["p"], scenarios=(("s1", H1, (0,)),))
    first = rows_bytes(failed_row("p", "s1", H1, 0))
    ranking, _ = compute_ranking(campaign, first)
    assert ranking["ranked"] == [] and ranking["unranked"][0]["failed"] == 1
    ranking, _ = compute_ranking(campaign, first + rows_bytes(hand_row("p", 0)))
    assert ranking["unranked"] == [] and ranking["ranked"][0]["failed_before_ok"] == 1


def test_empty_episodes_every_policy_unranked():
    campaign = hand_campaign(["b", "a"])
    ranking, warnings = compute_ranking(campaign, b"")
    assert warnings == []
    assert ranking["ranked"] == [] and ranking["pairs"] == []
    assert [e["policy"] for e in ranking["unranked"]] == ["a", "b"]
    assert ranking["source"] == {"file": "episodes.jsonl", "sha256": hashlib.sha256(b"").hexdigest()}


def test_two_scenarios_by_scenario_and_kind():
    campaign = hand_campaign(["p"], scenarios=(("s1", H1, (0,)), ("s2", H2, (4, 5))))
    campaign["policies"] = [{"name": "p", "records": "subs/p"}]
    episodes = rows_bytes(
        hand_row("p", 5, scenario=("s2", H2), casualties=2, time_to_safety=30, histogram={2: 1}),
        hand_row("p", 0, casualties=1, time_to_safety=7),
        hand_row("p", 4, scenario=("s2", H2), stranded=1, time_to_safety=9, histogram={4: 1}),
    )
    ranking, _ = compute_ranking(campaign, episodes)
    entry = ranking["ranked"][0]
    assert entry["kind"] == "records"
    assert_same(
        entry["by_scenario"],
        {
            "s1": {
                "episodes": 1,
                "population": 4,
                "evacuated": 3,
                "casualties": 1,
                "stranded": 0,
                "person_time_to_safety_total": 7,
                "exposure": 0.0,
            },
            "s2": {
                "episodes": 2,
                "population": 8,
                "evacuated": 5,
                "casualties": 2,
                "stranded": 1,
                "person_time_to_safety_total": 39,
                "exposure": 0.75,
            },
        },
    )
    assert ranking["episodes"] == 3


# --- output bytes ---------------------------------------------------------------------------


def test_ranking_bytes_canonical_with_json_dumps_floats():
    campaign = hand_campaign(["p"], scenarios=(("s1", H1, (0,)),))
    episodes = rows_bytes(hand_row("p", 0, population=20000, casualties=1, time_to_safety=3))
    ranking, _ = compute_ranking(campaign, episodes)
    data = ranking_bytes(ranking)
    assert data.endswith(b"}\n") and data.count(b"\n") == 1
    assert b'"casualty_rate":5e-05' in data  # json.dumps' spelling (orjson would write 5e-5)
    assert data == json.dumps(ranking, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    assert list(json.loads(data)) == sorted(ranking)
    assert set(ranking) == {
        "ranking_version",
        "metrics_version",
        "campaign",
        "formula",
        "episodes",
        "source",
        "ranked",
        "pairs",
        "unranked",
    }


def test_torn_last_line_is_ignored_with_a_warning():
    campaign = hand_campaign(["p"])
    whole = rows_bytes(hand_row("p", 0), hand_row("p", 1))
    torn = whole + b'{"scenario_id":"s1","sc'
    ranking, warnings = compute_ranking(campaign, torn)
    assert ranking == compute_ranking(campaign, whole)[0]
    assert ranking["source"]["sha256"] == hashlib.sha256(whole).hexdigest()
    assert warnings == ["episodes.jsonl:3: ignored 23 bytes after the last newline (a torn line)"]
    # A torn line that happens to be a whole row without its newline is still torn.
    torn_size = len(canonical_line(hand_row("p", 1))) - 1
    assert compute_ranking(campaign, whole[:-1])[1] == [
        f"episodes.jsonl:2: ignored {torn_size} bytes after the last newline (a torn line)"
    ]
    assert compute_ranking(campaign, whole[:-1])[0]["unranked"][0]["ok"] == 1


def test_completion_order_does_not_matter(tmp_path):
    """Rows are appended in completion order; only source.sha256 may depend on it."""
    results = builtin_results(tmp_path, scenarios=(("builtin:small-room", (0, 1, 2)),))
    lines = results.episodes().splitlines(keepends=True)
    first, _ = compute_ranking(results.campaign, b"".join(lines))
    shuffled, _ = compute_ranking(results.campaign, b"".join(lines[::-1]))
    assert shuffled["source"] != first["source"]
    shuffled["source"] = first["source"]
    assert ranking_bytes(shuffled) == ranking_bytes(first)


def test_caller_data_is_not_changed():
    campaign = hand_campaign(["p"])
    before = copy.deepcopy(campaign)
    compute_ranking(campaign, rows_bytes(hand_row("p", 0), hand_row("p", 1)))
    assert campaign == before


# --- input errors ---------------------------------------------------------------------------


def _row_with(change):
    row = hand_row("p", 1)
    change(row)
    return canonical_line(row)


def _set(path, value):
    def change(row):
        *parents, last = path
        target = row
        for key in parents:
            target = target[key]
        target[last] = value

    return change


def _delete(path):
    def change(row):
        *parents, last = path
        target = row
        for key in parents:
            target = target[key]
        del target[last]

    return change


BAD_LINES = {
    "not json": (b"{nope}\n", "not a JSON text"),
    "empty line": (b"\n", "not a JSON text"),
    "not utf-8": (b'{"a":"\xff"}\n', "not a JSON text"),
    "byte-order mark": (b"\xef\xbb\xbf" + canonical_line(hand_row("p", 1)), "not a JSON text"),
    "duplicate key": (canonical_line(hand_row("p", 1))[:-2] + b',"seed":1}\n', "duplicate key 'seed'"),
    "NaN": (canonical_line(hand_row("p", 1)).replace(b'"elapsed_s":0.125', b'"elapsed_s":NaN'), "NaN is not JSON"),
    "Infinity": (
        canonical_line(hand_row("p", 1)).replace(b'"elapsed_s":0.125', b'"elapsed_s":-Infinity'),
        "-Infinity is not JSON",
    ),
    "huge float": (
        canonical_line(hand_row("p", 1)).replace(b'"elapsed_s":0.125', b'"elapsed_s":1e400'),
        "out of range",
    ),
    "array": (b"[1,2]\n", "$: expected an object"),
    "missing key": (_row_with(_delete(["elapsed_s"])), "missing elapsed_s"),
    "extra key": (_row_with(_set(["note"], 1)), 'unknown "note"'),
    "seed boolean": (_row_with(_set(["seed"], True)), "$.seed: expected an integer, got true"),
    "seed float": (_row_with(_set(["seed"], 1.0)), "$.seed: expected an integer, got 1.0"),
    "status": (_row_with(_set(["status"], "done")), '$.status: expected "ok" or "failed", got "done"'),
    "ok with error": (_row_with(_set(["error"], "boom")), "$.error: expected null on an ok row"),
    "ok without metrics": (_row_with(_set(["metrics"], None)), "$.metrics: expected an object, got null"),
    "ok without steps": (_row_with(_set(["steps"], None)), "$.steps: expected an integer >= 0"),
    "failed with metrics": (
        canonical_line({**failed_row("p", "s1", H1, 1), "metrics": {}}),
        "$.metrics: expected null on a failed row",
    ),
    "failed without error": (
        canonical_line({**failed_row("p", "s1", H1, 1), "error": None}),
        "$.error: expected a string",
    ),
    "sha without record": (_row_with(_set(["record_sha256"], "0" * 64)), "$.record_sha256: expected null"),
    "bad sha": (_row_with(lambda r: r.update(record="r.gz", record_sha256="XYZ")), "$.record_sha256: expected 64"),
    "elapsed string": (_row_with(_set(["elapsed_s"], "1s")), "$.elapsed_s: expected a number >= 0"),
    "policy not in P": (_row_with(_set(["policy"], "nobody")), '$.policy: "nobody" is not a policy of the campaign'),
    "hash not in K": (_row_with(_set(["scenario_hash"], H2)), "is not an episode of the campaign"),
    "seed not in K": (canonical_line(hand_row("p", 7)), "with seed 7 is not an episode of the campaign"),
    "wrong scenario id": (
        _row_with(_set(["scenario_id"], "s9")),
        '$.scenario_id: the campaign names this scenario hash "s1", got "s9"',
    ),
    "metrics hash": (_row_with(_set(["metrics", "scenario_hash"], H2)), "$.metrics.scenario_hash: expected the row's"),
    "metrics seed": (_row_with(_set(["metrics", "seed"], 0)), "$.metrics.seed: expected the row's 1, got 0"),
    "metrics seed bool": (_row_with(_set(["metrics", "seed"], True)), "$.metrics.seed: expected the row's 1, got true"),
    "casualties negative": (
        _row_with(_set(["metrics", "safety", "casualties"], -1)),
        "$.metrics.safety.casualties: expected an integer 0 <= n < 2^63, got -1",
    ),
    "casualties float": (
        _row_with(_set(["metrics", "safety", "casualties"], 0.0)),
        "$.metrics.safety.casualties: expected an integer",
    ),
    "stranded bool": (
        _row_with(_set(["metrics", "safety", "stranded"], False)),
        "$.metrics.safety.stranded: expected an integer",
    ),
    "population missing": (
        _row_with(_delete(["metrics", "safety", "population"])),
        "$.metrics.safety: missing key 'population'",
    ),
    "evacuated huge": (
        _row_with(_set(["metrics", "safety", "evacuated"], 2**63)),
        "$.metrics.safety.evacuated: expected an integer",
    ),
    "time missing": (_row_with(_delete(["metrics", "time"])), "$.metrics: missing key 'time'"),
    "time to safety string": (
        _row_with(_set(["metrics", "time", "person_time_to_safety_total"], "5")),
        "person_time_to_safety_total: expected an integer",
    ),
    "safety sum": (
        _row_with(_set(["metrics", "safety", "evacuated"], 3)),
        "evacuated + casualties + stranded must equal population",
    ),
    "histogram leading zero": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"01": 1})),
        'key "01" is not a distance',
    ),
    "histogram zero": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"0": 1})),
        'key "0" is not a distance',
    ),
    "histogram negative": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"-1": 1})),
        'key "-1" is not a distance',
    ),
    "histogram fraction": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"1.5": 1})),
        'key "1.5" is not a distance',
    ),
    "histogram unicode digit": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"\u0663": 1})),
        "is not a distance",
    ),
    "histogram huge key": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"9" * 30: 1})),
        "out of range",
    ),
    "histogram count negative": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"2": -3})),
        "distance_histogram.2: expected an integer 0 <= n",
    ),
    "histogram count float": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], {"2": 1.0})),
        "distance_histogram.2: expected an integer",
    ),
    "histogram array": (
        _row_with(_set(["metrics", "fire_exposure", "distance_histogram"], [])),
        "distance_histogram: expected an object",
    ),
    "row after ok": (
        canonical_line(failed_row("p", "s1", H1, 0)),
        f'a row for policy "p", scenario "{H1}", seed 0 after its ok row on line 1',
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_bad_row_names_file_and_line(name):
    line, reason = BAD_LINES[name]
    campaign = hand_campaign(["p", "q"])
    episodes = rows_bytes(hand_row("p", 0), hand_row("q", 0), line, hand_row("q", 1))
    with pytest.raises(ResultsError) as caught:
        compute_ranking(campaign, episodes)
    error = caught.value
    assert isinstance(error, EmberError) and isinstance(error, ValueError)
    assert (error.file, error.line) == ("episodes.jsonl", 3)
    assert str(error).startswith("episodes.jsonl:3: ")
    assert reason in str(error)
    assert "\n" not in str(error)


def test_good_variants_of_those_rows_pass():
    """The same fields, well formed, are accepted: the errors above are about their defects."""
    campaign = hand_campaign(["p", "q"])
    kept = {**hand_row("p", 1), "record": "records/p/s1/1.record.gz", "record_sha256": "a" * 64, "elapsed_s": 0}
    episodes = rows_bytes(hand_row("p", 0), hand_row("q", 0), kept, hand_row("q", 1, histogram={12: 0, 1: 2}))
    ranking, _ = compute_ranking(campaign, episodes)
    assert [e["policy"] for e in ranking["ranked"]] == ["p", "q"]


BAD_CAMPAIGNS = {
    "not an object": (lambda c: [c], "campaign.json: $: expected an object"),
    "no versions": (lambda c: c.pop("versions"), "campaign.json: $: missing key 'versions'"),
    "other ranking version": (
        lambda c: c["versions"].update(ranking="2.0"),
        'campaign.json: $.versions.ranking: this is ranking version 1.0, the campaign has "2.0"',
    ),
    "other metrics version": (lambda c: c["versions"].update(metrics="0.9"), "$.versions.metrics"),
    "repeated hash": (
        lambda c: c["scenarios"].append({**c["scenarios"][0], "scenario_id": "other"}),
        "campaign.json: $.scenarios[1].scenario_hash: repeated scenario hash",
    ),
    "repeated id": (
        lambda c: c["scenarios"].append({**c["scenarios"][0], "scenario_hash": H2}),
        "campaign.json: $.scenarios[1].scenario_id: repeated scenario ID",
    ),
    "repeated seed": (
        lambda c: c["scenarios"][0].update(seeds=[0, 1, 0]),
        "campaign.json: $.scenarios[0].seeds[2]: repeated seed 0",
    ),
    "boolean seed": (lambda c: c["scenarios"][0].update(seeds=[True]), "$.scenarios[0].seeds[0]: expected an integer"),
    "no seeds": (lambda c: c["scenarios"][0].update(seeds=[]), "$.scenarios[0].seeds: expected a non-empty array"),
    "no scenarios": (lambda c: c.update(scenarios=[]), "$.scenarios: expected a non-empty array"),
    "two sources": (lambda c: c["policies"][0].update(agent="x"), "$.policies[0]: expected exactly one of"),
    "repeated policy": (
        lambda c: c["policies"].append(dict(c["policies"][0])),
        "$.policies[1].name: repeated policy name",
    ),
    "campaign not a string": (lambda c: c.update(campaign=3), "$.campaign: expected an ID"),
    "campaign not an ID": (lambda c: c.update(campaign="my study"), "$.campaign: expected an ID"),
    "policy not an ID": (lambda c: c["policies"][0].update(name="<b>"), "$.policies[0].name: expected an ID"),
    "scenario not an ID": (lambda c: c["scenarios"][0].update(scenario_id="\ud800"), "$.scenarios[0].scenario_id"),
}


@pytest.mark.parametrize("name", sorted(BAD_CAMPAIGNS))
def test_bad_campaign_is_an_input_error(name):
    change, reason = BAD_CAMPAIGNS[name]
    campaign = hand_campaign(["p"])
    changed = change(campaign)
    if isinstance(changed, list):
        campaign = changed
    with pytest.raises(ResultsError) as caught:
        compute_ranking(campaign, b"")
    assert caught.value.file == "campaign.json" and caught.value.line is None
    assert reason in str(caught.value)


# --- the property: speed never buys safety ---------------------------------------------------

episode_values = st.fixed_dictionaries(
    {
        "casualties": st.integers(0, 3),
        "stranded": st.integers(0, 2),
        "time_to_safety": st.integers(0, 10**6),
        "histogram": st.dictionaries(st.integers(1, 40), st.integers(0, 50), max_size=5),
    }
)


@st.composite
def campaigns(draw):
    seeds = draw(st.lists(st.integers(0, 50), min_size=1, max_size=4, unique=True))
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), min_size=2, max_size=5, unique=True))
    table = {name: [draw(episode_values) for _ in seeds] for name in names}
    return seeds, table


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(campaigns())
def test_fewer_casualties_always_rank_above_whatever_the_times(drawn):
    seeds, table = drawn
    campaign = hand_campaign(list(table), scenarios=(("s1", H1, tuple(seeds)),))
    rows = [
        hand_row(name, seed, **values, population=10)
        for name, episodes in table.items()
        for seed, values in zip(sorted(seeds), episodes)
    ]
    ranking, _ = compute_ranking(campaign, rows_bytes(*rows))
    ranked = ranking["ranked"]
    assert sorted(e["policy"] for e in ranked) == sorted(table)
    for i, above in enumerate(ranked):
        for below in ranked[i + 1 :]:
            assert above["casualties"] <= below["casualties"]
            assert above["rank"] <= below["rank"]
        for other in ranked:
            if above["casualties"] < other["casualties"]:
                assert above["rank"] < other["rank"]
    # Competition ranks: a rank is 1 + the number of policies strictly ahead.
    exact = {
        name: (
            sum(v["casualties"] for v in eps),
            sum(v["stranded"] for v in eps),
            sum(v["time_to_safety"] for v in eps),
            sum((Fraction(n, d) for v in eps for d, n in v["histogram"].items()), Fraction(0)),
        )
        for name, eps in table.items()
    }
    for entry in ranked:
        assert entry["rank"] == 1 + sum(exact[o] < exact[entry["policy"]] for o in exact)


# --- leaderboard text -----------------------------------------------------------------------


def leaderboard_case():
    campaign = hand_campaign(["fast", "safe", "gone"])
    episodes = rows_bytes(
        hand_row("fast", 0, casualties=2, time_to_safety=10),
        hand_row("fast", 1, time_to_safety=10),
        hand_row("safe", 0, time_to_safety=90, histogram={2: 3}),
        hand_row("safe", 1, time_to_safety=90),
        failed_row("gone", "s1", H1, 0),
    )
    return compute_ranking(campaign, episodes)[0]


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_leaderboard_lists_ranked_and_unranked(fmt):
    text = format_leaderboard(leaderboard_case(), fmt)
    lines = text.splitlines()

    def row_of(policy):
        return next(line for line in lines if policy in line.replace("|", " ").split())

    safe, fast, gone = row_of("safe"), row_of("fast"), row_of("gone")
    assert lines.index(safe) < lines.index(fast)
    assert safe.replace("|", " ").split()[:2] == ["1", "safe"]
    for cell in ("8 of 8", "180 (mean 22.50)", "1.5000"):
        assert cell in safe
    assert fast.replace("|", " ").split()[:4] == ["2", "fast", "2", "0"] and "6 of 8" in fast
    assert "1 failed, 1 missing" in gone
    assert "ranking 1.0" in text and FORMULA in text
    if fmt == "markdown":
        assert any(line.startswith("|") and "policy" in line for line in lines)


def test_leaderboard_without_tabulate_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tabulate", None)  # import fails as if not installed
    with pytest.raises(MissingExtraError) as caught:
        format_leaderboard(leaderboard_case(), "table")
    assert "ember-eval[cli]" in str(caught.value)
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, EmberError)
