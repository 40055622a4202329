"""Compressed records (campaign.md §5): gzip and zstd, read wherever a record is read, and written by ``run``."""

import gzip
import io
import json
import os
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib

import pytest

import ember
import ember.sim.policies
from ember.engine.core import EpisodeEngine
from ember.engine.read import read_record
from ember.engine.run import measure_run
from ember.record.limits import record_limits
from ember.record.parts import iter_parts
from ember.render import render_ascii
from ember.scenario import compile_scenario

from helpers.scenarios import picture_scenario

if sys.version_info < (3, 14):
    import zstandard  # the test extra installs it
else:
    zstandard = None

SCENARIO = picture_scenario(["A....", ".#.#.", "B...1"], ignitions=[(0, 4)], max_steps=30, p="1/3")


def zstd_compress(data):
    if zstandard is None:
        from compression import zstd

        return zstd.compress(data)
    return zstandard.ZstdCompressor().compress(data)


@pytest.fixture(scope="module")
def record():
    out = io.BytesIO()
    ember.run_episode(SCENARIO, "greedy", 3, out)
    return out.getvalue()


@pytest.fixture(scope="module")
def expected(record):
    return ember.episode_metrics(SCENARIO, record).to_dict()


COMPRESSORS = {"gzip": lambda data: gzip.compress(data, mtime=0), "zstd": zstd_compress}


def byte_by_byte(stream, data):
    for k in range(len(data)):
        stream.feed(data[k : k + 1])
    return stream.close()


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_every_reader_reads_a_compressed_record(kind, record, expected, tmp_path):
    data = COMPRESSORS[kind](record)
    path = tmp_path / "record.bin"  # recognised by its bytes, not its name
    path.write_bytes(data)
    assert ember.episode_metrics(SCENARIO, data).to_dict() == expected
    assert ember.episode_metrics(SCENARIO, path).to_dict() == expected
    with open(path, "rb") as handle:
        assert ember.episode_metrics(SCENARIO, handle).to_dict() == expected
    assert ember.verify_replay(SCENARIO, data) is None
    assert render_ascii(SCENARIO, data) == render_ascii(SCENARIO, record)
    assert list(iter_parts(data, chunk_size=7)) == list(iter_parts(record))


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_any_chunking_down_to_one_byte(kind, record, expected):
    data = COMPRESSORS[kind](record)
    assert byte_by_byte(ember.MetricsStream(SCENARIO), data).to_dict() == expected
    for size in (2, 3, 5, 4096):
        chunks = [data[k : k + size] for k in range(0, len(data), size)]
        assert ember.episode_metrics(SCENARIO, chunks).to_dict() == expected


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_several_members_or_frames_are_one_stream(kind, record, expected):
    compress = COMPRESSORS[kind]
    cuts = [0, 1, 100, len(record) // 2, len(record) - 1, len(record)]
    data = b"".join(compress(record[a:b]) for a, b in zip(cuts, cuts[1:]))
    assert ember.episode_metrics(SCENARIO, data).to_dict() == expected
    assert byte_by_byte(ember.MetricsStream(SCENARIO), data).to_dict() == expected


@pytest.mark.parametrize("kind", COMPRESSORS)
@pytest.mark.parametrize("tail", [b"\n", b" ", b"\x00", b"x", b"\x1f", b"\x28\xb5"])
def test_bytes_after_the_compressed_stream_are_a_malformed_record(kind, tail, record):
    data = COMPRESSORS[kind](record) + tail
    with pytest.raises(
        ember.MetricsInputError, match=rf"^\$: Malformed record: data follows the end of the {kind} stream"
    ):
        ember.episode_metrics(SCENARIO, data)
    with pytest.raises(ember.MetricsInputError, match="Malformed record"):
        byte_by_byte(ember.MetricsStream(SCENARIO), data)
    with pytest.raises(ember.ReplayMismatchError, match="Malformed record"):
        ember.verify_replay(SCENARIO, data)


@pytest.mark.parametrize("outer", COMPRESSORS)
@pytest.mark.parametrize("inner", COMPRESSORS)
def test_two_layers_are_refused(outer, inner, record):
    data = COMPRESSORS[outer](COMPRESSORS[inner](record))
    with pytest.raises(ember.MetricsInputError, match=rf"the {outer} stream holds a {inner} stream"):
        ember.episode_metrics(SCENARIO, data)


@pytest.mark.parametrize("kind", COMPRESSORS)
def test_truncated_and_corrupt_streams(kind, record):
    data = COMPRESSORS[kind](record)
    with pytest.raises(ember.MetricsInputError, match=rf"the {kind} stream is truncated"):
        ember.episode_metrics(SCENARIO, data[:-4])
    corrupt = data[:12] + bytes(b ^ 0x5A for b in data[12:40]) + data[40:]
    with pytest.raises(ember.MetricsInputError, match=r"^\$: "):
        ember.episode_metrics(SCENARIO, corrupt)


def test_a_magic_number_alone_or_split_is_not_a_record():
    for data in (b"\x1f", b"\x1f\x8b", b"\x28\xb5\x2f", b"\x28\xb5\x2f\xfd"):
        with pytest.raises(ember.MetricsInputError):
            ember.episode_metrics(SCENARIO, data)


def endless_gzip(head, filler, counter, total=1 << 30):
    """gzip of ``head`` then ``filler`` repeated up to ``total`` bytes, yielded as it is compressed."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    yield deflate.compress(head)
    block = filler * (65536 // len(filler))
    for _ in range(total // len(block)):
        counter[0] += len(block)
        out = deflate.compress(block)
        if out:
            yield out
    yield deflate.flush()


@pytest.mark.parametrize(
    ("head", "filler", "match"),
    [
        (b'{"header":', b" ", r"^\$\.header: Limit exceeded: more than max_part_bytes"),
        (b'{"header":{"a":"', b"a", r"^\$\.header\.a: Limit exceeded"),
        (b'{"header":', b"[", r"Limit exceeded: arrays and objects are nested more than max_depth"),
        (None, b" ", r"^\$: Limit exceeded: more than max_part_bytes=\d+ bytes of decompressed input were read after"),
    ],
)
def test_a_gzip_bomb_is_refused_in_bounded_memory_and_time(head, filler, match, record):
    head = record if head is None else head
    expanded = [0]
    tracemalloc.start()
    try:
        with pytest.raises(ember.MetricsInputError, match=match):
            ember.episode_metrics(SCENARIO, endless_gzip(head, filler, expanded))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    limit = record_limits(compile_scenario(SCENARIO)).max_part_bytes
    # Refused within about one part limit of decompressed bytes, out of 1 GiB on offer.
    assert expanded[0] <= limit + 4 * 65536 + 4 * 1024 * 1024
    assert peak < 48 << 20


def test_a_small_zstd_file_that_expands_hugely_is_refused():
    # 256 MiB of spaces after '{"header":' compress to a few KB.
    data = zstd_compress(b'{"header":' + b" " * (1 << 28))
    assert len(data) < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ember.MetricsInputError, match=r"^\$\.header: Limit exceeded"):
            ember.episode_metrics(SCENARIO, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 48 << 20


# --- writing -------------------------------------------------------------------------------


@pytest.mark.parametrize(("suffix", "kind"), [(".gz", "gzip"), (".zst", "zstd")])
def test_run_writes_compressed_by_name(suffix, kind, record, expected, tmp_path):
    path = tmp_path / f"record{suffix}"
    ember.run_episode(SCENARIO, "greedy", 3, path)
    data = path.read_bytes()
    assert data.startswith({"gzip": b"\x1f\x8b", "zstd": b"\x28\xb5\x2f\xfd"}[kind])
    assert ember.episode_metrics(SCENARIO, path).to_dict() == expected
    if kind == "gzip":
        assert gzip.decompress(data) == record
        again = tmp_path / f"again{suffix}"
        ember.run_episode(SCENARIO, "greedy", 3, again)
        assert again.read_bytes() == data  # mtime 0: reproducible bytes
    same = measure_run(SCENARIO, "greedy", 3, tmp_path / f"measured{suffix}")
    assert same.metrics.to_dict() == expected
    assert ember.episode_metrics(SCENARIO, tmp_path / f"measured{suffix}").to_dict() == expected


def test_cli_run_o_gz_then_metrics(tmp_path, expected):
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(SCENARIO))
    path = tmp_path / "r.record.gz"
    cli = [sys.executable, "-m", "ember.cli"]
    run = subprocess.run([*cli, "run", str(scenario), "--seed", "3", "-o", str(path)], capture_output=True)
    assert run.returncode == 0, run.stderr
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    metrics = subprocess.run([*cli, "metrics", str(scenario), str(path)], capture_output=True)
    assert metrics.returncode == 0, metrics.stderr
    assert json.loads(metrics.stdout) == expected


def test_a_live_reader_follows_a_growing_gz_file(tmp_path):
    """Each step of a .gz record being written is measured before the next one is written."""
    sc = ember.load_scenario("builtin:small-room")
    path = tmp_path / "live.record.gz"
    consumed = threading.Event()
    finished = threading.Event()
    seen_before_end = []
    greedy = ember.sim.policies.GreedyPolicy(sc)

    def waiting_policy(observation):
        if observation["step"] > 1:
            # Wait until the reader has measured the previous step from the file.
            assert consumed.wait(10), "the reader did not get the step that was flushed"
            consumed.clear()
        return greedy(observation)

    def produce():
        try:
            ember.run_episode(sc, waiting_policy, 3, path)
        finally:
            finished.set()

    class Watching(EpisodeEngine):
        def update(self, tr):
            super().update(tr)
            seen_before_end.append(not finished.is_set())
            consumed.set()

    def follow(stream):
        """Read the growing file like ``tail -f``, until the writer has finished."""
        while True:
            chunk = stream.read(65536)
            if chunk:
                yield chunk
            elif finished.is_set():
                rest = stream.read()
                if rest:
                    yield rest
                return
            else:
                time.sleep(0.005)

    producer = threading.Thread(target=produce)
    producer.start()
    while not path.exists():
        time.sleep(0.005)
    watcher = Watching(compile_scenario(sc))
    with open(path, "rb") as stream:
        read_record(follow(stream), watcher, record_limits(watcher.scenario), watcher.take_line)
    producer.join()
    assert watcher.result["safety"]["population"] == 4
    assert len(seen_before_end) >= 2 and all(seen_before_end[:-1])
    assert watcher.result.to_dict() == ember.episode_metrics(sc, path).to_dict()


def test_without_zstd_support_a_zst_output_is_refused_before_any_file(tmp_path, monkeypatch):
    if sys.version_info >= (3, 14):
        pytest.skip("the standard library has zstd")
    monkeypatch.setitem(sys.modules, "zstandard", None)
    path = tmp_path / "r.zst"
    with pytest.raises(ember.EmberError, match=r"zstd.*pip install 'ember-eval\[zstd\]'"):
        ember.run_episode(SCENARIO, "greedy", 3, path)
    assert not os.path.exists(path)
