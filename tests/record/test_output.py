"""The one record opener (record/output.py): every writer of records compresses by the path's name.

Each writer EMBER has (``run_episode``, ``measure_run``, ``ember run -o``,
the Gymnasium and PettingZoo environments' ``record=``) is run with a plain,
a ``.gz`` and a ``.zst`` path: the file must start with the right magic
bytes (none for plain), decompress to exactly the canonical bytes
``run_episode`` writes to a stream, and measure like them.  A campaign's
kept records (``.record.gz`` by campaign.md §4) go through the same opener,
complete or not at all.
"""

import gzip
import io
import zlib

import numpy as np
import pytest
import zstandard

import ember
import ember.envs
from ember.cli import main
from ember.engine.run import measure_run
from ember.record.output import open_record_output, output_kind
from ember.record.writer import RecordWriter, writing_record
from ember.sim.loop import run_policy
from ember.sim.policies import GreedyPolicy
from ember.sim.simulator import ACTIONS, Simulator

from helpers.strict import assert_same_json

SCENARIO = "builtin:office"
SEED = 3
MAGIC = {"plain": b"", "gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}
SUFFIXES = [(".record", "plain"), (".record.gz", "gzip"), (".record.zst", "zstd"), (".json.GZ", "gzip")]


def reference():
    """The canonical bytes of the greedy episode, written to a stream (no opener involved)."""
    out = io.BytesIO()
    ember.run_episode(ember.load_scenario(SCENARIO), "greedy", SEED, out)
    return out.getvalue()


def decompressed(data, kind):
    if kind == "gzip":
        return gzip.decompress(data)
    if kind == "zstd":
        return zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()
    return data


def write_with_run_episode(path):
    ember.run_episode(ember.load_scenario(SCENARIO), "greedy", SEED, path)


def write_with_measure_run(path):
    measured = measure_run(SCENARIO, "greedy", SEED, path)
    assert_same_json(measured.metrics.to_dict(), ember.episode_metrics(SCENARIO, reference()).to_dict())


def write_with_ember_run(path):
    assert main(["run", SCENARIO, "--policy", "greedy", "--seed", str(SEED), "-o", str(path)]) == 0


def codes_for(chosen, ids):
    return [ACTIONS.index(chosen.get(pid, "stay")) for pid in ids]


def write_with_gym_env(path):
    import gymnasium

    env = gymnasium.make("ember/Evacuation-v0", scenario=SCENARIO, record=str(path))
    env.reset(seed=SEED)
    policy, ids = GreedyPolicy(SCENARIO), env.unwrapped.person_ids
    while True:
        codes = np.array(codes_for(policy(env.unwrapped.official_observation()), ids))
        _, _, terminated, truncated, _ = env.step(codes)
        if terminated or truncated:
            break
    env.close()


def write_with_parallel_env(path):
    env = ember.envs.parallel_env(scenario=SCENARIO, record=str(path))
    env.reset(seed=SEED)
    policy = GreedyPolicy(SCENARIO)
    while env.agents:
        chosen = policy(env.official_observation())
        env.step({pid: ACTIONS.index(chosen.get(pid, "stay")) for pid in env.agents})
    env.close()


WRITERS = {
    "run_episode": write_with_run_episode,
    "measure_run": write_with_measure_run,
    "ember run -o": write_with_ember_run,
    "gym env record=": write_with_gym_env,
    "parallel env record=": write_with_parallel_env,
}


@pytest.mark.parametrize(("suffix", "kind"), SUFFIXES)
@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_compresses_by_the_name(tmp_path, writer, suffix, kind):
    path = tmp_path / f"episode{suffix}"
    WRITERS[writer](path)
    data = path.read_bytes()
    assert data.startswith(MAGIC[kind])
    if kind == "plain":
        assert not data.startswith((MAGIC["gzip"], MAGIC["zstd"]))
    assert decompressed(data, kind) == reference()
    assert_same_json(
        ember.episode_metrics(SCENARIO, path).to_dict(), ember.episode_metrics(SCENARIO, reference()).to_dict()
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary or .partial left


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_writes_reproducible_gzip(tmp_path, writer):
    """gzip with mtime 0 and no file name in the header: the same record, the same bytes."""
    first, second = tmp_path / "a.record.gz", tmp_path / "b.record.gz"
    WRITERS[writer](first)
    WRITERS[writer](second)
    data = first.read_bytes()
    assert data[3] & 0x08 == 0  # FNAME flag clear: no file name stored
    assert data[4:8] == b"\0\0\0\0"  # MTIME 0
    assert data == second.read_bytes()


def test_output_kind_by_suffix():
    assert [output_kind(name) for name in ("a.gz", "a.GZ", "a.zst", "a.record", "a.gz.json", b"x.zst")] == [
        "gzip",
        "gzip",
        "zstd",
        "plain",
        "plain",
        "zstd",
    ]


@pytest.mark.parametrize(("suffix", "kind"), SUFFIXES[:3])
def test_live_output_is_readable_after_every_part(tmp_path, suffix, kind):
    """live=True: after each part's flush, what the file holds decompresses to every part written so far."""
    path = tmp_path / f"live{suffix}"
    seen = []

    class Follower:
        def start(self, header, initial_state):
            seen.append(decompress_prefix(path.read_bytes(), kind))

        def on_step(self, step, final_state):
            seen.append(decompress_prefix(path.read_bytes(), kind))

    simulator = Simulator(ember.load_scenario(SCENARIO), SEED)
    with writing_record(path) as writer:
        run_policy(simulator, "greedy", (writer, Follower()))
    lines = reference().splitlines(keepends=True)
    # After start: header, initial state and '"steps":[' lines; then one step line per step (the last with the tail).
    assert seen[0] == b"".join(lines[:3])
    assert seen[1:-1] == [b"".join(lines[: 4 + k]) for k in range(len(seen) - 2)]
    assert seen[-1] == reference()


def decompress_prefix(data, kind):
    """What a follower reading a growing file can decompress of it so far (an unfinished stream too)."""
    if kind == "gzip":
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(data)
    if kind == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return data


@pytest.mark.parametrize(("suffix", "kind"), SUFFIXES[:3])
def test_whole_output_appears_complete_or_not_at_all(tmp_path, suffix, kind):
    """live=False (a campaign's kept record): nothing at the path until the record is complete."""
    path = tmp_path / f"kept{suffix}"

    class Watcher:
        def start(self, header, initial_state):
            assert not path.exists()

        def on_step(self, step, final_state):
            assert not path.exists()

    simulator = Simulator(ember.load_scenario(SCENARIO), SEED)
    with writing_record(path, live=False) as writer:
        run_policy(simulator, "greedy", (writer, Watcher()))
    assert decompressed(path.read_bytes(), kind) == reference()

    def failing(observation):
        raise RuntimeError("the policy failed")

    again = tmp_path / f"failed{suffix}"
    with pytest.raises(RuntimeError), writing_record(again, live=False) as writer:
        run_policy(Simulator(ember.load_scenario(SCENARIO), SEED), failing, (writer,))
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # nothing left of the failed one


def test_a_campaigns_kept_records_come_from_the_one_opener(tmp_path):
    """The kept .record.gz is byte for byte what the opener writes (live=False) for that episode."""
    from ember.campaign import evaluate

    (tmp_path / "c.toml").write_text(
        'campaign = "kept"\nseeds = [3]\nscenarios = ["builtin:office"]\n[[policies]]\nname = "g"\nbuiltin = "greedy"\n'
    )
    evaluate(tmp_path / "c.toml", tmp_path / "res", workers=1, keep_records=True)
    kept = (tmp_path / "res" / "records" / "g" / "office-floor" / "3.record.gz").read_bytes()
    expected = tmp_path / "expected.record.gz"
    with open_record_output(expected, live=False) as stream:
        ember.run_episode(ember.load_scenario(SCENARIO), "greedy", SEED, stream)
    assert kept == expected.read_bytes()
    assert gzip.decompress(kept) == reference()


def test_record_writer_on_a_stream_is_not_the_opener():
    """A binary stream given instead of a path is written as it is: never compressed, whatever it is."""
    out = io.BytesIO()
    with writing_record(out) as writer:
        assert type(writer) is RecordWriter and writer.stream is out
