"""The ember-v1 suite: shipped files, pinned hashes, the builtin loader, and its campaign file."""

import hashlib
import importlib.metadata
import pathlib
import re
import subprocess
import sys
from importlib import resources

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the tomli backport (a dependency there)
    import tomli as tomllib

import ember
from ember.canonical import canonical_json
from ember.generate.suite import BASELINES, CAMPAIGN_SEEDS, EMBER_V1, PINNED, campaign, campaign_toml
from ember.scenario import builtin_names


def ember_cli(*args):
    return subprocess.run([sys.executable, "-m", "ember.cli", *map(str, args)], capture_output=True, timeout=120)


def test_the_suite_has_24_scenarios_in_three_tiers_and_both_fire_modes():
    assert len(EMBER_V1) == 24
    assert len({e.name for e in EMBER_V1}) == 24
    for tier in ("small", "medium", "large"):
        entries = [e for e in EMBER_V1 if e.tier == tier]
        assert len(entries) == 8
        assert sorted(e.parameters["enter_fire"] for e in entries) == ["block"] * 4 + ["casualty"] * 4
        assert {e.family for e in entries} == {"office", "hall", "bottleneck", "multi-exit"}
    biggest = max(EMBER_V1, key=lambda e: (e.parameters["rows"] * e.parameters["cols"], e.parameters["people"]))
    assert (biggest.parameters["rows"], biggest.parameters["cols"], biggest.parameters["people"]) == (200, 200, 1000)


@pytest.mark.parametrize("entry", EMBER_V1, ids=lambda e: e.name)
def test_each_scenario_regenerates_to_its_pinned_hash_and_shipped_bytes(entry):
    generated = entry.generate()
    assert "sha256:" + hashlib.sha256(canonical_json(generated)).hexdigest() == PINNED[entry.name]
    shipped = (resources.files("ember") / "scenarios" / "ember-v1" / f"{entry.name}.json").read_bytes()
    assert shipped == canonical_json(generated) + b"\n"
    loaded = ember.load_scenario(entry.source)
    assert ember.scenario_hash(loaded) == PINNED[entry.name]
    assert loaded["scenario_id"] == f"ember-v1.{entry.name}"
    rows, cols = loaded["grid"]["rows"], loaded["grid"]["cols"]
    assert rows <= 200 and cols <= 200 and len(loaded["people"]) <= 1000
    assert ember.Simulator(loaded, 0).initial_state["trapped"] == []


def test_builtin_names_and_the_scenarios_listing_include_the_suite():
    names = builtin_names()
    assert {f"ember-v1/{e.name}" for e in EMBER_V1} <= set(names)
    assert "office" in names and "hall" in names
    done = ember_cli("scenarios")
    assert done.returncode == 0
    listed = [line.split()[0] for line in done.stdout.decode().splitlines()]
    assert listed == [f"builtin:{n}" for n in names]


def test_unknown_suite_member_is_a_scenario_error_naming_it():
    with pytest.raises(ember.ScenarioError, match="ember-v1/nope"):
        ember.load_scenario("builtin:ember-v1/nope")
    with pytest.raises(ember.ScenarioError, match="no built-in scenario"):
        ember.load_scenario("builtin:ember-v1/../office")


def expected_campaign():
    return {
        "campaign": "ember-v1",
        "scenarios": [
            {"source": f"builtin:ember-v1/{tier}-{family}-{mode}", "seeds": {"start": 0, "count": count}}
            for tier, count in (("small", 5), ("medium", 3), ("large", 1))
            for family in ("office", "hall", "bottleneck", "multi-exit")
            for mode in ("casualty", "block")
        ],
        "policies": [
            {"name": "stay", "builtin": "stay"},
            {"name": "random", "builtin": "random"},
            {"name": "greedy", "builtin": "greedy"},
            {"name": "planner", "builtin": "planner"},
        ],
    }


def test_campaign_file_parses_to_exactly_the_intended_structure(tmp_path):
    text = campaign_toml("ember-v1")
    assert tomllib.loads(text) == expected_campaign() == campaign("ember-v1")
    assert CAMPAIGN_SEEDS == {"small": 5, "medium": 3, "large": 1}
    assert BASELINES == ("stay", "random", "greedy", "planner")
    out = tmp_path / "v1.toml"
    done = ember_cli("suite", "ember-v1", "-o", out)
    assert done.returncode == 0 and done.stdout == b""
    assert out.read_text(encoding="utf-8") == text
    done = ember_cli("suite", "ember-v1")
    assert done.returncode == 0 and done.stdout.decode() == text


def test_campaign_file_takes_an_added_agent_as_its_comment_shows():
    text = campaign_toml("ember-v1")
    example = [line[4:] for line in text.splitlines() if line.startswith("#   ")]
    parsed = tomllib.loads(text + "\n" + "\n".join(example).split("  #")[0] + "\n")
    assert parsed["policies"][-1] == {"name": "my-agent", "agent": "python3 my_agent.py"}
    assert parsed["policies"][:4] == expected_campaign()["policies"]


def test_tomli_w_escapes_what_a_hand_written_writer_could_get_wrong():
    import tomli_w

    tricky = {"campaign": 'a"b\\c\n\u00e9', "policies": [{"name": "x", "agent": "python3 -c 'print(\"]\")'"}]}
    assert tomllib.loads(tomli_w.dumps(tricky)) == tricky


def test_unknown_suite_is_bad_input(tmp_path):
    out = tmp_path / "x.toml"
    done = ember_cli("suite", "ember-v9", "-o", out)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().count("\n") == 1 and "unknown suite 'ember-v9'" in done.stderr.decode()
    assert not out.exists()


def test_policy_blocks_round_trip_any_string():
    """The [[policies]] blocks are tomli-w dumps under a header: any string survives."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import ember.generate.suite as suite

    @settings(max_examples=100, deadline=None)
    @given(st.text(st.characters(blacklist_categories=("Cs",))), st.text(st.characters(blacklist_categories=("Cs",))))
    def round_trip(name, builtin):
        original = suite.campaign
        policies = [{"name": name, "builtin": builtin}]
        suite.campaign = lambda *_: {"campaign": "c", "scenarios": ["s"], "policies": policies}
        try:
            parsed = tomllib.loads(suite.campaign_toml("ember-v1"))
        finally:
            suite.campaign = original
        assert parsed["policies"] == [{"name": name, "builtin": builtin}]

    round_trip()


# --- a plain install runs `ember suite` (tomli-w is a core dependency) ---------------------------

PYPROJECT = pathlib.Path(__file__).resolve().parents[2] / "pyproject.toml"


def requirement_name(requirement):
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def project():
    return tomllib.loads(PYPROJECT.read_text())["project"]


def extra_only_modules():
    """Top-level import names of every distribution an extra lists and the core dependencies do not."""
    core = {requirement_name(r) for r in project()["dependencies"]}
    extras = {
        requirement_name(r)
        for requirements in project()["optional-dependencies"].values()
        for r in requirements
        if not r.startswith("ember-eval")
    }
    distributions = importlib.metadata.packages_distributions()
    return sorted(
        module
        for module, names in distributions.items()
        if any(name.lower().replace("_", "-") in extras - core for name in names)
    )


def test_tomli_w_is_a_core_dependency_and_suite_an_alias_of_it():
    core = [requirement_name(r) for r in project()["dependencies"]]
    assert "tomli-w" in core
    assert [requirement_name(r) for r in project()["optional-dependencies"]["suite"]] == ["tomli-w"]


def test_ember_suite_runs_without_any_extra(tmp_path):
    hidden = extra_only_modules()
    assert "tqdm" in hidden and "tomli_w" not in hidden  # the hiding itself is what we think it is
    program = (
        "import sys\n"
        f"for name in {hidden!r}:\n"
        "    sys.modules[name] = None  # an import of it fails as if it were not installed\n"
        "from ember.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "v1.toml"
    done = subprocess.run(
        [sys.executable, "-c", program, "suite", "ember-v1", "-o", str(out)], capture_output=True, text=True
    )
    assert (done.returncode, done.stderr) == (0, "")
    written = tomllib.loads(out.read_text())
    assert written == campaign("ember-v1")
    assert len(written["scenarios"]) == 24


def one_line_error(done):
    assert (done.returncode, done.stdout) == (2, b"")
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("tier", ["small", "medium", "large"])
def test_suite_tier_and_seeds_select_a_part_of_the_campaign(tier, tmp_path):
    out = tmp_path / "part.toml"
    done = ember_cli("suite", "ember-v1", "--tier", tier, "--seeds", "2", "-o", out)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    written = tomllib.loads(out.read_text(encoding="utf-8"))
    expected = expected_campaign()
    expected["scenarios"] = [
        {"source": s["source"], "seeds": {"start": 0, "count": 2}}
        for s in expected["scenarios"]
        if s["source"].startswith(f"builtin:ember-v1/{tier}-")
    ]
    assert len(expected["scenarios"]) == 8
    assert written == expected == campaign("ember-v1", tier=tier, seeds=2)
    assert f"# Selected: tier {tier}, 2 seeds per scenario" in out.read_text(encoding="utf-8")


def test_suite_tier_alone_keeps_each_tier_s_seed_count():
    done = ember_cli("suite", "ember-v1", "--tier", "medium")
    assert done.returncode == 0
    counts = {s["seeds"]["count"] for s in tomllib.loads(done.stdout.decode())["scenarios"]}
    assert counts == {CAMPAIGN_SEEDS["medium"]}


def test_suite_scenarios_by_name_or_source_in_suite_order():
    done = ember_cli(
        "suite", "ember-v1", "--scenario", "builtin:ember-v1/large-hall-block", "--scenario", "small-hall-block",
        "--scenario", "small-hall-block",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = tomllib.loads(done.stdout.decode())
    assert written["scenarios"] == [
        {"source": "builtin:ember-v1/small-hall-block", "seeds": {"start": 0, "count": 5}},
        {"source": "builtin:ember-v1/large-hall-block", "seeds": {"start": 0, "count": 1}},
    ]
    assert written["policies"] == expected_campaign()["policies"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--scenario", "small-ofice-block"],
            "ember: --scenario: ember-v1 has no scenario 'small-ofice-block'; did you mean 'small-office-block'?",
        ),
        (
            ["--tier", "medium", "--scenario", "small-office-block"],
            "ember: --scenario: ember-v1 has no scenario 'small-office-block' of tier medium; "
            "did you mean 'medium-office-block'?",
        ),
        (
            ["--scenario", "zzz"],
            "ember: --scenario: ember-v1 has no scenario 'zzz'; 'ember scenarios' lists builtin:ember-v1/NAME",
        ),
        (
            ["--tier", "larg"],
            "ember: argument --tier: invalid choice: 'larg' (choose from 'small', 'medium', 'large'); "
            "did you mean 'large'? (see 'ember suite --help').",
        ),
        (["--seeds", "0"], "ember: argument --seeds: expected an integer >= 1, got '0' (see 'ember suite --help')."),
    ],
)
def test_suite_refuses_an_unknown_tier_or_scenario_with_the_closest_name(argv, message, tmp_path):
    out = tmp_path / "x.toml"
    assert one_line_error(ember_cli("suite", "ember-v1", *argv, "-o", out)) == message
    assert not out.exists()


def test_an_unknown_suite_gets_the_closest_name():
    line = one_line_error(ember_cli("suite", "ember-v9"))
    assert line == "ember: unknown suite 'ember-v9'; expected one of ember-v1; did you mean 'ember-v1'?"
