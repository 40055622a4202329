"""The counting rows of a results directory (campaign.md §4): where each (policy, episode key)'s is, and the ok ones.

``CountingTable`` takes the checked rows in file order and keeps each
(policy, episode key)'s counting row: its status and its place in
``episodes.jsonl``, in about 25 bytes, however many rows there are;
``OkRows`` (a reader's consumer) keeps the ok rows.
"""

import array

from ..strict_json import shown
from .values import Invalid


class Place:
    """Where a counting row is: its 1-based ``line``, ``offset`` and ``length`` in episodes.jsonl, and more.

    ``ok`` is its status, ``previous`` the rows for the same policy and key
    before it (all failed: nothing may follow an ok row).
    """

    __slots__ = ("length", "line", "offset", "ok", "previous")

    def __init__(self, ok, line, offset, length, previous):
        self.ok = ok
        self.line = line
        self.offset = offset
        self.length = length
        self.previous = previous


class CountingTable:
    """The counting row of every (policy, episode key) of a ``CampaignJson``: its status, and where it is.

    What every reader needs of a results directory (which episodes have a
    row, which are ok, and where each counting row is, to read it again),
    in about 25 bytes per (policy, episode), however many rows there are
    (docs/campaigns.md).  ``add`` takes each checked ``Row`` in file order
    and refuses a row after an ok row (``Invalid``); ``get`` returns "ok",
    "failed" or None; ``ok`` and ``failed`` count them, ``tally(policy)``
    one policy's.
    """

    _NAMES = (None, "failed", "ok")

    def __init__(self, campaign):
        self._policies = {name: i for i, name in enumerate(campaign.policies)}
        self._members = campaign.keys.members
        self._statuses = {}  # (policy index, scenario_hash) -> bytearray over the seeds
        self._lines = {}  # the same -> array of line numbers
        self._offsets = {}  # the same -> array of byte offsets
        self._lengths = {}  # the same -> array of line lengths (a line is at most rows.MAX_LINE_BYTES)
        self._previous = {}  # (policy, key) -> rows before the counting one, only where there are some
        self.ok = self.failed = 0

    def _place(self, policy, key, create=False):
        """(slot, statuses or None, position or None) of a key; a key of no checked row has no statuses."""
        scenario_hash, seed = key
        members = self._members.get(scenario_hash)
        index = self._policies.get(policy)
        if members is None or index is None:
            return None, None, None
        slot = (index, scenario_hash)
        statuses = self._statuses.get(slot)
        if statuses is None and create:
            size = len(members.seeds)
            statuses = self._statuses[slot] = bytearray(size)
            self._lines[slot] = array.array("Q", bytes(8 * size))
            self._offsets[slot] = array.array("Q", bytes(8 * size))
            self._lengths[slot] = array.array("I", bytes(4 * size))
        return slot, statuses, members.position(seed)

    def get(self, policy, key):
        """ "ok", "failed", or None for a key without a row (or not of this campaign: a resume adds some)."""
        _, statuses, position = self._place(policy, key)
        return None if statuses is None or position is None else self._NAMES[statuses[position]]

    def line(self, policy, key):
        slot, statuses, position = self._place(policy, key)
        return None if statuses is None or position is None or not statuses[position] else self._lines[slot][position]

    def place(self, policy, key):
        """The counting row's ``Place`` for (policy, key), or None when it has no row."""
        slot, statuses, position = self._place(policy, key)
        if statuses is None or position is None or not statuses[position]:
            return None
        return Place(
            statuses[position] == 2,
            self._lines[slot][position],
            self._offsets[slot][position],
            self._lengths[slot][position],
            self._previous.get((policy, key), 0),
        )

    def tally(self, policy):
        """(ok, failed): how many of ``policy``'s episodes have an ok / a failed counting row (0, 0 for another name).

        Counted in the status bytes themselves, never through a list of a
        status per episode (a ranking of 10^6 episodes asks for it).
        """
        index = self._policies.get(policy)
        ok = failed = 0
        if index is None:
            return ok, failed
        for scenario_hash in self._members:  # this policy's slots only: a board asks once per policy
            statuses = self._statuses.get((index, scenario_hash))
            if statuses is not None:
                ok += statuses.count(2)
                failed += statuses.count(1)
        return ok, failed

    def add(self, row):
        """Take the checked ``row`` (its line, offset and length set); set its ``previous``; raises ``Invalid``."""
        slot, statuses, position = self._place(row.policy, row.key, create=True)
        before = statuses[position]
        if before == 2:
            raise Invalid(
                f"a row for policy {shown(row.policy)}, scenario {shown(row.key[0])}, seed {row.key[1]} "
                f"after its ok row on line {self._lines[slot][position]}"
            )
        if before:
            row.previous = self._previous[row.policy, row.key] = self._previous.get((row.policy, row.key), 0) + 1
            self.failed -= 1
        statuses[position] = 2 if row.ok else 1
        self._lines[slot][position] = row.line
        self._offsets[slot][position] = row.offset
        self._lengths[slot][position] = row.length
        self.ok += row.ok
        self.failed += not row.ok


class OkRows:
    """A reader's consumer (``read_results(consumers=...)``): the ok rows' ``Row`` (their parsed line is dropped).

    What ranking and statistics read (``Row.episode``) and what ``verify``
    checks (``Row.record``), keyed by (policy, episode key): an ok row is
    always a counting row, nothing may follow it.  ``rows()`` lists them in
    file order.
    """

    def __init__(self):
        self.by_key = {}  # (policy, (scenario_hash, seed)) -> Row

    def add(self, row):
        if row.ok:
            self.by_key[row.policy, row.key] = row

    def __getitem__(self, slot):
        return self.by_key[slot]

    def rows(self):
        """The ok rows, in file order."""
        return sorted(self.by_key.values(), key=lambda row: row.line)
