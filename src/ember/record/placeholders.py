"""The placeholders of taken steps, between the strict reader and the sink.

Both fast-path front ends (``frontend.CanonicalLines`` for EMBER's own
bytes, ``layouts.StepTexts`` for any other layout) give the strict reader
the placeholder ``0`` in place of a step they have taken, so the reader
still checks the whole text's syntax, layout and step numbering;
``Placeholders`` removes those zeros again before the sink sees the steps.
"""

from ..errors import MetricsInputError
from .sinks import RecordSink


class Placeholders(RecordSink):
    """Between the strict reader and the sink: drops the placeholders of taken steps.

    A taken step's placeholder must come back from the reader as the item
    of ``$.steps`` with the same index; anything else means the taken lines
    were not the items of ``$.steps`` (a step line nested inside another
    value), and what the sink has been given does not stand for the record.
    """

    def __init__(self, sink: RecordSink):
        self.sink = sink
        self.taken = 0  # steps taken from their lines
        self.returned = 0  # their placeholders read back

    def header(self, value):
        self.sink.header(value)

    def initial_state(self, value):
        self.sink.initial_state(value)

    def step(self, index, value):
        if self.returned < self.taken:
            if index == self.returned and type(value) is int and value == 0:
                self.returned += 1
                return
            self._misplaced(index)
        self.sink.step(index, value)

    def final_state(self, value):
        self.sink.final_state(value)

    def end(self):
        if self.returned < self.taken:
            self._misplaced(self.returned)
        self.sink.end()

    def _misplaced(self, index):
        raise MetricsInputError(
            f"$.steps[{index}]: steps 1..{self.taken} were read from step lines that are not the items of "
            "$.steps (a step line nested inside another value)."
        )
