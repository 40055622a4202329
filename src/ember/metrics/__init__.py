"""Official per-episode metrics (metrics.md, version 1.0).

Four accumulators gather what the record says step by step
(``resolutions``, ``movement``, ``replanning``, ``exposure``); ``report``
turns them, the scenario and the terminal state into the metric families
with exact ``Fraction`` arithmetic and one float conversion per value.
"""
