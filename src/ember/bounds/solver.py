"""The maximum-flow solver: OR-Tools' ``SimpleMaxFlow`` (push-relabel, C++), fed the arcs a block at a time.

OR-Tools is the ``bounds`` extra, imported here only, when a flow is asked
for.  Measured against Boykov-Kolmogorov (PyMaxflow) and scipy's
``maximum_flow`` on these networks, it was as fast or faster on all but
the largest and took the least memory per arc; it also gives the flow on
each arc, which a witness needs (benchmarks/README.md, "bench_bounds.py").
"""

import numpy as np

from ..errors import MissingExtraError


def maximum_flow(nodes, arcs, source, sink, want_flow=False):
    """The value of a maximum ``source``-``sink`` flow on ``nodes`` nodes, every arc of capacity 1.

    ``arcs()`` yields the arcs as pairs of int32 arrays (tails, heads), a
    block at a time, so that the whole arc list never exists beside the
    solver's own copy.  With ``want_flow``: also the arcs carrying a unit, as
    a pair (tails, heads) of int64 arrays (``arcs()`` is called again for them).
    """
    try:
        from ortools.graph.python.max_flow import SimpleMaxFlow
    except ImportError as exc:
        raise MissingExtraError(
            f"ember bounds needs OR-Tools (the bounds extra): pip install 'ember-eval[bounds]' ({exc})"
        ) from None
    solver = SimpleMaxFlow()
    ones = np.ones(0, dtype=np.int64)
    for tails, heads in arcs():
        if len(tails) > len(ones):
            ones = np.ones(len(tails), dtype=np.int64)
        solver.add_arcs_with_capacity(tails, heads, ones[: len(tails)])
    del ones
    status = solver.solve(source, sink)
    if status != solver.OPTIMAL:
        raise RuntimeError(f"bounds: OR-Tools' max flow ended with status {status} on {nodes} nodes, not OPTIMAL")
    value = int(solver.optimal_flow())
    if not want_flow:
        return value, None
    carried_tails, carried_heads = [], []
    first = 0
    for tails, heads in arcs():
        numbers = np.arange(first, first + len(tails), dtype=np.int32)
        carried = solver.flows(numbers) > 0
        carried_tails.append(tails[carried].astype(np.int64))
        carried_heads.append(heads[carried].astype(np.int64))
        first += len(tails)
    return value, (np.concatenate(carried_tails), np.concatenate(carried_heads))
