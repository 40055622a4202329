"""The one protocol every check and metric family follows.

Like River's ``stats``: a small stateful object per concept.  The engine
owns the transition (s_{t-1}, step_t, s_t) and hands it to each
accumulator's ``feed``; ``result`` is asked once termination is checked.
Neither returns ``self``; accumulators never touch the parser.
"""


class Accumulator:
    def feed(self, transition):
        """Consume one validated-so-far transition; raise on a defect."""
        raise NotImplementedError

    def result(self):
        """The accumulated value (a check returns None once it has passed)."""
        return None
