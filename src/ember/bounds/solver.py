"""The maximum-flow solver: OR-Tools' ``SimpleMaxFlow`` (push-relabel, C++), fed whole numpy arrays.

OR-Tools is the ``bounds`` extra, imported here only, when a flow is asked
for.  It is faster here than scipy's ``maximum_flow`` (both methods) on
these networks: docs/bounds.md has the figures.
"""

import numpy as np

from ..errors import MissingExtraError


def maximum_flow(nodes, tails, heads, source, sink, want_flow=False):
    """The value of a maximum ``source``-``sink`` flow on the arcs tails[i] -> heads[i], each of capacity 1
    (``nodes`` nodes).  With ``want_flow``: also the arcs carrying a unit, as a pair (tails, heads) of arrays."""
    try:
        from ortools.graph.python.max_flow import SimpleMaxFlow
    except ImportError as exc:
        raise MissingExtraError(
            f"ember bounds needs OR-Tools (the bounds extra): pip install 'ember-eval[bounds]' ({exc})"
        ) from None
    solver = SimpleMaxFlow()
    arcs = solver.add_arcs_with_capacity(tails, heads, np.ones(len(tails), dtype=np.int64))
    status = solver.solve(source, sink)
    if status != solver.OPTIMAL:
        raise RuntimeError(f"bounds: OR-Tools' max flow ended with status {status} on {nodes} nodes, not OPTIMAL")
    value = int(solver.optimal_flow())
    if not want_flow:
        return value, None
    carried = solver.flows(arcs) > 0
    return value, (tails[carried].astype(np.int64), heads[carried].astype(np.int64))
