"""The numbers the report draws, read from the counting rows' metrics one row at a time.

Ranking checks only the fields it ranks on (ranking.md §1); the report
also reads ``time.evacuation_steps``, ``exits.evacuations_per_exit`` and
``time.episode_steps``.  Those are read defensively: a value that is not
a non-negative integer is left out of the picture rather than trusted.
"""

import bisect


def _natural(value):
    return type(value) is int and value >= 0


def _mapping(metrics, family, field):
    part = metrics.get(family)
    part = part.get(field) if type(part) is dict else None
    return part if type(part) is dict else {}


class SeedView:
    """One ok episode as the tables and the plots other than the evacuation curves see it (a few numbers)."""

    __slots__ = ("casualties", "evacuated", "exits", "histogram", "population", "seed", "steps", "stranded")

    def __init__(self, seed, episode, metrics):
        self.seed = seed
        self.population = episode.population
        self.casualties = episode.casualties
        self.stranded = episode.stranded
        self.evacuated = episode.evacuated
        self.histogram = episode.histogram  # read only, as the ranking reads it
        self.exits = {
            exit_id: count
            for exit_id, count in _mapping(metrics, "exits", "evacuations_per_exit").items()
            if _natural(count)
        }


class EpisodeView(SeedView):
    """One ok episode as the plots see it: a ``SeedView`` and its people's evacuation steps, sorted."""

    __slots__ = ("evacuation_steps",)

    def __init__(self, seed, episode, metrics):
        super().__init__(seed, episode, metrics)
        steps = _mapping(metrics, "time", "evacuation_steps").values()
        self.evacuation_steps = sorted(step for step in steps if _natural(step))
        episode_steps = metrics.get("time", {}).get("episode_steps")
        last = self.evacuation_steps[-1] if self.evacuation_steps else 0
        self.steps = episode_steps if _natural(episode_steps) and episode_steps >= last else last

    def seed_view(self):
        """This episode without its per-person steps (what is kept once its curve is in an ``EvacuationBand``)."""
        view = SeedView.__new__(SeedView)
        for name in SeedView.__slots__:
            setattr(view, name, getattr(self, name))
        return view


def evacuation_curve(view, horizon):
    """The share of the episode's people evacuated by each step 0..horizon (a list of floats)."""
    return [bisect.bisect_right(view.evacuation_steps, step) / view.population for step in range(horizon + 1)]


#: Integers up to this convert to float exactly, so numpy's float division is Python's int / int.
_EXACT = 2**53


def _curve(view):
    """``evacuation_curve(view, view.steps)`` as a float array."""
    import numpy as np

    if view.population >= _EXACT or (view.evacuation_steps and view.evacuation_steps[-1] >= _EXACT):
        return np.array(evacuation_curve(view, view.steps), dtype=float)
    counts = np.searchsorted(np.array(view.evacuation_steps, dtype=np.int64), np.arange(view.steps + 1), side="right")
    return counts / view.population


class EvacuationBand:
    """One (scenario, policy)'s evacuation curves over its seeds: lowest, mean and highest, held as sums.

    The seeds are added in the campaign's order; the result is what numpy
    gives for the matrix of every seed's curve (``min``, ``mean``, ``max``
    along the seeds), bit for bit, without the matrix: numpy sums along the
    seeds one row after another (a single column, horizon 0, it sums
    pairwise, so each seed's share at step 0 is kept), and a curve past its
    episode's last step stays at its final share, so the steps a later seed
    adds start from the sum of the earlier seeds' final shares.
    """

    def __init__(self):
        self.seeds = 0
        self.horizon = -1
        self._low = self._high = self._total = None
        self._final = None  # (lowest, highest, sum in seed order) of the final shares
        self._first = []  # each seed's share at step 0

    def add(self, view):
        import numpy as np

        curve = _curve(view)
        final = float(curve[-1])
        if self.seeds == 0:
            self._low, self._high, self._total = curve.copy(), curve.copy(), curve.copy()
            self._final = (final, final, final)
        else:
            self._extend(len(curve) - 1)
            if len(curve) < len(self._total):
                curve = np.concatenate((curve, np.full(len(self._total) - len(curve), final)))
            np.minimum(self._low, curve, out=self._low)
            np.maximum(self._high, curve, out=self._high)
            self._total += curve
            low, high, total = self._final
            self._final = (min(low, final), max(high, final), total + final)
        self._first.append(float(curve[0]))
        self.horizon = max(self.horizon, view.steps)
        self.seeds += 1

    def _extend(self, horizon):
        import numpy as np

        more = horizon + 1 - len(self._total)
        if more > 0:
            low, high, total = self._final
            self._low = np.concatenate((self._low, np.full(more, low)))
            self._high = np.concatenate((self._high, np.full(more, high)))
            self._total = np.concatenate((self._total, np.full(more, total)))

    def curves(self, horizon):
        """(lowest, mean, highest) share evacuated at each step 0..``horizon`` (>= this band's own horizon)."""
        import numpy as np

        self._extend(horizon)
        if horizon == 0:
            mean = np.array(self._first).reshape(-1, 1).mean(axis=0)
        else:
            mean = self._total / self.seeds
        return self._low, mean, self._high


class PlotData:
    """What the report draws: ``episodes`` {scenario_id: {policy: [SeedView per seed, in seed order]}}
    and ``evacuation`` {scenario_id: {policy: EvacuationBand}}."""

    def __init__(self, episodes, evacuation):
        self.episodes = episodes
        self.evacuation = evacuation


def collect(results, ok_rows, policies):
    """The ``PlotData`` of ``policies`` (all ok on K), their counting rows read again one at a time.

    ``ok_rows`` (``OkRows``) has their checked values already; each row's
    metrics are read again for the exits and the evacuation steps, which
    go into per-seed numbers and an ``EvacuationBand``, never kept whole.
    """
    campaign = results.campaign
    order = [
        (policy, (scenario_hash, seed))
        for scenario_hash, (_, seeds) in campaign.scenarios.items()
        for policy in policies
        for seed in seeds
    ]
    rows = results.counting_rows(order)
    episodes, evacuation = {}, {}
    for scenario_hash, (scenario_id, seeds) in campaign.scenarios.items():
        episodes[scenario_id], evacuation[scenario_id] = {}, {}
        for policy in policies:
            views, band = [], EvacuationBand()
            for seed in seeds:
                row = next(rows)
                view = EpisodeView(seed, ok_rows[policy, (scenario_hash, seed)].episode, row.metrics)
                band.add(view)
                views.append(view.seed_view())
            episodes[scenario_id][policy], evacuation[scenario_id][policy] = views, band
    return PlotData(episodes, evacuation)
