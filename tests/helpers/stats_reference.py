"""statistics.md computed the slow, direct way, for comparison with ``ember.stats``.

Written from the spec alone: its own SplitMix64, pure-Python loops over
replicates and draws, ``math.fsum`` for X*, ``sorted`` and indexing for the
intervals, ``fractions`` and ``math.comb`` for the sign test, and a binary
search on the exact binomial CDF for the Clopper–Pearson ends.  Only for
valid results directories (the input checks are tested on their own).
"""

import hashlib
import json
import math
from fractions import Fraction

MASK = (1 << 64) - 1
METHOD = "stratified paired bootstrap over episode keys, scenarios as strata; 95% percentile intervals"


def z(seed, i):
    x = (seed + (i + 1) * 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def exact_exposure(metrics):
    return sum((Fraction(n, int(d)) for d, n in metrics["fire_exposure"]["distance_histogram"].items()), Fraction(0))


def values_of(metrics):
    safety = metrics["safety"]
    return {
        "c": safety["casualties"],
        "s": safety["stranded"],
        "p": metrics["time"]["person_time_to_safety_total"],
        "e": safety["evacuated"],
        "x": exact_exposure(metrics),
        "n": safety["population"],
    }


def interval(values):
    ordered = sorted(values)
    b = len(ordered)
    return [ordered[b // 40], ordered[b - 1 - b // 40]]


def competition_ranks(tuples):
    """{name: rank} for {name: tuple}: 1 + the number of strictly smaller tuples."""
    return {name: 1 + sum(other < mine for other in tuples.values()) for name, mine in tuples.items()}


def binomial_cdf(n, k, p):
    return sum(Fraction(math.comb(n, i)) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def clopper_pearson(k, n):
    """Ends by binary search over j / 10^6 on the exact CDF (no Beta quantiles)."""
    scale = 10**6
    if k == 0:
        low = 0
    else:  # the largest j with P(X >= k; j/D) <= 1/40
        lo, hi = 0, scale  # P(X >= k; 0) = 0 <= 1/40; P(X >= k; 1) = 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if 1 - binomial_cdf(n, k - 1, Fraction(mid, scale)) <= Fraction(1, 40):
                lo = mid
            else:
                hi = mid
        low = lo
    if k == n:
        high = scale
    else:  # the smallest j with P(X <= k; j/D) <= 1/40
        lo, hi = 0, scale  # P(X <= k; 0) = 1; P(X <= k; 1) = 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if binomial_cdf(n, k, Fraction(mid, scale)) <= Fraction(1, 40):
                hi = mid
            else:
                lo = mid
        high = hi
    return [low / scale, high / scale]


def sign_test(m, n):
    if m + n == 0:
        return 1.0
    tail = sum(Fraction(math.comb(m + n, i), 2 ** (m + n)) for i in range(min(m, n) + 1))
    return float(min(Fraction(1), 2 * tail))


def reference_statistics(campaign, episodes, replicates, seed):
    """statistics.json's dict for a valid results directory (campaign dict, episodes.jsonl bytes)."""
    end = episodes.rfind(b"\n") + 1
    strata = [(s["scenario_id"], [(s["scenario_hash"], seed_) for seed_ in s["seeds"]]) for s in campaign["scenarios"]]
    keys = [key for _, stratum in strata for key in stratum]
    policies = sorted(p["name"] for p in campaign["policies"])
    last = {}
    for line in episodes[:end].split(b"\n")[:-1]:
        row = json.loads(line)
        last[row["policy"], (row["scenario_hash"], row["seed"])] = row
    ranked_names = [
        name for name in policies if all((name, k) in last and last[name, k]["status"] == "ok" for k in keys)
    ]
    unranked = [name for name in policies if name not in ranked_names]
    v = {(name, k): values_of(last[name, k]["metrics"]) for name in ranked_names for k in keys}

    def point(name):
        return tuple(sum(v[name, k][f] for k in keys) for f in "cspx")

    ordered = sorted(ranked_names, key=lambda name: (point(name), name))
    ranks = competition_ranks({name: point(name) for name in ordered})
    # The replicates, one by one.
    samples = []
    for b in range(replicates):
        drawn = []  # (stratum index, key) with repetition
        offset = 0
        for h, (_, stratum) in enumerate(strata):
            for j in range(len(stratum)):
                drawn.append((h, stratum[z(seed, b * len(keys) + offset + j) % len(stratum)]))
            offset += len(stratum)
        replicate = {}
        for name in ordered:
            totals = {f: sum(v[name, k][f] for _, k in drawn) for f in "cspe"}
            totals["x"] = math.fsum(float(v[name, k]["x"]) for _, k in drawn)
            totals["by"] = [sum(v[name, k]["c"] for g, k in drawn if g == h) for h in range(len(strata))]
            totals["tuple"] = (totals["c"], totals["s"], totals["p"], totals["x"])
            replicate[name] = totals
        replicate_ranks = competition_ranks({name: replicate[name]["tuple"] for name in ordered})
        for name in ordered:
            replicate[name]["rank"] = replicate_ranks[name]
        samples.append(replicate)
    n_people = sum(v[ordered[0], k]["n"] for k in keys) if ordered else None
    entries = []
    for name in ordered:
        entry = {"policy": name, "rank": ranks[name]}
        for field, f in (
            ("casualties", "c"),
            ("stranded", "s"),
            ("evacuated", "e"),
            ("person_time_to_safety_total", "p"),
        ):
            entry[field] = {
                "total": sum(v[name, k][f] for k in keys),
                "interval": interval([s[name][f] for s in samples]),
            }
        for field, f in (("casualty_rate", "casualties"), ("stranded_rate", "stranded")):
            entry[field] = {
                "value": float(Fraction(entry[f]["total"], n_people)),
                "interval": [float(Fraction(end, n_people)) for end in entry[f]["interval"]],
            }
        entry["rank_interval"] = interval([s[name]["rank"] for s in samples])
        entry["rank_share"] = sum(s[name]["rank"] == ranks[name] for s in samples) / replicates
        with_casualties = sum(v[name, k]["c"] >= 1 for k in keys)
        with_loss = sum(v[name, k]["c"] + v[name, k]["s"] >= 1 for k in keys)
        entry["episodes_with_casualties"] = {
            "count": with_casualties,
            "of": len(keys),
            "interval": clopper_pearson(with_casualties, len(keys)),
        }
        entry["episodes_with_loss"] = {
            "count": with_loss,
            "of": len(keys),
            "interval": clopper_pearson(with_loss, len(keys)),
        }
        entry["by_scenario"] = {
            scenario_id: {
                "casualties": {
                    "total": sum(v[name, k]["c"] for k in stratum),
                    "interval": interval([s[name]["by"][h] for s in samples]),
                }
            }
            for h, (scenario_id, stratum) in enumerate(strata)
        }
        entries.append(entry)
    pairs = []
    for a, b in zip(ordered, ordered[1:]):
        pair = {"above": a, "below": b}
        for field, f in (
            ("casualties_difference", "c"),
            ("stranded_difference", "s"),
            ("person_time_difference", "p"),
        ):
            pair[field] = {
                "value": sum(v[b, k][f] for k in keys) - sum(v[a, k][f] for k in keys),
                "interval": interval([s[b][f] - s[a][f] for s in samples]),
            }
        above = sum(s[a]["tuple"] < s[b]["tuple"] for s in samples)
        equal = sum(s[a]["tuple"] == s[b]["tuple"] for s in samples)
        below = sum(s[a]["tuple"] > s[b]["tuple"] for s in samples)
        pair["order"] = {"above": above / replicates, "equal": equal / replicates, "below": below / replicates}
        pair["separated"] = ranks[a] != ranks[b] and above >= replicates - replicates // 40

        def episode_tuple(name, k):
            return tuple(v[name, k][f] for f in "cspx")

        m = sum(episode_tuple(a, k) < episode_tuple(b, k) for k in keys)
        n = sum(episode_tuple(a, k) > episode_tuple(b, k) for k in keys)
        pair["sign_test"] = {"above_better": m, "below_better": n, "p_value": sign_test(m, n)}
        pairs.append(pair)
    group = 1
    for i, entry in enumerate(entries):
        if i and pairs[i - 1]["separated"]:
            group += 1
        entry["group"] = group
    return {
        "statistics_version": "1.0",
        "ranking_version": "1.0",
        "metrics_version": "1.0",
        "campaign": campaign["campaign"],
        "episodes": len(keys),
        "source": {"file": "episodes.jsonl", "sha256": hashlib.sha256(episodes[:end]).hexdigest()},
        "method": METHOD,
        "replicates": replicates,
        "seed": seed,
        "few_seed_scenarios": [
            {"scenario_id": scenario_id, "seeds": len(stratum)} for scenario_id, stratum in strata if len(stratum) < 10
        ],
        "policies": entries,
        "pairs": pairs,
        "unranked": unranked,
    }
