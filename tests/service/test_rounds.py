"""The serve parent's background loops (service/rounds.py): no failure of a round ends its loop.

``every_round`` is driven with real rounds in a real thread; and every
background loop of the serve parent (a ``threading.Thread`` whose target
is a ``run`` method in ``src/ember/service``) is one ``every_round``.
"""

import ast
import pathlib
import threading

from ember.errors import EmberError
from ember.service.rounds import STOP, every_round

SERVICE = pathlib.Path(__file__).resolve().parents[2] / "src" / "ember" / "service"


class Rounds:
    """Rounds that raise ``failures`` one after the other, then end the loop (``STOP``) or set ``stop``."""

    def __init__(self, failures, end_with_stop=True):
        self.failures = list(failures)
        self.calls = 0
        self.stop = threading.Event()
        self.end_with_stop = end_with_stop

    def __call__(self):
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        if self.end_with_stop:
            return STOP
        self.stop.set()
        return 0


def run_in_thread(rounds, interval=0.01):
    said = []
    thread = threading.Thread(target=every_round, args=(rounds.stop, interval, rounds, "the test loop", said.append))
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive()
    return said


def test_a_defect_is_said_once_and_the_loop_goes_on():
    rounds = Rounds([ValueError("bad"), ValueError("bad"), KeyError("k"), ValueError("bad")])
    said = run_in_thread(rounds)
    assert rounds.calls == 5
    assert said == [
        "ember: the test loop failed this round: ValueError: bad",
        "ember: the test loop failed this round: KeyError: 'k'",
    ]


def test_a_database_down_or_a_full_disk_is_tried_again_quietly():
    rounds = Rounds([EmberError("the database is down"), OSError(28, "No space left on device")])
    assert run_in_thread(rounds) == []
    assert rounds.calls == 3


def test_a_round_that_sets_stop_ends_the_loop_without_stop_returned():
    rounds = Rounds([RuntimeError("once")], end_with_stop=False)
    assert run_in_thread(rounds, interval=0) == ["ember: the test loop failed this round: RuntimeError: once"]
    assert rounds.calls == 2


def background_runs():
    """(file, class) of every class of src/ember/service whose thread's target is its ``run``."""
    for path in sorted(SERVICE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            targets = [
                keyword.value
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "Thread"
                for keyword in call.keywords
                if keyword.arg == "target"
            ]
            if any(isinstance(t, ast.Attribute) and t.attr == "run" for t in targets):
                yield path, node


def test_every_background_loop_of_the_serve_parent_is_one_every_round():
    found = {}
    for path, cls in background_runs():
        (run,) = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "run"]
        calls = [c.func.id for c in ast.walk(run) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
        found[f"{path.relative_to(SERVICE)}:{cls.name}"] = calls == ["every_round"] and len(run.body) == 1
    assert found == {
        "bounds.py:Bounder": True,
        "derived.py:Deriver": True,
        "hidden/evaluator.py:Evaluator": True,
        "hidden/reveal_at.py:Revealer": True,
    }
