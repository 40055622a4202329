"""Assemble the metric families of metrics.md from the accumulators.

Every ratio is an exact ``Fraction`` until ``_float`` converts it once.
Invariants the spec marks as checked raise ``MetricsInputError``: a record
that breaks one cannot be measured.
"""

import copy
from fractions import Fraction
from math import lcm

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

    def release(self):
        """The output.md layout itself, not a copy, for an owner that lets go of this ``EpisodeMetrics`` at once
        (a campaign's episode, whose row is made from it), where a deep copy (about 0.3 ms on the office floor)
        would be thrown away."""
        data, self._data = self._data, None
        return data

    def __getitem__(self, key):
        return self._data[key]

    def __repr__(self):
        safety = self._data["safety"]
        return (
            f"EpisodeMetrics({self._data['scenario_id']!r}, seed={self._data['seed']}, "
            f"evacuated={safety['evacuated']}, casualties={safety['casualties']}, stranded={safety['stranded']})"
        )


def build_report(scenario, header, last, steps, resolutions, movement, replanning, exposure):
    """The ``EpisodeMetrics`` from the accumulators and the terminal state ``last`` (s_T).

    One function per metric family, in the order of output.md.
    """
    outcome = _Outcome(scenario, last, resolutions)
    lower = scenario.static_exit_distances()
    return EpisodeMetrics(
        {
            "metrics_version": METRICS_VERSION,
            "scenario_id": scenario.scenario_id,
            "scenario_hash": scenario.hash,
            "seed": header["seed"],
            "safety": safety_family(outcome, last, resolutions),
            "time": time_family(outcome, steps),
            "movement": movement_family(movement),
            "path_efficiency": path_efficiency_family(outcome, movement, lower),
            "fire_exposure": fire_exposure_family(exposure),
            "exits": exits_family(outcome, resolutions),
            "replanning": replanning_family(movement, replanning),
            "people": people_family(outcome, last, resolutions, movement, replanning, exposure, lower),
        }
    )


class _Outcome:
    """What several families read: who is who at s_T, and the time to safety."""

    def __init__(self, scenario, last, resolutions):
        self.scenario = scenario
        self.ids = scenario.person_ids
        self.n = len(self.ids)
        self.status = last.status
        self.evacuees = [i for i in range(self.n) if self.status[i] == "evacuated"]
        horizon = scenario.max_steps
        self.tau = [resolutions.step[i] if s == "evacuated" else horizon for i, s in enumerate(self.status)]


def safety_family(outcome, last, resolutions):
    """metrics.md §4."""
    status, n = outcome.status, outcome.n
    evacuated = status.count("evacuated")
    casualties = status.count("casualty")
    stranded = status.count("active")
    _invariant(
        evacuated + casualties + stranded == n,
        f"evacuated + casualties + stranded = {evacuated + casualties + stranded}, expected N = {n}.",
    )
    trapped = len(last.trapped)
    _invariant(trapped <= stranded, f"terminal trapped count {trapped} exceeds stranded {stranded}.")
    if last.reason == "all_resolved":
        _invariant(stranded == 0 and trapped == 0, "an all_resolved episode has people stranded or trapped.")
    by_cause = dict.fromkeys(CAUSES, 0)
    for i in range(n):
        if status[i] == "casualty":
            by_cause[resolutions.cause[i]] += 1
    return {
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


def time_family(outcome, steps):
    """metrics.md §5."""
    ids, tau, n = outcome.ids, outcome.tau, outcome.n
    evac_steps = {ids[i]: tau[i] for i in outcome.evacuees}
    ordered = sorted(evac_steps.values())
    e = len(ordered)
    if e == 0:
        median = None
    elif e % 2:
        median = Fraction(ordered[e // 2])
    else:
        median = Fraction(ordered[e // 2 - 1] + ordered[e // 2], 2)
    return {
        "episode_steps": steps,
        "max_steps": outcome.scenario.max_steps,
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


def movement_family(movement):
    """metrics.md §6."""
    decisions = sum(movement.decisions)
    stays = sum(movement.stays)
    attempts = decisions - stays
    moved = sum(movement.moves)
    blocked = sum(movement.blocked)
    _invariant(
        moved + blocked == attempts,
        f"successful_moves + blocked_moves = {moved + blocked}, expected movement_attempts = {attempts}.",
    )
    congestion = sum(movement.by_outcome[o] for o in CONGESTION_OUTCOMES)
    return {
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


def _efficiencies(outcome, movement, lower):
    """Per person: (path efficiency, detour ratio) as Fractions for evacuees, else (None, None)."""
    ids = outcome.ids
    efficiency, detour = [None] * outcome.n, [None] * outcome.n
    for i in outcome.evacuees:
        _invariant(lower[i] is not None and lower[i] >= 1, f"evacuee {ids[i]!r} has no static exit distance >= 1.")
        _invariant(
            movement.moves[i] >= lower[i],
            f"evacuee {ids[i]!r} moved {movement.moves[i]} cells, fewer than its static lower bound {lower[i]}.",
        )
        efficiency[i] = Fraction(lower[i], movement.moves[i])
        detour[i] = Fraction(movement.moves[i], lower[i])
    return efficiency, detour


def path_efficiency_family(outcome, movement, lower):
    """metrics.md §7."""
    evacuees = outcome.evacuees
    e = len(evacuees)
    efficiency, detour = _efficiencies(outcome, movement, lower)
    total_moved = sum(movement.moves[i] for i in evacuees)
    total_lower = sum(lower[i] for i in evacuees)
    return {
        "evacuees_measured": e,
        "total_cells_moved": total_moved,
        "total_static_lower_bound": total_lower,
        "aggregate_path_efficiency": _float(ratio(total_lower, total_moved)),
        "mean_path_efficiency": _float(None if e == 0 else _fraction_sum(efficiency[i] for i in evacuees) / e),
        "mean_detour_ratio": _float(None if e == 0 else _fraction_sum(detour[i] for i in evacuees) / e),
    }


def exact_sum(terms):
    """The exact ``Fraction`` sum of ``numerator / denominator`` over ``terms`` (positive denominators).

    Over one common denominator (their least common multiple) the sum is
    one integer sum and one reduction, where adding Fractions one by one
    reduces after every term: the same value, a fraction of the time when
    there are thousands of terms (a large floor's per-person exposures).
    """
    terms = list(terms)
    if not terms:
        return Fraction(0)
    common = lcm(*(denominator for _, denominator in terms))
    return Fraction(sum(numerator * (common // denominator) for numerator, denominator in terms), common)


def _fraction_sum(fractions):
    return exact_sum((f.numerator, f.denominator) for f in fractions)


def _exposure_sum(histogram):
    """The exact sum of 1/d over a histogram {distance d: count}."""
    return exact_sum((count, d) for d, count in histogram.items())


def exposure_floats(histograms):
    """``float(_exposure_sum(h))`` for each histogram {distance d > 0: count}, over one common denominator.

    A large floor has a thousand people with up to a few hundred distances
    each: one lcm for all and one quotient per distance, where a sum per
    person takes an lcm per person.  The float is the same: int / int is
    correctly rounded, as ``float(Fraction)`` is (which divides its reduced
    numerator and denominator: the same rational).
    """
    distances = set().union(*histograms)
    if not distances:
        return [0.0] * len(histograms)
    common = lcm(*distances)
    share = {d: common // d for d in distances}
    return [sum(count * share[d] for d, count in histogram.items()) / common for histogram in histograms]


def fire_exposure_family(exposure):
    """metrics.md §8."""
    _invariant(0 not in exposure.histogram, "an active person stands on a burning cell (fire distance 0).")
    exposure_total = _exposure_sum(exposure.histogram)
    return {
        "active_person_states": exposure.states,
        "person_states_with_fire": exposure.states - exposure.states_without_fire,
        "person_states_without_fire": exposure.states_without_fire,
        "distance_histogram": {str(d): exposure.histogram[d] for d in sorted(exposure.histogram)},
        "adjacent_person_states": exposure.histogram.get(1, 0),
        "min_fire_distance": min(exposure.histogram) if exposure.histogram else None,
        "exposure_total": float(exposure_total),
        "mean_exposure": _float(None if exposure.states == 0 else exposure_total / exposure.states),
    }


def exits_family(outcome, resolutions):
    """metrics.md §9."""
    per_exit = dict.fromkeys(outcome.scenario.exit_ids, 0)
    for i in outcome.evacuees:
        per_exit[resolutions.exit_id[i]] += 1
    k = len(per_exit)
    e = len(outcome.evacuees)
    if e:
        shares = {x: Fraction(c, e) for x, c in per_exit.items()}
        balance = None if k == 1 else (1 - sum(p * p for p in shares.values())) / (1 - Fraction(1, k))
        exit_shares = {x: float(p) for x, p in shares.items()}
        max_share = float(max(shares.values()))
    else:
        balance, exit_shares, max_share = None, None, None
    return {
        "exit_count": k,
        "exits_used": sum(1 for c in per_exit.values() if c),
        "evacuations_per_exit": per_exit,
        "exit_shares": exit_shares,
        "max_exit_share": max_share,
        "exit_balance": _float(balance),
    }


def replanning_family(movement, replanning):
    """metrics.md §10."""
    with_next = replanning.with_next
    _invariant(
        replanning.moved_after + replanning.blocked_after + replanning.stayed_after == with_next,
        "moved_after_block + blocked_after_block + stayed_after_block differs from blocks_with_next_decision.",
    )
    blocked = sum(movement.blocked)
    return {
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


def people_family(outcome, last, resolutions, movement, replanning, exposure, lower):
    """metrics.md §12: one object per person, by ID."""
    scenario, status = outcome.scenario, outcome.status
    grid = scenario.grid
    efficiency, detour = _efficiencies(outcome, movement, lower)
    exposures = exposure.person_exposures()  # (nearest, float); no distance 0: fire_exposure_family checked
    people = {}
    for i, pid in enumerate(outcome.ids):
        people[pid] = {
            "person_id": pid,
            "initial_position": grid.cell(scenario.start_cells[i]),
            "final_position": grid.cell(last.position[i]),
            "status": status[i],
            "resolution_step": resolutions.step[i] if status[i] != "active" else None,
            "exit_id": resolutions.exit_id[i] if status[i] == "evacuated" else None,
            "casualty_cause": resolutions.cause[i] if status[i] == "casualty" else None,
            "decisions": movement.decisions[i],
            "stay_actions": movement.stays[i],
            "cells_moved": movement.moves[i],
            "blocked_moves": movement.blocked[i],
            "max_consecutive_blocks": replanning.longest[i],
            "time_to_safety": outcome.tau[i],
            "static_exit_distance": lower[i],
            "path_efficiency": _float(efficiency[i]),
            "detour_ratio": _float(detour[i]),
            "min_fire_distance": exposures[i][0],
            "fire_exposure": exposures[i][1],
        }
    return people
