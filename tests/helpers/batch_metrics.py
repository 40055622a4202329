"""A plain batch computation of metrics.md, written apart from the engine.

It loads the whole record with ``json.loads`` and follows the definitions
literally, with none of the engine's incremental structures.  Tests compare
the streaming engine against it on the same records.
"""

import json
from collections import deque
from fractions import Fraction


def _ratio(a, b):
    return None if b == 0 else float(Fraction(a, b))


def _f(x):
    return None if x is None else float(x)


def _static_distance(scenario, start):
    rows, cols = scenario["grid"]["rows"], scenario["grid"]["cols"]
    walls = {tuple(c) for c in scenario["walls"]}
    exits = {tuple(e["position"]) for e in scenario["exits"]}
    seen = {tuple(start): 0}
    queue = deque([tuple(start)])
    while queue:
        cell = queue.popleft()
        if cell in exits:
            return seen[cell]
        r, c = cell
        for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= n[0] < rows and 0 <= n[1] < cols and n not in walls and n not in seen:
                seen[n] = seen[cell] + 1
                queue.append(n)
    return None


def batch_metrics(scenario, record_bytes):
    record = json.loads(record_bytes)
    people = sorted(p["person_id"] for p in scenario["people"])
    start = {p["person_id"]: p["position"] for p in scenario["people"]}
    n = len(people)
    horizon = scenario["termination"]["max_steps"]
    steps = record["steps"]
    snapshots = [record["initial_state"]] + [s["snapshot"] for s in steps]
    final = record["final_state"]
    status = {p["person_id"]: p["status"] for p in final["people"]}
    final_pos = {p["person_id"]: p["position"] for p in final["people"]}

    evac_step, exit_of, cause_of, res_step = {}, {}, {}, {}
    decisions = {p: [] for p in people}  # (t, action, outcome)
    for s in steps:
        for e in s["evacuations"]:
            evac_step[e["person_id"]] = s["step"]
            exit_of[e["person_id"]] = e["exit_id"]
            res_step[e["person_id"]] = s["step"]
        for c in s["casualties"]:
            cause_of[c["person_id"]] = c["cause"]
            res_step[c["person_id"]] = s["step"]
        for m in s["movements"]:
            decisions[m["person_id"]].append((s["step"], s["actions"][m["person_id"]], m["outcome"]))

    evacuees = [p for p in people if status[p] == "evacuated"]
    e = len(evacuees)
    casualties = sum(1 for p in people if status[p] == "casualty")
    stranded = sum(1 for p in people if status[p] == "active")
    trapped = len(final["trapped"])
    safety = {
        "population": n,
        "evacuated": e,
        "casualties": casualties,
        "stranded": stranded,
        "evacuated_rate": _ratio(e, n),
        "casualty_rate": _ratio(casualties, n),
        "stranded_rate": _ratio(stranded, n),
        "terminal_trapped_count": trapped,
        "terminal_trapped_rate": _ratio(trapped, n),
        "casualties_by_cause": {
            "entered_fire": sum(1 for p in people if status[p] == "casualty" and cause_of[p] == "entered_fire"),
            "fire_spread": sum(1 for p in people if status[p] == "casualty" and cause_of[p] == "fire_spread"),
        },
    }
    ev_steps = sorted(evac_step[p] for p in evacuees)
    if e == 0:
        median = None
    elif e % 2 == 1:
        median = ev_steps[e // 2]
    else:
        median = Fraction(ev_steps[e // 2 - 1] + ev_steps[e // 2], 2)
    tau = {p: evac_step[p] if status[p] == "evacuated" else horizon for p in people}
    time = {
        "episode_steps": len(steps),
        "max_steps": horizon,
        "evacuees": e,
        "non_evacuees": n - e,
        "evacuation_steps": {p: evac_step[p] for p in evacuees},
        "first_evacuation_step": ev_steps[0] if e else None,
        "last_evacuation_step": ev_steps[-1] if e else None,
        "mean_evacuation_step": _ratio(sum(ev_steps), e),
        "median_evacuation_step": _f(median),
        "person_time_to_safety_total": sum(tau.values()),
        "mean_person_time_to_safety": _ratio(sum(tau.values()), n),
    }
    all_decisions = [d for p in people for d in decisions[p]]
    outcomes = [o for _, _, o in all_decisions]
    blocked_kinds = [
        "blocked_boundary",
        "blocked_wall",
        "blocked_fire",
        "blocked_occupied",
        "blocked_conflict",
        "blocked_cycle",
    ]
    stays = outcomes.count("stayed")
    attempts = len(outcomes) - stays
    moved = outcomes.count("moved")
    blocked = sum(outcomes.count(k) for k in blocked_kinds)
    congestion = sum(outcomes.count(k) for k in blocked_kinds[3:])
    movement = {
        "decisions": len(outcomes),
        "stay_actions": stays,
        "movement_attempts": attempts,
        "successful_moves": moved,
        "blocked_moves": blocked,
        "blocked_by_outcome": {k: outcomes.count(k) for k in blocked_kinds},
        "congestion_blocks": congestion,
        "stay_rate": _ratio(stays, len(outcomes)),
        "blocked_rate": _ratio(blocked, attempts),
        "congestion_block_rate": _ratio(congestion, attempts),
    }
    cells_moved = {p: sum(1 for _, _, o in decisions[p] if o == "moved") for p in people}
    lower = {p: _static_distance(scenario, start[p]) for p in people}
    eff = {p: Fraction(lower[p], cells_moved[p]) for p in evacuees}
    det = {p: Fraction(cells_moved[p], lower[p]) for p in evacuees}
    path = {
        "evacuees_measured": e,
        "total_cells_moved": sum(cells_moved[p] for p in evacuees),
        "total_static_lower_bound": sum(lower[p] for p in evacuees),
        "aggregate_path_efficiency": _ratio(sum(lower[p] for p in evacuees), sum(cells_moved[p] for p in evacuees)),
        "mean_path_efficiency": _f(sum(eff.values()) / e if e else None),
        "mean_detour_ratio": _f(sum(det.values()) / e if e else None),
    }
    # Exposure: brute force over every burning cell.
    hist, per_min, per_exp = {}, dict.fromkeys(people), {p: Fraction(0) for p in people}
    states = without = 0
    for snap in snapshots:
        burning = snap["burning"]
        for person in snap["people"]:
            if person["status"] != "active":
                continue
            states += 1
            if not burning:
                without += 1
                continue
            r, c = person["position"]
            d = min(abs(r - fr) + abs(c - fc) for fr, fc in burning)
            hist[d] = hist.get(d, 0) + 1
            pid = person["person_id"]
            per_min[pid] = d if per_min[pid] is None else min(per_min[pid], d)
            per_exp[pid] += Fraction(1, d)
    total = sum((Fraction(c, d) for d, c in hist.items()), Fraction(0))
    fire = {
        "active_person_states": states,
        "person_states_with_fire": states - without,
        "person_states_without_fire": without,
        "distance_histogram": {str(d): hist[d] for d in sorted(hist)},
        "adjacent_person_states": hist.get(1, 0),
        "min_fire_distance": min(hist) if hist else None,
        "exposure_total": float(total),
        "mean_exposure": _ratio(total.numerator * 1, total.denominator * states) if states else None,
    }
    exit_ids = sorted(x["exit_id"] for x in scenario["exits"])
    per_exit = {x: sum(1 for p in evacuees if exit_of[p] == x) for x in exit_ids}
    k = len(exit_ids)
    exits = {
        "exit_count": k,
        "exits_used": sum(1 for v in per_exit.values() if v),
        "evacuations_per_exit": per_exit,
        "exit_shares": {x: _ratio(v, e) for x, v in per_exit.items()} if e else None,
        "max_exit_share": _ratio(max(per_exit.values()), e) if e else None,
        "exit_balance": _f((1 - sum(Fraction(v, e) ** 2 for v in per_exit.values())) / (1 - Fraction(1, k)))
        if e and k > 1
        else None,
    }
    # Replanning: look at each blocked decision and the same person's decision at t + 1.
    b_events = b_next = moved_after = blocked_after = stayed_after = changed = 0
    longest = {}
    for p in people:
        ds = decisions[p]
        run = best = 0
        for j, (t, action, outcome) in enumerate(ds):
            if outcome.startswith("blocked_"):
                run += 1
                best = max(best, run)
                b_events += 1
                if j + 1 < len(ds) and ds[j + 1][0] == t + 1:
                    b_next += 1
                    nt, naction, noutcome = ds[j + 1]
                    moved_after += noutcome == "moved"
                    blocked_after += noutcome.startswith("blocked_")
                    stayed_after += noutcome == "stayed"
                    changed += naction != action
            else:
                run = 0
        longest[p] = best
    replanning = {
        "blocked_events": b_events,
        "blocks_with_next_decision": b_next,
        "blocks_without_next_decision": b_events - b_next,
        "moved_after_block": moved_after,
        "blocked_after_block": blocked_after,
        "stayed_after_block": stayed_after,
        "action_changed_after_block": changed,
        "max_consecutive_blocks": max(longest.values(), default=0),
        "recovery_proxy_rate": _ratio(moved_after, b_next),
        "repeated_block_proxy_rate": _ratio(blocked_after, b_next),
        "action_change_proxy_rate": _ratio(changed, b_next),
    }
    per_person = {}
    for p in people:
        per_person[p] = {
            "person_id": p,
            "initial_position": start[p],
            "final_position": final_pos[p],
            "status": status[p],
            "resolution_step": res_step.get(p),
            "exit_id": exit_of.get(p),
            "casualty_cause": cause_of.get(p),
            "decisions": len(decisions[p]),
            "stay_actions": sum(1 for d in decisions[p] if d[2] == "stayed"),
            "cells_moved": cells_moved[p],
            "blocked_moves": sum(1 for d in decisions[p] if d[2].startswith("blocked_")),
            "max_consecutive_blocks": longest[p],
            "time_to_safety": tau[p],
            "static_exit_distance": lower[p],
            "path_efficiency": _f(eff.get(p)),
            "detour_ratio": _f(det.get(p)),
            "min_fire_distance": per_min[p],
            "fire_exposure": float(per_exp[p]),
        }
    return {
        "metrics_version": "1.0",
        "scenario_id": scenario["scenario_id"],
        "scenario_hash": record["header"]["scenario_hash"],
        "seed": record["header"]["seed"],
        "safety": safety,
        "time": time,
        "movement": movement,
        "path_efficiency": path,
        "fire_exposure": fire,
        "exits": exits,
        "replanning": replanning,
        "people": per_person,
    }
