"""Assemble the metric families of metrics.md from the accumulators.

Every ratio is an exact ``Fraction`` until ``_float`` converts it once.
Invariants the spec marks as checked raise ``MetricsInputError``: a record
that breaks one cannot be measured.
"""

import copy
from fractions import Fraction

from ..errors import MetricsInputError
from ..versions import METRICS_VERSION
from .movement import BLOCKED_OUTCOMES, CONGESTION_OUTCOMES

CAUSES = ("entered_fire", "fire_spread")


def ratio(numerator, denominator):
    """ratio(a, b) = a / b exactly, or None when b = 0 (metrics.md §3)."""
    return None if denominator == 0 else Fraction(numerator, denominator)


def _float(value):
    return None if value is None else float(value)


def _invariant(condition, message):
    if not condition:
        raise MetricsInputError(f"metrics invariant violated: {message}")


class EpisodeMetrics:
    """The metrics of one episode; ``to_dict()`` gives the output.md layout."""

    def __init__(self, data):
        self._data = data

    def to_dict(self):
        return copy.deepcopy(self._data)

    def __getitem__(self, key):
        return self._data[key]

    def __repr__(self):
        safety = self._data["safety"]
        return (
            f"EpisodeMetrics({self._data['scenario_id']!r}, seed={self._data['seed']}, "
            f"evacuated={safety['evacuated']}, casualties={safety['casualties']}, stranded={safety['stranded']})"
        )


def build_report(scenario, header, last, steps, resolutions, movement, replanning, exposure):
    """The metrics dict from the accumulators and the terminal state ``last`` (s_T)."""
    ids = scenario.person_ids
    n = len(ids)
    horizon = scenario.max_steps
    status = last.status
    cols = scenario.grid.cols

    # Safety (§4)
    evacuated = sum(1 for s in status if s == "evacuated")
    casualties = sum(1 for s in status if s == "casualty")
    stranded = sum(1 for s in status if s == "active")
    _invariant(evacuated + casualties + stranded == n, f"evacuated + casualties + stranded = {evacuated + casualties + stranded}, expected N = {n}.")
    trapped = len(last.trapped)
    _invariant(trapped <= stranded, f"terminal trapped count {trapped} exceeds stranded {stranded}.")
    if last.reason == "all_resolved":
        _invariant(stranded == 0 and trapped == 0, "an all_resolved episode has people stranded or trapped.")
    by_cause = dict.fromkeys(CAUSES, 0)
    for i in range(n):
        if status[i] == "casualty":
            by_cause[resolutions.cause[i]] += 1
    safety = {
        "population": n,
        "evacuated": evacuated,
        "casualties": casualties,
        "stranded": stranded,
        "evacuated_rate": _float(ratio(evacuated, n)),
        "casualty_rate": _float(ratio(casualties, n)),
        "stranded_rate": _float(ratio(stranded, n)),
        "terminal_trapped_count": trapped,
        "terminal_trapped_rate": _float(ratio(trapped, n)),
        "casualties_by_cause": by_cause,
    }

    # Time (§5)
    evacuees = [i for i in range(n) if status[i] == "evacuated"]
    evac_steps = {ids[i]: resolutions.step[i] for i in evacuees}
    ordered = sorted(evac_steps.values())
    e = len(ordered)
    if e == 0:
        median = None
    elif e % 2:
        median = Fraction(ordered[e // 2])
    else:
        median = Fraction(ordered[e // 2 - 1] + ordered[e // 2], 2)
    tau = [resolutions.step[i] if status[i] == "evacuated" else horizon for i in range(n)]
    time = {
        "episode_steps": steps,
        "max_steps": horizon,
        "evacuees": e,
        "non_evacuees": n - e,
        "evacuation_steps": evac_steps,
        "first_evacuation_step": ordered[0] if e else None,
        "last_evacuation_step": ordered[-1] if e else None,
        "mean_evacuation_step": _float(ratio(sum(ordered), e)),
        "median_evacuation_step": _float(median),
        "person_time_to_safety_total": sum(tau),
        "mean_person_time_to_safety": _float(ratio(sum(tau), n)),
    }

    # Movement and congestion (§6)
    decisions = sum(movement.decisions)
    stays = sum(movement.stays)
    attempts = decisions - stays
    moved = sum(movement.moves)
    blocked = sum(movement.blocked)
    _invariant(moved + blocked == attempts, f"successful_moves + blocked_moves = {moved + blocked}, expected movement_attempts = {attempts}.")
    congestion = sum(movement.by_outcome[o] for o in CONGESTION_OUTCOMES)
    movement_family = {
        "decisions": decisions,
        "stay_actions": stays,
        "movement_attempts": attempts,
        "successful_moves": moved,
        "blocked_moves": blocked,
        "blocked_by_outcome": {o: movement.by_outcome[o] for o in BLOCKED_OUTCOMES},
        "congestion_blocks": congestion,
        "stay_rate": _float(ratio(stays, decisions)),
        "blocked_rate": _float(ratio(blocked, attempts)),
        "congestion_block_rate": _float(ratio(congestion, attempts)),
    }

    # Path efficiency (§7)
    lower = scenario.static_exit_distances()
    efficiency, detour = [None] * n, [None] * n
    for i in evacuees:
        _invariant(lower[i] is not None and lower[i] >= 1, f"evacuee {ids[i]!r} has no static exit distance >= 1.")
        _invariant(movement.moves[i] >= lower[i], f"evacuee {ids[i]!r} moved {movement.moves[i]} cells, fewer than its static lower bound {lower[i]}.")
        efficiency[i] = Fraction(lower[i], movement.moves[i])
        detour[i] = Fraction(movement.moves[i], lower[i])
    total_moved = sum(movement.moves[i] for i in evacuees)
    total_lower = sum(lower[i] for i in evacuees)
    path = {
        "evacuees_measured": e,
        "total_cells_moved": total_moved,
        "total_static_lower_bound": total_lower,
        "aggregate_path_efficiency": _float(ratio(total_lower, total_moved)),
        "mean_path_efficiency": _float(None if e == 0 else sum(efficiency[i] for i in evacuees) / e),
        "mean_detour_ratio": _float(None if e == 0 else sum(detour[i] for i in evacuees) / e),
    }

    # Fire exposure (§8)
    _invariant(0 not in exposure.histogram, "an active person stands on a burning cell (fire distance 0).")
    with_fire = exposure.states - exposure.states_without_fire
    exposure_total = sum((Fraction(count, d) for d, count in exposure.histogram.items()), Fraction(0))
    person_exposure = [sum((Fraction(c, d) for d, c in h.items()), Fraction(0)) for h in exposure.person_histogram]
    fire = {
        "active_person_states": exposure.states,
        "person_states_with_fire": with_fire,
        "person_states_without_fire": exposure.states_without_fire,
        "distance_histogram": {str(d): exposure.histogram[d] for d in sorted(exposure.histogram)},
        "adjacent_person_states": exposure.histogram.get(1, 0),
        "min_fire_distance": min(exposure.histogram) if exposure.histogram else None,
        "exposure_total": float(exposure_total),
        "mean_exposure": _float(None if exposure.states == 0 else exposure_total / exposure.states),
    }

    # Exits (§9)
    per_exit = dict.fromkeys(scenario.exit_ids, 0)
    for i in evacuees:
        per_exit[resolutions.exit_id[i]] += 1
    k = len(per_exit)
    if e:
        shares = {x: Fraction(c, e) for x, c in per_exit.items()}
        balance = None if k == 1 else (1 - sum(p * p for p in shares.values())) / (1 - Fraction(1, k))
        exit_shares = {x: float(p) for x, p in shares.items()}
        max_share = float(max(shares.values()))
    else:
        balance, exit_shares, max_share = None, None, None
    exits = {
        "exit_count": k,
        "exits_used": sum(1 for c in per_exit.values() if c),
        "evacuations_per_exit": per_exit,
        "exit_shares": exit_shares,
        "max_exit_share": max_share,
        "exit_balance": _float(balance),
    }

    # Replanning (§10)
    with_next = replanning.with_next
    _invariant(
        replanning.moved_after + replanning.blocked_after + replanning.stayed_after == with_next,
        "moved_after_block + blocked_after_block + stayed_after_block differs from blocks_with_next_decision.",
    )
    replan = {
        "blocked_events": blocked,
        "blocks_with_next_decision": with_next,
        "blocks_without_next_decision": blocked - with_next,
        "moved_after_block": replanning.moved_after,
        "blocked_after_block": replanning.blocked_after,
        "stayed_after_block": replanning.stayed_after,
        "action_changed_after_block": replanning.changed_after,
        "max_consecutive_blocks": max(replanning.longest, default=0),
        "recovery_proxy_rate": _float(ratio(replanning.moved_after, with_next)),
        "repeated_block_proxy_rate": _float(ratio(replanning.blocked_after, with_next)),
        "action_change_proxy_rate": _float(ratio(replanning.changed_after, with_next)),
    }

    # People (§12)
    people = {}
    for i, pid in enumerate(ids):
        histogram = exposure.person_histogram[i]
        start = scenario.start_cells[i]
        people[pid] = {
            "person_id": pid,
            "initial_position": [start // cols, start % cols],
            "final_position": [last.position[i] // cols, last.position[i] % cols],
            "status": status[i],
            "resolution_step": resolutions.step[i] if status[i] != "active" else None,
            "exit_id": resolutions.exit_id[i] if status[i] == "evacuated" else None,
            "casualty_cause": resolutions.cause[i] if status[i] == "casualty" else None,
            "decisions": movement.decisions[i],
            "stay_actions": movement.stays[i],
            "cells_moved": movement.moves[i],
            "blocked_moves": movement.blocked[i],
            "max_consecutive_blocks": replanning.longest[i],
            "time_to_safety": tau[i],
            "static_exit_distance": lower[i],
            "path_efficiency": _float(efficiency[i]),
            "detour_ratio": _float(detour[i]),
            "min_fire_distance": min(histogram) if histogram else None,
            "fire_exposure": float(person_exposure[i]),
        }

    return EpisodeMetrics({
        "metrics_version": METRICS_VERSION,
        "scenario_id": scenario.scenario_id,
        "scenario_hash": scenario.hash,
        "seed": header["seed"],
        "safety": safety,
        "time": time,
        "movement": movement_family,
        "path_efficiency": path,
        "fire_exposure": fire,
        "exits": exits,
        "replanning": replan,
        "people": people,
    })
