"""Exception hierarchy: one root, each subclass also a ``ValueError``.

Modelled on Hypothesis' ``errors.py``: callers can catch ``EmberError`` for
everything EMBER raises on bad input, or the built-in ``ValueError``.
"""


class EmberError(Exception):
    """Root of every error EMBER raises on purpose."""


class ScenarioError(EmberError, ValueError):
    """A scenario breaks a rule of simulator.md §2 (the message names the path)."""


class ActionError(EmberError, ValueError):
    """Actions for a step are invalid, or the episode has terminated."""


class MetricsInputError(EmberError, ValueError):
    """The scenario/record pair cannot be measured: no partial result exists."""


class ReplayMismatchError(EmberError, ValueError):
    """A record is not byte-identical to the simulator's replay of it.

    ``step`` is the first differing step (0 for the header or initial state,
    None for the final state) and ``path`` the JSON path of the first
    differing field, when known.
    """

    def __init__(self, message, step=None, path=None):
        super().__init__(message)
        self.step = step
        self.path = path


class RenderError(EmberError, ValueError):
    """The picture cannot be made (bad options, no Pillow, image too large)."""


class MissingExtraError(EmberError, ImportError):
    """An optional feature needs a package of an extra that is not installed (the message names it)."""
