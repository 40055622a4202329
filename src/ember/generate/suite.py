"""The ember-v1 suite: 24 generated scenarios in three tiers, pinned by content hash.

Each scenario is a family, a generator seed and fixed parameters.  The
generated files ship as package data (``src/ember/scenarios/ember-v1/``),
so ``builtin:ember-v1/NAME`` loads without generating anything; the pinned
hashes below are what the files must hash to, and tests regenerate every
scenario and compare, so a change to the generator that would change the
suite cannot go unnoticed (a new suite gets a new name, never new content).

Regenerate the files (only when a new suite is made) with
``python -m ember.generate.suite DIR``.
"""

import dataclasses
import sys
from pathlib import Path

import tomli_w

from ..canonical import canonical_json
from ..errors import GenerationError, did_you_mean
from .families import generate

SUITE_NAMES = ("ember-v1",)
BASELINES = ("stay", "random", "greedy", "planner")
ENTER_FIRE = ("casualty", "block")

# Parameters per tier and family; every entry is run in both enter_fire modes.
_TIERS = (
    (
        "small",
        (
            ("office", {"rows": 30, "cols": 40, "people": 30, "room": 5, "exits": 2, "spread": "1/6"}),
            ("hall", {"rows": 30, "cols": 30, "people": 80, "pillars": 12, "exits": 3, "spread": "1/6"}),
            (
                "bottleneck",
                {"rows": 16, "cols": 24, "people": 50, "width": 1, "length": 5, "tables": 4, "spread": "1/8"},
            ),
            ("multi-exit", {"rows": 30, "cols": 30, "people": 50, "exits": 3, "near_exits": 1, "spread": "1/6"}),
        ),
    ),
    (
        "medium",
        (
            ("office", {"rows": 60, "cols": 80, "people": 150, "room": 6, "exits": 3, "spread": "1/5"}),
            ("hall", {"rows": 80, "cols": 80, "people": 300, "pillars": 60, "exits": 4, "door": 2, "spread": "1/5"}),
            (
                "bottleneck",
                {
                    "rows": 40,
                    "cols": 60,
                    "people": 150,
                    "width": 3,
                    "length": 12,
                    "exits": 3,
                    "tables": 20,
                    "ignitions": 2,
                    "spread": "1/10",
                },
            ),
            (
                "multi-exit",
                {
                    "rows": 80,
                    "cols": 80,
                    "people": 250,
                    "exits": 5,
                    "near_exits": 2,
                    "ignitions": 2,
                    "partitions": 10,
                    "spread": "1/5",
                },
            ),
        ),
    ),
    (
        "large",
        (
            (
                "office",
                {
                    "rows": 120,
                    "cols": 160,
                    "people": 500,
                    "room": 7,
                    "exits": 4,
                    "ignitions": 2,
                    "spread": "1/4",
                    "max_steps": 600,
                },
            ),
            (
                "hall",
                {
                    "rows": 200,
                    "cols": 200,
                    "people": 1000,
                    "pillars": 250,
                    "pillar_size": 3,
                    "exits": 6,
                    "door": 3,
                    "ignitions": 3,
                    "spread": "1/4",
                    "max_steps": 600,
                },
            ),
            (
                "bottleneck",
                {
                    "rows": 100,
                    "cols": 120,
                    "people": 600,
                    "width": 4,
                    "length": 20,
                    "exits": 4,
                    "tables": 80,
                    "ignitions": 2,
                    "spread": "1/8",
                    "max_steps": 600,
                },
            ),
            (
                "multi-exit",
                {
                    "rows": 150,
                    "cols": 150,
                    "people": 800,
                    "exits": 6,
                    "near_exits": 3,
                    "ignitions": 4,
                    "partitions": 24,
                    "spread": "1/4",
                    "max_steps": 600,
                },
            ),
        ),
    ),
)


@dataclasses.dataclass(frozen=True, eq=False)
class SuiteEntry:
    """One scenario of a suite: ``builtin:SUITE/NAME`` = family(seed, parameters)."""

    suite: str
    tier: str
    name: str
    family: str
    seed: int
    parameters: dict
    pinned_hash: str

    @property
    def source(self):
        return f"builtin:{self.suite}/{self.name}"

    @property
    def scenario_id(self):
        return f"{self.suite}.{self.name}"

    def generate(self):
        return generate(self.family, self.seed, self.scenario_id, **self.parameters)


# Content hashes (ember.scenario_hash) of the shipped files.  Never edit one to make a test
# pass: a suite's content is fixed once published.
PINNED = {
    "small-office-casualty": "sha256:1df56c19e762622a1a244f576af4ff530fb11ffda1ebd14593883e98d286c54c",
    "small-office-block": "sha256:4a45970e15167f3c1301acd2dab06fe9768d6d0bd3f730e3b155c89a46b28434",
    "small-hall-casualty": "sha256:76bf5a78733f6b6ab1620f212c3d5732041eee0e708fd44c507d10adcff0f04a",
    "small-hall-block": "sha256:b63a4d6d096e53b19af5e7f5ae686cb7e1c24bf3ca97b9874964278166bc9c1f",
    "small-bottleneck-casualty": "sha256:db1cfebd3d14a24ac233e7d79b6f50f6cbe3a196bf674a6580a76e5269cf1dbc",
    "small-bottleneck-block": "sha256:2885123b41bdeff0a19bacb481e7029bdcc8b9699c239747ca4c801b0c52383e",
    "small-multi-exit-casualty": "sha256:22937201808a4163c15d661e2a4316441c31f9fdd5830b3d70f624c9ba90fb5e",
    "small-multi-exit-block": "sha256:6a955c78a7648ffa75e2d73f6c1fa4a908bc3d5fc851aa1a1764c95fc84df3e1",
    "medium-office-casualty": "sha256:c72b55fbc83a19f098c66e861e40a6763bec9f1bc5c8cd57593a08d605386014",
    "medium-office-block": "sha256:435fea9e2844aa50fa57740f69ef5018937c7329e6ae0d5615a9e09564a88329",
    "medium-hall-casualty": "sha256:c7cf286daa16ae2fad0812973eef1aa84ea645ea4993c431565474430aa6f9dc",
    "medium-hall-block": "sha256:aba2b5e7c1a4c57c5f202d2575c3400132d2ad1869a787bd18f5c1797ebeac52",
    "medium-bottleneck-casualty": "sha256:c368a8598937dd5842f8578d806105c9fa7d8afa21ed86502d49ce6c518e1535",
    "medium-bottleneck-block": "sha256:5b32bd4fd9b70ce260b9f1469451fd43eb575dede51004683d0011b66c3839be",
    "medium-multi-exit-casualty": "sha256:1410378573624bee882c11813a87b22d059a3e556eada251395c7fae2148a729",
    "medium-multi-exit-block": "sha256:f736af900b8553bb8087d9323bae934c870e846176ea3cbb5ec49c95e432d327",
    "large-office-casualty": "sha256:56d661d0c028f02d5099af07df5c15631aaad55811160f35f3021b6a641375ac",
    "large-office-block": "sha256:cf89d3cbd15a457ad0f801c4074767d1ba6bce4ac92959521560a2086cff0384",
    "large-hall-casualty": "sha256:727e90522296051cf8b563fb54ae6f87bc605b9403808e7a743a7208dcf4197f",
    "large-hall-block": "sha256:b7c4e8d32568e209388b3252c1f9c086a42d6db1c23761bc5ca0e8fa1e1d59bb",
    "large-bottleneck-casualty": "sha256:f3ecf5a4087543206401e130a9f54d0f2f43e8021429ee4090d4b1f5a6f5f424",
    "large-bottleneck-block": "sha256:72c4bb24256effbe459be981dbf9bb252e2c90e0baacf1cfd0e6e7367965fc2d",
    "large-multi-exit-casualty": "sha256:2eb87484005a33c51e8b75362cbbac15ea515d6c7d661f71e493ab33b6c4a44f",
    "large-multi-exit-block": "sha256:a93949323b574b6f5f89a88d0fccf02a61276390c96ef79a774177ce255261a4",
}


def _entries():
    entries = []
    seed = 0
    for tier, families in _TIERS:
        for family, parameters in families:
            seed += 1  # one layout per tier and family: its two scenarios differ only in enter_fire
            for mode in ENTER_FIRE:
                name = f"{tier}-{family}-{mode}"
                entries.append(
                    SuiteEntry(
                        "ember-v1",
                        tier,
                        name,
                        family,
                        seed,
                        dict(parameters, enter_fire=mode),
                        PINNED.get(name),
                    )
                )
    return tuple(entries)


EMBER_V1 = _entries()
TIER_NAMES = tuple(tier for tier, _ in _TIERS)
# Seeds per tier in the suite's campaign: episodes on large grids with 1,000 people cost seconds each.
CAMPAIGN_SEEDS = {"small": 5, "medium": 3, "large": 1}


def suite_entries(name):
    if name != "ember-v1":
        hint = did_you_mean(name, SUITE_NAMES) or "."
        raise GenerationError(f"unknown suite {name!r}; expected one of {', '.join(SUITE_NAMES)}{hint}")
    return EMBER_V1


def selected_entries(name, tier=None, scenarios=None):
    """The entries of suite ``name``: all, or those of ``tier``, or those named in ``scenarios`` (in suite order).

    A scenario is named as the suite names it (``small-office-block``) or by its source
    (``builtin:ember-v1/small-office-block``); an unknown name, or one outside ``tier``, is a
    ``GenerationError`` with the closest name.
    """
    entries = suite_entries(name)
    if tier is not None:
        if tier not in TIER_NAMES:
            hint = did_you_mean(tier, TIER_NAMES) or "."
            raise GenerationError(f"--tier: unknown tier {tier!r}; expected one of {', '.join(TIER_NAMES)}{hint}")
        entries = tuple(e for e in entries if e.tier == tier)
    if not scenarios:
        return entries
    by_name = {e.name: e for e in entries}
    wanted = set()
    for given in scenarios:
        short = given.removeprefix(f"builtin:{name}/")
        if short not in by_name:
            where = f" of tier {tier}" if tier is not None else ""
            hint = did_you_mean(short, by_name) or f"; 'ember scenarios' lists builtin:{name}/NAME"
            raise GenerationError(f"--scenario: {name} has no scenario {given!r}{where}{hint}")
        wanted.add(short)
    return tuple(e for e in entries if e.name in wanted)


def campaign(name, tier=None, seeds=None, scenarios=None):
    """The campaign (campaign.md §2) of a suite with its baselines, as the dict its TOML file holds.

    ``tier`` and ``scenarios`` select entries (``selected_entries``); ``seeds`` replaces each
    scenario's seed count (default: ``CAMPAIGN_SEEDS`` of its tier), seeds 0 to ``seeds`` - 1.
    """
    entries = selected_entries(name, tier, scenarios)
    return {
        "campaign": name,
        "scenarios": [
            {"source": e.source, "seeds": {"start": 0, "count": seeds or CAMPAIGN_SEEDS[e.tier]}} for e in entries
        ],
        "policies": [{"name": b, "builtin": b} for b in BASELINES],
    }


_CAMPAIGN_NOTE = """\
# The {name} suite with EMBER's baseline policies (campaign.md).
# To rank your agent, add a policy and run 'ember evaluate' on this file, e.g.
#
#   [[policies]]
#   name = "my-agent"
#   agent = "python3 my_agent.py"     # or: python = "my_module:make_policy"
#
"""


def campaign_toml(name, tier=None, seeds=None, scenarios=None):
    """The campaign file's text: a comment on how to add an agent, then the TOML of ``campaign(name)``.

    Written by tomli-w (a core dependency), which escapes every string and
    key.  tomli-w writes short tables in an array inline
    (``policies = [{...}]``), and TOML forbids appending ``[[policies]]``
    to an inline array, so each policy is written as its own ``[[policies]]``
    header followed by tomli-w's dump of that table's keys: a user then adds
    an agent with one more ``[[policies]]`` block, as campaign.md shows.
    """
    data = campaign(name, tier, seeds, scenarios)
    policies = data.pop("policies")
    blocks = [f"\n[[policies]]\n{tomli_w.dumps(policy)}" for policy in policies]
    head = _CAMPAIGN_NOTE.format(name=name) + _selection_note(tier, seeds, scenarios)
    return head + tomli_w.dumps(data) + "".join(blocks)


def _selection_note(tier, seeds, scenarios):
    """A comment line saying which part of the suite the file holds (nothing for the whole suite)."""
    parts = ([f"tier {tier}"] if tier else []) + ([f"{len(set(scenarios))} named scenarios"] if scenarios else [])
    parts += [f"{seeds} seeds per scenario"] if seeds else []
    return f"# Selected: {', '.join(parts)} (ember suite --tier/--scenario/--seeds).\n#\n" if parts else ""


def write_scenarios(folder):
    """Generate every ember-v1 scenario into ``folder`` as NAME.json (canonical JSON + newline)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for entry in EMBER_V1:
        (folder / f"{entry.name}.json").write_bytes(canonical_json(entry.generate()) + b"\n")


if __name__ == "__main__":
    write_scenarios(sys.argv[1])
