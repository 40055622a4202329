"""The three uses: long episodes in constant memory, live records, file streams."""

import gc
import io
import os
import threading
import tracemalloc

import pytest

import ember
import ember.engine.core
import ember.sim.policies

from helpers.batch_metrics import batch_metrics
from helpers.records import record_bytes, scripted
from helpers.scenarios import picture_scenario
from helpers.strict import assert_same_json

OFFICE = ember.load_scenario("builtin:office")


@pytest.fixture(scope="module")
def office_record():
    out = io.BytesIO()
    ember.run_episode(OFFICE, "random", 5, out)
    return out.getvalue()


def test_push_one_byte_at_a_time_equals_pull(office_record):
    sc = picture_scenario(["A.#.1", "B...*", "....."], max_steps=15, p="1/3")
    data = record_bytes(sc, scripted([{"A": "east", "B": "east"}] * 3))
    stream = ember.MetricsStream(sc)
    for k in range(len(data)):
        stream.feed(data[k : k + 1])
    assert_same_json(stream.close().to_dict(), ember.episode_metrics(sc, data).to_dict())
    assert_same_json(ember.episode_metrics(sc, data).to_dict(), batch_metrics(sc, data))


def test_push_in_odd_chunks(office_record):
    expected = ember.episode_metrics(OFFICE, office_record).to_dict()
    for size in (7, 4096, 65537):
        stream = ember.MetricsStream(OFFICE)
        for start in range(0, len(office_record), size):
            stream.feed(office_record[start : start + size])
        assert_same_json(stream.close().to_dict(), expected)


def test_push_error_surfaces_at_the_feed_that_knows(office_record):
    lines = office_record.split(b"\n")
    bad_step = lines[5].replace(b'"step":3', b'"step":9', 1)
    assert bad_step != lines[5]
    stream = ember.MetricsStream(OFFICE)
    stream.feed(b"\n".join(lines[:5]) + b"\n")
    with pytest.raises(ember.MetricsInputError, match=r"^\$\.steps\[2\]\.snapshot\.step: expected 3"):
        stream.feed(bad_step + b"\n")
    with pytest.raises(ember.MetricsInputError, match="already failed"):
        stream.feed(b" ")


def test_close_on_incomplete_stream(office_record):
    stream = ember.MetricsStream(OFFICE)
    stream.feed(office_record[:-40])
    with pytest.raises(ember.MetricsInputError):
        stream.close()


def test_sources_path_file_bytes_chunks(tmp_path, office_record):
    path = tmp_path / "office.record"
    path.write_bytes(office_record)
    expected = ember.episode_metrics(OFFICE, office_record).to_dict()
    assert_same_json(ember.episode_metrics(OFFICE, str(path)).to_dict(), expected)
    assert_same_json(ember.episode_metrics(OFFICE, path).to_dict(), expected)
    with open(path, "rb") as handle:
        assert_same_json(ember.episode_metrics(OFFICE, handle).to_dict(), expected)
    chunks = (office_record[i : i + 1000] for i in range(0, len(office_record), 1000))
    assert_same_json(ember.episode_metrics(OFFICE, chunks).to_dict(), expected)
    assert_same_json(ember.episode_metrics(OFFICE, bytearray(office_record)).to_dict(), expected)
    with open(path) as text, pytest.raises(ember.MetricsInputError, match="binary"):
        ember.episode_metrics(OFFICE, text)


def test_live_record_through_a_pipe_while_it_is_written():
    """The engine consumes steps as the simulator writes them into a pipe."""
    sc = ember.load_scenario("builtin:small-room")
    read_fd, write_fd = os.pipe()
    seen_before_end = []
    finished = threading.Event()

    def produce():
        with os.fdopen(write_fd, "wb") as out:
            sim = ember.Simulator(sc, 3)
            from ember.record.writer import RecordWriter

            writer = RecordWriter(out)
            writer.start(sim.header, sim.initial_state)
            policy = ember.sim.policies.GreedyPolicy(sc)
            while not sim.terminated:
                step = sim.step(policy(sim.observe()))
                writer.on_step(step, sim.final_state)
                if not sim.terminated:
                    # Wait until the consumer has taken this step before going on.
                    consumed.wait(5)
                    consumed.clear()
        finished.set()

    consumed = threading.Event()

    class Watching(ember.engine.core.EpisodeEngine):
        def update(self, tr):
            super().update(tr)
            seen_before_end.append(not finished.is_set())
            consumed.set()

    engine = Watching(ember.scenario.compile_scenario(sc))
    parser = ember.record.reader.RecordParser(engine)
    producer = threading.Thread(target=produce)
    producer.start()
    with os.fdopen(read_fd, "rb") as stream:
        for chunk in ember.record.source.iter_chunks(stream):
            parser.feed(chunk)
    parser.close()
    producer.join()
    result = engine.finish()
    assert result["safety"]["population"] == 4
    assert len(seen_before_end) >= 2 and all(seen_before_end[:-1])


def _peak(path, scenario):
    gc.collect()
    tracemalloc.start()
    ember.episode_metrics(scenario, path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_memory_does_not_grow_with_steps(tmp_path):
    """tracemalloc peak at 2,000 steps within 10% of 200 steps.

    The peak is about 55 KB whatever the length, so anything kept per step
    (the smallest Python object is 16 bytes) grows it past 10% by 2,000 steps;
    a run of 50,000 steps would test the same at 25 times the cost.
    """
    sc = picture_scenario(["A#...", "##.*.", "..1.."], max_steps=5000, p="0/1")
    peaks = {}
    for steps in (200, 2_000):
        sc["termination"]["max_steps"] = steps
        path = tmp_path / f"{steps}.record"
        ember.run_episode(sc, "random", 1, str(path))
        peaks[steps] = _peak(str(path), sc)
    assert peaks[2_000] <= peaks[200] * 1.10, peaks
