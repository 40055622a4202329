"""The reader's byte guard (ember.record.guard): regressions."""

import pytest

import ember

from helpers.hostile_input import CHUNK, HEAD, LIMITED
from helpers.strict import no_hang


def test_regression_byte_guard_was_quadratic_in_digit_strings():
    # For each run of more than 40 digits the reader's byte guard counted the
    # quotes from the start of the 64 KiB piece, to tell a string from a
    # number: a part of many such strings took 30 s to refuse, not 1.5 s.
    from ember.record.guard import ByteGuard

    piece = (b'"' + b"0" * 41 + b'",') * (CHUNK // 44)
    guard = ByteGuard(40)
    guard.scan(b"[")
    with no_hang():
        for _ in range(200):
            safe, problem = guard.scan(piece)
            assert problem is None and safe == piece
    with pytest.raises(ember.MetricsInputError, match="max_integer_digits"):
        ember.episode_metrics(LIMITED, HEAD + b'{"actions":["' + b"1" * 50 + b'",' + b"1" * 41)
