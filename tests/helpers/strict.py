"""Test helpers that cannot be fooled: type-strict JSON comparison, and a guard against hangs.

``==`` on dicts treats ``1``, ``1.0`` and ``True`` as equal, so a metric
that should be a count (``int``) but comes out a float or a bool would
pass; ``assert_same_json`` compares types too, recursively, and names the
first differing path.  ``no_hang`` stops a test that hangs; it never
decides pass or fail on speed (the bound is far above any normal run).
"""

import contextlib
import math
import signal


def json_difference(actual, expected, path="$"):
    """The first place where ``actual`` and ``expected`` differ in type or value, or None."""
    if type(actual) is not type(expected):
        return f"{path}: {type(actual).__name__} {actual!r} is not {type(expected).__name__} {expected!r}"
    if isinstance(expected, dict):
        if list(actual) != list(expected) and set(actual) != set(expected):
            missing = sorted(map(str, set(expected) - set(actual)))
            extra = sorted(map(str, set(actual) - set(expected)))
            return f"{path}: keys differ (missing {missing}, unexpected {extra})"
        for key in expected:
            problem = json_difference(actual[key], expected[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            return f"{path}: {len(actual)} items, not {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            problem = json_difference(a, e, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(expected, float) and math.isnan(expected) and math.isnan(actual):
        return None
    if actual != expected:
        return f"{path}: {actual!r} != {expected!r}"
    return None


def assert_same_json(actual, expected):
    """Assert equal values of equal types at every depth (``1``, ``1.0`` and ``True`` all differ)."""
    problem = json_difference(actual, expected)
    assert problem is None, problem


class Hang(Exception):
    """A guarded block ran far past any normal duration: it is taken to hang."""


@contextlib.contextmanager
def no_hang(seconds=120):
    """Raise ``Hang`` in the main thread if the block runs for ``seconds``: stops a hang, nothing more."""

    def stop(signum, frame):
        raise Hang(f"still running after {seconds} s: taken to hang")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
