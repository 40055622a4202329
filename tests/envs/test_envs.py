"""ember.envs: the Gymnasium and PettingZoo environments (docs/envs.md).

The environments drive the project's ``Simulator`` and ``RecordWriter``;
these tests hold them to the ecosystem's own checkers, to byte-identity with
``run_episode`` records, and to the reward and termination semantics.
"""

import io
import os
import subprocess
import sys
import tempfile
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import parallel_api_test, parallel_seed_test

import ember
import ember.envs
from ember.errors import ActionError, EmberError, EnvConfigError, SeedError
from ember.sim.policies import GreedyPolicy, RandomPolicy

from helpers.scenarios import picture_scenario, stay_all

ACTIONS = ("stay", "north", "south", "west", "east")
CODE = {a: k for k, a in enumerate(ACTIONS)}

# Fire next to the exit, a corridor, congestion: people evacuate, burn and block.
BURNING_ROOM = picture_scenario(
    [
        "#####0####",
        "#a..b....#",
        "#..c..*..#",
        "#d....e..#",
        "####.#####",
        "#f.......1",
    ],
    p="1/3",
    enter_fire="casualty",
    max_steps=40,
    scenario_id="burning-room",
)
BURNING_ROOM_IDS = sorted(p["person_id"] for p in BURNING_ROOM["people"])


def same(a, b):
    """Type-strict recursive equality: 1, 1.0 and True differ."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def strict_warnings():
    """The checkers report many problems as warnings: here every warning fails the test."""
    catcher = warnings.catch_warnings()
    catcher.__enter__()
    warnings.simplefilter("error")
    return catcher


def gym_env(scenario=BURNING_ROOM, **kwargs):
    return gymnasium.make("ember/Evacuation-v0", scenario=scenario, **kwargs)


def run_gym(env, seed, policy, resolved_code=4):
    """Drive a Gymnasium env with a campaign-style policy on its official observation.

    Resolved people get ``resolved_code`` (which the env must ignore).
    Returns the list of (reward, terminated, truncated, info) per step.
    """
    env.reset(seed=seed)
    ids = env.unwrapped.person_ids
    steps = []
    while True:
        chosen = policy(env.unwrapped.official_observation())
        codes = np.array([CODE[chosen[pid]] if pid in chosen else resolved_code for pid in ids])
        _, reward, terminated, truncated, info = env.step(codes)
        steps.append((reward, terminated, truncated, info))
        if terminated or truncated:
            return steps


def run_parallel(env, seed, policy, resolved_code=2):
    """Drive a PettingZoo env the same way; resolved agents get ``resolved_code``."""
    env.reset(seed=seed)
    steps = []
    while env.agents:
        chosen = policy(env.official_observation())
        actions = {pid: CODE[chosen.get(pid, "stay")] for pid in env.agents}
        actions.update({pid: resolved_code for pid in env.possible_agents if pid not in env.agents})
        steps.append(env.step(actions))
    return steps


def reference_record(scenario, policy, seed):
    out = io.BytesIO()
    ember.run_episode(scenario, policy, seed, out)
    return out.getvalue()


# --- packaging ---------------------------------------------------------------------------------


def test_import_ember_pays_for_no_rl_library():
    code = (
        "import sys, ember, ember.cli\n"
        "heavy = [m for m in ('gymnasium', 'pettingzoo', 'numpy') if m in sys.modules]\n"
        "import ember.envs\n"
        "print(heavy, 'gymnasium' in sys.modules, 'pettingzoo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # ember never imports them; ember.envs imports Gymnasium (to register) but PettingZoo only at parallel_env().
    assert out.split("\n")[0] == "[] True False"


def test_registered_id_builds_the_environment():
    env = gymnasium.make("ember/Evacuation-v0", scenario="builtin:small-room", record=None)
    assert isinstance(env.unwrapped, ember.envs.gym_env.EvacuationEnv)
    n = len(ember.load_scenario("builtin:small-room")["people"])
    assert env.action_space == gymnasium.spaces.MultiDiscrete([5] * n)
    assert gymnasium.make("ember/Evacuation-v0").unwrapped.compiled.scenario_id == "office-floor"


# --- the ecosystem's checkers --------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["builtin:small-room", BURNING_ROOM])
def test_gymnasium_check_env(scenario):
    catcher = strict_warnings()
    try:
        check_env(gym_env(scenario).unwrapped)
        check_env(gym_env(scenario, render_mode="ansi").unwrapped)
    finally:
        catcher.__exit__(None, None, None)


@pytest.mark.parametrize("window", [1, 5])
def test_pettingzoo_parallel_api_and_seed_tests(window):
    catcher = strict_warnings()
    try:
        parallel_api_test(ember.envs.parallel_env(scenario=BURNING_ROOM, window=window), num_cycles=100)
        parallel_api_test(ember.envs.parallel_env(scenario="builtin:small-room", window=window), num_cycles=300)
        parallel_seed_test(lambda: ember.envs.parallel_env(scenario=BURNING_ROOM, window=window), num_cycles=100)
    finally:
        catcher.__exit__(None, None, None)


# --- records: byte-identical to run_episode, replayable, same metrics -----------------------------


@pytest.mark.parametrize("seed", [0, 7, 2**64 - 1])
def test_gym_record_is_the_run_episode_record(tmp_path, seed):
    env = gym_env(record=tmp_path / "ep{episode}-seed{seed}.record")
    run_gym(env, seed, RandomPolicy(11))
    written = (tmp_path / f"ep0-seed{seed}.record").read_bytes()
    assert written == reference_record(BURNING_ROOM, RandomPolicy(11), seed)
    assert ember.verify_replay(BURNING_ROOM, tmp_path / f"ep0-seed{seed}.record") is None
    from_env = ember.episode_metrics(BURNING_ROOM, tmp_path / f"ep0-seed{seed}.record").to_dict()
    from_simulator = ember.episode_metrics(BURNING_ROOM, reference_record(BURNING_ROOM, RandomPolicy(11), seed))
    assert same(from_env, from_simulator.to_dict())
    assert from_env["seed"] == seed


def test_parallel_record_is_the_run_episode_record(tmp_path):
    env = ember.envs.parallel_env(scenario="builtin:office", record=tmp_path / "office-{seed}.record")
    run_parallel(env, 3, GreedyPolicy("builtin:office"))
    written = (tmp_path / "office-3.record").read_bytes()
    assert written == reference_record("builtin:office", "greedy", 3)
    assert ember.verify_replay("builtin:office", written) is None
    assert same(
        ember.episode_metrics("builtin:office", written).to_dict(),
        ember.episode_metrics("builtin:office", reference_record("builtin:office", "greedy", 3)).to_dict(),
    )


def test_record_streams_while_the_episode_runs(tmp_path):
    path = tmp_path / "live.record"
    env = gym_env(record=path)
    env.reset(seed=5)
    assert path.read_bytes().endswith(b'"steps":[\n')
    env.step(np.zeros(env.action_space.shape, dtype=np.int64))
    first = path.read_bytes()
    env.close()
    assert first.count(b"\n") == 4 and first.endswith(b",\n")  # header, initial state, "steps":[, one step line


def test_actions_of_resolved_people_are_ignored(tmp_path):
    for code in (0, 4):
        run_gym(gym_env(record=tmp_path / f"gym-{code}.record"), 1, RandomPolicy(2), resolved_code=code)
        run_parallel(
            ember.envs.parallel_env(scenario=BURNING_ROOM, record=tmp_path / f"pz-{code}.record"),
            1,
            RandomPolicy(2),
            resolved_code=code,
        )
    reference = reference_record(BURNING_ROOM, RandomPolicy(2), 1)
    assert b'"status":"evacuated"' in reference or b'"status":"casualty"' in reference
    for name in ("gym-0", "gym-4", "pz-0", "pz-4"):
        assert (tmp_path / f"{name}.record").read_bytes() == reference, name


def test_record_paths_per_episode(tmp_path):
    env = gym_env(record=tmp_path / "{episode}.record")
    for seed in (4, 4, 9):
        run_gym(env, seed, RandomPolicy(0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.record", "1.record", "2.record"]
    assert (tmp_path / "0.record").read_bytes() == (tmp_path / "1.record").read_bytes()
    assert (tmp_path / "2.record").read_bytes() == reference_record(BURNING_ROOM, RandomPolicy(0), 9)

    single = tmp_path / "single"
    single.mkdir()
    env = gym_env(record=single / "last.record")
    run_gym(env, 4, RandomPolicy(0))
    run_gym(env, 9, RandomPolicy(0))
    assert [p.name for p in single.iterdir()] == ["last.record"]
    assert (single / "last.record").read_bytes() == reference_record(BURNING_ROOM, RandomPolicy(0), 9)


def test_an_abandoned_episode_leaves_a_truncated_record_that_is_refused(tmp_path):
    env = gym_env(record=tmp_path / "{seed}.record")
    env.reset(seed=1)
    env.step(np.zeros(env.action_space.shape, dtype=np.int64))
    env.reset(seed=2)
    env.close()
    with pytest.raises(ember.MetricsInputError):
        ember.episode_metrics(BURNING_ROOM, tmp_path / "1.record")


@pytest.mark.parametrize("record", ["{name}.record", "{seed.real}.record", "x{.record", 42])
def test_bad_record_templates(record):
    with pytest.raises(EnvConfigError, match="record"):
        ember.envs.parallel_env(scenario=BURNING_ROOM, record=record)
    with pytest.raises(EnvConfigError, match="record"):
        gym_env(record=record)


# --- seeds ---------------------------------------------------------------------------------------


def test_reset_seed_is_the_episode_seed(tmp_path):
    env = gym_env(record=tmp_path / "{seed}.record")
    _, info = env.reset(seed=123)
    assert info == {"seed": 123, "record": str(tmp_path / "123.record")}
    env.close()
    assert b'"seed":123' in (tmp_path / "123.record").read_bytes().split(b"\n")[0]


def test_unseeded_resets_draw_seeds_from_the_seeded_generator():
    env = gym_env()
    env.reset(seed=8)
    drawn = [env.reset()[1]["seed"] for _ in range(3)]
    env.reset(seed=8)
    assert [env.reset()[1]["seed"] for _ in range(3)] == drawn
    assert all(type(s) is int and 0 <= s < 2**63 for s in drawn) and len(set(drawn)) == 3


def test_unseeded_parallel_resets_draw_seeds_from_the_seeded_generator(tmp_path):
    names = []
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        env = ember.envs.parallel_env(scenario=BURNING_ROOM, record=tmp_path / run / "{episode}-{seed}.record")
        env.reset(seed=8)
        env.reset()
        env.reset()
        env.close()
        names.append(sorted(p.name for p in (tmp_path / run).iterdir()))
    assert names[0] == names[1] and len(names[0]) == 3 and names[0][0] == "0-8.record"
    seeds = [int(name.split("-")[1].split(".")[0]) for name in names[0]]
    assert all(0 <= s < 2**63 for s in seeds) and len(set(seeds)) == 3
    assert ember.envs.parallel_env(scenario=BURNING_ROOM).reset()[0].keys() == set(BURNING_ROOM_IDS)


@pytest.mark.parametrize("seed", [-1, 2**64, 1.0, True])
def test_bad_seeds(seed):
    with pytest.raises(SeedError):
        gym_env().reset(seed=seed)
    with pytest.raises(SeedError):
        ember.envs.parallel_env(scenario=BURNING_ROOM).reset(seed=seed)


# --- rewards and termination ----------------------------------------------------------------------


def test_gym_rewards_and_termination_follow_the_record():
    env = gym_env(evacuation_reward=2.0, casualty_reward=-3.0, step_reward=-0.25)
    steps = run_gym(env, 2, RandomPolicy(3))
    metrics = ember.episode_metrics(BURNING_ROOM, reference_record(BURNING_ROOM, RandomPolicy(3), 2)).to_dict()
    safety = metrics["safety"]
    assert safety["evacuated"] > 0 and safety["casualties"] > 0  # the scenario exercises both events
    person_steps = sum(p["decisions"] for p in metrics["people"].values())
    expected = 2.0 * safety["evacuated"] - 3.0 * safety["casualties"] - 0.25 * person_steps
    assert sum(r for r, *_ in steps) == pytest.approx(expected, abs=1e-9)
    assert all(type(r) is float for r, *_ in steps)
    assert [(t, tr) for _, t, tr, _ in steps[:-1]] == [(False, False)] * (len(steps) - 1)
    _, terminated, truncated, info = steps[-1]
    assert (terminated, truncated) == ((True, False) if info["termination_reason"] == "all_resolved" else (False, True))
    assert len(steps) == metrics["time"]["episode_steps"]
    for reward, _, _, info in steps:
        assert reward == pytest.approx(
            2.0 * len(info["evacuations"]) - 3.0 * len(info["casualties"]) - 0.25 * (reward_people(info, steps))
        )


def reward_people(info, steps):
    """The number of people who acted at ``info``'s step: the active ones before it."""
    population = len(BURNING_ROOM["people"])
    earlier = [i for _, _, _, i in steps if i["step"] < info["step"]]
    resolved_before = sum(len(i["evacuations"]) + len(i["casualties"]) for i in earlier)
    return population - resolved_before


def test_default_rewards_count_evacuations_and_casualties():
    steps = run_gym(gym_env(), 2, RandomPolicy(3))
    safety = ember.episode_metrics(BURNING_ROOM, reference_record(BURNING_ROOM, RandomPolicy(3), 2)).to_dict()["safety"]
    assert safety["evacuated"] > 0 and safety["casualties"] > 0
    assert sum(r for r, *_ in steps) == float(safety["evacuated"] - safety["casualties"])


def test_horizon_truncates_and_all_resolved_terminates():
    short = dict(BURNING_ROOM, termination={"max_steps": 3}, fire=dict(BURNING_ROOM["fire"], spread_probability="0/1"))
    steps = run_gym(gym_env(short), 0, stay_all)
    assert [(s[1], s[2], s[3]["termination_reason"]) for s in steps] == [
        (False, False, None),
        (False, False, None),
        (False, True, "max_steps"),
    ]
    with pytest.raises(ActionError, match="before reset"):
        gym_env(short).unwrapped.step(np.zeros(len(short["people"]), dtype=np.int64))
    env = gym_env(short)
    run_gym(env, 0, stay_all)
    with pytest.raises(ActionError, match="terminated"):
        env.step(np.zeros(len(short["people"]), dtype=np.int64))

    # One person next to the exit: all_resolved at step 1 is a termination, not a truncation.
    one = picture_scenario(["a0", "#."], max_steps=5)
    env = gym_env(one)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step(np.array([CODE["east"]]))
    assert (reward, terminated, truncated, info["termination_reason"]) == (1.0, True, False, "all_resolved")

    # PettingZoo: everyone still active at the horizon is truncated, nobody terminated.
    pz = ember.envs.parallel_env(scenario=short)
    steps = run_parallel(pz, 0, stay_all)
    assert len(steps) == 3 and pz.agents == []
    for _, rewards, terminations, _, _ in steps:
        assert set(rewards.values()) == {0.0} and not any(terminations.values())
    assert [all(s[3].values()) for s in steps] == [False, False, True]


def test_parallel_rewards_terminations_and_agents():
    env = ember.envs.parallel_env(scenario=BURNING_ROOM, step_reward=-0.5)
    steps = run_parallel(env, 2, RandomPolicy(3))
    record = reference_record(BURNING_ROOM, RandomPolicy(3), 2)
    people = ember.episode_metrics(BURNING_ROOM, record).to_dict()["people"]
    live = set(env.possible_agents)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    terminated_at = {}
    for t, (observations, rewards, terminations, truncations, infos) in enumerate(steps, start=1):
        for part in (observations, rewards, terminations, truncations, infos):
            assert set(part) == live
        for agent in live:
            totals[agent] += rewards[agent]
            assert terminations[agent] == (infos[agent]["status"] != "active")
            if terminations[agent]:
                terminated_at[agent] = t
        live -= {a for a in live if terminations[a] or truncations[a]}
    assert not live and env.agents == []
    assert {p["status"] for p in people.values()} == {"evacuated", "casualty"}
    for pid, person in people.items():
        assert terminated_at[pid] == person["resolution_step"]
        bonus = {"evacuated": 1.0, "casualty": -1.0}[person["status"]]
        assert totals[pid] == pytest.approx(bonus - 0.5 * person["decisions"], abs=1e-9)


def test_gym_reward_is_the_sum_of_the_agents_rewards():
    gym_steps = run_gym(gym_env(step_reward=-0.1), 6, RandomPolicy(1))
    pz_steps = run_parallel(ember.envs.parallel_env(scenario=BURNING_ROOM, step_reward=-0.1), 6, RandomPolicy(1))
    assert len(gym_steps) == len(pz_steps)
    for (reward, *_), (_, rewards, *_) in zip(gym_steps, pz_steps):
        assert reward == sum(rewards.values())


# --- observations ----------------------------------------------------------------------------------


def test_gym_observation_matches_the_official_observation():
    env = gym_env()
    obs, _ = env.reset(seed=4)
    ids = env.unwrapped.person_ids
    policy = RandomPolicy(9)
    walls = {tuple(c) for c in BURNING_ROOM["walls"]}
    exits = {tuple(e["position"]) for e in BURNING_ROOM["exits"]}
    while True:
        official = env.unwrapped.official_observation()
        assert obs in env.observation_space
        assert {tuple(c) for c in np.argwhere(obs["walls"]).tolist()} == walls
        assert {tuple(c) for c in np.argwhere(obs["exits"]).tolist()} == exits
        assert np.argwhere(obs["burning"]).tolist() == official["burning"]
        assert sorted(np.argwhere(obs["people"]).tolist()) == sorted(p["position"] for p in official["people"])
        active = [ids[i] for i in np.flatnonzero(obs["status"] == 0)]
        assert active == [p["person_id"] for p in official["people"]]
        for p in official["people"]:
            assert obs["position"][ids.index(p["person_id"])].tolist() == p["position"]
        assert [ids[i] for i in np.flatnonzero(obs["trapped"])] == official["trapped"]
        assert obs["step"].tolist() == [official["step"]]
        chosen = policy(official)
        obs, _, terminated, truncated, _ = env.step(np.array([CODE[chosen.get(pid, "stay")] for pid in ids]))
        if terminated or truncated:
            break
    record = reference_record(BURNING_ROOM, RandomPolicy(9), 4)
    final = ember.episode_metrics(BURNING_ROOM, record).to_dict()["people"]
    assert [obs["status"][i] for i in range(len(ids))] == [
        {"active": 0, "evacuated": 1, "casualty": 2}[final[pid]["status"]] for pid in ids
    ]
    assert obs["position"].tolist() == [final[pid]["final_position"] for pid in ids]


def window_by_hand(state, position, window):
    """The window of one agent from the global state, cell by cell (outside = blocked)."""
    _, rows, cols = state.shape
    radius = window // 2
    view = np.zeros((4, window, window), dtype=np.int8)
    for dr in range(window):
        for dc in range(window):
            r, c = position[0] + dr - radius, position[1] + dc - radius
            if not (0 <= r < rows and 0 <= c < cols):
                view[0, dr, dc] = 1
            else:
                view[:, dr, dc] = state[:, r, c]
    view[3, radius, radius] = 0
    return view


@pytest.mark.parametrize("window", [1, 3, 7])
def test_parallel_windows_match_the_global_state(window):
    env = ember.envs.parallel_env(scenario=BURNING_ROOM, window=window)
    observations, infos = env.reset(seed=3)
    policy = RandomPolicy(3)
    while env.agents:
        state = env.state()
        official = env.official_observation()
        assert np.argwhere(state[2]).tolist() == official["burning"]
        for agent in env.agents:
            assert observations[agent] in env.observation_space(agent)
            assert np.array_equal(observations[agent], window_by_hand(state, infos[agent]["position"], window))
        chosen = policy(official)
        observations, _, _, _, infos = env.step({a: CODE[chosen[a]] for a in env.agents})


# --- bad input -------------------------------------------------------------------------------------


def test_bad_actions_change_nothing():
    env = gym_env()
    env.reset(seed=0)
    n = len(BURNING_ROOM["people"])
    for bad, message in (
        (np.zeros(n + 1, dtype=np.int64), "shape"),
        (np.full(n, 5), "person 'a' has action 5"),
        (np.full(n, -1), "expected an integer 0..4"),
        (np.full(n, 1.5), "expected an integer"),
    ):
        with pytest.raises(ActionError, match=message):
            env.step(bad)
    _, _, _, _, info = env.step(np.zeros(n, dtype=np.int64))
    assert info["step"] == 1  # the refused actions took no step

    pz = ember.envs.parallel_env(scenario=BURNING_ROOM)
    pz.reset(seed=0)
    with pytest.raises(ActionError, match="no action for active agent 'a'"):
        pz.step({})
    with pytest.raises(ActionError, match="person 'b' has action 7"):
        pz.step({a: (7 if a == "b" else 0) for a in pz.agents})
    assert pz.step(dict.fromkeys(pz.agents, 0))[4]["a"]["position"] == [1, 1]


@pytest.mark.parametrize(
    "kwargs, place",
    [
        ({"window": 4}, "window"),
        ({"window": 0}, "window"),
        ({"window": True}, "window"),
        ({"evacuation_reward": float("nan")}, "evacuation_reward"),
        ({"step_reward": "1"}, "step_reward"),
        ({"casualty_reward": True}, "casualty_reward"),
        ({"casualty_reward": float("-inf")}, "casualty_reward"),
    ],
)
def test_bad_parallel_arguments(kwargs, place):
    with pytest.raises(EnvConfigError, match=place) as caught:
        ember.envs.parallel_env(scenario=BURNING_ROOM, **kwargs)
    assert isinstance(caught.value, EmberError) and isinstance(caught.value, ValueError)


def test_bad_scenario_and_render_mode():
    with pytest.raises(ember.ScenarioError):
        gym_env(scenario="builtin:no-such-floor")
    with pytest.raises(EnvConfigError, match="render_mode"):
        ember.envs.gym_env.EvacuationEnv(BURNING_ROOM, render_mode="human")


def test_a_failed_reset_leaves_no_episode_to_step(tmp_path):
    env = gym_env(record=tmp_path / "{seed}" / "missing-folder.record")
    with pytest.raises(OSError, match="missing-folder.record"):
        env.reset(seed=1)
    with pytest.raises(ActionError, match="before reset"):
        env.unwrapped.step(np.zeros(len(BURNING_ROOM["people"]), dtype=np.int64))


def test_vector_env_with_seed_field_writes_one_record_per_episode(tmp_path):
    envs = gymnasium.make_vec(
        "ember/Evacuation-v0",
        num_envs=2,
        vectorization_mode="sync",
        scenario=BURNING_ROOM,
        record=str(tmp_path / "{seed}.record"),
    )
    envs.reset(seed=10)  # Gymnasium seeds the sub-environments 10 and 11
    for _ in range(BURNING_ROOM["termination"]["max_steps"]):
        envs.step(np.zeros((2, len(BURNING_ROOM["people"])), dtype=np.int64))
    envs.close()
    for seed in (10, 11):
        assert (tmp_path / f"{seed}.record").read_bytes() == reference_record(BURNING_ROOM, stay_all, seed)


class CodePlan:
    """Per step, a code for each person (ID order), cycling; as env codes or as a campaign-style policy."""

    def __init__(self, plan):
        self.plan = plan
        self.t = 0

    def codes(self):
        row = self.plan[self.t % len(self.plan)]
        self.t += 1
        return np.array(row, dtype=np.int64)

    def __call__(self, observation):
        row = self.codes()
        return {p["person_id"]: ACTIONS[row[BURNING_ROOM_IDS.index(p["person_id"])]] for p in observation["people"]}


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**64 - 1),
    plan=st.lists(st.lists(st.integers(0, 4), min_size=6, max_size=6), min_size=1, max_size=8),
)
def test_any_codes_give_the_run_episode_record(seed, plan):
    reference = reference_record(BURNING_ROOM, CodePlan(plan), seed)
    with tempfile.TemporaryDirectory() as folder:
        env = gym_env(record=os.path.join(folder, "gym.record"))
        env.reset(seed=seed)
        codes = CodePlan(plan)
        while not any(env.step(codes.codes())[2:4]):
            pass
        pz = ember.envs.parallel_env(scenario=BURNING_ROOM, record=os.path.join(folder, "pz.record"))
        pz.reset(seed=seed)
        codes = CodePlan(plan)
        while pz.agents:
            row = codes.codes()
            pz.step({pid: row[k] for k, pid in enumerate(BURNING_ROOM_IDS)})  # resolved agents' codes too
        for name in ("gym.record", "pz.record"):
            with open(os.path.join(folder, name), "rb") as f:
                assert f.read() == reference


@pytest.mark.parametrize(
    "missing, code",
    [
        ("gymnasium", "import ember.envs"),
        ("pettingzoo", "import ember.envs; ember.envs.parallel_env(scenario='builtin:small-room')"),
    ],
)
def test_a_missing_extra_is_named(missing, code):
    # sys.modules[name] = None makes that import fail as if the package were not installed.
    program = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "from ember.errors import MissingExtraError\n"
        f"try:\n    {code}\nexcept MissingExtraError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout
    assert "needs the 'rl' extra" in out and missing in out and "pip install 'ember-eval[rl]'" in out


def test_reward_weights_accept_any_real_number():
    env = ember.envs.parallel_env(
        scenario=BURNING_ROOM, evacuation_reward=np.float32(2.5), casualty_reward=-2, step_reward=0
    )
    env.reset(seed=0)
    rewards = env.step(dict.fromkeys(env.agents, 0))[1]
    assert all(type(r) is float for r in rewards.values())
