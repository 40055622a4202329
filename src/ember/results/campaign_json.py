"""campaign.json (campaign.md §4): ``CampaignJson`` checks the parsed file; K and each scenario's seeds, compact.

``CampaignJson`` holds the campaign's ID, its versions, K (``EpisodeKeys``:
each scenario's seeds in an array, no pair per episode) and P (each
policy's name and kind).  Every reader of a results directory checks
campaign.json here; a check that fails raises ``Invalid``.
"""

import array
import bisect

from ..strict_json import shown
from ..versions import METRICS_VERSION, RANKING_VERSION
from .values import (
    SCENARIO_HASH,
    Invalid,
    expect,
    identifier,
    integer,
    json_object,
    member,
    no_other_keys,
    non_empty_array,
    string,
)

POLICY_KINDS = ("builtin", "agent", "python", "records")
#: campaign.json's versions, in the order they are checked.
VERSION_KEYS = ("metrics", "ranking", "simulator", "observation", "package")
#: The versions this package reads rows of: rows measured or ranked otherwise mean something else.
READ_VERSIONS = {"metrics": METRICS_VERSION, "ranking": RANKING_VERSION}
#: campaign.json is read whole, at most this many bytes (docs/campaigns.md).
MAX_CAMPAIGN_BYTES = 64 * 1024 * 1024


class EpisodeKeys:
    """K as (scenario_hash, seed) pairs, scenario by scenario in the file's order, without a pair per episode.

    Iterable (the pairs, made as they are asked for), sized, and answers
    ``key in keys``: a command holding a campaign of 10^6 episodes keeps
    its seed arrays, not 10^6 pairs and their set (docs/campaigns.md).
    """

    __slots__ = ("_length", "_scenarios", "members")

    def __init__(self, scenarios):
        self._scenarios = scenarios  # [(scenario_hash, seeds array)]
        self._length = sum(len(seeds) for _, seeds in scenarios)
        self.members = {scenario_hash: SeedMembers(seeds) for scenario_hash, seeds in scenarios}  # hash -> seeds

    def __iter__(self):
        for scenario_hash, seeds in self._scenarios:
            for seed in seeds:
                yield (scenario_hash, seed)

    def __len__(self):
        return self._length

    def __contains__(self, key):
        scenario_hash, seed = key
        members = self.members.get(scenario_hash)
        return members is not None and seed in members


class SeedMembers:
    """One scenario's seeds: ``seed in`` and its position, bisected when they ascend (as evaluate writes them).

    Seeds in another order (a campaign.json written by hand) get a dict.
    """

    __slots__ = ("_places", "seeds")

    def __init__(self, seeds):
        ascending = all(seeds[i - 1] < seeds[i] for i in range(1, len(seeds)))
        self.seeds = seeds
        self._places = None if ascending else {seed: i for i, seed in enumerate(seeds)}

    def position(self, seed):
        """The seed's index in the scenario's seeds, or None."""
        if self._places is not None:
            return self._places.get(seed)
        i = bisect.bisect_left(self.seeds, seed)
        return i if i < len(self.seeds) and self.seeds[i] == seed else None

    def __contains__(self, seed):
        return self.position(seed) is not None


class CampaignJson:
    """A checked ``campaign.json``: its ID, K in order, and P.

    ``keys`` is K as (scenario_hash, seed) pairs, scenario
    by scenario in the file's order (an ``EpisodeKeys``); ``scenarios`` maps a hash to its ID and seeds
    (an ``array('q')`` in the file's order);
    ``sources`` a hash to its ``source`` string; ``policies`` maps a name to
    its kind, in the file's order.  ``value`` is the parsed file itself.
    Raises ``Invalid``.
    """

    def __init__(self, value):
        self.value = value
        json_object(value, "$")
        self.name = identifier(member(value, "campaign", "$"), "$.campaign")
        self.versions = self._versions(json_object(member(value, "versions", "$"), "$.versions"))
        self.scenarios = {}  # hash -> (scenario_id, seeds)
        self.sources = {}  # hash -> source
        self._scenarios(non_empty_array(member(value, "scenarios", "$"), "$.scenarios"))
        self.keys = EpisodeKeys([(h, seeds) for h, (_, seeds) in self.scenarios.items()])
        self.policies = {}  # name -> kind
        for i, policy in enumerate(non_empty_array(member(value, "policies", "$"), "$.policies")):
            self._policy(policy, f"$.policies[{i}]")
        no_other_keys(value, ("campaign", "versions", "scenarios", "policies"), "$")

    @staticmethod
    def _versions(versions):
        for part in VERSION_KEYS:
            theirs = member(versions, part, "$.versions")
            ours = READ_VERSIONS.get(part)
            if ours is not None and theirs != ours:
                raise Invalid(f"$.versions.{part}: this is {part} version {ours}, the campaign has {shown(theirs)}")
            string(theirs, f"$.versions.{part}")
        no_other_keys(versions, VERSION_KEYS, "$.versions")
        return versions

    def _scenarios(self, scenarios):
        ids = set()
        for i, scenario in enumerate(scenarios):
            path = f"$.scenarios[{i}]"
            json_object(scenario, path)
            scenario_id = identifier(member(scenario, "scenario_id", path), f"{path}.scenario_id")
            scenario_hash = string(member(scenario, "scenario_hash", path), f"{path}.scenario_hash")
            if scenario_hash in self.scenarios:
                raise Invalid(f"{path}.scenario_hash: repeated scenario hash {shown(scenario_hash)}")
            expect(SCENARIO_HASH.fullmatch(scenario_hash), scenario_hash, f"{path}.scenario_hash", "sha256:<64 hex>")
            if scenario_id in ids:
                raise Invalid(f"{path}.scenario_id: repeated scenario ID {shown(scenario_id)}")
            ids.add(scenario_id)
            source = string(member(scenario, "source", path), f"{path}.source")
            seeds = non_empty_array(member(scenario, "seeds", path), f"{path}.seeds")
            seen = None  # while the seeds ascend they cannot repeat: a set only once they do not
            for j, seed in enumerate(seeds):
                integer(seed, f"{path}.seeds[{j}]")
                if seen is None and j and not seeds[j - 1] < seed:
                    seen = set(seeds[:j])
                if seen is not None:
                    if seed in seen:
                        raise Invalid(f"{path}.seeds[{j}]: repeated seed {seed}")
                    seen.add(seed)
            no_other_keys(scenario, ("scenario_id", "scenario_hash", "source", "seeds"), path)
            # 8 bytes a seed, and no hold on the parsed file's int objects (32 bytes each): what a reader
            # keeps once ``value`` is gone (a resume keeps the counting table) holds no Python int per seed.
            self.scenarios[scenario_hash] = (scenario_id, array.array("q", seeds))
            self.sources[scenario_hash] = source

    def _policy(self, policy, path):
        json_object(policy, path)
        name = identifier(member(policy, "name", path), f"{path}.name")
        if name in self.policies:
            raise Invalid(f"{path}.name: repeated policy name {shown(name)}")
        kinds = [kind for kind in POLICY_KINDS if kind in policy]
        if len(kinds) != 1:
            raise Invalid(f"{path}: expected exactly one of {', '.join(POLICY_KINDS)}, got {len(kinds)}")
        kind = kinds[0]
        string(policy[kind], f"{path}.{kind}")
        keys = ("name", kind)
        if kind in ("agent", "python"):
            keys += ("step_timeout",)
            timeout = member(policy, "step_timeout", path)
            fits = type(timeout) is float and timeout > 0  # finite: strict_json refuses infinities
            expect(fits, timeout, f"{path}.step_timeout", "a number > 0 written as a float")
            keys += _sandbox_keys(policy, kind, path)
            if "code" in policy:  # campaign.md 1.1; a directory made before 1.1 has none
                code = string(policy["code"], f"{path}.code")
                expect(SCENARIO_HASH.fullmatch(code), code, f"{path}.code", "sha256:<64 hex>")
                keys += ("code",)
        no_other_keys(policy, keys, path)
        self.policies[name] = kind


def _sandbox_keys(policy, kind, path):
    """The sandbox's keys an agent or python entry holds (isolation.md §2), their types checked."""
    found = ()
    for key in ("memory_mb", "max_processes", "tmp_mb"):
        if key in policy:
            value = policy[key]
            expect(type(value) is int and value >= 1, value, f"{path}.{key}", "an integer >= 1")
            found += (key,)
    if "episode_timeout" in policy:
        value = policy["episode_timeout"]
        expect(type(value) is float and value > 0, value, f"{path}.episode_timeout", "a number > 0 written as a float")
        found += ("episode_timeout",)
    if "env" in policy:
        value = policy["env"]
        fits = isinstance(value, dict) and all(isinstance(text, str) for text in value.values())
        expect(fits, value, f"{path}.env", "an object of strings")
        found += ("env",)
    if "files" in policy and kind == "agent":
        value = policy["files"]
        fits = isinstance(value, list) and bool(value) and all(isinstance(item, str) for item in value)
        expect(fits, value, f"{path}.files", "a non-empty array of strings")
        found += ("files",)
    return found
