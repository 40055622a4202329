"""``ember.engine.authenticate_record``: stages 1-3 and the SHA-256 of the decompressed record, in one read."""

import gzip
import hashlib
import io

import pytest

from ember.engine.authenticate import authenticate_record
from ember.engine.read import episode_metrics
from ember.errors import MetricsInputError
from ember.record.writer import run_episode
from ember.scenario import compile_scenario
from ember.sim.policies import make_policy

from helpers.strict import assert_same_json


def _record(source="builtin:office", seed=1):
    scenario = compile_scenario(source)
    out = io.BytesIO()
    run_episode(scenario, make_policy("greedy", scenario, seed), seed, out)
    return scenario, out.getvalue()


def _zstd(data):
    try:
        from compression import zstd  # Python 3.14+

        return zstd.compress(data)
    except ImportError:
        zstandard = pytest.importorskip("zstandard")
        return zstandard.ZstdCompressor().compress(data)


@pytest.mark.parametrize("pack", [bytes, lambda d: gzip.compress(d, mtime=0), _zstd], ids=["plain", "gzip", "zstd"])
def test_metrics_are_episode_metrics_and_the_digest_is_of_the_decompressed_bytes(pack):
    scenario, data = _record()
    packed = pack(data)
    metrics, sha = authenticate_record(scenario, io.BytesIO(packed))
    assert_same_json(metrics.to_dict(), episode_metrics(scenario, data).to_dict())
    assert sha == hashlib.sha256(data).hexdigest()
    # However the input is chunked.
    chunks = [packed[i : i + 7] for i in range(0, len(packed), 7)]
    assert authenticate_record(scenario, chunks)[1] == sha


def test_a_record_the_engine_refuses_is_refused_as_by_episode_metrics():
    scenario, data = _record()
    changed = data.replace(b'"seed":1', b'"seed":2', 1)
    with pytest.raises(MetricsInputError) as ours:
        authenticate_record(scenario, changed)
    with pytest.raises(MetricsInputError) as theirs:
        episode_metrics(scenario, changed)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(MetricsInputError, match="stream is truncated"):
        authenticate_record(scenario, gzip.compress(data)[:-20])


# -- the push forms (the service's uploads, service.md §3) ------------------------------------


@pytest.mark.parametrize("pack", [bytes, lambda d: gzip.compress(d, mtime=0), _zstd], ids=["plain", "gzip", "zstd"])
def test_the_push_form_is_authenticate_record_however_the_bytes_are_pushed(pack):
    from ember.engine.authenticate import AuthenticationStream, DigestStream, record_suffix

    scenario, data = _record()
    packed = pack(data)
    expected, sha = authenticate_record(scenario, io.BytesIO(packed))
    for size in (1, 7, 4096, len(packed)):
        stream = AuthenticationStream(scenario, seed=1)
        digest = DigestStream()
        for i in range(0, len(packed), size):
            stream.feed(packed[i : i + size])
            digest.feed(packed[i : i + size])
        metrics, pushed_sha = stream.close()
        assert_same_json(metrics.to_dict(), expected.to_dict())
        assert pushed_sha == sha == digest.close()
    assert record_suffix(packed) == {b"\x1f\x8b": ".record.gz", b"\x28\xb5": ".record.zst"}.get(packed[:2], ".record")


def test_the_push_form_refuses_another_seed_at_the_header_and_a_record_too_long():
    from ember.engine.authenticate import AuthenticationStream

    scenario, data = _record()
    stream = AuthenticationStream(scenario, seed=0)
    with pytest.raises(
        MetricsInputError, match=r"^\$\.header\.seed: expected seed 0, the record's header names seed 1"
    ):
        stream.feed(data[: data.index(b"\n") + 1])  # the header line alone is enough to know
    with pytest.raises(MetricsInputError, match="already failed"):
        stream.feed(data)
    short = AuthenticationStream(scenario, seed=1, max_bytes=1000)
    with pytest.raises(MetricsInputError, match="longer than 1,000 bytes decompressed"):
        short.feed(gzip.compress(data))
