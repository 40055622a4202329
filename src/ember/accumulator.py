"""The one protocol every check and metric family follows.

Like River's ``stats``: a small stateful object per concept.  The engine
owns the transition (s_{t-1}, step_t, s_t) and hands it to each
accumulator's ``update``; ``result`` is asked once termination is checked.
Neither returns ``self``; accumulators never touch the parser.  (``feed``
is the verb for bytes in: record streams and parsers.)

What ``result()`` gives: a stage-2 check raises at the first defect, so
once the record has ended its result is None (it passed); the replay check
gives its first ``ReplayMismatchError`` or None.  A metric accumulator's
``result()`` is None too: several families combine the counters of several
accumulators (the replanning family needs the movement counts), so
``metrics.report`` reads their public counters, which is what is true.
"""

import abc


class Accumulator(abc.ABC):
    @abc.abstractmethod
    def update(self, transition):
        """Consume one validated-so-far transition; raise on a defect."""

    def result(self):
        """The accumulated value (a check returns None once it has passed)."""
        return None
