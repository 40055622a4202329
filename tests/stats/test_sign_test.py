"""The exact sign test (statistics.md §6) against fractions and math.comb."""

import pytest

from ember.stats.sign_test import sign_test_p_value

from helpers.stats_reference import sign_test


@pytest.mark.parametrize(
    ("m", "n"), [(m, n) for m in range(0, 25) for n in range(0, 25)] + [(600, 540), (1000, 3), (0, 2000)]
)
def test_against_fractions(m, n):
    p = sign_test_p_value(m, n)
    assert type(p) is float and p == sign_test(m, n)
    assert p == sign_test_p_value(n, m)


def test_known_values():
    assert sign_test_p_value(0, 0) == 1.0
    assert sign_test_p_value(5, 5) == 1.0  # 2 · (half and more) capped at 1
    assert sign_test_p_value(10, 0) == 2 / 1024
    assert sign_test_p_value(1, 0) == 1.0
